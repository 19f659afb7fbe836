"""ndeval's intent-aware and diversity measures, vectorised over every query at once.

ndeval (the TREC Web track's evaluator, version 4.5; pyndeval wraps its C) scores a ranking against judgements
per (query, subtopic, document) (:mod:`stagewise.data.subtopics`: the qrels' iteration column is the
subtopic). A document is relevant to subtopic ``s`` when its label for ``s`` is >= the relevance level (1; a
measure's ``rel=`` changes it; negative labels never are). Per query, ``N`` is the number of subtopics with at
least one relevant document (subtopics never judged relevant are ignored, as ndeval does), and the result at
rank ``r`` gains, for each subtopic it is relevant to, ``(1 - alpha)**c`` where ``c`` is how many results above
it were relevant to that subtopic (``alpha`` = 0.5 by default: redundancy is penalised).

=============  ===================================================================================================
measure        per query (ranks r = 1..k; ``G(r)`` the gain summed over subtopics)
=============  ===================================================================================================
alpha_dcg@k    sum G(r) / log2(r + 1), over the "ideal ideal" sum N (1 - alpha)**(r - 1) / log2(r + 1) (ndeval's
               collection-independent alpha-DCG; at k = 1 ndeval leaves it unnormalised, and so does this)
alpha_ndcg@k   sum G(r) / log2(r + 1) over the same sum for the ideal ranking (ndeval's greedy one: each next
               document the one with the highest gain, ties to the larger doc id)
err_ia@k       sum G(r) / r over sum N (1 - alpha)**(r - 1) / r (unnormalised at k = 1, as ndeval)
nerr_ia@k      sum G(r) / r over the same for the ideal ranking
nrbp           (1 - (1 - alpha) beta) / N * sum over all ranks of G(r) beta**(r - 1)
nnrbp          nrbp over the ideal ranking's nrbp
ap_ia          mean over the N subtopics of the subtopic's AP (its relevant documents as the relevant set)
p_ia@k         relevant (document, subtopic) pairs in the top k, over k N
strec@k        subtopics with a relevant document in the top k, over N (subtopic recall)
=============  ===================================================================================================

A query with no relevant subtopic (N = 0) scores 0 on every measure; ndeval then gives 0 too, except nNRBP,
where it divides 0 by 0 (NaN). Cutoffs above 20 are computed as the formulas say (ndeval stops at 20).

Ties: the run's order is the evaluation's tie convention (``Conventions.ties``), unless the measure says
``ties=docid-ascending``: score descending compared as doubles, then doc id ascending (byte order), the order
pyndeval gives a run and so ir_measures' number for these measures (its spellings state it:
``alpha_nDCG@20`` is ``alpha_ndcg@20(ties=docid-ascending)``). ndeval itself orders by the run's rank column
(the ``rank`` convention; ``-traditional``: score, then doc id descending, ``docid-double``).

Sums, powers and logarithms are taken in ndeval's order (ranks and subtopics in order, powers by repeated
multiplication, C's ``log``), so that values printed to 6 decimals are ndeval's byte for byte.

>>> import stagewise
>>> from stagewise.data.subtopics import read_subtopic_qrels
>>> qrels = read_subtopic_qrels([("q", "1", "d1", 1), ("q", "2", "d1", 1), ("q", "1", "d2", 1)])
>>> run = {"q": {"d2": 2.0, "d1": 1.0}}  # d2 (subtopic 1), then d1 (subtopics 1 and 2)
>>> means = stagewise.evaluate(qrels, run, ["alpha_ndcg@2", "strec@1", "p_ia@2", "ap_ia"]).means["run"]
>>> {name: round(value, 4) for name, value in means.items()}
{'alpha_ndcg@2': 0.8406, 'strec@1': 0.5, 'p_ia@2': 0.75, 'ap_ia': 0.75}
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise.data.columns import position_in_segment
from stagewise.data.subtopics import EXPECTED_LINE, SubtopicQrels
from stagewise.errors import MetricError
from stagewise.metrics.context import EvalContext, _join, _ranks, self_rows
from stagewise.metrics.measures import FAMILIES, REL, Family
from stagewise.spec import Param

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

ALPHA = Param(
    float,
    0.5,
    "redundancy intolerance: a subtopic's gain is (1 - alpha)**(results above relevant to it) (ndeval -alpha)",
    "a number in [0, 1]",
    lambda v: 0 <= v <= 1,
)
BETA = Param(
    float, 0.5, "patience: rank r weighs beta**(r - 1) (ndeval -beta)", "a number in [0, 1]", lambda v: 0 <= v <= 1
)
TIES = Param(
    str,
    "evaluation",
    "order of equal scores for this measure: evaluation (the evaluation's tie convention) or docid-ascending "
    "(pyndeval, ir_measures: score descending as doubles, then doc id ascending)",
    choices=("evaluation", "docid-ascending"),
)
SUBTOPICS = Param(
    str,
    "iteration",
    "where a judgement's subtopic comes from: the qrels' iteration column (ndeval's qrels; ir_measures reads it so)",
    choices=("iteration",),
)

_DEFAULT_SUBTOPIC_HINT = (
    "give --qrels-format subtopics (stagewise.data.subtopics.read_subtopic_qrels(path) in Python), or run "
    "`stagewise ndeval QRELS RUN`"
)


@dataclass(frozen=True)
class _Pairs:
    """Relevant (result, subtopic) pairs of rankings: query index, 1-based rank, (query, subtopic) slot, and
    how many results above were relevant to the same subtopic; sorted by slot, then rank."""

    query: np.ndarray
    rank: np.ndarray
    slot: np.ndarray
    seen: np.ndarray

    @classmethod
    def of(cls, query: np.ndarray, rank: np.ndarray, slot: np.ndarray) -> _Pairs:
        order = np.lexsort((rank, slot))
        query, rank, slot = query[order], rank[order], slot[order]
        return cls(query, rank, slot, position_in_segment(slot))


@dataclass(frozen=True)
class _Subtopics:
    """What the measures need of the judgements at one relevance level, per evaluated query."""

    n: np.ndarray  # subtopics with a relevant document (ndeval's actualSubtopics)
    relevant_of_slot: np.ndarray  # relevant documents of each (query, subtopic) slot
    qrels: SubtopicQrels
    eval_of_query: np.ndarray  # qrels query code -> evaluated query index (-1: not evaluated)


def _subtopic_qrels(ctx: EvalContext, measure: str) -> SubtopicQrels:
    qrels = ctx.judgements
    if not isinstance(qrels, SubtopicQrels):
        given = "no qrels" if qrels is None else f"qrels {qrels.name!r} hold one label per (query, document)"
        raise MetricError(
            f"{measure} needs subtopic judgements ({EXPECTED_LINE}), but {given}: {_DEFAULT_SUBTOPIC_HINT}"
        )
    if ctx.run is None:
        raise MetricError(f"{measure} needs the run itself: build the context with build_context")
    return qrels


def _judgements(ctx: EvalContext, qrels: SubtopicQrels) -> _Subtopics:
    def compute() -> _Subtopics:
        relevant = qrels.subtopic_labels >= ctx.level
        per_slot = np.bincount(qrels.subtopic_slots[relevant], minlength=qrels.n_subtopics)
        eval_of_query = np.full(len(qrels.query_ids), -1, dtype=np.int64)
        at = np.searchsorted(qrels.query_ids, ctx.query_ids)
        eval_of_query[at] = np.arange(ctx.n_queries)
        slot_eval = eval_of_query[qrels.slot_query]
        counted = (per_slot > 0) & (slot_eval >= 0)
        n = np.bincount(slot_eval[counted], minlength=ctx.n_queries).astype(np.float64)
        return _Subtopics(n, per_slot.astype(np.float64), qrels, eval_of_query)

    return ctx.cached(("diversity-judgements", ctx.level), compute)


def _expand(qrels: SubtopicQrels, rows: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """For (query, document) rows of the qrels: (index into ``rows``, slot) of each subtopic they are relevant
    to, in subtopic order."""
    starts, stops = qrels.subtopic_offsets[rows], qrels.subtopic_offsets[rows + 1]
    lengths = stops - starts
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    entry = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    keep = qrels.subtopic_labels[entry] >= level
    return owner[keep], qrels.subtopic_slots[entry[keep]]


def _run_pairs(ctx: EvalContext, qrels: SubtopicQrels, ties: str) -> _Pairs:
    """The run's relevant (result, subtopic) pairs under the context's conventions (and ``ties``)."""

    def compute() -> _Pairs:
        run, conv = ctx.run, ctx.conventions
        run_rows, rows = _join(qrels, run)

        def ranks(of: np.ndarray) -> np.ndarray:
            return _docid_ascending_ranks(run, of) if ties == "docid-ascending" else _ranks(run, conv, of)

        rank = ranks(run_rows)
        if conv.ignore_self:  # results whose doc id is the query id dropped, the ranks below closed up
            run_rows, rows, rank = _without_self(run, run_rows, rows, rank, ranks)
        at = np.searchsorted(ctx.query_ids, run.query_ids)
        at_clipped = np.minimum(at, max(ctx.n_queries - 1, 0))
        run_eval = np.where(ctx.query_ids[at_clipped] == run.query_ids, at_clipped, -1)
        query = run_eval[run.query_codes[run_rows]]
        keep = query >= 0
        if conv.max_ret is not None:
            keep &= rank <= conv.max_ret
        if conv.judged_only:  # unjudged results (labels below 0 included) dropped, ranks closed up
            keep &= qrels.labels[rows] >= 0
        query, rank, rows = query[keep], rank[keep], rows[keep]
        if conv.judged_only:
            order = np.lexsort((rank, query))
            query, rows = query[order], rows[order]
            rank = position_in_segment(query) + 1
        owner, slot = _expand(qrels, rows, ctx.level)
        return _Pairs.of(query[owner], rank[owner], slot)

    return ctx.cached(("diversity-run", ctx.level, ties), compute)


def _without_self(run, run_rows: np.ndarray, rows: np.ndarray, rank: np.ndarray, ranks) -> tuple[np.ndarray, ...]:
    """The judged rows without those whose document is their query (``ignore_self``), each rank less the
    number of its query's dropped results ranked above it."""
    dropped = self_rows(run)
    if len(dropped) == 0:
        return run_rows, rows, rank
    width = int(np.diff(run.offsets).max()) + 1
    dropped_key = np.sort(run.query_codes[dropped].astype(np.int64) * width + ranks(dropped))
    keep = ~np.isin(run_rows, dropped)
    run_rows, rows, rank = run_rows[keep], rows[keep], rank[keep]
    base = run.query_codes[run_rows].astype(np.int64) * width
    above = np.searchsorted(dropped_key, base + rank) - np.searchsorted(dropped_key, base)
    return run_rows, rows, rank - above


