"""``stagewise search INDEX_DIR QUERIES -k 1000 -o RUN``"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import check_output, user_errors


class QueryFormat(StrEnum):
    auto = "auto"
    beir = "beir"
    jsonl = "jsonl"
    tsv = "tsv"
    smart = "smart"


def search_command(
    index_dir: Annotated[Path, typer.Argument(help="An index directory written by `stagewise index`.")],
    queries: Annotated[
        Path,
        typer.Argument(
            help="Queries: a BEIR folder (queries.jsonl), JSONL (_id/id + text), TSV (qid<TAB>text, "
            "as Anserini topics; .gz accepted) or a SMART query file."
        ),
    ],
    k: Annotated[int, typer.Option("-k", help="Results per query (at most the matching documents).")] = 1000,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="TREC run file to write (atomically); default stdout.")
    ] = None,
    fmt: Annotated[QueryFormat, typer.Option("--format", "-f", help="Query file format.")] = QueryFormat.auto,
    variant: Annotated[str | None, typer.Option(help="Override the index's BM25 variant.")] = None,
    k1: Annotated[float | None, typer.Option(help="Override k1 (no re-indexing needed).")] = None,
    b: Annotated[float | None, typer.Option(help="Override b.")] = None,
    delta: Annotated[float | None, typer.Option(help="Override delta (bm25l, bm25+).")] = None,
    epsilon: Annotated[float | None, typer.Option(help="Override epsilon (okapi-rank_bm25).")] = None,
    workers: Annotated[int, typer.Option(help="Threads searching in parallel.")] = 1,
    all_documents: Annotated[
        bool, typer.Option("--all-documents", help="Also rank documents matching no query term (score 0).")
    ] = False,
    name: Annotated[str | None, typer.Option(help="Run tag (default bm25-<variant>(<params>)).")] = None,
    renumber: Annotated[
        bool, typer.Option("--renumber", help="Number queries 1..n in file order (Cranfield's cran.qry needs it).")
    ] = False,
    backend: Annotated[
        str | None, typer.Option(help="Dense index only: encode queries with torch or onnx (default: the index's).")
    ] = None,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Dense index only: search its HNSW index (built by encode --hnsw).")
    ] = False,
) -> None:
    """Search a BM25 index (or a dense one from `stagewise encode`) with a batch of queries and write a TREC run
    (qid Q0 docid rank score tag).

    Scores are written exactly (shortest round-trip decimals). Ties in score keep the document indexed first.

    Examples:

      stagewise search bm25-index queries.jsonl -k 1000 -o bm25.run

      stagewise search cran-index ../shared/data/cranfield/cran.qry --renumber -k 100 --k1 0.9 --b 0.4 -o cran.run

      stagewise eval qrels.txt bm25.run -m ndcg@10 -m map
    """
    import time

    with user_errors():
        check_output(output, [index_dir, queries], input_folders=(index_dir,))
        from stagewise._io import write_errors
        from stagewise.cli.index_cmd import progress_bar
        from stagewise.data.writers import write_run, write_trec_run
        from stagewise.dense.index import is_dense_index
        from stagewise.retrieval.collections import read_queries
        from stagewise.retrieval.index import BM25Index

        if is_dense_index(index_dir):
            from stagewise.cli.encode_cmd import dense_search

            if any(v is not None for v in (variant, k1, b, delta, epsilon)) or all_documents or workers != 1:
                typer.echo("stagewise: note: BM25 options are ignored for a dense index", err=True)
            fmt_name = None if fmt is QueryFormat.auto else fmt.value
            dense_search(index_dir, queries, k=k, output=output, fmt=fmt_name, name=name, renumber=renumber,
                         backend=backend, approximate=approximate)  # fmt: skip
            return
        started = time.perf_counter()
        index = BM25Index.load(index_dir)
        topics = read_queries(queries, format=None if fmt is QueryFormat.auto else fmt.value, renumber=renumber)
        progress, update = progress_bar("searching")
        with progress:
            top = index.topk(
                topics, k=k, variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon,
                all_documents=all_documents, workers=workers, progress=update,
            )  # fmt: skip
        run = top.to_run(index, name=name)
        if output is None:
            sys.stdout.flush()
            write_trec_run(run, sys.stdout.buffer)
        else:
            with write_errors(output):
                write_run(run, output, format="trec")
        elapsed = time.perf_counter() - started
        empty = f", {top.empty_queries} with no indexed term" if top.empty_queries else ""
        target = f" -> {output}" if output is not None else ""
        typer.echo(
            f"searched {len(topics):,} queries{empty} with {top.scoring}, top {k}, in {elapsed:.2f} s{target}",
            err=True,
        )
