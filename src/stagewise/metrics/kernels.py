"""Vectorised per-query kernels over an :class:`EvalContext`, one function per measure family.

Each kernel returns a float64 array with one value per evaluated query. Formulas follow trec_eval 10
(see docs/trec_eval_semantics.md); the docstrings say where a measure departs from a textbook form.
Notation: ``R`` relevant judgements of the query, ``ret`` results retrieved, ``rels(k)`` relevant results
in the top ``k``, ranks 1-based.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise.data.columns import position_in_segment
from stagewise.errors import MetricError
from stagewise.metrics.context import EvalContext

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

GEO_MEAN_FLOOR = 1e-5  # trec_eval's MIN_GEO_MEAN: a per-query value is floored here before the log


# -- shared intermediates -----------------------------------------------------------------------------------


def _bincount(ctx: EvalContext, groups: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    return np.bincount(groups, weights=weights, minlength=ctx.n_queries).astype(np.float64)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, and 0 where the denominator is 0."""
    out = np.zeros(len(numerator), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def num_rel(ctx: EvalContext) -> np.ndarray:
    """R: judgements with a label >= the relevance level (labels below 0 never count)."""

    def compute() -> np.ndarray:
        relevant = (ctx.judgement_label >= ctx.level) & (ctx.judgement_label >= 0)
        return _bincount(ctx, ctx.judgement_query[relevant])

    return ctx.cached("num_rel", compute)


def num_nonrel_judged(ctx: EvalContext) -> np.ndarray:
    """Judgements with 0 <= label < relevance level."""

    def compute() -> np.ndarray:
        nonrel = (ctx.judgement_label >= 0) & (ctx.judgement_label < ctx.level)
        return _bincount(ctx, ctx.judgement_query[nonrel])

    return ctx.cached("num_nonrel_judged", compute)


def _relevant_rows(ctx: EvalContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, rank, rels(rank)) of every relevant retrieved result, by query then rank."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mask = (ctx.row_label >= ctx.level) & (ctx.row_label >= 0)
        query, rank = ctx.row_query[mask], ctx.row_rank[mask]
        return query, rank, position_in_segment(query) + 1

    return ctx.cached("relevant_rows", compute)


def _rels_within(ctx: EvalContext, cutoff: np.ndarray | int) -> np.ndarray:
    """rels(cutoff) per query; ``cutoff`` a scalar or one value per query."""
    query, rank, _ = _relevant_rows(ctx)
    limit = cutoff if np.isscalar(cutoff) else np.asarray(cutoff)[query]
    return _bincount(ctx, query[rank <= limit])


def num_ret(ctx: EvalContext) -> np.ndarray:
    return ctx.num_ret.astype(np.float64)


def num_rel_ret(ctx: EvalContext) -> np.ndarray:
    return _bincount(ctx, _relevant_rows(ctx)[0])


def num_nonrel_judged_ret(ctx: EvalContext) -> np.ndarray:
    mask = (ctx.row_label >= 0) & (ctx.row_label < ctx.level)
    return _bincount(ctx, ctx.row_query[mask])


# -- precision and recall family ------------------------------------------------------------------------------


def precision(ctx: EvalContext, k: int) -> np.ndarray:
    """P@k = rels(k) / k; missing results below ``ret`` count as non-relevant (trec_eval)."""
    return _rels_within(ctx, k) / k


def recall(ctx: EvalContext, k: int) -> np.ndarray:
    """recall@k = rels(k) / R; 0 when R = 0."""
    return _divide(_rels_within(ctx, k), num_rel(ctx))


def relative_precision(ctx: EvalContext, k: int) -> np.ndarray:
    """rels(k) / min(k, R); 0 when R = 0."""
    return _divide(_rels_within(ctx, k), np.minimum(k, num_rel(ctx)))


def success(ctx: EvalContext, k: int) -> np.ndarray:
    """1 if a relevant result is in the top k, else 0."""
    return (_rels_within(ctx, k) > 0).astype(np.float64)


def r_precision(ctx: EvalContext) -> np.ndarray:
    """Rprec = rels(R) / R."""
    big_r = num_rel(ctx)
    return _divide(_rels_within(ctx, big_r), big_r)


def r_precision_mult(ctx: EvalContext, x: float) -> np.ndarray:
    """rels(c) / c with c = floor(x * R + 0.9) (trec_eval's rounding); 0 when c = 0."""
    cutoff = np.floor(x * num_rel(ctx) + 0.9)
    return _divide(_rels_within(ctx, cutoff), cutoff)


def reciprocal_rank(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """1 / rank of the first relevant result (within the top k when k is given); 0 if none."""
    query, rank, count = _relevant_rows(ctx)
    first = count == 1
    if k is not None:
        first &= rank <= k
    out = np.zeros(ctx.n_queries, dtype=np.float64)
    out[query[first]] = 1.0 / rank[first]
    return out


def average_precision(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """AP = sum over relevant results (in the top k, if given) of rels(rank)/rank, divided by R."""
    query, rank, count = _relevant_rows(ctx)
    if k is not None:
        keep = rank <= k
        query, rank, count = query[keep], rank[keep], count[keep]
    return _divide(_bincount(ctx, query, count / rank), num_rel(ctx))


def geometric_log(values: np.ndarray) -> np.ndarray:
    """ln(max(x, 1e-5)): what trec_eval stores per query for gm_map and gm_bpref."""
    return np.log(np.maximum(values, GEO_MEAN_FLOOR))


def bpref(ctx: EvalContext) -> np.ndarray:
    """bpref: for each relevant result, 1 - min(n, R) / min(N, R), where n counts the judged non-relevant
    results above it and N the query's judged non-relevant documents; the sum over R. Unjudged results and
    labels below 0 are skipped."""
    nonrel = (ctx.row_label >= 0) & (ctx.row_label < ctx.level)
    relevant = (ctx.row_label >= ctx.level) & (ctx.row_label >= 0)
    before = _segment_exclusive_cumsum(ctx.row_query, nonrel.astype(np.int64))
    query = ctx.row_query[relevant]
    n = before[relevant].astype(np.float64)
    big_r = num_rel(ctx)[query]
    big_n = num_nonrel_judged(ctx)[query]
    denominator = np.minimum(big_n, big_r)
    term = np.where(n == 0, 1.0, 1.0 - _divide(np.minimum(n, big_r), denominator))
    return _divide(_bincount(ctx, query, term), num_rel(ctx))


def inferred_ap(ctx: EvalContext) -> np.ndarray:
    """infAP (Yilmaz and Aslam): AP estimated from a judged sample; labels below 0 are sampled-unjudged.

    For a relevant result at 0-based index j with r relevant, n judged non-relevant and u sampled-unjudged
    results up to it: 1 if j = 0, else 1/(j+1) + j/(j+1) * (r-1+n+u)/j * (r-1+e)/(r-1+n+2e), e = 1e-5.
    """
    eps = 1e-5
    relevant = (ctx.row_label >= ctx.level) & (ctx.row_label >= 0)
    nonrel = (ctx.row_label >= 0) & (ctx.row_label < ctx.level)
    sampled_out = ctx.row_label < 0
    n = _segment_exclusive_cumsum(ctx.row_query, nonrel.astype(np.int64))[relevant].astype(np.float64)
    u = _segment_exclusive_cumsum(ctx.row_query, sampled_out.astype(np.int64))[relevant].astype(np.float64)
    r = _segment_exclusive_cumsum(ctx.row_query, relevant.astype(np.int64))[relevant].astype(np.float64) + 1
    j = (ctx.row_rank[relevant] - 1).astype(np.float64)
    safe_j = np.where(j == 0, 1.0, j)
    term = np.where(
        j == 0,
        1.0,
        1.0 / (j + 1) + (j / (j + 1)) * ((r - 1 + n + u) / safe_j) * ((r - 1 + eps) / (r - 1 + n + 2 * eps)),
    )
    return _divide(_bincount(ctx, ctx.row_query[relevant], term), num_rel(ctx))


def _segment_exclusive_cumsum(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For sorted ``groups``: the sum of ``values`` before each element within its group.

    Integers take one running sum over all groups, less each group's start (exact). Floating-point sums start
    afresh in each group, adding its values in order (as trec_eval does per query): one running sum minus the
    group's start would make a query's last bits depend on the queries before it, so a query would not get the
    same value when evaluated with other queries (a part of a run, on the stream and Dask engines)."""
    if len(groups) == 0:
        return np.cumsum(values) - values
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    lengths = np.diff(np.r_[starts, len(groups)])
    if values.dtype.kind != "f":
        total = np.cumsum(values) - values
        return total - np.repeat(total[starts], lengths)
    position = np.arange(len(values)) - np.repeat(starts, lengths)
    group = np.repeat(np.arange(len(starts)), lengths)
    out = np.empty_like(values)
    width = int(lengths.max())
    if len(starts) * (width + 1) > 4 * len(values) + 2**20:  # very uneven groups: the long ones one by one
        long = lengths > 64
        for start, length in zip(starts[long].tolist(), lengths[long].tolist(), strict=True):
            out[start] = 0.0
            np.cumsum(values[start : start + length - 1], out=out[start + 1 : start + length])
        width = int(lengths[~long].max()) if (~long).any() else 0
    short = lengths[group] <= width
    grid = np.zeros((len(starts), width + 1), dtype=values.dtype)  # a row per group: one cumsum per row
    grid[group[short], position[short] + 1] = values[short]
    out[short] = np.cumsum(grid, axis=1)[group[short], position[short]]
    return out


def _interpolated_precision(ctx: EvalContext) -> np.ndarray:
    """At each relevant result: the highest precision at it or any rank below it (precision only rises at
    relevant results, so the relevant results below are enough)."""

    def compute() -> np.ndarray:
        query, rank, count = _relevant_rows(ctx)
        frame = pl.DataFrame({"q": query, "p": count / rank})
        return frame.select(pl.col("p").reverse().cum_max().reverse().over("q"))["p"].to_numpy()

    return ctx.cached("interpolated_precision", compute)


def _precision_at_recall_count(ctx: EvalContext, needed: np.ndarray) -> np.ndarray:
    """Interpolated precision at the ``needed``-th relevant result (per query; 0 means the first);
    0 where fewer relevant results were retrieved."""
    query, _, count = _relevant_rows(ctx)
    found = _bincount(ctx, query)
    target = np.maximum(needed, 1)
    at = (count == target[query]) & (needed[query] <= found[query])
    out = np.zeros(ctx.n_queries, dtype=np.float64)
    out[query[at]] = _interpolated_precision(ctx)[at]
    return out


def iprec_at_recall(ctx: EvalContext, x: float, rounding: float = 0.5) -> np.ndarray:
    """Interpolated precision at recall x, reaching floor(x * R + rounding) relevant results: round(x * R),
    half away from 0, with trec_eval 10's ``rounding=0.5``; trec_eval 9 (pytrec_eval, so ir_measures'
    ``IPrec``) adds 0.9, so recall 0.4 of R = 3 needs 2 relevant results there and 1 here."""
    needed = np.floor(x * num_rel(ctx) + rounding)
    return _precision_at_recall_count(ctx, needed)


def eleven_point_average(ctx: EvalContext, points: tuple[float, ...]) -> np.ndarray:
    """Mean interpolated precision over recall points, each reaching round(x * R) relevant results."""
    total = np.zeros(ctx.n_queries, dtype=np.float64)
    for x in points:
        total += iprec_at_recall(ctx, x)
    return total / len(points)


# -- set measures -------------------------------------------------------------------------------------------------


def set_precision(ctx: EvalContext) -> np.ndarray:
    return _divide(num_rel_ret(ctx), num_ret(ctx))


def set_recall(ctx: EvalContext) -> np.ndarray:
    return _divide(num_rel_ret(ctx), num_rel(ctx))


def set_relative_precision(ctx: EvalContext) -> np.ndarray:
    return _divide(num_rel_ret(ctx), np.minimum(num_ret(ctx), num_rel(ctx)))


def set_map(ctx: EvalContext) -> np.ndarray:
    found = num_rel_ret(ctx)
    return _divide(found * found, num_ret(ctx) * num_rel(ctx))


def set_f(ctx: EvalContext, beta: float = 1.0) -> np.ndarray:
    """(beta + 1) P R / (beta P + R) on the whole retrieved set (trec_eval's weighting, beta = 1 is F1)."""
    p, r = set_precision(ctx), set_recall(ctx)
    return _divide((beta + 1) * p * r, beta * p + r)


def utility(ctx: EvalContext, a: float, b: float, c: float, d: float, collection_size: int = 0) -> np.ndarray:
    """a * rel_ret + b * nonrel_ret + c * rel_missed + d * nonrel_missed (collection size from trec_eval -N)."""
    found, ret, big_r = num_rel_ret(ctx), num_ret(ctx), num_rel(ctx)
    return a * found + b * (ret - found) + c * (big_r - found) + d * (collection_size + found - ret - big_r)


def unjudged(ctx: EvalContext, k: int) -> np.ndarray:
    """Share of the top k that is unjudged (absent from the qrels, or labelled below 0), over k."""
    judged = _bincount(ctx, ctx.row_query[(ctx.row_label >= 0) & (ctx.row_rank <= k)])
    return (np.minimum(k, num_ret(ctx)) - judged) / k


def unjudged_at(ctx: EvalContext, k: int) -> np.ndarray:
    """unjudged@k = 1 - judged@k: the top k's unjudged share, ranks past the end of the run counted as
    unjudged (a run of 10 results has unjudged@100 >= 0.9). ``unj@k`` (:func:`unjudged`, trec_eval's) counts
    them as neither, so the two differ exactly when a query has fewer than k results."""
    return 1.0 - judged(ctx, k)


def judged_retrieved(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """ir_measures' ``Judged@k``: judged results among the retrieved top k, over min(k, ret) (all retrieved
    results without k); 0 when nothing was retrieved. Any judgement counts, a label below 0 too (ir_measures
    asks only whether the document is in the qrels)."""
    rows = ctx.row_query if k is None else ctx.row_query[ctx.row_rank <= k]
    depth = num_ret(ctx) if k is None else np.minimum(k, num_ret(ctx))
    return _divide(_bincount(ctx, rows), depth)


def hits(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """ranx's hits@k: the number of relevant results in the top k (in the whole list without k)."""
    return num_rel_ret(ctx) if k is None else _rels_within(ctx, k)


def f1(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """ranx's f1@k: 2 P R / (P + R) with P = hits@k / k and R = hits@k / R (k = ret without a cutoff, so the
    whole list's F1); 0 when R = 0, k = 0 or no hit."""
    found = hits(ctx, k)
    depth = num_ret(ctx) if k is None else np.full(ctx.n_queries, float(k))
    p, r = _divide(found, depth), _divide(found, num_rel(ctx))
    return _divide(2 * p * r, p + r)


def accuracy(ctx: EvalContext, k: int | None = None) -> np.ndarray:
    """ir_measures' ``Accuracy``: the chance that a relevant result of the top k is ranked above a
    non-relevant one of the top k (unjudged results count as non-relevant), 1 - sum over relevant results of
    (non-relevant above it) / (m * n) with m relevant and n non-relevant results in the top k.

    0 where no relevant result was retrieved (ir_measures gives such a query no value, so its mean leaves it
    out); 1 where every result of the top k is relevant (ir_measures divides by zero there).
    """
    query, rank, count = _relevant_rows(ctx)
    if k is not None:
        keep = rank <= k
        query, rank, count = query[keep], rank[keep], count[keep]
    m = _bincount(ctx, query)
    depth = num_ret(ctx) if k is None else np.minimum(k, num_ret(ctx))
    n = depth - m
    above = _bincount(ctx, query, (rank - count).astype(np.float64))
    return np.where(m == 0, 0.0, np.where(n == 0, 1.0, 1.0 - _divide(above, m * n)))


def compat(ctx: EvalContext, p: float = 0.95, normalize: bool = True) -> np.ndarray:
    """Compatibility (Clarke, Vtyurina and Smucker 2020), as ir_measures computes it: rank-biased overlap
    with persistence p between the run and the ideal ranking (judgements with label > 0, higher labels first,
    equal labels in the run's order, unretrieved ones last), to depth D = max(ret, number of them); with
    ``normalize``, divided by the ideal ranking's overlap with itself.

    A relevant result at rank r and ideal position s is in both prefixes from depth max(r, s) on, so it adds
    sum over i = max(r, s)..D of p**(i-1) / i: one prefix sum, no walk.
    """
    positive = ctx.judgement_label > 0
    jq, jl = ctx.judgement_query[positive], ctx.judgement_label[positive]
    ideal_size = _bincount(ctx, jq).astype(np.int64)
    depth = np.maximum(ctx.num_ret.astype(np.int64), ideal_size)
    width = int(depth.max()) if len(depth) else 0
    i = np.arange(1, width + 1, dtype=np.float64)
    weight = np.power(p, i - 1)
    tail = np.r_[0.0, np.cumsum(weight / i)]  # tail[n] = sum over i <= n of p**(i-1) / i
    rel = ctx.row_label > 0
    q, rank, label = ctx.row_query[rel], ctx.row_rank[rel], ctx.row_label[rel]
    span = int(max(jl.max() if len(jl) else 0, label.max() if len(label) else 0)) + 2
    keys = np.sort(jq * span + jl)
    higher = np.searchsorted(keys, q * span + span - 1, side="right") - np.searchsorted(keys, q * span + label, "right")
    order = np.lexsort((rank, label, q))
    same_above = np.empty(len(q), dtype=np.int64)
    same_above[order] = position_in_segment(q[order] * span + label[order])
    start = np.maximum(rank, higher + same_above + 1)
    raw = _bincount(ctx, q, tail[depth[q]] - tail[start - 1])
    if not normalize:
        return _divide(raw, np.r_[0.0, np.cumsum(weight)][depth])
    best = _divide(1.0 - np.power(p, ideal_size), np.full(ctx.n_queries, 1.0 - p))
    best += ideal_size * (tail[depth] - tail[ideal_size])
    return _divide(raw, best)


def condensed(ctx: EvalContext) -> EvalContext:
    """``ctx`` with its unjudged results removed and the ranks closed up (trec_eval ``-J``, ir_measures'
    ``judged_only=True``), for one measure; made once per context."""

    def compute() -> EvalContext:
        judged_rows = ctx.row_label >= 0
        query, label = ctx.row_query[judged_rows], ctx.row_label[judged_rows]
        return dataclasses.replace(
            ctx,
            conventions=dataclasses.replace(ctx.conventions, judged_only=True),
            row_query=query,
            row_rank=position_in_segment(query) + 1,
            row_label=label,
            num_ret=np.bincount(query, minlength=ctx.n_queries).astype(np.int64),
            _cache={},
        )

    return ctx if ctx.conventions.judged_only else ctx.cached("condensed", compute)


def judged(ctx: EvalContext, k: int) -> np.ndarray:
    """judged@k: judged results in the top k, over k (as P@k counts: missing results count as unjudged).

    A result labelled below 0 counts as unjudged, as trec_eval reads such labels.
    """
    return _bincount(ctx, ctx.row_query[(ctx.row_label >= 0) & (ctx.row_rank <= k)]) / k


def bin_g(ctx: EvalContext) -> np.ndarray:
    """binG: sum over relevant results of 1 / log2(2 + non-relevant results above), over R."""
    query, rank, count = _relevant_rows(ctx)
    return _divide(_bincount(ctx, query, 1.0 / np.log2(2.0 + (rank - count))), num_rel(ctx))


# -- gain-based measures ----------------------------------------------------------------------------------------

GainFunction = Callable[[np.ndarray], np.ndarray]


def linear_gain(labels: np.ndarray) -> np.ndarray:
    """gain = label for labels above 0, else 0 (trec_eval, BEIR, MTEB)."""
    return np.where(labels > 0, labels, 0).astype(np.float64)


def exp_gain(labels: np.ndarray) -> np.ndarray:
    """gain = 2**label - 1 for labels above 0, else 0 (Burges et al.)."""
    return np.where(labels > 0, np.exp2(np.maximum(labels, 0).astype(np.float64)) - 1.0, 0.0)


def mapped_gain(mapping: Mapping[int, float], base: GainFunction | None = None) -> GainFunction:
    """trec_eval's ``ndcg.L=G,...`` gains: listed labels take the given gain, other labels >= 0 their own
    value (or ``base``'s gain, when given); labels below 0 have gain 0."""

    def gain(labels: np.ndarray) -> np.ndarray:
        out = np.where(labels > 0, labels, 0).astype(np.float64) if base is None else base(labels)
        for level, value in mapping.items():
            if level >= 0:
                out[labels == level] = value
        return out

    return gain


GAINS: dict[str, GainFunction] = {"linear": linear_gain, "exp": exp_gain}


def _ideal(ctx: EvalContext, gain: GainFunction, key: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, 1-based ideal position, gain) of every judgement with positive gain, best first."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        gains = gain(ctx.judgement_label)
        positive = gains > 0
        query, gains = ctx.judgement_query[positive], gains[positive]
        order = np.lexsort((-gains, query))
        query, gains = query[order], gains[order]
        return query, position_in_segment(query) + 1, gains

    return ctx.cached(("ideal", key), compute)


def _discounted(ctx: EvalContext, query: np.ndarray, rank: np.ndarray, gains: np.ndarray, k: int | None) -> np.ndarray:
    keep = gains != 0
    if k is not None:
        keep &= rank <= k
    return _bincount(ctx, query[keep], gains[keep] / np.log2(rank[keep] + 1.0))


def dcg(ctx: EvalContext, gain: GainFunction, k: int | None = None) -> np.ndarray:
    """DCG@k = sum over the top k of gain(label) / log2(rank + 1); unjudged results gain 0."""
    return _discounted(ctx, ctx.row_query, ctx.row_rank, gain(ctx.row_label), k)


def ideal_dcg(ctx: EvalContext, gain: GainFunction, k: int | None = None, key: object = None) -> np.ndarray:
    """The DCG of the query's judgements sorted by gain (ideal from all judged documents, trec_eval)."""
    query, position, gains = _ideal(ctx, gain, key if key is not None else gain)
    return _discounted(ctx, query, position, gains, k)


def ndcg(ctx: EvalContext, gain: GainFunction, k: int | None = None, key: object = None) -> np.ndarray:
    """DCG@k / ideal DCG@k; 0 when the ideal is 0."""
    return _divide(dcg(ctx, gain, k), ideal_dcg(ctx, gain, k, key))


def g_measure(ctx: EvalContext, gain: GainFunction, key: object = None) -> np.ndarray:
    """trec_eval's G: each result's gain over log2(2 + C_i - S_i), with S_i the gain so far and C_i the
    ideal gain so far (each ideal position costing at least 1); normalised by the total ideal gain."""
    iq, _, igain = _ideal(ctx, gain, key if key is not None else gain)
    cost = np.maximum(igain, 1.0)
    ideal_cum = _segment_exclusive_cumsum(iq, cost) + cost
    ideal_len = _bincount(ctx, iq).astype(np.int64)
    ideal_start = np.zeros(ctx.n_queries + 1, dtype=np.int64)
    np.cumsum(ideal_len, out=ideal_start[1:])
    gains = gain(ctx.row_label)
    so_far = _segment_exclusive_cumsum(ctx.row_query, gains) + gains
    q, rank = ctx.row_query, ctx.row_rank
    length = ideal_len[q]
    within = np.minimum(rank, length)
    padded = np.r_[ideal_cum, 0.0]  # index -1 when a query has no ideal gains reads the 0 appended here
    cum_at = np.where(within > 0, padded[np.where(within > 0, ideal_start[q] + within - 1, -1)], 0.0)
    c = cum_at + np.maximum(rank - length, 0)
    keep = gains != 0
    total = _bincount(ctx, q[keep], gains[keep] / np.log2(2.0 + c[keep] - so_far[keep]))
    return _divide(total, _bincount(ctx, iq, igain))


def rbp(
    ctx: EvalContext,
    p: float,
    gain: GainFunction = linear_gain,
    extra_gains: tuple[float, ...] = (),
    scale: bool = True,
    k: int | None = None,
) -> np.ndarray:
    """Rank-biased precision (Moffat and Zobel): (1 - p) * sum of gain * p**(rank - 1).

    Gains are scaled into [0, 1] per query when the query's gain table (labels 0 to its highest label,
    plus ``extra_gains``) falls outside it, as trec_eval does: with labels 0..4 the gain is label / 4.
    ``scale=False`` keeps the gains as they are (ranx's ``rbp.95`` and ir_measures' ``RBP`` weigh by the
    label itself). Results labelled below 0 and unjudged results gain 0; with ``k``, only the top k count.
    """
    within = np.ones(len(ctx.row_rank), dtype=bool) if k is None else ctx.row_rank <= k
    if not scale:
        q, judged_row = ctx.row_query, (ctx.row_label >= 0) & within
        gains = np.where(judged_row, gain(ctx.row_label), 0.0)
        return (1.0 - p) * _bincount(ctx, q, gains * np.power(p, ctx.row_rank - 1.0))
    top_label = np.zeros(ctx.n_queries, dtype=np.int64)
    nonneg = ctx.judgement_label >= 0
    np.maximum.at(top_label, ctx.judgement_query[nonneg], ctx.judgement_label[nonneg])
    table = gain(np.arange(int(top_label.max()) + 1 if len(top_label) else 1))
    low = np.minimum.accumulate(table)[top_label]
    high = np.maximum.accumulate(table)[top_label]
    if extra_gains:
        low, high = np.minimum(low, min(extra_gains)), np.maximum(high, max(extra_gains))
    q = ctx.row_query
    judged_row = (ctx.row_label >= 0) & within
    gains = np.where(judged_row, gain(ctx.row_label), 0.0)
    outside = (low[q] < 0) | (high[q] > 1)
    span = np.where(high[q] > low[q], high[q] - low[q], 1.0)
    gains = np.where(outside & judged_row, (gains - low[q]) / span, gains)
    return (1.0 - p) * _bincount(ctx, q, gains * np.power(p, ctx.row_rank - 1.0))


def rbp_residual(ctx: EvalContext, p: float) -> np.ndarray:
    """The RBP mass still open because of unjudged results: 1 - (1 - p) * sum over judged results of
    p**(rank - 1); 0 when nothing unjudged was retrieved (trec_eval)."""
    judged_rows = ctx.row_label >= 0
    mass = (1.0 - p) * _bincount(ctx, ctx.row_query[judged_rows], np.power(p, ctx.row_rank[judged_rows] - 1.0))
    count = _bincount(ctx, ctx.row_query[judged_rows])
    return np.where(count < num_ret(ctx), 1.0 - mass, 0.0)


def err(ctx: EvalContext, k: int | None, max_label: int) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al.) with stop probability (2**label - 1) / 2**max_label."""
    labels = np.clip(ctx.row_label, 0, None).astype(np.float64)
    top = int(labels.max()) if len(labels) else 0
    if 2.0**top - 1.0 > 2.0**max_label:  # a stop probability above 1 (and ERR with it) is no probability
        raise MetricError(
            f"err: a retrieved document has label {top}, above max_label={max_label}, so its stop probability "
            f"(2**{top} - 1) / 2**{max_label} would be above 1; give max_label={top} or more (err@k(max_label={top})), "
            "or leave max_label out: the default is the highest label of the judgements"
        )
    stop = (np.exp2(labels) - 1.0) / np.exp2(float(max_label))
    keep = stop > 0
    if k is not None:
        keep &= ctx.row_rank <= k
    q, rank, stop = ctx.row_query[keep], ctx.row_rank[keep], stop[keep]
    carry_on = np.exp(_segment_exclusive_cumsum(q, np.log1p(-np.minimum(stop, 1 - 1e-16))))
    return _bincount(ctx, q, stop * carry_on / rank)
