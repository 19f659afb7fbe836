"""Graded measures that walk each ranking in order: trec_eval's ``ndcg_rel`` and ``Rndcg``.

They are defined by a walk with data-dependent sampling points, so they loop per query in Python; neither is on
the hot path of the common metrics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from stagewise.metrics import kernels as K
from stagewise.metrics.context import EvalContext


def ndcg_rel(ctx: EvalContext, gain: K.GainFunction = K.linear_gain) -> np.ndarray:
    """Mean over the query's relevant documents of nDCG at each one's rank (trec_eval ``ndcg_rel``)."""
    return _per_query(ctx, gain, _ndcg_rel)


def rndcg(ctx: EvalContext, gain: K.GainFunction = K.linear_gain) -> np.ndarray:
    """Mean nDCG sampled where the ideal gain steps down (trec_eval ``Rndcg``); 0 when R = 0."""
    return np.where(K.num_rel(ctx) == 0, 0.0, _per_query(ctx, gain, _rndcg))


def _per_query(
    ctx: EvalContext,
    gain: K.GainFunction,
    measure: Callable[[list[float], list[float], int], float],
) -> np.ndarray:
    """Apply ``measure(run_gains, ideal_gains, ret)`` per query; run gains padded with zeros to ``ret``."""
    gains = gain(ctx.row_label)
    ideal_gain = gain(ctx.judgement_label)
    out = np.zeros(ctx.n_queries, dtype=np.float64)
    row_bounds = np.searchsorted(ctx.row_query, np.arange(ctx.n_queries + 1))
    order = np.lexsort((-ideal_gain, ctx.judgement_query))
    jq, jg = ctx.judgement_query[order], ideal_gain[order]
    judgement_bounds = np.searchsorted(jq, np.arange(ctx.n_queries + 1))
    for q in range(ctx.n_queries):
        ret = int(ctx.num_ret[q])
        run_gains = [0.0] * ret
        lo, hi = row_bounds[q], row_bounds[q + 1]
        for rank, g in zip(ctx.row_rank[lo:hi].tolist(), gains[lo:hi].tolist(), strict=True):
            run_gains[rank - 1] = g
        ideal = [g for g in jg[judgement_bounds[q] : judgement_bounds[q + 1]].tolist() if g > 0]
        out[q] = measure(run_gains, ideal, ret)
    return out


def _dcg_at(gains: Sequence[float], k: int) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]) if g != 0)


def _ndcg_rel(run_gains: list[float], ideal: list[float], ret: int) -> float:
    """Mean over the relevant documents of nDCG at each one's rank; unretrieved ones score nDCG@ret / ideal."""
    total, seen = 0.0, 0
    for i, g in enumerate(run_gains):
        if g > 0:
            idcg = _dcg_at(ideal, i + 1)
            total += _dcg_at(run_gains, i + 1) / idcg if idcg else 0.0
            seen += 1
    if ideal:
        full = _dcg_at(ideal, len(ideal))
        total += (len(ideal) - seen) * (_dcg_at(run_gains, ret) / full if full else 0.0)
    return total / len(ideal) if total > 0 else 0.0


def _rndcg(run_gains: list[float], ideal: list[float], ret: int) -> float:
    """Mean nDCG sampled where the ideal gain steps down, plus once at the end of a long ranking."""
    samples: list[float] = []

    def at(i: int) -> float:
        return ideal[i] if i < len(ideal) else 0.0

    previous = ideal[0] if ideal else 0.0
    current = previous
    position = 0
    while position < ret and current > 0:
        current = at(position)
        if current != previous:
            idcg = _dcg_at(ideal, position)
            if idcg > 0:
                samples.append(_dcg_at(run_gains, position) / idcg)
            previous = current
        position += 1
    if position < ret:
        idcg = _dcg_at(ideal, len(ideal))
        if idcg > 0:
            samples.append(_dcg_at(run_gains, ret) / idcg)
    while current > 0:
        current = at(position)
        if current != previous:
            idcg = _dcg_at(ideal, position)
            if idcg > 0:
                samples.append(_dcg_at(run_gains, ret) / idcg)
            previous = current
        position += 1
    return sum(samples) / len(samples) if samples else math.nan