def _docid_ascending_ranks(run, rows: np.ndarray) -> np.ndarray:
    """Ranks by score descending (doubles; 0.0 and -0.0 tie), then doc id ascending: pyndeval's order."""
    key = pl.DataFrame(
        {"q": run.query_codes, "s": np.asarray(run.scores, dtype=np.float64) + 0.0, "d": run.docs.series()}
    )
    ordered = key.with_row_index("i").sort(["q", "s", "d"], descending=[False, True, False])["i"].to_numpy()
    within = np.arange(len(run), dtype=np.int64) - np.repeat(run.offsets[:-1], np.diff(run.offsets))
    rank = np.empty(len(run), dtype=np.int64)
    rank[ordered] = within + 1
    return rank[rows]


def _ideal_pairs(qrels: SubtopicQrels, level: int, alpha: float) -> _Pairs:
    """The ideal ranking's relevant pairs, per qrels query code: ndeval's greedy ranking, where each next
    document is the one whose gain is highest given those above it, ties to the larger doc id (byte order).

    Every query takes its next document in the same step, so there are as many steps as the most relevant
    documents any query has, each a few array operations over all of them. Documents relevant to no subtopic
    gain nothing wherever they go and are left out.
    """
    entry_row = np.repeat(np.arange(len(qrels), dtype=np.int64), np.diff(qrels.subtopic_offsets))
    relevant = qrels.subtopic_labels >= level
    docs = np.unique(entry_row[relevant])
    if len(docs) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Pairs.of(empty, empty, empty)
    query = qrels.query_codes[docs].astype(np.int64)
    by_name = pl.DataFrame({"q": query, "d": qrels.docs.take(docs).series()}).with_row_index("i").sort(["q", "d"])
    order = by_name["i"].to_numpy()
    docs, query = docs[order], query[order]
    position = np.full(len(qrels), -1, dtype=np.int64)
    position[docs] = np.arange(len(docs))
    pair_doc = position[entry_row[relevant]]
    pair_slot = qrels.subtopic_slots[relevant]
    by_doc = np.argsort(pair_doc, kind="stable")  # each document's subtopics stay in subtopic order
    pair_doc, pair_slot = pair_doc[by_doc], pair_slot[by_doc]
    rank = _greedy_ranks(query, pair_doc, pair_slot, qrels.n_subtopics, alpha)
    return _Pairs.of(query[pair_doc], rank[pair_doc], pair_slot)


