"""Fusion methods: each a small pure function of a :class:`~stagewise.fusion.table.FusionTable`.

A method turns every (candidate, run) cell into a contribution (the normalised score, ``1 / (rrf_k + rank)``,
Borda points, a learned probability, ...), fills the cells of documents a run did not return under the
missing-document policy, and reduces each candidate's row to one fused score. Everything is vectorised over
all queries at once; only Condorcet, a sort with a pairwise-majority comparison, works query by query.

Contributions are computed for the cells a run returned only (per run, aligned with the table's sparse
columns). Sums with zeros for the other cells, CombMAX and CombMIN reduce those cells directly; a fill for the
other cells, CombMED and Condorcet need whole rows and work on dense blocks of whole queries (at most
``BLOCK_CELLS`` cells). Memory thus grows with the rows fused, not with candidates x runs.

Methods are chosen from :data:`METHODS` by name; :class:`FusionMethod` is the value that names one with its
hyperparameters, such as ``rrf(rrf_k=60)`` or ``wsum(weights=(0.7,0.3))``.

Missing-document policies (``missing=``):

- ``zero``: the run contributes 0 for the document;
- ``min``: the run contributes its smallest contribution for that query (its last result's);
- ``ignore``: the run is left out of the document's reduction (max, min, median see only the runs that
  returned it);
- ``native``: the value the method or the normalisation defines for an unranked document (BordaFuse's
  leftover points, BayesFuse's floor log-odds, the Borda normalisation's value).

Sums across runs do not depend on the order of the runs: with three or more runs each row's terms are sorted
before they are added, so a symmetric method gives bit-identical scores whatever the order of its inputs.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any

from stagewise._lazy import LazyModule
from stagewise.errors import ConventionError
from stagewise.fusion.options import MISSING_DOCUMENT_POLICIES
from stagewise.spec import Param, Registry, canonical, parse_call

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from stagewise.fusion.table import FusionTable

    # A method's cells: per run, one value per row the run returned (aligned with ``t.cand_of[r]``).
    Cells = list[np.ndarray]
else:
    # numpy on first use: the registry below is read by ``stagewise fuse --help``, which should not pay for numpy
    np = LazyModule(globals(), "np", "numpy")

# BayesFuse's floor: the log-odds of a probability of relevance of 0.001 (Aslam and Montague; ranx).
MIN_LOG_ODDS = math.log(0.001 / 0.999)
# SegFuse's segment ends (Shokouhi 2007): 10 * 2**(k - 1) - 5 for k = 1..10, i.e. sizes 5, 10, 20, 40, ...
SEGFUSE_BOUNDS = (0, *(10 * 2 ** (k - 1) - 5 for k in range(1, 11)))
# BayesFuse's rank buckets (ranx): [0, 5), [5, 10), ..., [500, 1000).
BAYESFUSE_CUTOFFS = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)


# ----------------------------------------------------------------------------------------------- helpers
# A method's cells (Cells): per run, one value per row the run returned (aligned with ``t.cand_of[r]``). Sums over
# the runs are made from these directly; a reduction that needs every run's cell of a candidate (a fill for the
# documents a run did not return, a median) scatters them into dense blocks of at most BLOCK_CELLS cells.

# A sum of cells with zeros where a run did not return the candidate is made densely (sort each row, add the
# columns, in blocks) when the dense matrix has at most this many cells per cell returned, sparsely otherwise.
# Both give the same bits (adding a zero changes nothing); measured on 3 to 30 runs of 1,000 queries x 100 docs,
# the dense way is up to 2x faster below about 3 (most cells filled), the sparse one up to 12x faster above.
DENSE_RATIO = 3.0


def _fill_value(t: FusionTable, cells: Cells, missing: str, native: np.ndarray | None = None) -> np.ndarray | None:
    """The (query, run) value of a cell the run did not return under ``missing``: None for zero, NaN for
    ignore (and for min where the run lacks the query)."""
    if missing == "zero":
        return None
    if missing == "ignore":
        return np.full((len(t.query_ids), t.n_runs), np.nan)
    if missing == "min":
        low = np.full((len(t.query_ids), t.n_runs), np.nan)  # NaN: the run lacks the query, it is left out
        for r, values in enumerate(cells):
            if len(values):
                codes = t.row_query(r)
                starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
                low[codes[starts], r] = np.minimum.reduceat(values, starts)
        return low
    if missing == "native":
        fill = native if native is not None else t.unranked
        if fill is None:
            raise ConventionError(
                "missing='native' needs a method or normalisation that defines the value of an unranked document "
                "(bordafuse, bayesfuse, or the borda normalisation); choose zero, min or ignore"
            )
        return fill
    choices = ", ".join(MISSING_DOCUMENT_POLICIES)
    raise ConventionError(f"unknown missing-document policy {missing!r}; choose one of {choices}")


def _dense_rows(
    t: FusionTable,
    cells: Cells,
    fill: np.ndarray | None,
    reduce: Callable[[np.ndarray], np.ndarray],
    weights: np.ndarray | None = None,
    nan_to_zero: bool = False,
) -> np.ndarray:
    """``reduce`` of each candidate's row of cells, the cells a run did not return holding ``fill`` (0 when
    None), built block by block so that no more than BLOCK_CELLS cells are dense at once."""
    out = np.empty(len(t), dtype=np.float64)
    # (runs, queries), C order: a block's fill gathers whole rows and its transpose is column-major at no cost.
    fill_by_run = None if fill is None else np.ascontiguousarray(fill.T, dtype=np.float64)
    for lo, hi, rows in t.blocks():
        if fill_by_run is None:
            matrix = np.zeros((hi - lo, t.n_runs), dtype=np.float64, order="F")
        else:
            matrix = fill_by_run[:, t.query[lo:hi]].T  # column-major (candidates, runs): each run's column contiguous
        for r, (a, b) in enumerate(rows):
            matrix[t.cand_of[r][a:b] - lo, r] = cells[r][a:b]
        if weights is not None:
            matrix *= weights
        if nan_to_zero:
            matrix[np.isnan(matrix)] = 0.0
        out[lo:hi] = reduce(matrix)
    return out


def _sum(values: np.ndarray) -> np.ndarray:
    """Row sums, added column by column; with three or more columns each row is sorted first, so the sum does
    not depend on the order of the runs."""
    if values.shape[1] >= 3:
        values = np.sort(values, axis=1)
    out = values[:, 0].copy()
    for r in range(1, values.shape[1]):
        out += values[:, r]
    return out


def _sparse_sum(t: FusionTable, cells: Cells) -> np.ndarray:
    """What :func:`_sum` gives for the dense rows with zeros where a run did not return the candidate, from the
    cells alone: a candidate's cells are added in ascending order (adding the zeros changes nothing).

    Two terms add the same in either order, so only candidates with three cells or more are sorted: those
    returned by k runs are gathered into one (candidates, k) matrix per k, whose rows are sorted and whose
    columns are added, as the dense sum does with its (candidates, runs) matrix. Every cell is held once.
    """
    out = np.zeros(len(t), dtype=np.float64)
    count = t.count if t.n_runs >= 3 else None
    many = None if count is None else count >= 3
    if many is None or not many.any():
        for cand, values in zip(t.cand_of, cells, strict=True):
            out[cand] += values
        return out
    # Candidate c, returned by k runs, owns the slots start[c] .. start[c] + k - 1 of one flat buffer, laid out
    # as one row-major (candidates, k) block per k; its cells fill them in run order.
    chosen = np.flatnonzero(many)
    by_count = chosen[np.argsort(count[chosen], kind="stable")]
    sizes = count[by_count]
    start = np.full(len(t), -1, dtype=np.int64)
    start[by_count] = np.cumsum(sizes) - sizes
    flat = np.empty(int(sizes.sum()), dtype=np.float64)
    filled = np.zeros(len(t), dtype=np.int64)
    for cand, values in zip(t.cand_of, cells, strict=True):
        slot = start[cand]
        later = slot >= 0
        few = ~later
        out[cand[few]] += values[few]
        mine = cand[later]
        flat[slot[later] + filled[mine]] = values[later]
        filled[mine] += 1
    ks, first = np.unique(sizes, return_index=True)
    ends = np.r_[first[1:], len(sizes)]
    for k, lo, hi in zip(ks.tolist(), first.tolist(), ends.tolist(), strict=True):
        base = int(start[by_count[lo]])
        block = flat[base : base + (hi - lo) * k].reshape(hi - lo, k)
        block.sort(axis=1)
        total = block[:, 0].copy()
        for j in range(1, k):
            total += block[:, j]
        out[by_count[lo:hi]] = total
    return out


def _total(
    t: FusionTable,
    cells: Cells,
    missing: str,
    weights: np.ndarray | None = None,
    native: np.ndarray | None = None,
) -> np.ndarray:
    """``sum_r w_r * value_r(d)`` with the cells a run did not return filled by ``missing`` (in a sum, ignore
    is zero)."""
    if missing in ("zero", "ignore"):
        if t.n_runs >= 3 and len(t) * t.n_runs <= DENSE_RATIO * t.n_rows:
            return _dense_rows(t, cells, None, _sum, weights)
        if weights is not None:
            cells = [values * w for values, w in zip(cells, weights.tolist(), strict=True)]
        return _sparse_sum(t, cells)
    fill = _fill_value(t, cells, missing, native)
    return _dense_rows(t, cells, fill, _sum, weights, nan_to_zero=missing == "min")


def _extreme(t: FusionTable, cells: Cells, missing: str, highest: bool) -> np.ndarray:
    """The highest (or lowest) cell of each candidate, absent cells filled by ``missing``."""
    if missing not in ("zero", "ignore"):
        fill = _fill_value(t, cells, missing)
        return _dense_rows(t, cells, fill, lambda m: (np.nanmax if highest else np.nanmin)(m, axis=1))
    pick = np.maximum if highest else np.minimum
    out = np.full(len(t), -np.inf if highest else np.inf)
    for cand, values in zip(t.cand_of, cells, strict=True):  # a run returns a candidate once
        out[cand] = pick(out[cand], values)
    if missing == "zero":  # a candidate some run did not return also has a 0
        partial = t.count < t.n_runs
        out[partial] = pick(out[partial], 0.0)
    return out


def _weights(t: FusionTable, weights: tuple[float, ...] | None) -> np.ndarray:
    if weights is None:
        return np.ones(t.n_runs)
    if len(weights) != t.n_runs:
        raise ConventionError(f"{len(weights)} weights for {t.n_runs} runs; give one weight per run, in run order")
    return np.asarray(weights, dtype=np.float64)


def _ranks(t: FusionTable) -> Cells:
    """Each run's ranks as floats."""
    return [rank.astype(np.float64) for rank in t.rank_of]


