"""TREC run files cut into blocks of whole queries, and each block read as a :class:`~stagewise.data.run.Run`.

A block ends where one query's lines end and the next query's begin, so every query's rows land in exactly one
block and the per-query kernels see each query whole. That needs a run *grouped* by query (all of a query's
lines together, in any query order), which is how every retrieval system writes one. A query whose lines
reappear after another query's is an error naming the line and the fix, never a silently split query.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

import numpy as np

from stagewise._io import open_input
from stagewise.data import trec
from stagewise.data.run import Run
from stagewise.errors import InputError

#: Bytes read at a time by the stream engine: with the run's own arrays this bounds memory (a block of the
#: benchmark's shape is ~55k rows), whatever the file's size; only a single query larger than a block makes
#: a block grow (to that query).
BLOCK_BYTES = 2 * 2**20

UNGROUPED_HINT = (
    "group the run by query first, e.g. LC_ALL=C sort -k1,1 -s RUN > SORTED_RUN, "
    "or use --engine local, which reads the whole run into memory"
)


def query_of(line: bytes) -> bytes | None:
    """The query id of a TREC line (its first field); None for a blank or comment line, as the parsers skip."""
    stripped = line.strip()
    if stripped.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark opening the file, which the readers drop
        stripped = stripped[3:].strip()
    if not stripped or stripped.startswith(b"#"):
        return None
    return stripped.split(None, 1)[0]


def _last_boundary(buf: bytes, end: int) -> int:
    """Where the trailing lines of ``buf[:end]`` that belong to its last query begin (``end`` is just past a
    newline); 0 when ``buf[:end]`` holds a single query, whose lines may go on past ``end``."""
    last = None
    pos = end
    while pos > 0:
        start = buf.rfind(b"\n", 0, pos - 1) + 1
        query = query_of(buf[start:pos])
        if query is not None:
            if last is None:
                last = query
            elif query != last:
                return pos
        pos = start
    return 0


def iter_blocks(fh: IO[bytes], block_bytes: int = BLOCK_BYTES, limit: int | None = None) -> Iterator[tuple[bytes, int]]:
    """``(block, line of its first byte, 1-based)`` over the stream, each block a run of whole queries; at most
    ``limit`` bytes are read."""
    carry = b""
    unended: list[bytes] = []  # pieces with no newline after carry: joined once a newline comes, not per piece
    line = 1
    consumed = 0
    while True:
        want = block_bytes if limit is None else min(block_bytes, limit - consumed)
        data = fh.read(want) if want > 0 else b""
        consumed += len(data)
        if not data:
            if carry or unended:
                yield b"".join([carry, *unended]), line
            return
        if b"\n" not in data:  # a line longer than a block: re-joining the carry each time was quadratic
            unended.append(data)
            continue
        buf = b"".join([carry, *unended, data]) if carry or unended else data
        unended = []
        end = buf.rfind(b"\n") + 1
        cut = _last_boundary(buf, end) if end else 0
        if cut == 0:  # one query so far: read on until the next one starts
            carry = buf
            continue
        block, carry = buf[:cut], buf[cut:]
        yield block, line
        line += block.count(b"\n")


def query_boundary(path: str | os.PathLike, offset: int, size: int) -> int:
    """The first place at or after ``offset`` where one query's lines end and another's begin (0 and ``size``
    at the ends). Neighbouring partitions compute the same boundary, so each query is read by one of them."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    with open(path, "rb") as fh:
        fh.seek(offset - 1)
        fh.readline()  # finish the line holding byte offset - 1: what follows starts a line
        first = None
        while True:
            pos = fh.tell()
            line = fh.readline()
            if not line:
                return size
            query = query_of(line)
            if query is None:
                continue
            if first is None:
                first = query
            elif query != first:
                return pos


def count_lines(path: str | os.PathLike, end: int) -> int:
    """Newlines in the first ``end`` bytes of the file (for the line number of an error in a partition)."""
    count = 0
    with open(path, "rb") as fh:
        while end > 0:
            data = fh.read(min(end, BLOCK_BYTES))
            if not data:
                break
            count += data.count(b"\n")
            end -= len(data)
    return count


def shifted(exc: InputError, lines: int) -> InputError:
    """The same error with its line moved down by ``lines`` (a block's line numbers count from the block)."""
    if exc.line is None or lines == 0:
        return exc
    return InputError(exc.source, exc.problem, line=exc.line + lines, expected=exc.expected, hint=exc.hint)


