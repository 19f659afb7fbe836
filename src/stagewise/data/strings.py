"""A column of strings stored the Arrow way: one bytes buffer and int64 offsets.

Document ids are the largest part of a run. Kept as raw UTF-8 with offsets they cost one allocation and
no per-string object; the few operations that need real strings (checking a join, ordering tied
results, printing) materialise only the rows they touch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import parsing, rowops

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")


class StringColumn:
    """Immutable UTF-8 strings: row ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    ``offsets`` (int64) never decrease and end within ``data``; the compiled helpers rely on that and check
    only the ends, so build a column with :meth:`from_strings` or :meth:`from_series` unless its offsets are
    known to be well formed."""

    __slots__ = ("_series", "data", "offsets")

    def __init__(self, offsets: np.ndarray, data: bytes | bytearray) -> None:
        self.offsets = offsets
        self.data = data
        self._series: pl.Series | None = None

    @classmethod
    def from_strings(cls, values: Sequence[str]) -> StringColumn:
        encoded = [v.encode("utf-8") for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        if encoded:
            np.cumsum(np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        return cls(offsets, b"".join(encoded))

    @classmethod
    def from_series(cls, series: pl.Series) -> StringColumn:
        """From a polars String Series: its Arrow buffers are copied once (no per-string Python objects)."""
        series = series.cast(pl.String)
        try:
            array = series.to_arrow(compat_level=pl.CompatLevel.oldest())
        except (ImportError, ModuleNotFoundError):  # pyarrow absent: the slower path
            column = cls.from_strings(series.to_list())
        else:
            if hasattr(array, "combine_chunks"):
                array = array.combine_chunks()
            _, offsets_buffer, data_buffer = array.buffers()
            offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[array.offset : array.offset + len(array) + 1]
            start, end = int(offsets[0]), int(offsets[-1])
            data = data_buffer.slice(start, end - start).to_pybytes() if data_buffer is not None else b""
            column = cls(offsets - start, data)
        column._series = series
        return column

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def value(self, row: int) -> str:
        return self.data[self.offsets[row] : self.offsets[row + 1]].decode("utf-8")

    def raw(self, rows: np.ndarray) -> list[bytes]:
        """The undecoded bytes of ``rows`` (byte order is trec_eval's ``strcmp`` order)."""
        starts, ends = self.offsets[rows].tolist(), self.offsets[np.asarray(rows) + 1].tolist()
        data = self.data if isinstance(self.data, bytes) else memoryview(self.data)
        return [bytes(data[s:e]) for s, e in zip(starts, ends, strict=True)]

    def values(self, rows: np.ndarray | None = None) -> list[str]:
        if rows is None:
            rows = np.arange(len(self))
        return [b.decode("utf-8") for b in self.raw(rows)]

    def take(self, rows: np.ndarray, through: np.ndarray | None = None) -> StringColumn:
        """A new column of ``rows`` in that order; with ``through``, of ``rows[through]`` (without making that
        array)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        gathered = rowops.gather_strings(self.buffers(), rows, through)
        if gathered is not None:
            return StringColumn(*gathered)
        if through is not None:
            rows = rows[through]
        lengths = self.offsets[rows + 1] - self.offsets[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        source = np.frombuffer(self.data, dtype=np.uint8)
        within = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        positions = np.repeat(self.offsets[rows], lengths) + within
        return StringColumn(offsets, source[positions].tobytes())

    def buffers(self) -> tuple[tuple[np.ndarray, bytes | bytearray], ...]:
        """The (offsets, data) buffers, as the compiled helpers read string columns."""
        return ((self.offsets, self.data),)

    def permute_within_blocks(self, rows: np.ndarray, sources: np.ndarray) -> StringColumn:
        """Row ``rows[i]`` takes the string of row ``sources[i]``, where each block of consecutive ``rows`` is
        a permutation of itself (re-ordered ties). In place when the buffers are writable, else a copy."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        sources = np.ascontiguousarray(sources, dtype=np.int64)
        if parsing.rewrite_rows(self.offsets, self.data, rows, sources):
            self._series = None
            return self
        order = np.arange(len(self), dtype=np.int64)
        order[rows] = sources
        return self.take(order)

    def binary_series(self) -> pl.Series:
        """The raw bytes as a polars Binary Series: byte order, as trec_eval's ``strcmp`` compares."""
        try:
            import pyarrow as pa
        except ImportError:
            return pl.Series(self.raw(np.arange(len(self))), dtype=pl.Binary)
        array = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), len(self), [None, pa.py_buffer(self.offsets), pa.py_buffer(self.data)]
        )
        return pl.Series(pl.from_arrow(array))

    def series(self) -> pl.Series:
        """The column as a polars String Series (zero-copy through pyarrow when it is installed)."""
        if self._series is None:
            try:
                import pyarrow as pa
            except ImportError:
                self._series = pl.Series(self.values(), dtype=pl.String)
            else:
                array = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(self.offsets), pa.py_buffer(self.data))
                self._series = pl.Series(pl.from_arrow(array))
        return self._series


