"""Several runs read side by side, a group of whole queries at a time, for stages that need every run's rows of
a query together (fusion).

Each run file must be sorted by query id in byte order (``LC_ALL=C sort -k1,1 -s``): then the runs are merged
like sorted lists, in bounded memory. A group holds, for every run, its rows of the same queries (none, for a run
that lacks them), so a stage applied per group gives what it gives on the whole runs when its result for a query
depends on that query's rows only. For the Dask engine, the query space is cut at split queries and each range is
found in each file by binary search, a range per task.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO

import numpy as np

from stagewise.data.run import Run
from stagewise.data.strings import StringColumn

from ._blocks import GroupCheck, iter_blocks, query_of, run_from_block


def take_queries(run: Run, start: int, stop: int) -> Run:
    """The run's queries ``start:stop`` (in its sorted order) as a Run of their rows; may be empty."""
    lo, hi = int(run.offsets[start]), int(run.offsets[stop])
    return Run(
        run.query_ids[start:stop],
        (run.query_codes[lo:hi] - start).astype(np.int32),
        run.docs.take(np.arange(lo, hi, dtype=np.int64)),
        run.scores[lo:hi],
        None if run.ranks is None else run.ranks[lo:hi],
        None,  # input order is not kept (fusion orders by score and doc id)
        run.pair_keys[lo:hi],
        name=run.name,
        source=run.source,
        tag=run.tag,
    )


def empty_run(name: str, source: str | None = None) -> Run:
    """A run with no rows (a run that has none of a group's queries)."""
    return Run(
        np.array([], dtype=str),
        np.array([], dtype=np.int32),
        StringColumn(np.zeros(1, dtype=np.int64), b""),
        np.array([], dtype=np.float64),
        None,
        None,
        np.array([], dtype=np.uint64),
        name=name,
        source=source,
    )


class _Sorted:
    """One run's blocks, each a Run, checked to come in increasing query order."""

    def __init__(self, fh: IO[bytes], where: str, name: str, duplicates: str, block_bytes: int,
                 limit: int | None, line_base: int) -> None:
        self.blocks = iter_blocks(fh, block_bytes, limit)
        self.where, self.name, self.duplicates = where, name, duplicates
        self.line_base = line_base
        self.groups = GroupCheck(where, ordered=True)
        self.pending: Run | None = None
        self.done = False

    def fill(self) -> None:
        """Read blocks until some queries are pending or the run ends."""
        while not self.done and (self.pending is None or len(self.pending.query_ids) == 0):
            try:
                block, first_line = next(self.blocks)
            except StopIteration:
                self.done = True
                return
            self.pending = run_from_block(
                block, self.where, self.name, self.duplicates, self.groups, first_line + self.line_base
            )

    def take_through(self, query: str) -> Run | None:
        """Pending queries up to and including ``query``."""
        if self.pending is None:
            return None
        cut = int(np.searchsorted(self.pending.query_ids, query, side="right"))
        head = take_queries(self.pending, 0, cut)
        self.pending = take_queries(self.pending, cut, len(self.pending.query_ids))
        return head


def iter_groups(
    streams: list[tuple[IO[bytes], str, str, int | None, int]], duplicates: str, block_bytes: int
) -> Iterator[list[Run]]:
    """Groups of whole queries of several sorted runs: ``streams`` holds (binary stream, display name, run name,
    bytes to read or None, lines before the stream's start). Each group is one Run per stream, in order."""
    readers = [
        _Sorted(fh, where, name, duplicates, block_bytes, limit, base) for fh, where, name, limit, base in streams
    ]
    while True:
        for reader in readers:
            reader.fill()
        live = [r for r in readers if r.pending is not None and len(r.pending.query_ids)]
        if not live:
            return
        # Every query up to the smallest of the live runs' last pending queries is complete in every run.
        frontier = min(str(r.pending.query_ids[-1]) for r in live)  # type: ignore[union-attr]
        group = []
        for reader in readers:
            head = reader.take_through(frontier)
            group.append(head if head is not None else empty_run(reader.name, reader.where))
        yield group


def lower_bound(path: str | os.PathLike, query: str, size: int) -> int:
    """Byte offset of the first line of a sorted run whose query id is >= ``query`` (byte order); ``size``
    when there is none. A binary search over byte offsets, reading a line or two per step."""
    key = query.encode()

    def first_data_at(fh: IO[bytes], offset: int) -> tuple[int, bytes | None]:
        if offset > 0:
            fh.seek(offset - 1)
            fh.readline()
        else:
            fh.seek(0)
        while True:
            pos = fh.tell()
            line = fh.readline()
            if not line:
                return size, None
            found = query_of(line)
            if found is not None:
                return pos, found

    with open(path, "rb") as fh:
        lo, hi = 0, size
        while lo < hi:
            mid = (lo + hi) // 2
            _, found = first_data_at(fh, mid)
            if found is None or found >= key:
                hi = mid
            else:
                lo = mid + 1
        return first_data_at(fh, lo)[0]


def split_queries(path: str | os.PathLike, size: int, parts: int) -> list[str]:
    """Up to ``parts - 1`` increasing query ids that cut a sorted run into parts of about equal bytes."""
    out: list[str] = []
    with open(path, "rb") as fh:
        for k in range(1, parts):
            fh.seek(max(0, size * k // parts - 1))
            fh.readline()
            while True:
                line = fh.readline()
                if not line:
                    break
                found = query_of(line)
                if found is not None:
                    text = found.decode("utf-8", errors="replace")
                    if not out or text > out[-1]:
                        out.append(text)
                    break
    return out
