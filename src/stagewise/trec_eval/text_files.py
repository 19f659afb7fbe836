"""Reading trec_eval's whitespace-separated side files (prefs, qrels_prefs, qrels_jg, -Z z-scores) line by line.

trec_eval splits fields on C's ``isspace`` (space, tab, CR, vertical tab, form feed), skips a line whose first
character is ``#`` (the prefs and qrels_jg readers; not the z-score reader) and reads numbers with ``atof`` /
``atol``, which turn ``"x"`` into 0. Here a malformed line or a field that is not a number is an
:class:`~stagewise.errors.InputError` naming the file and its line (counted over every line of the file, comments
included). Blank lines are skipped (trec_eval refuses them as malformed; nothing is computed differently).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from stagewise._io import display_name, read_bytes
from stagewise.data.trec import decode_text
from stagewise.errors import InputError

# What C's atof reads in full, without its extensions (hex, inf, nan): anything else is refused, not read as 0.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGRAL = re.compile(r"[+-]?\d+(?:\.0*)?")


def fields_by_line(
    source: str, n_fields: int, expected: str, *, comments: bool = True
) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every data line of ``source`` (a path or ``-``), each with exactly
    ``n_fields`` fields; any other count is an error naming the line and ``expected`` (the line's form)."""
    name = display_name(source)
    data = read_bytes(source)
    decode_text(data, name)  # invalid UTF-8 is an error naming its line
    # bytes.split() splits on exactly C's isspace() set (str.split() would also split on U+001C..U+001F, U+00A0 ...)
    for number, line in enumerate(data.split(b"\n"), 1):
        if comments and line.startswith(b"#"):
            continue
        fields = line.split()
        if not fields:
            continue
        if len(fields) != n_fields:
            raise InputError(name, f"has {len(fields)} fields, not {n_fields}", line=number, expected=expected)
        yield number, [field.decode("utf-8") for field in fields]


def decimal(text: str, source: str, line: int, what: str) -> float:
    """``text`` as a finite decimal number (trec_eval's atof, without its silent 0 for a non-number)."""
    if not _DECIMAL.fullmatch(text):
        raise InputError(display_name(source), f"{what} {text!r} is not a decimal number", line=line)
    return float(text)


def integral(text: str, source: str, line: int, what: str) -> int:
    """``text`` as an integer; ``2.0`` reads as 2 (as trec_eval's atol does), ``1.7`` and ``x`` are refused
    (atol would read them as 1 and 0)."""
    if not _INTEGRAL.fullmatch(text):
        raise InputError(display_name(source), f"{what} {text!r} is not an integer", line=line)
    return int(text.partition(".")[0])