class DeferredTake(StringColumn):
    """``source.take(rows, through)``, gathered only when its strings are first read.

    A search's Run names each result by the index's document id; a run written to a file or evaluated needs them,
    but one that is only scored, fused by rank or thrown away need not gather them (one million ids: about half
    the time it takes to build that Run). Reading ``offsets`` or ``data`` (every method reads them) gathers the
    strings once, through the same compiled helper as :meth:`StringColumn.take`, so every reader sees the bytes
    an eager ``take`` would have given; the length is known without gathering. Pickling gathers too and sends a
    plain :class:`StringColumn`, not the source column (a whole index's ids) with the row numbers. ``source``,
    ``rows`` and ``through`` must not change until then (a search's arrays are its own)."""

    __slots__ = ("_pending", "_taken")

    def __init__(self, source: StringColumn, rows: np.ndarray, through: np.ndarray | None = None) -> None:
        self._pending: tuple[StringColumn, np.ndarray, np.ndarray | None] | None = (source, rows, through)
        self._taken: StringColumn | None = None
        self._series = None

    def _column(self) -> StringColumn:
        if self._taken is None:
            assert self._pending is not None
            source, rows, through = self._pending
            self._taken, self._pending = source.take(rows, through), None
        return self._taken

    @property  # type: ignore[override]  # the base class's slot, read through the gathered column
    def offsets(self) -> np.ndarray:
        return self._column().offsets

    @property  # type: ignore[override]
    def data(self) -> bytes | bytearray:
        return self._column().data

    @property
    def gathered(self) -> bool:
        """Whether the strings have been gathered yet (for tests and timing)."""
        return self._taken is not None

    def __len__(self) -> int:
        if self._taken is not None:
            return len(self._taken)
        assert self._pending is not None
        _, rows, through = self._pending
        return len(rows if through is None else through)

    def __reduce__(self) -> tuple[type, tuple[np.ndarray, bytes | bytearray]]:
        return StringColumn, (self.offsets, self.data)


class StringSources:
    """Several string columns read as one, without copying them: column k's row i is row ``bases[k] + i``.

    Fusion reads the document ids of all its input runs this way; the compiled helpers accept the columns as
    they are, and only the numpy fallbacks join them into one column (once, on first need).
    """

    __slots__ = ("_joined", "bases", "columns")

    def __init__(self, columns: Sequence[StringColumn]) -> None:
        self.columns = tuple(columns)
        self.bases = np.zeros(len(self.columns) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in self.columns], out=self.bases[1:])
        self._joined: StringColumn | None = None

    def __len__(self) -> int:
        return int(self.bases[-1])

    def buffers(self) -> tuple[tuple[np.ndarray, bytes | bytearray], ...]:
        return tuple(buffer for column in self.columns for buffer in column.buffers())

    def take(self, rows: np.ndarray, through: np.ndarray | None = None) -> StringColumn:
        """A new column of (global) ``rows`` in that order, or of ``rows[through]``."""
        gathered = rowops.gather_strings(self.buffers(), rows, through)
        if gathered is not None:
            return StringColumn(*gathered)
        return self.joined().take(rows, through)

    def value(self, row: int) -> str:
        k = int(np.searchsorted(self.bases, row, side="right")) - 1
        return self.columns[k].value(row - int(self.bases[k]))

    def joined(self) -> StringColumn:
        """All columns as one (a copy)."""
        if self._joined is None:
            if len(self.columns) == 1:
                self._joined = self.columns[0]
            else:
                pieces = [column.offsets[:-1] - column.offsets[0] for column in self.columns]
                shift = 0
                for piece, column in zip(pieces, self.columns, strict=True):
                    piece += shift
                    shift += int(column.offsets[-1] - column.offsets[0])
                offsets = np.concatenate([*pieces, np.array([shift], dtype=np.int64)])
                data = b"".join(bytes(c.data[c.offsets[0] : c.offsets[-1]]) for c in self.columns)
                self._joined = StringColumn(offsets, data)
        return self._joined