def _greedy_ranks(
    query: np.ndarray, pair_doc: np.ndarray, pair_slot: np.ndarray, n_slots: int, alpha: float
) -> np.ndarray:
    """Each document's rank in its query's greedy ideal ranking. Documents are grouped by query, in doc id order
    within it; ``pair_doc`` and ``pair_slot`` list their relevant subtopics, in document then subtopic order.

    Each step places the next document of every query; once half of the documents are placed, the placed ones
    are dropped from the arrays, so a step costs what is left to place.
    """
    rank = np.zeros(len(query), dtype=np.int64)
    gain = np.ones(n_slots)
    alive = np.arange(len(query))  # the documents still to place, as indices of ``query``
    step = 0
    while len(alive):
        starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
        segment = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(alive)]))
        index = np.arange(len(alive))
        taken = np.zeros(len(alive), dtype=bool)
        while 2 * taken.sum() < len(alive):
            step += 1
            # summed in subtopic order, from 0.0, as ndeval sums: equal gains must compare equal as it sees them
            score = np.bincount(pair_doc, weights=gain[pair_slot], minlength=len(alive))
            score[taken] = -np.inf
            tied = (score == np.maximum.reduceat(score, starts)[segment]) & ~taken
            best = np.maximum.reduceat(np.where(tied, index, -1), starts)
            best = best[best >= 0]
            taken[best] = True
            rank[alive[best]] = step
            now = np.zeros(len(alive), dtype=bool)
            now[best] = True
            gain[pair_slot[now[pair_doc]]] *= 1.0 - alpha
        keep = ~taken  # the placed documents leave; the order of the rest is unchanged
        renumbered = np.cumsum(keep) - 1
        kept_pairs = keep[pair_doc]
        pair_doc, pair_slot = renumbered[pair_doc[kept_pairs]], pair_slot[kept_pairs]
        alive, query = alive[keep], query[keep]
    return rank


