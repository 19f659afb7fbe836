"""The one place that decides whether the compiled row helpers (``rows.c``) do a job: trec_eval's order,
gathering strings, and joining rows on (query, document).

Each function returns the compiled result, or ``None`` when the extension was not built (or the input is beyond
it); the caller then runs its numpy or polars code, which gives the same result more slowly. Tests switch the
whole extension off with ``monkeypatch.setattr(rowops, "native", None)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stagewise._native import rows as native

__all__ = ["available", "gather_strings", "join_pairs", "match_pairs", "trec_order"]

Buffers = Sequence[tuple[np.ndarray, bytes | bytearray]]


def available() -> bool:
    return native is not None


def trec_order(
    query: np.ndarray, n_queries: int, scores: np.ndarray, buffers: Buffers, rows: np.ndarray, single: bool
) -> np.ndarray | None:
    """The permutation into trec_eval's order: one vectorised sort of packed (query, truncated score, row) keys,
    then the rows whose keys tie above the row number are settled by full score and doc id in C. ``None`` also
    when the keys cannot hold the row and query numbers."""
    if native is None:
        return None
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    packed = native.sort_keys(np.ascontiguousarray(query, dtype=np.int32), n_queries, scores, single)
    if packed is None:
        return None
    buffer, index_bits = packed
    keys = np.frombuffer(buffer, dtype=np.uint64)
    keys.sort()
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    native.settle_order(keys, index_bits, scores, buffers, rows, single)  # keys become the rows
    return keys.view(np.int64)


def gather_strings(buffers: Buffers, rows: np.ndarray, through: np.ndarray | None) -> tuple[np.ndarray, bytes] | None:
    """(offsets, data) of the strings at ``rows`` (or ``rows[through]``) of one or more columns' buffers."""
    if native is None:
        return None
    extra = () if through is None else (np.ascontiguousarray(through, dtype=np.int64),)
    offsets, data = native.gather_strings(buffers, np.ascontiguousarray(rows, dtype=np.int64), *extra)
    return np.frombuffer(offsets, dtype=np.int64), data


def match_pairs(
    judged_query: np.ndarray,
    judged_keys: np.ndarray,
    judged_buffers: Buffers,
    ranked_query: np.ndarray,
    ranked_keys: np.ndarray,
    ranked_buffers: Buffers,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(ranked row, judged row) of every ranked document that has a judgement: a hash table of each query's
    judgements, probed by that query's results, each match confirmed by its document string."""
    if native is None:
        return None
    ranked_rows, judged_rows = native.match_pairs(
        np.ascontiguousarray(judged_query, dtype=np.int32),
        np.ascontiguousarray(judged_keys, dtype=np.uint64),
        judged_buffers,
        np.ascontiguousarray(ranked_query, dtype=np.int32),
        np.ascontiguousarray(ranked_keys, dtype=np.uint64),
        ranked_buffers,
    )
    return np.frombuffer(ranked_rows, dtype=np.int64), np.frombuffer(judged_rows, dtype=np.int64)


def join_pairs(
    parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray | None, int]], buffers: Buffers, total: int
) -> tuple[int, list[np.ndarray], np.ndarray, np.ndarray, np.ndarray] | None:
    """The candidates of several result lists of ``total`` rows in all, each part ``(query codes, pair keys, rows
    or None, base row)``: one small hash table per query. Returns (number of candidates, each part's candidate
    per row, each candidate's query, key and home row). ``None`` also beyond 2**31 - 1 rows."""
    if native is None or total >= 2**31 - 1:
        return None
    n, cand_of, query, keys, home = native.join_pairs(
        [
            (
                np.ascontiguousarray(codes, dtype=np.int32),
                np.ascontiguousarray(part_keys, dtype=np.uint64),
                None if rows is None else np.ascontiguousarray(rows, dtype=np.int64),
                base,
            )
            for codes, part_keys, rows, base in parts
        ],
        buffers,
    )
    return (
        n,
        [np.frombuffer(c, dtype=np.int32) for c in cand_of],
        np.frombuffer(query, dtype=np.int32),
        np.frombuffer(keys, dtype=np.uint64),
        np.frombuffer(home, dtype=np.int64),
    )
