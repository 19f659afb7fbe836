"""``stagewise rerank RUN --corpus C --queries Q --reranker NAME --depth 100 -o OUT``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import CorpusFormat, check_output, emit_run, int_option, score_cache, user_errors


def rerank_command(
    run_file: Annotated[Path, typer.Argument(help="The run to rerank (TREC, CSV, TSV, JSONL or Parquet).")],
    corpus: Annotated[Path, typer.Option("--corpus", help="Documents (BEIR folder, JSONL, TSV or SMART).")],
    queries: Annotated[Path, typer.Option("--queries", help="Queries (BEIR folder, JSONL, TSV or SMART).")],
    reranker: Annotated[
        str,
        typer.Option(
            parser=RegistryChoice("stagewise.rerank.registry", "RERANKERS"),
            help="The reranker: {names:stagewise.rerank.registry:RERANKERS}; parameters in parentheses, as in "
            "bm25-proximity(k1=0.9,alpha=0.5) or cross-encoder(path='DIR'). Each with its parameters at their "
            "defaults: {names:stagewise.rerank.registry:DEFAULT_FORMS}.",
        ),
    ] = "bm25-proximity",
    depth: Annotated[
        int, typer.Option(**int_option(1), help="Results per query to rerank; results below are dropped.")
    ] = 100,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="TREC run file to write (atomically); default stdout.")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite score cache (model, query hash, document hash); default in ~/.cache/stagewise."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Keep scores in memory only.")] = False,
    batch_size: Annotated[
        int | None, typer.Option(**int_option(1), help="Pairs per batch (pairs are length-sorted first).")
    ] = None,
    corpus_format: Annotated[CorpusFormat, typer.Option(help="Corpus format.")] = CorpusFormat.auto,
    query_format: Annotated[CorpusFormat, typer.Option(help="Query file format.")] = CorpusFormat.auto,
    renumber: Annotated[
        bool, typer.Option("--renumber", help="Number queries 1..n in file order (Cranfield's cran.qry needs it).")
    ] = False,
    name: Annotated[str | None, typer.Option(help="Run tag (default the reranker's name).")] = None,
) -> None:
    """Rerank each query's first --depth results of a run and write the reranked run.

    Pairs of all queries are packed into length-sorted batches; scores are cached by (model, query, document
    hash), so a rerun scores nothing again.

    Examples:

      stagewise rerank fused.run --corpus corpus.jsonl --queries queries.jsonl --reranker bm25-proximity -o rr.run

      stagewise rerank fused.run --corpus c.jsonl --queries q.jsonl --reranker "cross-encoder(path='ce')" --depth 50
    """
    import time

    with user_errors():
        check_output(output, [run_file, corpus, queries], input_folders=(corpus, queries))
        cache_path = score_cache(cache, inputs=[run_file, corpus, queries], output=output, no_cache=no_cache)
        from stagewise.cli.common import progress_bar
        from stagewise.data.readers import read_run
        from stagewise.rerank.registry import make_reranker
        from stagewise.retrieval.collections import read_corpus, read_queries

        started = time.perf_counter()
        run = read_run(run_file)
        docs = read_corpus(corpus, format=None if corpus_format is CorpusFormat.auto else corpus_format.value)
        topics = read_queries(
            queries, format=None if query_format is CorpusFormat.auto else query_format.value, renumber=renumber
        )
        model = make_reranker(reranker, cache=cache_path, batch_size=batch_size)
        progress, update = progress_bar("reranking")
        with progress:
            reranked = model.rerank(topics, run, docs, depth=depth, progress=update, name=name)
        emit_run(reranked, output)
        stats = reranked.rerank
        target = f" -> {output}" if output is not None else ""
        typer.echo(
            f"reranked {stats['queries']:,} queries to depth {depth} with {model.name}: {stats['pairs']:,} pairs, "
            f"{stats['scored']:,} scored, {stats['from_cache']:,} from the cache, in "
            f"{time.perf_counter() - started:.2f} s{target}",
            err=True,
        )