def _ideal(ctx: EvalContext, qrels: SubtopicQrels, alpha: float) -> tuple[_Pairs, np.ndarray]:
    """The ideal pairs with their query as an evaluated index (pairs of queries not evaluated dropped)."""
    pairs = qrels.memo(("ideal", ctx.level, alpha), lambda: _ideal_pairs(qrels, ctx.level, alpha))
    subtopics = _judgements(ctx, qrels)
    query = subtopics.eval_of_query[pairs.query]
    keep = query >= 0
    return _Pairs(query[keep], pairs.rank[keep], pairs.slot[keep], pairs.seen[keep]), subtopics.n


def _in_order(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group, its ``values`` added one by one from 0.0 in the order given, as ndeval's loops add them (a
    last-bit difference can move a value printed to 6 decimals). One vectorised step per position in the
    longest group: the first value of every group, then the second, ..."""
    out = np.zeros(n_groups)
    if len(group) == 0:
        return out
    position = np.zeros(len(group), dtype=np.int64)
    order = np.argsort(group, kind="stable")
    position[order] = position_in_segment(group[order])
    by_position = np.argsort(position, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(position))]
    for start, stop in itertools.pairwise(bounds):
        rows = by_position[start:stop]  # at most one row per group
        out[group[rows]] += values[rows]
    return out


@dataclass(frozen=True)
class _Results:
    """The results that gain something, per query in rank order: query, rank and the gain summed over the
    subtopics they are relevant to (in subtopic order, as ndeval sums it)."""

    query: np.ndarray
    rank: np.ndarray
    score: np.ndarray

    @classmethod
    def of(cls, pairs: _Pairs, alpha: float) -> _Results:
        order = np.lexsort((pairs.slot, pairs.rank, pairs.query))
        query, rank = pairs.query[order], pairs.rank[order]
        first = np.r_[True, (query[1:] != query[:-1]) | (rank[1:] != rank[:-1])] if len(query) else np.zeros(0, bool)
        result = np.cumsum(first) - 1
        score = _in_order(result, _powers(1.0 - alpha, pairs.seen)[order], int(first.sum()))
        return cls(query[first], rank[first], score)


def _run_results(ctx: EvalContext, qrels: SubtopicQrels, ties: str, alpha: float) -> _Results:
    """The run's gaining results, made once per context for every measure that reads them."""
    return ctx.cached(
        ("diversity-results", ctx.level, ties, alpha), lambda: _Results.of(_run_pairs(ctx, qrels, ties), alpha)
    )


