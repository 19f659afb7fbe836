"""Hybrid retrieval in one call: BM25 and dense search, fused by any fusion method, then reranked to a depth.

Every stage's run is kept (:class:`HybridResult`), so each can be evaluated on its own: the point of
stagewise is to see which stage gained or lost what.

>>> import numpy as np
>>> from stagewise.dense.index import DenseIndex
>>> from stagewise.retrieval import BM25Index
>>> class Letters:
...     name, dimension, normalized = "letters", 3, False
...     def encode(self, texts):
...         return np.array([[t.count(c) for c in "abc"] for t in texts], dtype=np.float32)
>>> docs = {"d1": "a wing", "d2": "b lift", "d3": "cc heat"}
>>> result = hybrid({"q": "wing c"}, BM25Index.build(docs), DenseIndex.build(docs, Letters()), k=3)
>>> list(result.runs())
['bm25', 'dense', 'fused']
>>> result.fused.to_polars()["doc_id"].to_list()
['d1', 'd3', 'd2']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from stagewise.data.run import Run
from stagewise.errors import ConventionError


@dataclass
class HybridResult:
    """The run of each stage, in pipeline order, with how each was made."""

    bm25: Run
    dense: Run
    fused: Run
    reranked: Run | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def runs(self) -> dict[str, Run]:
        """``{stage: run}`` for the stages that ran: bm25, dense, fused and (with a reranker) reranked."""
        out = {"bm25": self.bm25, "dense": self.dense, "fused": self.fused}
        if self.reranked is not None:
            out["reranked"] = self.reranked
        return out

    def describe(self) -> dict[str, Any]:
        """A JSON-ready statement of the pipeline: each stage's run name, and the fusion and rerank records."""
        return {
            "stages": {name: run.name for name, run in self.runs().items()},
            "fusion": getattr(self.fused, "fusion", None),
            "rerank": getattr(self.reranked, "rerank", None),
            "seconds": self.seconds,
        }


def hybrid(
    queries: Any,
    bm25: Any,
    dense: Any,
    *,
    k: int = 1000,
    fusion: str = "rrf",
    fusion_depth: int | None = None,
    reranker: Any = None,
    rerank_depth: int = 100,
    docs: Any = None,
    backend: str | None = None,
    encoder: Any = None,
    **fusion_options: Any,
) -> HybridResult:
    """BM25 top-``k`` and dense top-``k``, fused with ``fusion`` (any name :func:`stagewise.fuse` takes, with
    ``fusion_options`` such as ``norm``, ``weights`` or ``rrf_k``), then, when ``reranker`` is given (a name or
    a :class:`~stagewise.rerank.Reranker`), the fused top ``rerank_depth`` reranked with the texts in ``docs``.

    ``queries`` maps ids to texts (or is a :class:`~stagewise.retrieval.Documents`); ``bm25`` is a
    :class:`~stagewise.retrieval.BM25Index`, ``dense`` a :class:`~stagewise.dense.DenseIndex` (queries encoded
    with its own model, or ``encoder``).
    """
    from stagewise.fusion.api import fuse

    seconds: dict[str, float] = {}
    started = time.perf_counter()
    bm25_run = bm25.search(queries, k=k, name="bm25")
    seconds["bm25"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    dense_run = dense.search(queries, k=k, encoder=encoder, backend=backend, name="dense")
    seconds["dense"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    fused = fuse({"bm25": bm25_run, "dense": dense_run}, fusion, depth=fusion_depth, **fusion_options)
    seconds["fused"] = round(time.perf_counter() - started, 3)
    result = HybridResult(bm25_run, dense_run, fused, seconds=seconds)
    if reranker is not None:
        if docs is None:
            raise ConventionError("reranking needs the documents' texts: give docs (the CLI's --corpus)")
        if isinstance(reranker, str):
            from stagewise.rerank.rerankers import make_reranker

            reranker = make_reranker(reranker)
        started = time.perf_counter()
        result.reranked = reranker.rerank(queries, fused, docs, rerank_depth)
        seconds["reranked"] = round(time.perf_counter() - started, 3)
    return result
