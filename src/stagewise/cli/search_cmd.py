"""``stagewise search INDEX_DIR QUERIES -k 1000 -o RUN``"""

from __future__ import annotations

import contextlib
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import Backend, CorpusFormat, check_output, emit_run, float_option, int_option, user_errors


class Engine(StrEnum):
    local = "local"
    dask = "dask"


# The longer options' declarations, named once here so that the command's signature reads as a list.
QueriesArgument = Annotated[
    Path,
    typer.Argument(
        help="Queries: a BEIR folder (queries.jsonl), JSONL (_id/id + text), TSV (qid<TAB>text, "
        "as Anserini topics; .gz accepted) or a SMART query file; - reads standard input."
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        **int_option(1),
        help="Threads searching in parallel (default 1); with --engine dask and no --scheduler, the local "
        "cluster's worker processes (default: one per CPU).",
    ),
]
EngineOption = Annotated[
    Engine,
    typer.Option(
        help="local: this process; dask: queries partitioned over Dask workers that each map the same index "
        "folder (needs stagewise[dask]).",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        help="With --engine dask: the address of a running Dask scheduler (tcp://HOST:8786); default: a "
        "local cluster. The index folder must be at the same path on every worker."
    ),
]


def search_command(
    index_dir: Annotated[Path, typer.Argument(help="An index directory written by `stagewise index`.")],
    queries: QueriesArgument,
    k: Annotated[
        int, typer.Option("-k", **int_option(1), help="Results per query (at most the matching documents).")
    ] = 1000,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="TREC run file to write (atomically); default stdout.")
    ] = None,
    fmt: Annotated[
        CorpusFormat, typer.Option("--input-format", "-f", "--format", help="Query file format.")
    ] = CorpusFormat.auto,
    variant: Annotated[str | None, typer.Option(help="Override the index's BM25 variant.")] = None,
    k1: Annotated[float | None, typer.Option(**float_option(), help="Override k1 (no re-indexing needed).")] = None,
    b: Annotated[float | None, typer.Option(**float_option(), help="Override b.")] = None,
    delta: Annotated[float | None, typer.Option(**float_option(), help="Override delta (bm25l, bm25+).")] = None,
    epsilon: Annotated[float | None, typer.Option(**float_option(), help="Override epsilon (okapi-rank_bm25).")] = None,
    workers: WorkersOption = None,
    engine: EngineOption = Engine.local,
    scheduler: SchedulerOption = None,
    all_documents: Annotated[
        bool, typer.Option("--all-documents", help="Also rank documents matching no query term (score 0).")
    ] = False,
    name: Annotated[str | None, typer.Option(help="Run tag (default bm25-<variant>(<params>)).")] = None,
    renumber: Annotated[
        bool, typer.Option("--renumber", help="Number queries 1..n in file order (Cranfield's cran.qry needs it).")
    ] = False,
    backend: Annotated[
        Backend | None, typer.Option(help="Dense index only: encode queries with torch or onnx (default: the index's).")
    ] = None,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Dense index only: search its HNSW index (built by encode --hnsw).")
    ] = False,
) -> None:
    r"""Search a BM25 index (or a dense one from `stagewise encode`) with a batch of queries and write a TREC run
    (qid Q0 docid rank score tag).

    Scores are written exactly (shortest round-trip decimals). Ties in score keep the document indexed first.

    Examples:

      stagewise search bm25-index queries.jsonl -k 1000 -o bm25.run

      stagewise search cran-index ../shared/data/cranfield/cran.qry --renumber -k 100 --k1 0.9 --b 0.4 -o cran.run

      stagewise eval qrels.txt bm25.run -m ndcg@10 -m map

      printf 'q1\tlift of wings\n' | stagewise search bm25-index - -k 10
    """
    with user_errors():
        check_output(output, [index_dir, queries], input_folders=(index_dir,))
        from stagewise.cli.common import progress_bar, stdin_as_file
        from stagewise.data.collections import read_queries
        from stagewise.errors import InputError
        from stagewise.pipeline.indexes import SearchOptions, index_kind, search_index

        if _is_index(queries) and not _is_index(index_dir):
            raise InputError(
                str(index_dir),
                f"is not an index, and the queries argument {queries} is one",
                hint=f"the index comes first: stagewise search {queries} {index_dir}",
            )
        options = SearchOptions(
            k=k, name=name, engine=engine.value, scheduler=scheduler, workers=workers, variant=variant, k1=k1, b=b,
            delta=delta, epsilon=epsilon, all_documents=all_documents, backend=backend and backend.value,
            approximate=approximate,
        )  # fmt: skip
        kind = index_kind(index_dir)
        for note in options.check(kind, index_dir):  # before the queries are read: a contradiction fails at once
            typer.echo(f"stagewise: note: {note}", err=True)
        started = time.perf_counter()
        if str(queries) == "-":
            with stdin_as_file("query set", fmt.value) as source:
                topics = read_queries(source, format=source.suffix[1:], renumber=renumber)
        else:
            topics = read_queries(queries, format=None if fmt is CorpusFormat.auto else fmt.value, renumber=renumber)
        if not topics:  # else the search's own "no query matched any document (0 queries)" blames the index
            raise InputError(
                "<stdin>" if str(queries) == "-" else str(queries),
                "has no queries",
                expected="one query a line or record",
            )
        progress, update = progress_bar("searching") if kind == "bm25" else (contextlib.nullcontext(), None)
        with progress:
            found = search_index(index_dir, topics, options, progress=update)
        emit_run(found.run, output)
        empty = f", {found.empty_queries} with no indexed term" if found.empty_queries else ""
        target = f" -> {output}" if output is not None else ""
        typer.echo(
            f"searched {len(topics):,} queries{empty} with {found.scoring}, top {k}, "
            f"in {time.perf_counter() - started:.2f} s{target}",
            err=True,
        )


def _is_index(path: Path) -> bool:
    """Whether ``path`` is a folder written by stagewise index or encode (both keep a meta.json)."""
    return str(path) != "-" and (path / "meta.json").is_file()
