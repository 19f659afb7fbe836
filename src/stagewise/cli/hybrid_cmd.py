"""``stagewise hybrid QUERIES --bm25 IDX --dense IDX -o OUTDIR [--fusion rrf] [--reranker NAME --corpus C]``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import Backend, CorpusFormat, ForceOption, ParentsOption, int_option, score_cache, user_errors

HYBRID_FILES = frozenset({"bm25.run", "dense.run", "fused.run", "reranked.run", "stages.json"})
MADE_BY = "stagewise hybrid"


def _not_ours(folder: Path) -> str | None:
    """A file showing the folder is not hybrid's: names like fused.run are common, its stages.json is not."""
    import contextlib
    import json
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):
        if json.loads((folder / "stages.json").read_text(encoding="utf-8")).get("made_by") == MADE_BY:
            return None
    names = sorted(os.listdir(folder))
    return names[0] if names else None


def _check_rerank_options(reranker: str | None, corpus: Path | None, cache: Path | None) -> None:
    """--corpus goes with --reranker (it reads the texts), and --corpus and --cache are for a reranker only."""
    from stagewise.errors import InputError

    if reranker is not None and corpus is None:
        raise InputError("--corpus", "is missing", hint="--reranker needs the documents' texts: add --corpus")
    if reranker is None and (corpus is not None or cache is not None):
        raise InputError(
            "--corpus" if corpus is not None else "--cache", "is only used with --reranker", hint="add --reranker"
        )


def _open_indexes(bm25: Path, dense: Path) -> tuple:
    """The two indexes, refused when they index corpora of different sizes (they would fuse into nonsense)."""
    from stagewise.dense.index import DenseIndex
    from stagewise.errors import InputError
    from stagewise.retrieval.index import BM25Index

    sparse, vectors = BM25Index.load(bm25), DenseIndex.load(dense)
    if len(sparse) != len(vectors):
        raise InputError(
            str(dense),
            f"indexes {len(vectors):,} documents and --bm25 {bm25} indexes {len(sparse):,}",
            hint="give both indexes of the same corpus",
        )
    return sparse, vectors


def _write(result: Any, output: Path) -> None:
    """Every stage's run and stages.json, landing together: one folder, swapped in at once."""
    import json

    from stagewise import folders
    from stagewise._io import write_errors
    from stagewise.data.writers import write_run

    def write(folder: Path) -> None:
        for stage, run in result.runs().items():
            write_run(run, folder / f"{stage}.run", format="trec")
        described = {"made_by": MADE_BY, **result.describe()}
        (folder / "stages.json").write_text(json.dumps(described, indent=2, default=str) + "\n")

    with write_errors(output):
        folders.replace_folder(output, write, owned=HYBRID_FILES)


def hybrid_command(
    queries: Annotated[Path, typer.Argument(help="Queries (BEIR folder, JSONL, TSV or SMART).")],
    bm25: Annotated[Path, typer.Option("--bm25", help="A BM25 index from `stagewise index`.")],
    dense: Annotated[Path, typer.Option("--dense", help="A dense index from `stagewise encode`.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder for the runs: bm25.run, dense.run, fused.run, reranked.run.")
    ],
    k: Annotated[int, typer.Option("-k", **int_option(1), help="Results per query from each retriever.")] = 1000,
    fusion: Annotated[
        str,
        typer.Option(help="Fusion method, with parameters: rrf, rrf(rrf_k=20), combsum, wsum(weights=(0.3,0.7))..."),
    ] = "rrf",
    norm: Annotated[
        str | None, typer.Option(help="Score normalisation for score-based fusion (default minmax).")
    ] = None,
    fusion_depth: Annotated[
        int | None, typer.Option(**int_option(1), help="Results per run that fusion reads (default all).")
    ] = None,
    reranker: Annotated[
        str | None,
        typer.Option(
            parser=RegistryChoice("stagewise.rerank.registry", "RERANKERS"),
            help="Rerank the fused run: {names:stagewise.rerank.registry:RERANKERS}, parameters in parentheses "
            "(stagewise rerank --help lists them).",
        ),
    ] = None,
    depth: Annotated[
        int, typer.Option(**int_option(1), help="Fused results per query to rerank (the rest are dropped).")
    ] = 100,
    corpus: Annotated[Path | None, typer.Option(help="Documents' texts, needed by --reranker.")] = None,
    backend: Annotated[
        Backend | None, typer.Option(help="Encode queries with torch or onnx (default: the index's).")
    ] = None,
    query_format: Annotated[CorpusFormat, typer.Option(help="Query file format.")] = CorpusFormat.auto,
    renumber: Annotated[
        bool, typer.Option("--renumber", help="Number queries 1..n in file order (Cranfield's cran.qry needs it).")
    ] = False,
    cache: Annotated[
        Path | None, typer.Option(help="Reranker score cache (SQLite); default in ~/.cache/stagewise.")
    ] = None,
    force: ForceOption = False,
    parents: ParentsOption = False,
) -> None:
    """BM25 + dense retrieval, fused, then reranked: every stage's run written, so each can be evaluated.

    Examples:

      stagewise hybrid queries.jsonl --bm25 bm25-idx --dense dense-idx -o hybrid/

      stagewise hybrid q.jsonl --bm25 b --dense d --reranker bm25-proximity --corpus corpus.jsonl -o hybrid/

      stagewise eval qrels.txt hybrid/bm25.run hybrid/dense.run hybrid/fused.run hybrid/reranked.run -m ndcg@10
    """
    import time

    with user_errors():
        from stagewise import folders
        from stagewise.hybrid import hybrid
        from stagewise.retrieval.collections import read_corpus, read_queries

        # before any work: the folder is replaced whole at the end, so it must be this command's or new
        inputs = [queries, bm25, dense] + ([corpus] if corpus is not None else [])
        folders.check_target(
            output,
            owned=HYBRID_FILES,
            force=force,
            parents=parents,
            inputs=inputs,
            what="hybrid output folder",
            foreign_file=_not_ours,
        )
        _check_rerank_options(reranker, corpus, cache)
        cache_path = score_cache(cache, inputs=inputs, output=output, folder=True) if reranker is not None else None
        started = time.perf_counter()
        topics = read_queries(
            queries, format=None if query_format is CorpusFormat.auto else query_format.value, renumber=renumber
        )
        rr = None
        if reranker is not None:
            from stagewise.rerank.rerankers import make_reranker

            rr = make_reranker(reranker, cache=cache_path)
        docs = read_corpus(corpus) if corpus is not None else None
        options = {} if norm is None else {"norm": norm}
        sparse, vectors = _open_indexes(bm25, dense)
        result = hybrid(
            topics, sparse, vectors, k=k, fusion=fusion, fusion_depth=fusion_depth,
            reranker=rr, rerank_depth=depth, docs=docs, backend=backend and backend.value, **options,
        )  # fmt: skip
        _write(result, output)
        stages = ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in result.seconds.items())
        typer.echo(
            f"hybrid over {len(topics):,} queries ({stages}); total {time.perf_counter() - started:.2f} s -> "
            f"{output}/{{{','.join(result.runs())}}}.run and stages.json",
            err=True,
        )
