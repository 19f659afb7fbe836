"""Stages composed into one pipeline value: retrieve, then fuse, then rerank, every stage's run kept.

>>> from stagewise.pipeline import Fuse, Pipeline, Retrieve
>>> from stagewise.retrieval import BM25Index
>>> docs = {"d1": "wing lift", "d2": "heat transfer", "d3": "lift of a plate"}
>>> p = Pipeline([Retrieve("a", BM25Index.build(docs)), Retrieve("b", BM25Index.build(docs, variant="bm25l"))],
...              Fuse("fused", "combsum"))
>>> p.name, list(p.run({"q": "lift"}).runs)
('combsum(a,b)', ['a', 'b', 'fused'])

The stage protocols: :class:`Retriever` and :class:`Fuser` (from :mod:`stagewise.protocols`),
:class:`Reranker` (:mod:`stagewise.rerank.base`) and :class:`Judge` (the RAG support judge,
:class:`stagewise.rag.judges.SupportJudge`), named here so one import finds them all. :func:`open_index` opens
a BM25 or dense index folder by what it holds; :func:`search_index` searches one. Names load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "Pipeline": "stagewise.pipeline.pipeline",
    "PipelineResult": "stagewise.pipeline.pipeline",
    "StageEvent": "stagewise.pipeline.pipeline",
    "Retrieve": "stagewise.pipeline.stages",
    "Fuse": "stagewise.pipeline.stages",
    "Rerank": "stagewise.pipeline.stages",
    "Fusion": "stagewise.pipeline.stages",
    "SearchOptions": "stagewise.pipeline.indexes",
    "Searched": "stagewise.pipeline.indexes",
    "index_kind": "stagewise.pipeline.indexes",
    "open_index": "stagewise.pipeline.indexes",
    "search_index": "stagewise.pipeline.indexes",
    "Retriever": "stagewise.protocols",
    "Fuser": "stagewise.protocols",
    "Reranker": "stagewise.rerank.base",
}

__all__ = [
    "Fuse",
    "Fuser",
    "Fusion",
    "Judge",
    "Pipeline",
    "PipelineResult",
    "Rerank",
    "Reranker",
    "Retrieve",
    "Retriever",
    "SearchOptions",
    "Searched",
    "StageEvent",
    "index_kind",
    "open_index",
    "search_index",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.pipeline.indexes import Searched, SearchOptions, index_kind, open_index, search_index
    from stagewise.pipeline.pipeline import Pipeline, PipelineResult, StageEvent
    from stagewise.pipeline.stages import Fuse, Fusion, Rerank, Retrieve
    from stagewise.protocols import Fuser, Retriever
    from stagewise.rag.judges import SupportJudge as Judge
    from stagewise.rerank.base import Reranker

_getattr, __dir__ = lazy_exports(globals(), _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "Judge":  # the RAG support judge, under the name the stage protocols share
        from stagewise.rag.judges import SupportJudge

        globals()["Judge"] = SupportJudge
        return SupportJudge
    return _getattr(name)
