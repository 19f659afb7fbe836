"""Column plumbing shared by :class:`Qrels` and :class:`Run`: interning, pair keys, duplicates, line lookups."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import parsing
from stagewise.data.strings import StringColumn
from stagewise.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

LineLookup = Callable[[int], "int | None"]
"""Maps a row of a container's input to its 1-based line in the source file, or ``None``."""


def clip(value: object, width: int = 60) -> str:
    """A field short enough to quote in a one-line message (a score of 5,000 digits is still an error)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= width else f"{text[: width - 3]}..."


def no_lines(row: int) -> None:
    """The line lookup of a source that has no lines (a DataFrame, a dict)."""
    return None


def lines_from(lines: list[int] | None, data: bytes | Callable[[], bytes] | None = None) -> LineLookup:
    """A line lookup from known line numbers, or from the raw bytes (or a function that reads them), computed
    only when an error needs it."""
    cache: list[list[int]] = []

    def lookup(row: int) -> int | None:
        if lines is not None:
            return lines[row]
        if data is None:
            return None
        if not cache:
            from stagewise.data.trec import line_numbers

            cache.append(line_numbers(data() if callable(data) else data))
        return cache[0][row]

    return lookup


def byte_order(first_seen: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """The ids sorted in byte order (``strcmp``, trec_eval's order), and ``order``: the first-seen code of the
    i-th id in that order; ``None`` when the ids were in byte order already (nothing to re-code)."""
    vocabulary = np.array(first_seen, dtype=object).astype(str) if first_seen else np.array([], dtype=str)
    encoded = [q.encode("utf-8") for q in first_seen]
    if all(a < b for a, b in itertools.pairwise(encoded)):
        return vocabulary, None
    order = np.argsort(np.array(encoded, dtype=object), kind="stable")
    return vocabulary[order], order


def sorted_vocabulary(first_seen: list[str], codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Re-code ids numbered by first appearance so codes follow byte order (``strcmp``, trec_eval's order)."""
    vocabulary, order = byte_order(first_seen)
    if order is None:
        return vocabulary, codes
    new_code = np.empty(len(order), dtype=np.int32)
    new_code[order] = np.arange(len(order), dtype=np.int32)
    return vocabulary, new_code[codes] if len(codes) else codes.astype(np.int32)


def intern(query_ids: pl.Series) -> tuple[list[str], np.ndarray]:
    """Distinct ids in order of first appearance and each row's int32 code."""
    codes = query_ids.cast(pl.Categorical).to_physical()
    first = pl.DataFrame({"q": query_ids, "c": codes}).unique("c", keep="first", maintain_order=True)
    remap = np.full(int(codes.max()) + 1 if len(codes) else 0, -1, dtype=np.int64)
    remap[first["c"].to_numpy()] = np.arange(first.height)
    return first["q"].to_list(), remap[codes.to_numpy()].astype(np.int32)


def pair_keys(query_per_row: StringColumn, docs: StringColumn) -> np.ndarray:
    """A 64-bit hash of each (query id, doc id) pair: the integer join key between a run and its qrels.

    The same function the C parser applies while reading. Equal pairs hash equal; the rare unequal pair
    with an equal hash is caught where keys are joined, by comparing the matched rows' strings.
    """
    keys = parsing.hash_pairs(query_per_row.offsets, query_per_row.data, docs.offsets, docs.data)
    if keys is not None:
        return keys
    frame = pl.DataFrame({"q": query_per_row.series(), "d": docs.series()})
    return frame.hash_rows(seed=0x5EED).to_numpy()


def segment_offsets(codes: np.ndarray, n_segments: int) -> np.ndarray:
    """Start of each code's block in rows sorted by code, plus the end: ``offsets[c]:offsets[c+1]``."""
    # ``codes`` is sorted, so each boundary is a binary search (in the codes' own dtype: a mixed-dtype search
    # would first copy ``codes``).
    dtype = codes.dtype if codes.dtype.itemsize >= 4 else np.int64
    return np.searchsorted(codes, np.arange(n_segments + 1, dtype=dtype), side="left").astype(np.int64)


def duplicate_rows(codes: np.ndarray, keys: np.ndarray, docs: StringColumn) -> list[tuple[int, int]]:
    """(first, repeat) row pairs where a document repeats within a query, in order of the repeat.

    Found by key, confirmed by comparing the document strings (a hash collision is not a duplicate).
    """
    n_queries = int(codes.max()) + 1 if len(codes) else 0
    if parsing.first_duplicate(codes, keys, n_queries) is False:
        return []
    frame = pl.DataFrame({"q": codes, "k": keys}).with_row_index("i")
    repeated = frame.filter(pl.struct("q", "k").is_duplicated())
    pairs: list[tuple[int, int]] = []
    for _, group in repeated.group_by(["q", "k"], maintain_order=True):
        rows = group["i"].to_list()
        seen: dict[bytes, int] = {}
        for row, raw in zip(rows, docs.raw(np.array(rows)), strict=True):
            if raw in seen:
                pairs.append((seen[raw], row))
            else:
                seen[raw] = row
    return sorted(pairs, key=lambda pair: pair[1])


def raise_on_duplicates(
    codes: np.ndarray,
    keys: np.ndarray,
    docs: StringColumn,
    query_ids: np.ndarray | list[str],
    source: str,
    line_of: LineLookup,
    what: str,
) -> None:
    """Raise on a document listed twice for one query, naming the line of the second occurrence."""
    pairs = duplicate_rows(codes, keys, docs)
    if not pairs:
        return
    first, repeat = pairs[0]
    line = line_of(repeat)
    where = "" if line is not None else f" (rows {first + 1} and {repeat + 1})"
    first_line = line_of(first)
    also = f", first at line {first_line}" if first_line is not None else ""
    raise InputError(
        source,
        f"document {docs.value(repeat)!r} appears more than once for query {query_ids[codes[repeat]]!r}{where}{also}",
        line=line,
        expected=f"each document at most once per query in a {what}",
        hint=(
            "remove the repeated line, or keep one listing with --duplicates first or --duplicates best"
            " (read_run(..., duplicates='first') in Python)"
            if what == "run"
            else "remove the repeated line: each document is judged once per query"
        ),
    )


def require_values(columns: tuple[tuple[str, pl.Series], ...], source: str, line_of: LineLookup) -> None:
    """Raise on the first missing (null) value of any named column, naming its line."""
    for column, series in columns:
        if series.null_count():
            row = int(series.is_null().arg_true()[0])
            raise InputError(source, f"missing {column}", line=line_of(row), expected=f"a {column} on every row")


_DECIMAL_COMMA = re.compile(r"[-+]?\d+,\d+")
_INTEGER = re.compile(r"[-+]?\d+")


def number_hint(kind: str, field: object) -> str | None:
    """What a ``kind`` ("score" or "label") field that did not read most likely is, for the error's hint: a
    decimal comma, or an integer too large for a label; None when it looks like neither. Every reader's number
    errors (the compiled parser's and the frame readers') ask here."""
    text = str(field).strip()
    if kind == "score" and _DECIMAL_COMMA.fullmatch(text):
        return "it has a decimal comma: write the score with a point (1.5, not 1,5)"
    if kind == "label" and _INTEGER.fullmatch(text):
        return "it is an integer too large for a label: labels are small integers, as 0 to 3"
    return None


def integer_labels(raw: pl.Series, where: str, line_of: LineLookup) -> np.ndarray:
    """Labels as int32: integers, or numbers whose value is an integer (1.0); anything else is an error."""
    if raw.dtype.is_integer():
        values = raw.cast(pl.Int64).to_numpy()
    else:
        as_float = raw.cast(pl.Float64, strict=False)
        bad = as_float.is_null() | ~as_float.is_finite() | (as_float != as_float.round(0))
        if bad.any():
            row = int(bad.arg_true()[0])
            raise InputError(
                where,
                f"relevance label {clip(raw[row])!r} is not an integer",
                line=line_of(row),
                expected="an integer label such as 0, 1, 2 or -1 (1.0 also reads as 1)",
                hint=number_hint("label", raw[row]),
            )
        values = as_float.to_numpy()  # checked against int32's range below, before any cast can fail
    if values.size and (values.max() > np.iinfo(np.int32).max or values.min() < np.iinfo(np.int32).min):
        row = int(np.flatnonzero((values > np.iinfo(np.int32).max) | (values < np.iinfo(np.int32).min))[0])
        raise InputError(
            where,
            f"relevance label {clip(raw[row])!r} is out of range",
            line=line_of(row),
            expected="a label that fits in 32 bits",
            hint=number_hint("label", raw[row]),
        )
    return values.astype(np.int32)


def position_in_segment(groups: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal values in a sorted ``groups`` array."""
    n = len(groups)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    lengths = np.diff(np.r_[starts, n])
    return np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)
