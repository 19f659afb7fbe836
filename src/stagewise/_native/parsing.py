"""The one place that decides whether the compiled TREC parser (``_trecparse.c``) does a job.

Each function returns the compiled result, or ``None`` when the extension was not built (or declines the input);
the caller then runs its numpy or polars code, which gives the same result more slowly. Tests switch the whole
extension off with ``monkeypatch.setattr(parsing, "native", None)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from stagewise._native import parser as native

__all__ = [
    "Layout",
    "available",
    "first_duplicate",
    "hash_pairs",
    "move_blocks",
    "move_string_blocks",
    "parse",
    "parse_joined",
    "rewrite_rows",
    "run_layout",
]


def available() -> bool:
    """Whether the compiled parser is in use (it reads plain files in pieces, without loading them whole)."""
    return native is not None


def parse(data: bytes | str, kind: int) -> dict[str, Any] | tuple | None:
    """The parser's output for a run (``kind`` 0) or qrels (1) held in ``data`` (bytes, or a plain file's path):
    a dict of buffers, or an error tuple ``(_, code, line, field)``; ``None`` without the extension."""
    if native is None:
        return None
    return native.parse_file(data, kind) if isinstance(data, str) else native.parse(data, kind)


#: The least bytes of each part a large run file is read in by ``parse_joined`` (one part a core, each in a
#: thread of its own); tests set it lower to read small files in parts too.
JOINED_PART_BYTES = 32 << 20


def parse_joined(
    path: str,
    keys: np.ndarray,
    codes: np.ndarray,
    starts: np.ndarray,
    offsets: np.ndarray,
    data: bytes | bytearray,
    queries: dict,
) -> dict[str, Any] | tuple | None:
    """A run file read joined to qrels (their stored pair ``keys``, int32 query ``codes``, each query's first
    row ``starts`` (and the row count), doc id ``offsets`` and ``data``; ``queries``: query id bytes -> qrels
    code), keeping no document id: a dict of per-query lengths and
    the judged rows' (query, rank, qrels row), or ``("decline", reason, line)`` for a run the general reader must
    take (not grouped or not in score order, a repeated key, a bad line, an id that is not ASCII); ``None``
    without the extension. A file of more than :data:`JOINED_PART_BYTES` is read in parts on the machine's
    cores, with the same result."""
    if native is None:
        return None
    return native.parse_joined(
        path,
        np.ascontiguousarray(keys, dtype=np.uint64),
        np.ascontiguousarray(codes, dtype=np.int32),
        np.ascontiguousarray(starts, dtype=np.int64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        data,
        queries,
        JOINED_PART_BYTES,
    )


def hash_pairs(q_offsets: np.ndarray, q_data: bytes, d_offsets: np.ndarray, d_data: bytes) -> np.ndarray | None:
    """The 64-bit (query id, doc id) key of each row, the function the parser applies while reading."""
    if native is None:
        return None
    return np.frombuffer(native.hash_pairs(q_offsets, q_data, d_offsets, d_data), dtype=np.uint64)


def first_duplicate(codes: np.ndarray, keys: np.ndarray, n_queries: int) -> bool | None:
    """Whether some key repeats within a query (``False`` settles it: no duplicate); ``None``: not known."""
    if native is None or not len(keys):
        return None
    return native.first_duplicate(np.ascontiguousarray(codes, dtype=np.int32), keys, n_queries) != -1


def rewrite_rows(offsets: np.ndarray, data: bytearray, rows: np.ndarray, sources: np.ndarray) -> bool:
    """Moves strings within blocks of rows in place; ``False`` when it could not (the caller copies instead)."""
    if native is None or not isinstance(data, bytearray) or not offsets.flags.writeable:
        return False
    native.rewrite_rows(offsets, data, rows, sources)
    return True


class Layout(NamedTuple):
    """What one pass over a run's columns (input order) found; see :func:`run_layout`."""

    grouped: bool  # every query's rows are contiguous
    ordered: bool  # within each query, scores compared as C floats never rise
    tied: np.ndarray  # int64: rows i whose score ties row i + 1's in the same query (meaningful when ordered)
    repeat: int  # first row whose pair key repeats within its query; -1: none; -2: not grouped, not checked
    starts: np.ndarray  # int64: each query code's first row, -1: none (meaningful when grouped)


def run_layout(codes: np.ndarray, scores: np.ndarray, keys: np.ndarray, n_codes: int) -> Layout | None:
    """The grouping, order, ties and repeated keys of a run's rows in one compiled pass (``None`` without the
    extension): the checks :meth:`stagewise.data.run.Run.from_columns` needs, without numpy temporaries."""
    if native is None:
        return None
    grouped, ordered, tied, repeat, starts = native.run_layout(
        np.ascontiguousarray(codes, dtype=np.int32),
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(keys, dtype=np.uint64),
        n_codes,
    )
    return Layout(
        bool(grouped), bool(ordered), np.frombuffer(tied, dtype=np.int64), repeat, np.frombuffer(starts, np.int64)
    )


def move_blocks(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> bool:
    """Lays ``values``' blocks of rows (``starts[i]``, ``lengths[i]``, in their new order) out again in place,
    holding one copy of the column meanwhile; ``False`` when it could not (the caller copies instead)."""
    if native is None or not values.flags.writeable or not values.flags.c_contiguous or values.ndim != 1:
        return False
    native.move_blocks(values, values.itemsize, starts, lengths)
    return True


def move_string_blocks(offsets: np.ndarray, data: bytearray, starts: np.ndarray, lengths: np.ndarray) -> bool:
    """:func:`move_blocks` for a string column (int64 ``offsets`` and its ``data``), in place."""
    if native is None or not isinstance(data, bytearray) or not offsets.flags.writeable:
        return False
    if offsets.dtype != np.int64 or not offsets.flags.c_contiguous:
        return False
    native.move_string_blocks(offsets, data, starts, lengths)
    return True