def _ideal_results(ctx: EvalContext, ideal: _Pairs, alpha: float) -> _Results:
    return ctx.cached(("diversity-ideal", ctx.level, alpha), lambda: _Results.of(ideal, alpha))


def _powers(base: float, exponent: np.ndarray) -> np.ndarray:
    """base**exponent by repeated multiplication from 1.0, as ndeval decays a gain (pow can differ in the last
    bit)."""
    size = int(exponent.max()) + 1 if len(exponent) else 1
    return np.cumprod(np.r_[1.0, np.full(size - 1, base)])[exponent]


def _discount(rank: np.ndarray) -> np.ndarray:
    """ndeval's DCG discount, log(2) / log(rank + 1), with the C library's log (as ndeval's)."""
    table = np.array([1.0] + [math.log(2.0) / math.log(r + 1.0) for r in range(2, int(rank.max(initial=1)) + 1)])
    return table[rank - 1]


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """top / bottom, 0 where top is 0 (a query with nothing relevant, or none retrieved)."""
    top = np.asarray(top, dtype=np.float64)
    out = np.zeros(len(top))
    np.divide(top, bottom, out=out, where=top != 0)
    return out


def _ideal_ideal(n: np.ndarray, k: int, alpha: float, kind: str) -> np.ndarray | None:
    """ndeval's collection-independent normaliser at k: N (1 - alpha)**(r - 1) per rank r, times the discount
    (DCG) or over r (ERR), added up to k; None at k = 1, where ndeval's normalisation loop does not reach."""
    if k == 1:
        return None
    out = np.zeros(len(n))
    for count in np.unique(n):
        gain, total = float(count), 0.0
        for rank in range(1, k + 1):
            weighed = (
                gain * (1.0 if rank == 1 else math.log(2.0) / math.log(rank + 1.0)) if kind == "dcg" else gain / rank
            )
            total, gain = total + weighed, gain * (1.0 - alpha)
        out[n == count] = total
    return out


def _cumulated(results: _Results, k: int, kind: str, n_queries: int) -> np.ndarray:
    """Each query's gains to rank k, discounted (DCG) or over the rank (ERR), added in rank order."""
    top = results.rank <= k
    rank, score = results.rank[top], results.score[top]
    weighed = score * _discount(rank) if kind == "dcg" else score / rank
    return _in_order(results.query[top], weighed, n_queries)


