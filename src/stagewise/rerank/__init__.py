"""The rerank stage: a :class:`Reranker` protocol and rerankers chosen by name from a registry
(:data:`RERANKERS`; adding one is its module and its test, see :mod:`stagewise.rerank.registry`).

>>> from stagewise.rerank import make_reranker
>>> reranker = make_reranker("bm25-proximity")
>>> run = reranker.rerank({"q": "wing lift"}, {"q": {"d1": 2.0, "d2": 1.0}}, {"d1": "heat", "d2": "lift of a wing"})
>>> run.to_polars()["doc_id"].to_list()
['d2', 'd1']

Names load lazily; the neural rerankers import their optional dependencies only when they score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "Reranker": "stagewise.rerank.base",
    "RerankedRun": "stagewise.rerank.base",
    "PairReranker": "stagewise.rerank.base",
    "ScoreCache": "stagewise.rerank.base",
    "BM25ProximityReranker": "stagewise.rerank.rerankers",
    "BiEncoderReranker": "stagewise.rerank.rerankers",
    "CrossEncoderReranker": "stagewise.rerank.rerankers",
    "RERANKERS": "stagewise.rerank.registry",
    "RerankerEntry": "stagewise.rerank.registry",
    "make_reranker": "stagewise.rerank.registry",
    "reranker": "stagewise.rerank.registry",
}

__all__ = [
    "RERANKERS",
    "BM25ProximityReranker",
    "BiEncoderReranker",
    "CrossEncoderReranker",
    "PairReranker",
    "RerankedRun",
    "Reranker",
    "RerankerEntry",
    "ScoreCache",
    "make_reranker",
    "reranker",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rerank.base import PairReranker, RerankedRun, Reranker, ScoreCache
    from stagewise.rerank.registry import RERANKERS, RerankerEntry, make_reranker, reranker
    from stagewise.rerank.rerankers import BiEncoderReranker, BM25ProximityReranker, CrossEncoderReranker


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