def _by_rank(t: FusionTable, tables: list[np.ndarray], beyond: float = 0.0) -> Cells:
    """``tables[r][rank - 1]`` for each cell (``beyond`` past a table's end)."""
    out = []
    for rank, table in zip(t.rank_of, tables, strict=True):
        table = np.asarray(table, dtype=np.float64)
        position = rank.astype(np.int64) - 1
        inside = position < len(table)
        values = np.full(len(rank), beyond, dtype=np.float64)
        values[inside] = table[position[inside]]
        out.append(values)
    return out


def _trained(name: str, value: Any, t: FusionTable) -> list[np.ndarray]:
    if value is None:
        raise ConventionError(
            f"{name} learns from judgements: pass qrels= to fuse (or --qrels), or its trained parameters"
        )
    tables = [np.asarray(v, dtype=np.float64) for v in value]
    if len(tables) != t.n_runs:
        raise ConventionError(f"{name} was trained on {len(tables)} runs but {t.n_runs} are fused")
    return tables


# ----------------------------------------------------------------------------------------- score methods
def combsum(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """CombSUM (Fox and Shaw, TREC-2 1993, "Combination of multiple searches"): ``sum_r s_r(d)``."""
    return _total(t, t.score_of, missing)


def combmnz(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """CombMNZ (Fox and Shaw 1993): ``n(d) * sum_r s_r(d)``, n(d) the number of runs that returned d."""
    return _total(t, t.score_of, missing) * t.count


def combmax(t: FusionTable, *, missing: str = "ignore") -> np.ndarray:
    """CombMAX (Fox and Shaw 1993): ``max_r s_r(d)``."""
    return _extreme(t, t.score_of, missing, highest=True)


def combmin(t: FusionTable, *, missing: str = "ignore") -> np.ndarray:
    """CombMIN (Fox and Shaw 1993): ``min_r s_r(d)``."""
    return _extreme(t, t.score_of, missing, highest=False)


def combmed(t: FusionTable, *, missing: str = "ignore") -> np.ndarray:
    """CombMED (Fox and Shaw 1993): the median of ``s_r(d)``."""
    cells = t.score_of
    fill = _fill_value(t, cells, missing)
    return _dense_rows(t, cells, fill, lambda m: np.nanmedian(m, axis=1))


def combanz(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """CombANZ (Fox and Shaw 1993): ``sum_r s_r(d) / n(d)``, the mean over the runs that returned d."""
    return _total(t, t.score_of, missing) / t.count


def combgmnz(t: FusionTable, *, gamma: float = 1.0, missing: str = "zero") -> np.ndarray:
    """CombGMNZ (Lee, SIGIR 1997, "Analyses of multiple evidence combination"): ``n(d)**gamma * sum_r s_r(d)``;
    gamma = 1 is CombMNZ, gamma = 0 CombSUM."""
    return _total(t, t.score_of, missing) * t.count.astype(np.float64) ** gamma


def wsum(t: FusionTable, *, weights: tuple[float, ...] | None = None, missing: str = "zero") -> np.ndarray:
    """Weighted sum, linear combination (Bartell et al., SIGIR 1994; Vogt and Cottrell 1999):
    ``sum_r w_r s_r(d)``."""
    return _total(t, t.score_of, missing, _weights(t, weights))


def wmnz(t: FusionTable, *, weights: tuple[float, ...] | None = None, missing: str = "zero") -> np.ndarray:
    """Weighted MNZ (Wu and Crestani, CIKM 2002, "Data fusion with estimated weights"; as in ranx):
    ``(sum of w_r over the runs that returned d) * sum_r s_r(d)``."""
    w = _weights(t, weights)
    returned = [np.ones(len(cand)) for cand in t.cand_of]
    return _total(t, t.score_of, missing) * _total(t, returned, "zero", w)


def mixed(t: FusionTable, *, weights: tuple[float, ...] | None = None, missing: str = "zero") -> np.ndarray:
    """Mixed (Wu and Crestani, CIKM 2002; as in ranx): ``sqrt(n(d)) * sum_r w_r s_r(d)``."""
    return _total(t, t.score_of, missing, _weights(t, weights)) * np.sqrt(t.count)


def segfuse(t: FusionTable, *, probs: Any = None, missing: str = "zero") -> np.ndarray:
    """SegFuse (Shokouhi, ECIR 2007, "Segmentation of search engine results for effective data-fusion"):
    ``sum_r P_r(seg(d)) * (s_r(d) + 1)``, segments of sizes 5, 10, 20, ... (ends 10 * 2**(k-1) - 5) and
    P_r the share of relevant documents in that segment of run r over the training queries; a rank past the
    last segment (5115) contributes 0. Scores are normalised first (min-max in the paper)."""
    tables = _trained("segfuse", probs, t)
    cells = []
    for rank, score, table in zip(t.rank_of, t.score_of, tables, strict=True):
        segment = np.searchsorted(SEGFUSE_BOUNDS[1:], np.maximum(rank.astype(np.int64) - 1, 0), side="right")
        inside = segment < len(table)
        prob = np.zeros(len(rank))
        prob[inside] = table[segment[inside]]
        cells.append(prob * (score + 1.0))
    return _total(t, cells, missing)


# ------------------------------------------------------------------------------------------ rank methods
def rrf(t: FusionTable, *, rrf_k: float = 60.0, weights: tuple[float, ...] | None = None, missing: str = "zero"):
    """Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009, "Reciprocal rank fusion outperforms
    Condorcet and individual rank learning methods"): ``sum_r w_r / (rrf_k + rank_r(d))``, rrf_k = 60.

    ``rrf_k`` is the fusion constant, not the cutoff k of recall@k. With rrf_k = 60, a document ranked 1 and
    3 scores 1/61 + 1/63 = 0.0322665 and one ranked 2 and 1 scores 1/62 + 1/61 = 0.0325225, so the second
    ranks first.
    """
    w = None if weights is None else _weights(t, weights)
    cells = []
    for rank in t.rank_of:
        contribution = np.add(rank, rrf_k, dtype=np.float64)
        np.divide(1.0, contribution, out=contribution)
        cells.append(contribution)
    return _total(t, cells, missing, w)


def _inverse_squares(t: FusionTable) -> Cells:
    return [1.0 / (rank * rank) for rank in _ranks(t)]


def isr(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """Inverse square rank (Mourão, Martins and Magalhães, CMIG 2015, "Multimodal medical information
    retrieval with unsupervised rank fusion"): ``n(d) * sum_r 1 / rank_r(d)**2``."""
    return _total(t, _inverse_squares(t), missing) * t.count


def log_isr(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """Log ISR (Mourão et al. 2015): ``log(n(d)) * sum_r 1 / rank_r(d)**2`` (natural log, so a document
    only one run returned scores 0)."""
    return _total(t, _inverse_squares(t), missing) * np.log(t.count)


def logn_isr(t: FusionTable, *, sigma: float = 0.01, missing: str = "zero") -> np.ndarray:
    """LogN ISR (Mourão et al. 2015): ``log(n(d) + sigma) * sum_r 1 / rank_r(d)**2``, sigma in [0, 1]."""
    return _total(t, _inverse_squares(t), missing) * np.log(t.count + sigma)


def rbc(t: FusionTable, *, phi: float = 0.8, missing: str = "zero") -> np.ndarray:
    """Rank-biased centroid (Bailey, Moffat, Scholer and Thomas, SIGIR 2017, "Retrieval consistency in the
    presence of query variations"): ``sum_r (1 - phi) * phi**(rank_r(d) - 1)``, persistence phi in (0, 1)."""
    return _total(t, [(1.0 - phi) * phi ** (rank - 1.0) for rank in _ranks(t)], missing)


def _borda_points(t: FusionTable) -> tuple[Cells, np.ndarray]:
    """Borda points of each cell (N - rank + 1, N the query's candidates) and of an unranked document of
    each (query, run): the average of the points left over, ``(N - n_r + 1) / 2``."""
    total = t.candidates.astype(np.float64)
    points = [total[t.row_query(r)] - rank + 1.0 for r, rank in enumerate(_ranks(t))]
    leftover = (t.candidates[:, None] - t.length + 1) / 2.0
    return points, leftover


def bordafuse(t: FusionTable, *, missing: str = "native") -> np.ndarray:
    """BordaFuse (Aslam and Montague, SIGIR 2001, "Models for metasearch"): each run gives N - rank + 1
    points (N the query's distinct candidates); the documents it did not return share the rest equally,
    ``(N - n_r + 1) / 2`` each; the points are added."""
    points, leftover = _borda_points(t)
    return _total(t, points, missing, native=leftover)


def weighted_bordafuse(
    t: FusionTable, *, weights: tuple[float, ...] | None = None, missing: str = "native"
) -> np.ndarray:
    """Weighted BordaFuse (Aslam and Montague 2001): ``sum_r w_r * points_r(d)``."""
    points, leftover = _borda_points(t)
    return _total(t, points, missing, _weights(t, weights), leftover)


def posfuse(t: FusionTable, *, probs: Any = None, missing: str = "zero") -> np.ndarray:
    """PosFuse (Lillis et al., SIGIR 2010, "Estimating probabilities for effective data fusion"):
    ``sum_r P_r(rank_r(d))``, P_r(p) the share of training queries whose result at rank p in run r is
    relevant (among those with a result at p); 0 past the trained depth."""
    return _total(t, _by_rank(t, _trained("posfuse", probs, t)), missing)


def probfuse(t: FusionTable, *, segments: int = 25, probs: Any = None, missing: str = "zero") -> np.ndarray:
    """ProbFuse (Lillis, Toolan, Collier and Dunnion, SIGIR 2006, "ProbFuse: a probabilistic approach to data
    fusion"): each list of n results is cut into ``segments`` segments of ceil(n / segments) results; a
    document in segment k (1-based) of run r scores ``P_r(k) / k``, P_r(k) the mean share of relevant
    documents in segment k over the training queries (unjudged counted non-relevant: ProbFuseAll)."""
    tables = _trained("probfuse", probs, t)
    cells = []
    for r, (rank, table) in enumerate(zip(t.rank_of, tables, strict=True)):
        size = np.maximum(np.ceil(t.length[t.row_query(r), r] / segments).astype(np.int64), 1)
        segment = (rank.astype(np.int64) - 1) // size
        inside = segment < len(table)
        contribution = np.zeros(len(rank))
        k = segment[inside]
        contribution[inside] = table[k] / (k + 1)
        cells.append(contribution)
    return _total(t, cells, missing)


def slidefuse(t: FusionTable, *, window: int = 5, probs: Any = None, missing: str = "zero") -> np.ndarray:
    """SlideFuse (Lillis et al., ECIR 2008, "Extending probabilistic data fusion using sliding windows"):
    ``sum_r mean(P_r(p - w) .. P_r(p + w))``, the window of PosFuse probabilities around rank p clipped to
    the list's ranks (1..n); probabilities past the trained depth count 0."""
    tables = _trained("slidefuse", probs, t)
    cells = []
    for r, (rank, table) in enumerate(zip(t.rank_of, tables, strict=True)):
        p = rank.astype(np.int64) - 1
        n = t.length[t.row_query(r), r]
        low, high = np.maximum(p - window, 0), np.minimum(p + window, n - 1)
        padded = np.zeros(max(int(n.max()) if len(n) else 0, len(table)) + 1)
        padded[1 : len(table) + 1] = table
        cumulative = np.cumsum(padded)
        cells.append((cumulative[high + 1] - cumulative[low]) / (high - low + 1))
    return _total(t, cells, missing)


def mapfuse(t: FusionTable, *, map_scores: Any = None, missing: str = "zero") -> np.ndarray:
    """MAPFuse (Lillis et al., SIGIR 2010): ``sum_r MAP_r / rank_r(d)``, MAP_r the run's mean average
    precision on the training queries."""
    if map_scores is None:
        _trained("mapfuse", None, t)
    scores = np.asarray(map_scores, dtype=np.float64)
    if scores.shape != (t.n_runs,):
        raise ConventionError(f"mapfuse was trained on {scores.size} runs but {t.n_runs} are fused")
    return _total(t, [score / rank for score, rank in zip(scores, _ranks(t), strict=True)], missing)


def bayesfuse(t: FusionTable, *, log_odds: Any = None, missing: str = "native") -> np.ndarray:
    """BayesFuse (Aslam and Montague, SIGIR 2001, "Models for metasearch"): ``sum_r log(P(rel | rank) /
    P(nonrel | rank))`` estimated per rank bucket (0-5, 5-10, 10-15, 15-20, 20-30, 30-100, 100-200,
    200-500, 500-1000) on training queries; probabilities are kept in [0.001, 0.999], and an unranked
    document, or one past the last bucket, gets the floor log(0.001 / 0.999)."""
    tables = _trained("bayesfuse", log_odds, t)
    values = _by_rank(t, tables, beyond=MIN_LOG_ODDS)
    native = np.full((len(t.query_ids), t.n_runs), MIN_LOG_ODDS)
    return _total(t, values, missing, native=native)


# ------------------------------------------------------------------------------------------- Condorcet
def _condorcet_query(ranks: list[tuple[int, ...]], docs: list[bytes], weights: tuple[float, ...] | None) -> list[int]:
    """Candidates of one query in Condorcet order: a merge sort (Python's, stable) whose comparison asks
    which document more runs rank higher; equal votes go to the higher doc id."""

    def compare(a: int, b: int) -> int:
        ra, rb = ranks[a], ranks[b]
        if weights is None:
            votes_a = sum(1 for x, y in zip(ra, rb, strict=True) if x < y)
            votes_b = sum(1 for x, y in zip(ra, rb, strict=True) if y < x)
        else:
            votes_a = math.fsum(w for x, y, w in zip(ra, rb, weights, strict=True) if x < y)
            votes_b = math.fsum(w for x, y, w in zip(ra, rb, weights, strict=True) if y < x)
        if votes_a != votes_b:
            return -1 if votes_a > votes_b else 1
        return -1 if docs[a] > docs[b] else (1 if docs[a] < docs[b] else 0)

    start = sorted(range(len(docs)), key=lambda i: docs[i], reverse=True)  # doc id descending
    return sorted(start, key=cmp_to_key(compare))


def _condorcet(t: FusionTable, weights: tuple[float, ...] | None) -> np.ndarray:
    out = np.empty(len(t), dtype=np.float64)
    for lo, hi, rows in t.blocks():  # whole queries at a time: the dense ranks of a block, not of the table
        out[lo:hi] = _condorcet_block(t.block(lo, hi, rows), weights)
    return out


def _condorcet_block(t: FusionTable, weights: tuple[float, ...] | None) -> np.ndarray:
    unranked = np.iinfo(np.int64).max
    ranks = np.where(t.present, t.rank.astype(np.int64), unranked)
    order = np.argsort(t.query, kind="stable")
    starts = np.flatnonzero(np.r_[True, t.query[order][1:] != t.query[order][:-1]]) if len(order) else []
    bounds = [*list(starts), len(order)]
    out = np.empty(len(t), dtype=np.float64)
    for start, end in itertools.pairwise(bounds):
        rows = order[start:end]
        docs = t.docs.raw(rows)
        sorted_local = _condorcet_query([tuple(r) for r in ranks[rows].tolist()], docs, weights)
        n = len(rows)
        out[rows[np.asarray(sorted_local, dtype=np.int64)]] = np.arange(n, 0, -1, dtype=np.float64)
    return out


def condorcet(t: FusionTable, *, missing: str = "native") -> np.ndarray:
    """Condorcet-fuse (Montague and Aslam, CIKM 2002, "Condorcet fusion for improved retrieval"): the
    candidates are sorted by pairwise majority (d before e when more runs rank d above e; a run that returned
    only one of them votes for it; a run that returned neither abstains; equal votes go to the higher doc id),
    starting from doc id descending; the document in position i of n scores n - i + 1."""
    return _condorcet(t, None)


def weighted_condorcet(
    t: FusionTable, *, weights: tuple[float, ...] | None = None, missing: str = "native"
) -> np.ndarray:
    """Weighted Condorcet-fuse (Montague and Aslam 2002): as :func:`condorcet`, each run's vote counting
    its weight."""
    return _condorcet(t, tuple(_weights(t, weights).tolist()))


# --------------------------------------------------------------------------------------------- registry
WEIGHTS = Param(tuple, None, "one non-negative weight per run, in run order (default: all equal)")
RRF_K = Param(
    float,
    60.0,
    "the fusion constant added to every rank (not the cutoff k of recall@k)",
    "a number >= 0",
    lambda v: v >= 0,
)
GAMMA = Param(
    float, 1.0, "exponent of the number of runs that returned the document", "a number >= 0", lambda v: v >= 0
)
PHI = Param(
    float,
    0.8,
    "persistence: the weight of each rank relative to the one before",
    "a number in (0, 1)",
    lambda v: 0 < v < 1,
)
SIGMA = Param(float, 0.01, "smoothing added to the count before the log", "a number in [0, 1]", lambda v: 0 <= v <= 1)
WINDOW = Param(int, 5, "half-width of the window of ranks averaged", "an int >= 0", lambda v: v >= 0)
SEGMENTS = Param(int, 25, "segments per result list", "an int >= 1", lambda v: v >= 1)
CONDORCET_MISSING = "an unranked document loses to a ranked one; a run that returned neither abstains"


@dataclass(frozen=True)
class MethodInfo:
    """A registered fusion method: its function and what the front doors need to know about it.

    ``function(table, *, missing, **params)`` gives every candidate's fused score; ``uses_scores`` says whether
    it reads scores (then min-max is the default normalisation) or ranks; ``missing`` is its default
    missing-document policy; ``params`` its hyperparameters (:class:`stagewise.spec.Param`).

    A supervised method names its learned parameters in ``trained`` and gives ``fit``:
    ``fit(method, table, judged, train)`` -> ``{name: value}`` for each of ``trained``, estimated on the table
    queries of the boolean mask ``train`` (``judged``: :class:`stagewise.fusion.train.Judged`, the candidates
    against the qrels); a callable, or a ``"module:function"`` string imported on first use.

    ``missing_rule``: the method's own rule for a document a run did not return (Condorcet's); the
    missing-document policy cannot then be chosen, and the fusion statement states this rule.

    A new method is a function and one entry, :meth:`stagewise.spec.Registry.register`-ed in :data:`METHODS`;
    ``fuse``, ``optimize`` and ``stagewise fuse`` (its ``--method`` check, ``--help``, ``--list-methods``)
    read the registry.
    """

    name: str
    function: Callable[..., np.ndarray]
    summary: str
    uses_scores: bool
    missing: str
    params: dict[str, Param] = field(default_factory=dict)
    trained: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    ranx: str | None = None  # ranx's name for the same method, for the cross-check
    fit: Callable[..., dict[str, Any]] | str | None = None
    missing_rule: str | None = None

    @property
    def weighted(self) -> bool:
        return "weights" in self.params

    @property
    def supervised(self) -> bool:
        return bool(self.trained)

    def fitter(self) -> Callable[..., dict[str, Any]]:
        """The ``fit`` hook as a function (a ``"module:function"`` string imported now)."""
        if self.fit is None:
            raise ConventionError(f"fusion method {self.name!r} learns nothing from judgements")
        if isinstance(self.fit, str):
            module, _, attr = self.fit.partition(":")
            return getattr(importlib.import_module(module), attr)
        return self.fit


METHODS: Registry[MethodInfo] = Registry(
    "fusion method",
    MethodInfo(
        "rrf",
        rrf,
        "sum of w / (rrf_k + rank)",
        False,
        "zero",
        {"rrf_k": RRF_K, "weights": WEIGHTS},
        aliases=("reciprocal_rank_fusion",),
        ranx="rrf",
    ),
    MethodInfo("combsum", combsum, "sum of scores", True, "zero", aliases=("sum", "comb_sum"), ranx="sum"),
    MethodInfo(
        "combmnz",
        combmnz,
        "sum of scores times the number of runs that returned the document",
        True,
        "zero",
        aliases=("mnz", "comb_mnz"),
        ranx="mnz",
    ),
    MethodInfo("combmax", combmax, "highest score", True, "ignore", aliases=("max", "comb_max"), ranx="max"),
    MethodInfo("combmin", combmin, "lowest score", True, "ignore", aliases=("min", "comb_min"), ranx="min"),
    MethodInfo("combmed", combmed, "median score", True, "ignore", aliases=("med", "comb_med"), ranx="med"),
    MethodInfo(
        "combanz",
        combanz,
        "mean score over the runs that returned the document",
        True,
        "zero",
        aliases=("anz", "comb_anz"),
        ranx="anz",
    ),
    MethodInfo(
        "combgmnz",
        combgmnz,
        "sum of scores times count**gamma",
        True,
        "zero",
        {"gamma": GAMMA},
        aliases=("gmnz", "comb_gmnz"),
        ranx="gmnz",
    ),
    MethodInfo(
        "wsum",
        wsum,
        "weighted sum of scores",
        True,
        "zero",
        {"weights": WEIGHTS},
        aliases=("weighted_sum", "linear"),
        ranx="wsum",
    ),
    MethodInfo(
        "wmnz",
        wmnz,
        "sum of scores times the sum of the weights of the runs that returned it",
        True,
        "zero",
        {"weights": WEIGHTS},
        aliases=("weighted_mnz",),
        ranx="wmnz",
    ),
    MethodInfo(
        "mixed", mixed, "weighted sum of scores times sqrt(count)", True, "zero", {"weights": WEIGHTS}, ranx="mixed"
    ),
    MethodInfo("isr", isr, "count times the sum of 1 / rank**2", False, "zero", ranx="isr"),
    MethodInfo(
        "log_isr",
        log_isr,
        "log(count) times the sum of 1 / rank**2",
        False,
        "zero",
        aliases=("logisr",),
        ranx="log_isr",
    ),
    MethodInfo(
        "logn_isr",
        logn_isr,
        "log(count + sigma) times the sum of 1 / rank**2",
        False,
        "zero",
        {"sigma": SIGMA},
        aliases=("lognisr",),
        ranx="logn_isr",
    ),
    MethodInfo(
        "rbc",
        rbc,
        "sum of (1 - phi) * phi**(rank - 1)",
        False,
        "zero",
        {"phi": PHI},
        aliases=("rank_biased_centroid",),
        ranx="rbc",
    ),
    MethodInfo("bordafuse", bordafuse, "sum of Borda points", False, "native", aliases=("borda",), ranx="bordafuse"),
    MethodInfo(
        "weighted_bordafuse",
        weighted_bordafuse,
        "weighted sum of Borda points",
        False,
        "native",
        {"weights": WEIGHTS},
        aliases=("w_bordafuse", "wbordafuse"),
        ranx="w_bordafuse",
    ),
    MethodInfo(
        "condorcet",
        condorcet,
        "sort by pairwise majority",
        False,
        "native",
        aliases=("condorcetfuse",),
        missing_rule=CONDORCET_MISSING,
        ranx="condorcet",
    ),
    MethodInfo(
        "weighted_condorcet",
        weighted_condorcet,
        "sort by weighted pairwise majority",
        False,
        "native",
        {"weights": WEIGHTS},
        aliases=("w_condorcet", "wcondorcet"),
        missing_rule=CONDORCET_MISSING,
        ranx="w_condorcet",
    ),
    MethodInfo(
        "posfuse",
        posfuse,
        "sum of P(relevant | rank) learned per run",
        False,
        "zero",
        trained=("probs",),
        fit="stagewise.fusion.train:fit_position_probs",
        ranx="posfuse",
    ),
    MethodInfo(
        "probfuse",
        probfuse,
        "sum of P(relevant | segment) / segment learned per run",
        False,
        "zero",
        {"segments": SEGMENTS},
        trained=("probs",),
        fit="stagewise.fusion.train:fit_segment_probs",
        ranx="probfuse",
    ),
    MethodInfo(
        "segfuse",
        segfuse,
        "sum of P(relevant | segment) * (score + 1), growing segments",
        True,
        "zero",
        trained=("probs",),
        fit="stagewise.fusion.train:fit_segfuse_probs",
        ranx="segfuse",
    ),
    MethodInfo(
        "slidefuse",
        slidefuse,
        "sum of P(relevant | rank) averaged over a window of ranks",
        False,
        "zero",
        {"window": WINDOW},
        trained=("probs",),
        fit="stagewise.fusion.train:fit_position_probs",
        ranx="slidefuse",
    ),
    MethodInfo(
        "mapfuse",
        mapfuse,
        "sum of MAP / rank, MAP learned per run",
        False,
        "zero",
        trained=("map_scores",),
        fit="stagewise.fusion.train:fit_map_scores",
        ranx="mapfuse",
    ),
    MethodInfo(
        "bayesfuse",
        bayesfuse,
        "sum of log-odds of relevance per rank bucket, learned per run",
        False,
        "native",
        trained=("log_odds",),
        fit="stagewise.fusion.train:fit_log_odds",
        ranx="bayesfuse",
    ),
)


def method_names() -> list[str]:
    """Canonical names, in registry order (aliases left out)."""
    return METHODS.names()


_EXAMPLES = "rrf, rrf(rrf_k=60), wsum(weights=(0.7,0.3)) or combmnz"


def not_k(info: MethodInfo, keys: Any) -> None:
    """RRF's constant is ``rrf_k``: a ``k`` among ``keys`` is refused with a note, since k is a metric's cutoff."""
    if "k" in keys and "rrf_k" in info.params:
        raise ConventionError("RRF's constant is called rrf_k, not k: k is the cutoff of metrics such as recall@k")


@dataclass(frozen=True)
class FusionMethod:
    """A fusion method named by value, hyperparameters included; ``str`` is canonical and parses back.

    Parameters left out take their defaults, and the canonical name shows every parameter that has a value,
    so ``rrf`` and ``rrf(rrf_k=60)`` are the same method.

    >>> m = FusionMethod.parse("RRF")
    >>> str(m), m == FusionMethod.parse("rrf(rrf_k=60.0)")
    ('rrf(rrf_k=60)', True)
    >>> str(FusionMethod.parse("wsum(weights=[0.7, 0.3])"))
    'wsum(weights=(0.7,0.3))'
    """

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str | FusionMethod, **overrides: Any) -> FusionMethod:
        """Read ``text`` (``name`` or ``name(key=value, ...)``); ``overrides`` replace or add parameters
        (``None`` values are ignored)."""
        if isinstance(text, FusionMethod):
            name, given = text.name, dict(text.params)
        else:
            call = parse_call(str(text), "fusion method", _EXAMPLES)
            if call.at is not None:
                raise ConventionError(f"fusion method {call.text!r} takes no @ part; expected a form like {_EXAMPLES}")
            name, given = call.name, call.params
        info = METHODS.lookup(name)
        given.update({k: v for k, v in overrides.items() if v is not None})
        not_k(info, given)
        return cls(info.name, tuple(METHODS.check_params(info.name, info.params, given).items()))

    @property
    def info(self) -> MethodInfo:
        return METHODS[self.name]

    def param(self, name: str) -> Any:
        return dict(self.params)[name]

    def with_params(self, **values: Any) -> FusionMethod:
        return FusionMethod.parse(self, **values)

    def __str__(self) -> str:
        return canonical(self.name, None, self.params)
