"""The rerank stage: a :class:`Reranker` protocol and rerankers chosen by name.

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
    "RERANKERS": "stagewise.rerank.rerankers",
    "make_reranker": "stagewise.rerank.rerankers",
}

__all__ = [
    "RERANKERS",
    "BM25ProximityReranker",
    "BiEncoderReranker",
    "CrossEncoderReranker",
    "PairReranker",
    "RerankedRun",
    "Reranker",
    "ScoreCache",
    "make_reranker",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rerank.base import PairReranker, RerankedRun, Reranker, ScoreCache
    from stagewise.rerank.rerankers import (
        RERANKERS,
        BiEncoderReranker,
        BM25ProximityReranker,
        CrossEncoderReranker,
        make_reranker,
    )


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
