"""Hybrid retrieval in one call: BM25 and dense search, fused by any fusion method, then reranked to a depth.

Every stage's run is kept (:class:`HybridResult`), so each can be evaluated on its own: the point of
stagewise is to see which stage gained or lost what. :func:`hybrid` is one use of
:class:`stagewise.pipeline.Pipeline` (:func:`hybrid_pipeline` is the value it runs); ``stagewise hybrid`` and
``stagewise demo`` are others.

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
>>> result.pipeline.name
'rrf(bm25,dense)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stagewise.data.run import Run
from stagewise.pipeline.pipeline import Pipeline, PipelineResult
from stagewise.pipeline.stages import Fuse, Fusion, Rerank, Retrieve


@dataclass
class HybridResult:
    """The run of each stage, in pipeline order, with how each was made (``result``: the pipeline's own
    :class:`~stagewise.pipeline.PipelineResult`)."""

    bm25: Run
    dense: Run
    fused: Run
    reranked: Run | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    result: PipelineResult | None = None

    @property
    def pipeline(self) -> Pipeline | None:
        """The :class:`~stagewise.pipeline.Pipeline` that made these runs."""
        return None if self.result is None else self.result.pipeline

    def runs(self) -> dict[str, Run]:
        """``{stage: run}`` for the stages that ran: bm25, dense, fused and (with a reranker) reranked."""
        out = {"bm25": self.bm25, "dense": self.dense, "fused": self.fused}
        if self.reranked is not None:
            out["reranked"] = self.reranked
        return out

    def describe(self) -> dict[str, Any]:
        """A JSON-ready statement of the pipeline: its canonical name, each stage's run name, and the fusion and
        rerank records."""
        named = {} if self.pipeline is None else {"pipeline": self.pipeline.name}
        return {
            **named,
            "stages": {name: run.name for name, run in self.runs().items()},
            "fusion": getattr(self.fused, "fusion", None),
            "rerank": getattr(self.reranked, "rerank", None),
            "seconds": self.seconds,
        }


def hybrid_pipeline(
    bm25: Any,
    dense: Any,
    *,
    k: int = 1000,
    fusion: str = "rrf",
    fusion_depth: int | None = None,
    reranker: Any = None,
    rerank_depth: int = 100,
    backend: str | None = None,
    encoder: Any = None,
    **fusion_options: Any,
) -> Pipeline:
    """The pipeline :func:`hybrid` runs: stages ``bm25`` and ``dense`` (runs named so), ``fused``, and with a
    reranker ``reranked``.

    >>> from stagewise.retrieval import BM25Index
    >>> index = BM25Index.build({"d1": "wing lift"})
    >>> hybrid_pipeline(index, index, fusion="rrf(rrf_k=20)", reranker="bm25-proximity", rerank_depth=10).name
    'rrf(bm25,dense,rrf_k=20)>>bm25-proximity(depth=10)'
    """
    # only the options given: any Retriever can take the dense stage's place, and the defaults are the index's own
    dense_options = {key: v for key, v in (("encoder", encoder), ("backend", backend)) if v is not None}
    return Pipeline(
        (
            Retrieve("bm25", bm25, k, run_name="bm25"),
            Retrieve("dense", dense, k, run_name="dense", options=dense_options),
        ),
        Fuse("fused", Fusion(fusion, depth=fusion_depth, **fusion_options)),
        None if reranker is None else Rerank("reranked", reranker, rerank_depth),
    )


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
    pipeline = hybrid_pipeline(
        bm25, dense, k=k, fusion=fusion, fusion_depth=fusion_depth, reranker=reranker, rerank_depth=rerank_depth,
        backend=backend, encoder=encoder, **fusion_options,
    )  # fmt: skip
    result = pipeline.run(queries, docs=docs)
    runs = result.runs
    return HybridResult(runs["bm25"], runs["dense"], runs["fused"], runs.get("reranked"), result.seconds, result)