class GroupCheck:
    """Remembers the queries already read, to refuse a query whose lines come back after another's; with
    ``ordered``, also a query whose id is lower (byte order) than the one before it."""

    def __init__(self, source: str, ordered: bool = False) -> None:
        self.source = source
        self.seen: set[str] = set()
        self.ordered = ordered
        self.last: str | None = None

    def check(self, queries: list[str], rows: np.ndarray, line_of: Callable[[int], int | None]) -> None:
        """``queries[i]`` starts a stretch of lines at row ``rows[i]`` of the block."""
        for query, row in zip(queries, rows.tolist(), strict=True):
            if query in self.seen:
                raise InputError(
                    self.source,
                    f"query {query!r} comes back here after other queries' lines: the run is not grouped by query, "
                    "which a run read in parts needs",
                    line=line_of(row),
                    hint=UNGROUPED_HINT,
                )
            if self.ordered and self.last is not None and query < self.last:  # code points: UTF-8 byte order
                raise InputError(
                    self.source,
                    f"query {query!r} comes after query {self.last!r}: the run is not sorted by query id (byte "
                    "order), which fusing runs read in parts needs",
                    line=line_of(row),
                    hint="sort each run by query id first, e.g. LC_ALL=C sort -k1,1 -s RUN > SORTED_RUN, or use "
                    "--engine local, which reads the runs into memory",
                )
            self.seen.add(query)
            self.last = query


def run_from_block(
    data: bytes, source: str, name: str, duplicates: str, groups: GroupCheck | None = None, first_line: int = 1
) -> Run:
    """A block's rows as a Run; ``first_line`` is the file line of the block's first byte, so that errors (and
    the line numbers inside their messages) name the file's lines."""
    try:
        parsed, block_line_of = trec.parse_run(data, source)
    except InputError as exc:
        raise shifted(exc, first_line - 1) from None

    def line_of(row: int) -> int | None:
        line = block_line_of(row)
        return None if line is None else line + first_line - 1

    if isinstance(parsed, trec.Parsed):
        codes = parsed.codes
        starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1)) if len(codes) else codes
        queries = [parsed.first_seen[c] for c in codes[starts].tolist()]
        if groups is not None:
            groups.check(queries, starts, line_of)
        return Run.from_columns(
            parsed.first_seen,
            parsed.codes,
            parsed.docs,
            parsed.values,
            parsed.ranks,
            parsed.keys,
            owned=True,  # the parser's fresh columns: reordered in place
            name=name,
            source=source,
            tag=parsed.tag,
            line_of=line_of,
            duplicates=duplicates,
        )
    frame = parsed  # the pure-Python reader (no compiled parser)
    column = frame["query_id"]
    starts = np.flatnonzero(np.concatenate(([True], (column[1:] != column[:-1]).to_numpy()))) if len(column) else []
    if groups is not None:
        groups.check([column[int(i)] for i in starts], np.asarray(starts, dtype=np.int64), line_of)
    score_from = trec.RANK_ONLY if "tag" not in frame.columns else None  # a 3-column 'qid docid rank' run
    return Run.from_frame(
        frame, name=name, source=source, line_of=line_of, duplicates=duplicates, score_from=score_from
    )


def runs_from_stream(
    fh: IO[bytes],
    source: str,
    name: str,
    duplicates: str = "error",
    block_bytes: int = BLOCK_BYTES,
    limit: int | None = None,
    groups: GroupCheck | None = None,
    line_base: int = 0,
) -> Iterator[Run]:
    """One Run per block of whole queries; errors name the line counted from the file's start, the stream
    starting after ``line_base`` lines."""
    groups = groups if groups is not None else GroupCheck(source)
    for i, (block, first_line) in enumerate(iter_blocks(fh, block_bytes, limit), start=1):
        yield run_from_block(block, source, name, duplicates, groups, first_line + line_base)
        if i % 32 == 0:
            release_memory()


def release_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing elsewhere). Blocks of
    a few MB freed one after another leave the heap fragmented, and without this the resident memory of a long
    stream creeps up (281 MB instead of 258 MB at the end of 70M lines)."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim = None


@contextmanager
def open_run(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A run file as a binary stream: ``-`` is stdin, gzip (told by its magic bytes) is decompressed as it is
    read, under the limits on expansion of :func:`stagewise._io.open_input`."""
    if str(path) != "-":
        if not os.path.exists(path):
            raise InputError(str(path), "does not exist", hint="check the path")
        if os.path.isdir(path):
            raise InputError(str(path), "is a folder, not a run file")
    with open_input(path) as fh:
        yield fh
