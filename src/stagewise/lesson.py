"""The seed lesson's small API, exactly as Part 2 of the lesson specifies it.

These functions work on one ranked list in plain Python. They are the teaching model; the vectorised engine
in :mod:`stagewise.metrics` computes the same quantities for whole runs with trec_eval's conventions.
Note the one convention that differs on purpose: the lesson's :func:`dcg` and :func:`ndcg` default to
exponential gain (``2**rel - 1``) and take the ideal ordering from the list's own labels, where the engine
defaults to linear gain and the ideal from all judged documents (trec_eval's convention).

>>> dcg([1, 0, 2])
2.5
>>> round(dcg([2, 1, 0]), 4)
3.6309
>>> round(ndcg([1, 0, 2]), 4), round(ndcg([1, 0, 2], gain="linear"), 4)
(0.6885, 0.7602)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

__all__ = ["dcg", "diagnose", "ndcg", "recall_at_k", "reciprocal_rank"]

_GAINS: dict[str, Callable[[float], float]] = {
    "exp": lambda rel: 2.0**rel - 1.0,
    "linear": lambda rel: float(rel),
}


def recall_at_k(ranked: Sequence[object], relevant: Collection[object], k: int) -> float:
    """Share of the relevant items found in the first ``k`` results; 0 if nothing is relevant.

    >>> recall_at_k(["a", "b", "c"], {"c", "z"}, 3)
    0.5
    >>> recall_at_k(["a"], set(), 1)
    0.0
    """
    relevant = set(relevant)
    if not relevant:
        return 0.0
    found = {item for item in list(ranked)[:k] if item in relevant}
    return len(found) / len(relevant)


def reciprocal_rank(ranked: Sequence[object], relevant: Collection[object]) -> float:
    """1 / rank of the first relevant result (ranks start at 1); 0 if none is relevant.

    >>> reciprocal_rank(["a", "b", "c"], {"b"})
    0.5
    """
    relevant = set(relevant)
    for rank, item in enumerate(ranked, start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def _gain(gain: str) -> Callable[[float], float]:
    try:
        return _GAINS[gain]
    except (KeyError, TypeError):
        known = ", ".join(repr(name) for name in _GAINS)
        raise ValueError(f"unknown gain {gain!r}; expected one of {known}") from None


def dcg(rels: Sequence[float], gain: str = "exp", k: int | None = None) -> float:
    """Discounted cumulative gain: sum of gain(rel) / log2(rank + 1) over the first ``k`` relevances.

    ``gain="exp"`` is ``2**rel - 1`` (Burges et al.), ``gain="linear"`` is ``rel`` (trec_eval).

    >>> dcg([1, 0, 2], gain="linear")
    2.0
    """
    to_gain = _gain(gain)
    head = list(rels) if k is None else list(rels)[:k]
    return sum(to_gain(rel) / math.log2(rank + 1) for rank, rel in enumerate(head, start=1))


def ndcg(rels: Sequence[float], gain: str = "exp", k: int | None = None) -> float:
    """DCG divided by the DCG of the same relevances sorted best first; 0 if that ideal is 0.

    >>> ndcg([0, 0])
    0.0
    """
    ideal = dcg(sorted(rels, reverse=True), gain=gain, k=k)
    if ideal == 0:
        return 0.0
    return dcg(rels, gain=gain, k=k) / ideal


def diagnose(retrieved_has_evidence: bool, answer_correct: bool) -> str:
    """Which stage failed: ``ok``, ``generation_failure``, ``retrieval_failure`` or ``lucky``.

    >>> diagnose(True, False)
    'generation_failure'
    """
    if retrieved_has_evidence:
        return "ok" if answer_correct else "generation_failure"
    return "lucky" if answer_correct else "retrieval_failure"
