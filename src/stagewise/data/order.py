"""trec_eval's order of result rows: query ascending, score descending, doc id descending (byte order).

Every run stagewise stores is in this order (it is the order trec_eval reads a run in, so ranks and ties agree
with it); fusion produces new rows that must be put in it, and a reader meets runs that are not.

Scores are compared in single precision by default: trec_eval 9 keeps each score as a C ``float``
(``TEXT_RESULTS.sim``), and so do pytrec_eval and ir_measures, which embed it; two scores that differ only
beyond single precision tie there and are ordered by doc id. trec_eval 10.0 keeps doubles; ``single=False``
orders as it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import rowops
from stagewise.data.columns import segment_offsets
from stagewise.data.strings import StringColumn, StringSources

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")


def single_precision(scores: np.ndarray) -> np.ndarray:
    """``scores`` rounded to C ``float`` and back to float64, as trec_eval 9 and pytrec_eval hold them (beyond
    float range: infinity, as IEEE rounding gives)."""
    with np.errstate(over="ignore"):
        return np.asarray(scores, dtype=np.float64).astype(np.float32).astype(np.float64)


def evaluation_order(
    query: np.ndarray,
    scores: np.ndarray,
    strings: StringColumn | StringSources,
    rows: np.ndarray,
    *,
    single: bool = True,
) -> np.ndarray:
    """The permutation into trec_eval's order: query ascending, score descending, doc id descending (bytes).

    ``query`` holds each row's query code, ``scores`` its finite score (0.0 and -0.0 tie), and row i's doc id
    is ``strings[rows[i]]``; rows need not be grouped by query. With ``single`` (the default, trec_eval 9 and
    pytrec_eval), scores are compared as C floats; otherwise as doubles (trec_eval 10.0). Compiled: one sort
    of packed keys, then ties by doc id in C. Without the extension: a segment sort of the scores within each
    query (see :func:`segment_sort`), then rows that tie on (query, score) are put in doc id order, pairs by
    one vectorised string comparison (polars), larger groups by a sort of their members only.
    """
    n_queries = int(query.max()) + 1 if len(query) else 0
    order = rowops.trec_order(query, n_queries, scores, strings.buffers(), rows, single)
    if order is not None:
        return order
    if single:
        scores = single_precision(scores)
    if len(query) > 1 and (query[1:] < query[:-1]).any():  # not grouped by query: group first
        grouping = _stable_order(query)
        query, scores, rows = query[grouping], scores[grouping], rows[grouping]
        return grouping[_numpy_order(query, segment_offsets(query, n_queries), scores, strings, rows)]
    return _numpy_order(query, segment_offsets(query, n_queries), scores, strings, rows)


def _numpy_order(
    query: np.ndarray, offsets: np.ndarray, scores: np.ndarray, strings: StringColumn | StringSources, rows: np.ndarray
) -> np.ndarray:
    """The numpy and polars path (no compiler at install): a segment sort of the scores, then the ties."""
    order = segment_sort(offsets, -scores, np.inf, query)
    value = scores[order] + 0.0  # the order moves rows within their query only, so query[order] == query
    tied = (query[1:] == query[:-1]) & (value[1:] == value[:-1])
    if not tied.any():
        return order
    member = np.zeros(len(order), dtype=bool)
    member[:-1] |= tied
    member[1:] |= tied
    positions = np.flatnonzero(member)
    joined = np.zeros(len(order), dtype=bool)  # joined[i]: row i ties with row i - 1
    joined[1:] = tied
    group = np.cumsum((~joined[positions]).view(np.uint8), dtype=np.int64) - 1  # runs of tied neighbours
    sizes = np.bincount(group)
    first = positions[np.r_[0, np.cumsum(sizes)[:-1]]]
    # Pairs, the common case: compare the two ids (polars, byte order) and swap when the second is larger.
    pair = first[sizes == 2]
    if len(pair):
        a, b = order[pair], order[pair + 1]
        swap = (strings.take(rows[a]).series() < strings.take(rows[b]).series()).to_numpy().astype(np.int64)
        order[pair] = a + (b - a) * swap  # arithmetic, not a random boolean mask (branches mispredict)
        order[pair + 1] = b + (a - b) * swap
    # Larger groups: sort their members by group, then doc id descending.
    large = (sizes > 2)[group]
    if large.any():
        where = positions[large]
        frame = pl.DataFrame({"g": group[large], "d": strings.take(rows[order[where]]).series()})
        local = frame.with_row_index("i").sort(["g", "d"], descending=[False, True])["i"].to_numpy()
        order[where] = order[where[local.astype(np.int64)]]
    return order


def segment_sort(offsets: np.ndarray, values: np.ndarray, pad, segment: np.ndarray | None = None) -> np.ndarray:
    """A permutation that sorts ``values`` ascending within each segment ``offsets[i]:offsets[i + 1]`` (the
    segments stay in order; equal values in any order). ``pad`` must sort after every value.

    Short segments of similar length are laid out as the rows of a padded matrix and sorted row by row, which
    is about twice as fast as one sort of everything; otherwise one quicksort and a stable radix sort of the
    segment numbers. ``segment`` (each value's segment number), when given, saves recomputing it.
    """
    counts = np.diff(offsets)
    n, k = len(values), len(counts)
    width = int(counts.max()) if k else 0
    if segment is None:
        segment = np.repeat(np.arange(k, dtype=np.int64), counts)
    if 0 < k * width <= 4 * n + 4096 and not (values == pad).any():
        matrix = np.full((k, width), pad, dtype=values.dtype)
        flat = segment * np.int64(width)  # value i goes to row segment[i], column i - offsets[segment[i]]
        flat += np.arange(n, dtype=np.int64)
        flat -= offsets[:-1][segment]
        matrix.ravel()[flat] = values
        local = np.argsort(matrix, axis=1)
        local += offsets[:-1, None]
        return local[np.arange(width) < counts[:, None]]
    order = np.argsort(values)
    return order[_stable_order(segment[order])]


def _stable_order(values: np.ndarray) -> np.ndarray:
    """A stable argsort of non-negative integers: radix sort, 16 bits per pass."""
    values = np.asarray(values, dtype=np.int64)
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while len(values) and int(values.max()) >> shift:
        order = order[np.argsort(((values[order] >> shift) & 0xFFFF).astype(np.uint16), kind="stable")]
        shift += 16
    return order
