"""Column plumbing shared by :class:`Qrels` and :class:`Run`: interning query ids and hashing pairs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from stagewise.errors import InputError

LineLookup = Callable[[int], "int | None"]
"""Maps a row of a container's input to its 1-based line in the source file, or ``None``."""


def no_lines(row: int) -> None:
    """The line lookup of a source that has no lines (a DataFrame, a dict)."""
    return None


def lines_from(lines: list[int] | None, data: bytes | None = None) -> LineLookup:
    """A line lookup from known line numbers, or from the raw bytes, computed only when an error needs it."""
    cache: list[list[int]] = []

    def lookup(row: int) -> int | None:
        if lines is not None:
            return lines[row]
        if data is None:
            return None
        if not cache:
            from stagewise.data.trec import line_numbers

            cache.append(line_numbers(data))
        return cache[0][row]

    return lookup


def intern_queries(query_ids: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique query ids (a numpy array of str) and each row's int32 code into them.

    Codes follow the byte order of the ids (``strcmp``), the order trec_eval prints queries in.
    """
    vocabulary = query_ids.unique().sort()
    codes = query_ids.cast(pl.Enum(vocabulary)).to_physical().cast(pl.Int32).to_numpy()
    return vocabulary.to_numpy().astype(str), codes


def pair_keys(query_ids: pl.Series, doc_ids: pl.Series) -> np.ndarray:
    """A 64-bit hash of each (query id, doc id) pair: an integer join key between a run and its qrels.

    Equal pairs hash equal; the rare unequal pair with an equal hash is caught where keys are joined,
    by comparing the strings of the matched rows.
    """
    frame = pl.DataFrame({"q": query_ids, "d": doc_ids})
    return frame.hash_rows(seed=0x5EED).to_numpy()


def segment_offsets(codes: np.ndarray, n_segments: int) -> np.ndarray:
    """Start of each code's block in rows sorted by code, plus the end: ``offsets[c]:offsets[c+1]``."""
    offsets = np.zeros(n_segments + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_segments), out=offsets[1:])
    return offsets


def check_duplicates(
    keys: np.ndarray,
    query_ids: pl.Series,
    doc_ids: pl.Series,
    source: str,
    line_of: LineLookup,
    what: str,
) -> None:
    """Raise on a document listed twice for one query, naming the second occurrence."""
    duplicated = pl.Series(keys).is_duplicated()
    if not duplicated.any():
        return
    rows = duplicated.arg_true().to_numpy()
    frame = pl.DataFrame({"q": query_ids.gather(rows), "d": doc_ids.gather(rows), "row": rows})
    repeats = frame.filter(pl.struct("q", "d").is_duplicated()).sort("row")
    if repeats.height == 0:  # hash collision between different pairs: nothing is duplicated
        return
    first = repeats.row(0, named=True)
    second = repeats.filter((pl.col("q") == first["q"]) & (pl.col("d") == first["d"])).row(1, named=True)
    line = line_of(second["row"])
    where = "" if line is not None else f" (row {second['row'] + 1})"
    raise InputError(
        source,
        f"document {first['d']!r} appears more than once for query {first['q']!r}{where}",
        line=line,
        expected=f"each document at most once per query in a {what}",
        hint="remove the repeated line, or deduplicate with keep-first",
    )
