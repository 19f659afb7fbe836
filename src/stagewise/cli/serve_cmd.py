"""``stagewise serve [--qrels Q] [--run R...] [--rag RECORDS] [--db labels.sqlite] [--host H] [--port P] [--token T]``,
``stagewise serve --playground`` and ``stagewise labels export --db D -o qrels.txt``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import check_output, check_serving, run_labels, serve_app, user_errors

labels_app = typer.Typer(name="labels", help="Labels kept by stagewise serve.", no_args_is_help=True)


def serve_command(
    qrels: Annotated[
        str | None, typer.Option("--qrels", "-q", help="Judgements to start from (never modified).")
    ] = None,
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="A run to show; repeatable.")] = None,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus", help="Documents (BEIR folder, JSONL, TSV) to show beside each result and RAG passage."
        ),
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
        check_serving(host, port, token)
        # --corpus also gives the RAG page the texts of passages no record holds
        shown = (("--run", run), ("--corpus", corpus if rag is None or playground else None), ("--queries", queries))
        unused = [name for name, given in shown if given]
        if (playground or qrels is None) and unused:
            raise InputError(
                unused[0],
                "is only shown with --qrels" + (", not with --playground" if playground else ""),
                hint="add --qrels Q (the judgements the runs are scored against)",
            )
        if playground and (qrels is not None or rag is not None):
            raise InputError("--playground", "serves the lesson's playground alone", hint="leave out --qrels and --rag")
        if not playground and qrels is None and rag is None:
            raise InputError(
                "stagewise serve",
                "nothing to serve",
                hint="give --qrels Q [--run R...], --rag RECORDS, or --playground",
            )
        from stagewise.app.open import open_rag, rag_db

        workspace = None
        records = None
        if not playground:
            if qrels is not None:
                check_output(db, [qrels, rag, corpus, queries, *(run or [])], option="--db")
                workspace = build_workspace(qrels, run or [], db, corpus=corpus, queries=queries)
            if rag:
                check_output(rag_db(db), [qrels, rag, corpus, *(run or [])], option="--db")
                records = open_rag(rag, db, corpus=corpus)
        first = "playground" if playground else "queries" if workspace is not None else "rag"
        serve_app(workspace, records, host=host, port=port, token=token, first=first)


def build_workspace(qrels: str, runs: list[str], db: Path, corpus: str | None = None, queries: str | None = None):
    """:func:`stagewise.app.open.open_workspace` with each run named by its path, as the CLI names runs."""
    from stagewise.app.open import open_workspace

    names = run_labels(runs) if runs else []
    return open_workspace(qrels, dict(zip(names, runs, strict=True)), db, corpus=corpus, queries=queries)


@labels_app.command("export")
def export_command(
    db: Annotated[Path, typer.Option("--db", help="The label database written by stagewise serve.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The qrels file to write: TREC, or .jsonl / .parquet by its name.")
    ],
) -> None:
    """Write the current labels as qrels: TREC (``qid 0 docid label``), or JSONL or Parquet by the file's name."""
    from stagewise.data.readers import read_qrels
    from stagewise.data.writers import write_qrels
    from stagewise.errors import InputError
    from stagewise.store.labels import LabelStore

    with user_errors():
        if not db.is_file():
            raise InputError(str(db), "no such label database", hint="give --db the file stagewise serve wrote")
        check_output(output, [db])
        store = LabelStore(db)
        try:
            labels = store.labels()
        finally:
            store.close()
        if not labels:
            raise InputError(str(db), "holds no labels", hint="label some results in stagewise serve first")
        # the writers' checks: an id with white space or a leading # cannot be a TREC line (use .jsonl)
        write_qrels(read_qrels(labels), output)
