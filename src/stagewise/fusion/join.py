"""Joining runs on (query, document): the first step of every fusion.

Each run contributes a :class:`Part` (its rows within the depth cut whose query is fused); :func:`join` numbers
the distinct (query, document) candidates over all parts and records where each part's rows land. Compiled, it
is a hash join inside each query; without the extension, one sort of (query, key) composites. Either way a key
match is confirmed by the document strings, so two documents whose 64-bit keys collide stay apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from stagewise._native import rowops
from stagewise.data.columns import position_in_segment
from stagewise.data.run import Run
from stagewise.data.strings import StringSources


@dataclass
class Part:
    """The rows one run contributes: indices into the run, their table query codes and pair keys."""

    run: Run
    rows: np.ndarray | None  # None: every row, in order
    codes: np.ndarray
    keys: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def run_rows(self) -> np.ndarray:
        return np.arange(len(self.run), dtype=np.int64) if self.rows is None else self.rows

    def scores(self) -> np.ndarray:
        return self.run.scores if self.rows is None else self.run.scores[self.rows]


def cut(run: Run, query_ids: np.ndarray, depth: int | None) -> Part:
    """The rows of ``run`` within ``depth`` whose query is fused, with table query codes."""
    keep = None
    if np.array_equal(run.query_ids, query_ids):  # the common case: every query fused, codes unchanged
        codes = run.query_codes
    else:
        pos = np.searchsorted(query_ids, run.query_ids)
        inside = pos < len(query_ids)
        inside[inside] = query_ids[pos[inside]] == run.query_ids[inside]
        codes = np.where(inside, pos, -1).astype(np.int32)[run.query_codes]
        keep = codes >= 0
    if depth is not None:
        within = run.within_query_rank() <= depth
        keep = within if keep is None else keep & within
    if keep is None or keep.all():
        return Part(run, None, codes, run.pair_keys)
    rows = np.flatnonzero(keep)
    return Part(run, rows, codes[rows], run.pair_keys[rows])


@dataclass
class Joined:
    """Candidates of the joined parts, grouped by query (ascending).

    Attributes
    ----------
    cand_of : list of numpy.ndarray of int32 or int64
        Each part's candidate, row by row.
    query, keys, home : numpy.ndarray
        Each candidate's query code (int32), pair key (uint64) and global row in the runs' strings (int64).

    Nothing here is candidates x parts: a part's ranks are its rows' positions in their lists
    (:func:`ranks`), so the join's memory grows with the rows joined, however disjoint the parts are.
    """

    cand_of: list[np.ndarray]
    query: np.ndarray
    keys: np.ndarray
    home: np.ndarray

    def __len__(self) -> int:
        return len(self.query)


def join(parts: list[Part], strings: StringSources, bases: np.ndarray) -> Joined:
    """The candidates of ``parts``, whose document strings are ``strings`` (the runs' columns read as one, run
    r's first row at ``bases[r]``)."""
    if len(parts) == 1:
        part = parts[0]
        # The keys are copied: a table owns them (a fused run may take them over and reorder them in place).
        return Joined([np.arange(len(part), dtype=np.int64)], part.codes, part.keys.copy(), part.run_rows())
    hashed = rowops.join_pairs(
        [(part.codes, part.keys, part.rows, int(bases[r])) for r, part in enumerate(parts)],
        strings.buffers(),
        sum(len(part) for part in parts),
    )
    if hashed is not None:  # the compiled join: one small hash table per query
        _, cand_of, query, keys, home = hashed
        return Joined(cand_of, query, keys, home)
    _, cand_of, query, keys, home = _join_sorted(parts, strings, bases)
    return Joined(cand_of, query, keys, home)


def ranks(part: Part) -> np.ndarray:
    """1-based position (int32) of each of the part's rows in its list for its query: the run's own order."""
    return (position_in_segment(part.codes) + 1).astype(np.int32)


def _join_sorted(parts: list[Part], strings: StringSources, bases: np.ndarray):
    """The numpy join: (number of candidates, each part's candidate per row, each candidate's query, pair key and
    global row in ``strings``).

    One quicksort of a 64-bit composite (query code, top half of the pair key) brings the rows of a pair next
    to each other; each match is confirmed by its document string. Should two different documents share a
    key, the join is redone on the strings.
    """
    sizes = [len(part) for part in parts]
    bounds = np.cumsum([0, *sizes])
    keys = np.concatenate([part.keys for part in parts])
    # Rows of uncut runs are their own global rows (the runs' string columns follow each other in run order).
    uncut = all(part.rows is None for part in parts)
    rows = None if uncut else np.concatenate([bases[r] + part.run_rows() for r, part in enumerate(parts)])
    # One sort of a 64-bit composite, (query code, top half of the key), brings the rows of a pair together.
    composite = keys >> np.uint64(32)
    high = np.concatenate([part.codes for part in parts]).astype(np.uint64)
    high <<= np.uint64(32)
    composite |= high
    del high
    order = np.argsort(composite)
    sorted_composite, sorted_keys = composite[order], keys[order]
    del composite
    start = np.empty(len(order), dtype=bool)
    start[0] = True
    np.not_equal(sorted_composite[1:], sorted_composite[:-1], out=start[1:])
    differ = sorted_keys[1:] != sorted_keys[:-1]
    mixed = np.flatnonzero(differ & ~start[1:]) + 1
    if len(mixed):  # keys sharing their top half in one query: order those groups' rows by the whole key
        starts = np.flatnonzero(start)
        group = np.unique(np.searchsorted(starts, mixed, side="right") - 1)
        ends = np.r_[starts[1:], len(order)][group]
        where = np.concatenate([np.arange(b, e) for b, e in zip(starts[group], ends, strict=True)])
        local = where[np.lexsort((sorted_keys[where], sorted_composite[where]))]
        order[where] = order[local]  # whole groups of equal composite: the composites stay sorted
        sorted_keys[where] = sorted_keys[local]
        differ = sorted_keys[1:] != sorted_keys[:-1]
    start[1:] |= differ  # a new candidate where the query or the key changes
    del differ
    candidate = np.cumsum(start.view(np.uint8), dtype=np.int32 if len(order) < 2**31 else np.int64)
    candidate -= 1
    home = _global(rows, order[start])
    # Confirm: every row joined to a candidate has the candidate's document string.
    others = np.flatnonzero(~start)
    if len(others):
        mine = strings.take(_global(rows, order[others]))
        theirs = strings.take(home[candidate[others]])
        if not (np.array_equal(mine.offsets, theirs.offsets) and mine.data == theirs.data):
            query = np.concatenate([part.codes for part in parts])
            return _join_on_strings(parts, strings, query, keys, _global(rows, np.arange(len(keys))), sizes)
    cand_of = np.empty(len(order), dtype=candidate.dtype)
    cand_of[order] = candidate
    per_part = [cand_of[bounds[i] : bounds[i + 1]] for i in range(len(parts))]
    query = (sorted_composite[start] >> np.uint64(32)).astype(np.int32)
    return int(candidate[-1]) + 1, per_part, query, sorted_keys[start], home


def _global(rows: np.ndarray | None, index: np.ndarray) -> np.ndarray:
    """Global string rows of concatenated-part indices (the identity when no run was cut)."""
    return index.astype(np.int64, copy=False) if rows is None else rows[index]


def _join_on_strings(parts, strings, query, keys, rows, sizes):
    """The join by (query, document string): slower, and exact whatever the keys."""
    frame = pl.DataFrame({"q": query, "d": strings.take(rows).series().cast(pl.Binary)}).with_row_index("i")
    ordered = frame.sort(["q", "d"])
    order = ordered["i"].to_numpy().astype(np.int64)
    q, d = ordered["q"], ordered["d"]
    start = np.r_[True, ((q.slice(1) != q.slice(0, len(q) - 1)) | (d.slice(1) != d.slice(0, len(d) - 1))).to_numpy()]
    candidate = np.cumsum(start) - 1
    cand_of = np.empty(len(order), dtype=np.int64)
    cand_of[order] = candidate
    bounds = np.cumsum([0, *sizes])
    per_part = [cand_of[bounds[i] : bounds[i + 1]] for i in range(len(parts))]
    return int(candidate[-1]) + 1, per_part, query[order][start], keys[order][start], rows[order][start]
