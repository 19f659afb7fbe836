"""``stagewise serve [--qrels Q] [--run R...] [--rag RECORDS] [--db labels.sqlite] [--host H] [--port P] [--token T]``,
``stagewise serve --playground`` and ``stagewise labels export --db D -o qrels.txt``."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import check_output, run_labels, user_errors

labels_app = typer.Typer(name="labels", help="Labels kept by stagewise serve.", no_args_is_help=True)

_LOCAL = {"127.0.0.1", "localhost", "::1"}


def _is_loopback(host: str) -> bool:
    if host in _LOCAL:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _need_app() -> None:
    from stagewise.errors import StagewiseError

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise StagewiseError("stagewise serve needs the app extra: pip install 'stagewise[app]'") from None


def serve_command(
    qrels: Annotated[
        str | None, typer.Option("--qrels", "-q", help="Judgements to start from (never modified).")
    ] = None,
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="A run to show; repeatable.")] = None,
    corpus: Annotated[
        str | None, typer.Option("--corpus", help="Documents (BEIR folder, JSONL, TSV) to show beside each result.")
    ] = None,
    queries: Annotated[
        str | None, typer.Option("--queries", help="Query texts (BEIR folder, JSONL, TSV) to show and search.")
    ] = None,
    rag: Annotated[str | None, typer.Option("--rag", help="RAG records (JSONL) to browse by sample.")] = None,
    db: Annotated[Path, typer.Option("--db", help="SQLite file holding the labels and their history.")] = Path(
        "labels.sqlite"
    ),
    host: Annotated[str, typer.Option("--host", help="Address to bind; other than loopback needs --token.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option("--token", help="Every request must carry this token.")] = None,
    playground: Annotated[bool, typer.Option("--playground", help="Serve the lesson's playground alone.")] = False,
) -> None:
    """Browse rankings, relabel results by clicking, and watch every metric change (a local web app)."""
    from stagewise.errors import InputError

    with user_errors():
        if not _is_loopback(host) and not token:
            raise InputError(
                "--host",
                f"binding {host} exposes the labels to the network",
                hint="add --token SECRET (every request must then carry it), or keep --host 127.0.0.1",
            )
        if not 0 < port < 65536:
            raise InputError("--port", f"{port} is not a port", expected="1 to 65535")
        if token is not None and len(token) < 8:
            raise InputError("--token", "too short to protect anything", expected="at least 8 characters")
        if not playground and qrels is None and rag is None:
            raise InputError(
                "stagewise serve",
                "nothing to serve",
                hint="give --qrels Q [--run R...], --rag RECORDS, or --playground",
            )
        _need_app()
        import uvicorn

        from stagewise.app.server import create_app

        workspace = None
        records = None
        if not playground:
            if qrels is not None:
                check_output(db, [qrels, rag, corpus, queries, *(run or [])], option="--db")
                workspace = build_workspace(qrels, run or [], db, corpus=corpus, queries=queries)
            if rag:
                check_output(rag_db(db), [qrels, rag, *(run or [])], option="--db")
                records = read_rag(rag, db)
        app = create_app(workspace, token=token, rag=records)
        first = "playground" if playground else "queries" if workspace is not None else "rag"
        where = f"http://{host}:{port}/{first}"
        typer.echo(f"stagewise serve: {where}" + (f"?token={token}" if token else ""), err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")


def build_workspace(qrels: str, runs: list[str], db: Path, corpus: str | None = None, queries: str | None = None):
    """Read the qrels and runs, open (or create) the label database, and compute every query's metrics."""
    from stagewise.app.model import Workspace
    from stagewise.data.readers import read_qrels, read_run
    from stagewise.store.labels import LabelStore

    judged = read_qrels(qrels).to_dict()
    names = run_labels(runs) if runs else []
    loaded = {name: read_run(path, name=name).to_dict() for name, path in zip(names, runs, strict=True)}
    texts = topics = None
    if corpus is not None or queries is not None:
        from stagewise.data.collections import read_corpus, read_queries

        if corpus is not None:
            ranked = {d for run in loaded.values() for docs in run.values() for d in docs}
            texts = {d: t for d, t in read_corpus(corpus) if d in ranked}  # only what a page can show
        if queries is not None:
            topics = read_queries(queries).to_dict()
    return Workspace(LabelStore(db, judged), loaded, texts=texts, queries=topics)


def rag_db(db: Path) -> Path:
    """Where the RAG samples' gold marks are kept: beside ``--db`` (``labels.sqlite`` -> ``labels.rag.sqlite``)."""
    return db.with_name(f"{db.stem}.rag{db.suffix or '.sqlite'}")


def read_rag(path: str, db: Path):
    """RAG records, their gold marks (kept in ``rag_db(db)``) and each sample's stage label from evaluate_rag."""
    from stagewise.app.rag import RagSamples
    from stagewise.rag.records import read_records
    from stagewise.store.labels import LabelStore

    records = read_records(path)
    return RagSamples(records, LabelStore(rag_db(db), RagSamples.initial_marks(records)))


@labels_app.command("export")
def export_command(
    db: Annotated[Path, typer.Option("--db", help="The label database written by stagewise serve.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The TREC qrels file to write.")],
) -> None:
    """Write the current labels as TREC qrels (``qid 0 docid label``)."""
    from stagewise._io import atomic_write
    from stagewise.errors import InputError
    from stagewise.store.labels import LabelStore

    with user_errors():
        if not db.is_file():
            raise InputError(str(db), "no such label database", hint="give --db the file stagewise serve wrote")
        check_output(output, [db])
        store = LabelStore(db)
        try:
            with atomic_write(output) as fh:
                fh.write(store.qrels_text())
        finally:
            store.close()