def _cumulative(ctx: EvalContext, k: int, opts: dict, kind: str, measure: str, normalise: str) -> np.ndarray:
    """alpha-DCG (``kind`` dcg) and ERR-IA (err), normalised by the ideal ideal, or over the ideal ranking's
    value normalised the same way (ndeval divides the two normalised values)."""
    qrels = _subtopic_qrels(ctx, measure)
    alpha = opts["alpha"]
    value = _cumulated(_run_results(ctx, qrels, opts["ties"], alpha), k, kind, ctx.n_queries)
    ideal, n = _ideal(ctx, qrels, alpha)
    scale = _ideal_ideal(n, k, alpha, kind)
    if scale is not None:
        value = _ratio(value, scale)
    if normalise == "ideal-ideal":
        return value
    best = _cumulated(_ideal_results(ctx, ideal, alpha), k, kind, ctx.n_queries)
    return _ratio(value, best if scale is None else _ratio(best, scale))


def alpha_dcg(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """ndeval's alpha-DCG@k (collection-independent normalisation)."""
    return _cumulative(ctx, k, opts, "dcg", f"alpha_dcg@{k}", "ideal-ideal")


def alpha_ndcg(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """alpha-nDCG@k (Clarke et al., SIGIR 2008) against ndeval's greedy ideal ranking."""
    return _cumulative(ctx, k, opts, "dcg", f"alpha_ndcg@{k}", "ideal")


def err_ia(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """ndeval's ERR-IA@k (collection-independent normalisation)."""
    return _cumulative(ctx, k, opts, "err", f"err_ia@{k}", "ideal-ideal")


def nerr_ia(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """nERR-IA@k: ERR-IA over the ideal ranking's."""
    return _cumulative(ctx, k, opts, "err", f"nerr_ia@{k}", "ideal")


def _nrbp(ctx: EvalContext, results: _Results, alpha: float, beta: float, n: np.ndarray) -> np.ndarray:
    """NRBP: gains weighed beta**(rank - 1), added in rank order, times (1 - (1 - alpha) beta) / N."""
    total = _in_order(results.query, results.score * _powers(beta, results.rank - 1), ctx.n_queries)
    out = np.zeros(ctx.n_queries)
    some = n > 0
    out[some] = total[some] * ((1.0 - (1.0 - alpha) * beta) / n[some])  # ndeval: nrbp *= (1 - (1 - a) b) / N
    return out


def nrbp(ctx: EvalContext, k: int | None, opts: dict) -> np.ndarray:
    """NRBP (Clarke et al., ICTIR 2009), over the whole ranking."""
    qrels = _subtopic_qrels(ctx, "nrbp")
    alpha = opts["alpha"]
    n = _judgements(ctx, qrels).n
    return _nrbp(ctx, _run_results(ctx, qrels, opts["ties"], alpha), alpha, opts["beta"], n)


def nnrbp(ctx: EvalContext, k: int | None, opts: dict) -> np.ndarray:
    """nNRBP: NRBP over the ideal ranking's (0 for a query with no relevant subtopic, where ndeval gives NaN)."""
    qrels = _subtopic_qrels(ctx, "nnrbp")
    alpha, beta = opts["alpha"], opts["beta"]
    ideal, n = _ideal(ctx, qrels, alpha)
    run = _nrbp(ctx, _run_results(ctx, qrels, opts["ties"], alpha), alpha, beta, n)
    return _ratio(run, _nrbp(ctx, _ideal_results(ctx, ideal, alpha), alpha, beta, n))


def ap_ia(ctx: EvalContext, k: int | None, opts: dict) -> np.ndarray:
    """MAP-IA: the mean over the query's subtopics of each subtopic's average precision."""
    qrels = _subtopic_qrels(ctx, "ap_ia")
    pairs = _run_pairs(ctx, qrels, opts["ties"])  # by slot, then rank
    subtopics = _judgements(ctx, qrels)
    per_slot = _in_order(pairs.slot, (pairs.seen + 1.0) / pairs.rank, qrels.n_subtopics)
    slot_query = subtopics.eval_of_query[qrels.slot_query]
    counted = (subtopics.relevant_of_slot > 0) & (slot_query >= 0)
    share = per_slot[counted] / subtopics.relevant_of_slot[counted]
    return _ratio(_in_order(slot_query[counted], share, ctx.n_queries), subtopics.n)


def p_ia(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """P-IA@k: relevant (result, subtopic) pairs in the top k over k N."""
    qrels = _subtopic_qrels(ctx, f"p_ia@{k}")
    pairs = _run_pairs(ctx, qrels, opts["ties"])
    count = np.bincount(pairs.query[pairs.rank <= k], minlength=ctx.n_queries).astype(np.float64)
    return _ratio(count, k * _judgements(ctx, qrels).n)


def strec(ctx: EvalContext, k: int, opts: dict) -> np.ndarray:
    """strec@k (subtopic recall): subtopics with a relevant result in the top k, over N."""
    qrels = _subtopic_qrels(ctx, f"strec@{k}")
    pairs = _run_pairs(ctx, qrels, opts["ties"])
    covered = np.bincount(pairs.query[(pairs.rank <= k) & (pairs.seen == 0)], minlength=ctx.n_queries)
    return _ratio(covered, _judgements(ctx, qrels).n)


_SUBTOPICS = "subtopic qrels (ndeval's: the iteration column is the subtopic)"
_CUT = {"rel": REL, "alpha": ALPHA, "ties": TIES, "subtopics": SUBTOPICS}
_PLAIN = {"rel": REL, "ties": TIES, "subtopics": SUBTOPICS}

#: The families, in ndeval's column order.
DIVERSITY_FAMILIES: tuple[Family, ...] = (
    Family("err_ia", f"ndeval's ERR-IA@k, alpha = 0.5, normalised by the ideal ideal; {_SUBTOPICS}", err_ia,
           cutoff="required", options=_CUT),
    Family("nerr_ia", f"ERR-IA@k over the ideal ranking's (ndeval nERR-IA), alpha = 0.5; {_SUBTOPICS}", nerr_ia,
           cutoff="required", options=_CUT),
    Family("alpha_dcg", f"ndeval's alpha-DCG@k, alpha = 0.5, normalised by the ideal ideal; {_SUBTOPICS}", alpha_dcg,
           cutoff="required", options=_CUT, aliases=("α_dcg",)),
    Family("alpha_ndcg", f"alpha-nDCG@k (ndeval), alpha = 0.5, greedy ideal ranking; {_SUBTOPICS}", alpha_ndcg,
           cutoff="required", options=_CUT, aliases=("α_ndcg",)),
    Family("nrbp", f"novelty- and rank-biased precision (ndeval), alpha = 0.5, beta = 0.5; {_SUBTOPICS}", nrbp,
           options={**_CUT, "beta": BETA}),
    Family("nnrbp", f"NRBP over the ideal ranking's (ndeval), alpha = 0.5, beta = 0.5; {_SUBTOPICS}", nnrbp,
           options={**_CUT, "beta": BETA}),
    Family("ap_ia", f"intent-aware AP: the mean of each subtopic's AP (ndeval MAP-IA); {_SUBTOPICS}", ap_ia,
           options=_PLAIN, aliases=("map_ia",)),
    Family("p_ia", f"intent-aware precision@k: relevant (result, subtopic) pairs / (k N) (ndeval); {_SUBTOPICS}",
           p_ia, cutoff="required", options=_PLAIN),
    Family("strec", f"subtopic recall@k: subtopics covered in the top k / N (ndeval); {_SUBTOPICS}", strec,
           cutoff="required", options=_PLAIN, aliases=("st_recall", "subtopic_recall")),
)  # fmt: skip

for _family in DIVERSITY_FAMILIES:
    if _family.name not in FAMILIES:
        FAMILIES.register(_family)
