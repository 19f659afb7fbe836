"""Checks made before a text file is parsed: its encoding and line ends, and whether its lines have the shape
the caller asked for (qrels where qrels belong, a run where a run belongs).

A file that parses is not yet a file read right. A run given where the qrels belong parses as qrels (its rank
column read as labels), CISI's ``qid docid 0 0.000000`` parses as TREC qrels with every document called
``0``, and a UTF-8 byte-order mark glues itself to the first query id. Each of these is caught here from the
first lines of the file (at most :data:`HEAD_BYTES`), so the check costs the same on a 10-line file and a
250 MB one.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from stagewise.errors import InputError

HEAD_BYTES = 1 << 16
"""How much of a file the checks look at."""

SAMPLE_LINES = 200
"""How many data lines of that head the shape checks use."""

UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)

QRELS_FORMAT_HINT = "--qrels-format"  # an option of eval, compare and validate
"""The CLI option that reads qrels in another layout; hints name it."""


def head_of(path: Path) -> bytes:
    """The first :data:`HEAD_BYTES` of a file (empty if it cannot be opened: the reader reports that)."""
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


# Compressed or archived files the readers do not open (gzip and LZ4 they do), told by their first bytes, so
# the error names the format instead of "holds NUL bytes: it looks like a binary file".
_OTHER_COMPRESSIONS = (
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2-compressed", "bunzip2 -k FILE"),  # not a text starting "BZh"
    (re.compile(rb"\xfd7zXZ\x00"), "xz-compressed", "unxz -k FILE"),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd-compressed", "unzstd FILE"),
    (re.compile(rb"PK\x03\x04"), "a zip archive", "unzip FILE"),
)


def check_encoding(head: bytes, source: str) -> None:
    """Refuse UTF-16 and UTF-32 text (with or without a byte-order mark) and binary files, naming what the
    file looks like; the readers take UTF-8 only. ``head`` is the file's start, or all of it (a NUL byte
    anywhere in it is refused)."""
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            raise InputError(
                source,
                f"starts with a {name} byte-order mark: it looks like {name} text",
                line=1,
                expected="UTF-8 text",
                hint=f"save it as UTF-8, e.g. iconv -f {name} -t UTF-8",
            )
    for magic, name, tool in _OTHER_COMPRESSIONS:
        if magic.match(head):
            raise InputError(
                source,
                f"is {name}, which stagewise does not decompress",
                line=1,
                expected="text, gzip (.gz) or LZ4 (.lz4)",
                hint=f"decompress it first ({tool}), or recompress it with gzip",
            )
    nul = head.find(b"\x00")
    if nul >= 0:
        line = head[:nul].count(b"\n") + 1
        # Every other byte NUL is ASCII text stored as UTF-16 (or every fourth, UTF-32) without a mark.
        wide = head[:2000].count(b"\x00") * 3 > len(head[:2000])
        raise InputError(
            source,
            "holds NUL bytes: " + ("it looks like UTF-16 or UTF-32 text" if wide else "it looks like a binary file"),
            line=line,
            expected="UTF-8 text",
            hint="save it as UTF-8" if wide else "check the path",
        )


def needs_rewrite(head: bytes) -> bool:
    """True when the bytes must be fixed before parsing: a UTF-8 byte-order mark, or old Mac line ends."""
    return head.startswith(UTF8_BOM) or (b"\r" in head and b"\n" not in head)


def normalise(data: bytes, source: str) -> bytes:
    """``data`` ready for a line parser: encoding checked, a UTF-8 byte-order mark dropped, and CR-only line
    ends (classic Mac OS) turned into LF, so such a file is read line by line, not as one giant line."""
    check_encoding(data, source)
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if b"\r" in data and b"\n" not in data:  # `in` on bytes is a memchr: cheap on a large file
        data = data.replace(b"\r", b"\n")
    return data


# --------------------------------------------------------------------------------------------- line shapes


def _sample(head: bytes) -> list[tuple[int, list[bytes]]]:
    """(line number, fields) of the head's first data lines, split as the TREC parsers split (ASCII blanks);
    a partial last line is left out."""
    lines = head.split(b"\n")
    if len(head) >= HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]
    out: list[tuple[int, list[bytes]]] = []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if fields and not fields[0].startswith(b"#"):
            out.append((number, fields))
            if len(out) >= SAMPLE_LINES:
                break
    return out


def _is_int(field: bytes) -> bool:
    return field.lstrip(b"+-").isdigit()


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _show(fields: list[bytes]) -> str:
    return " ".join(f.decode("utf-8", errors="replace") for f in fields)[:80]


def _constant_doc_column(sample: list[tuple[int, list[bytes]]], column: int) -> bool:
    """True when ``column`` holds one value on every sampled line while the column before it varies: the
    document ids are not where the format puts them (in a sound file the column before, ``Q0`` or the
    iteration, is the constant one)."""
    if len(sample) < 3 or any(len(fields) <= column for _, fields in sample):
        return False
    return len({fields[column] for _, fields in sample}) == 1 and len({fields[column - 1] for _, fields in sample}) > 1


# Not "the qrels come first" alone: agreement and merge take only qrels, fuse only runs, pool and trust a
# second qrels file by an option; the order is the usual slip where a command takes both.
_ORDER_HINT = (
    "check which file goes where: a command that takes both wants the qrels first, as in stagewise eval QRELS RUN..."
)


def check_qrels_shape(head: bytes, source: str, form: str) -> None:
    """Refuse a TREC qrels file whose first lines have the shape of a run, or of a classic (Cranfield, CISI)
    qrels file that the TREC reader would misread."""
    sample = _sample(head)
    if not sample:
        return
    line, fields = sample[0]
    if all(len(f) >= 6 and _is_int(f[3]) and _is_number(f[4]) for _, f in sample) and (
        len({f[1] for _, f in sample}) == 1
    ):
        raise InputError(
            source,
            f"this looks like a run, not qrels ('{_show(fields)}' has a rank, a score and a tag)",
            line=line,
            expected=f"qrels, {form}",
            hint=_ORDER_HINT,
        )
    if all(len(f) == 3 and all(_is_int(x) for x in f) for _, f in sample):
        raise InputError(
            source,
            f"has 3 integer fields ('{_show(fields)}'): this looks like Cranfield's 'qid docid grade' qrels",
            line=line,
            expected=form,
            hint=f"read it with {QRELS_FORMAT_HINT} cranfield (stagewise eval, compare, validate)",
        )
    if _constant_doc_column(sample, 2) and all(_is_int(f[0]) and _is_int(f[1]) for _, f in sample):
        raise InputError(
            source,
            f"the document column holds {fields[2].decode(errors='replace')!r} on every line ('{_show(fields)}'):"
            " this looks like 'qid docid ...' pairs (CISI, CACM, ADI), not TREC qrels",
            line=line,
            expected=form,
            hint=f"read it with {QRELS_FORMAT_HINT} cisi (stagewise eval, compare, validate)",
        )


def check_run_shape(head: bytes, source: str, form: str) -> None:
    """Refuse a TREC run whose first lines have the shape of qrels, or whose document ids sit in the
    second column (doc id and ``Q0`` swapped)."""
    sample = _sample(head)
    if not sample:
        return
    line, fields = sample[0]
    if all(len(f) == 4 and _is_int(f[3]) for _, f in sample):
        raise InputError(
            source,
            f"this looks like qrels, not a run ('{_show(fields)}' has 4 fields ending in an integer label)",
            line=line,
            expected=form,
            hint=_ORDER_HINT,
        )
    if _constant_doc_column(sample, 2):
        raise InputError(
            source,
            f"the document column holds {fields[2].decode(errors='replace')!r} on every line ('{_show(fields)}'):"
            " the doc id and Q0 columns look swapped",
            line=line,
            expected=form,
        )


def rank_score_problem(head: bytes) -> tuple[int, str] | None:
    """(line, what is wrong) when the rank and score columns of a run's first lines disagree: integer
    scores 1, 2, 3... beside fractional ranks (the two columns swapped), or scores that rise with the rank
    (a distance, lower = better, where a similarity is expected). ``None`` when nothing is suspect."""
    sample = [(n, f) for n, f in _sample(head) if len(f) >= 6]
    if len(sample) < 3:
        return None
    line = sample[0][0]
    ranks_int = all(_is_int(f[3]) for _, f in sample)
    scores_int = all(_is_int(f[4]) for _, f in sample)
    if scores_int and not ranks_int and all(_is_number(f[3]) for _, f in sample):
        return line, "the score column holds integers and the rank column fractions: the two columns look swapped"
    if not ranks_int or not all(_is_number(f[4]) for _, f in sample):
        return None
    first = [f for _, f in sample if f[0] == sample[0][1][0]]
    if scores_int and len(first) >= 3:
        scores = sorted(int(f[4]) for f in first)
        ranks = sorted(int(f[3]) for f in first)
        counting = (list(range(1, len(first) + 1)), list(range(len(first))))
        if scores in counting and ranks not in counting:
            return line, (
                "the score column counts 1, 2, 3... like a rank while the rank column does not: the two columns"
                " look swapped"
            )
    rising = falling = 0
    for (_, a), (_, b) in itertools.pairwise(sample):
        if a[0] != b[0] or int(a[3]) == int(b[3]):
            continue
        step = (float(b[4]) - float(a[4])) * (int(b[3]) - int(a[3]))
        rising += step > 0
        falling += step < 0
    if rising and not falling:
        return line, (
            "scores rise with the rank (rank 1 has the lowest score): if the score is a distance (lower is better)"
            " negate it, since evaluation ranks by score descending; if rank and score are swapped, swap them back"
        )
    return None
