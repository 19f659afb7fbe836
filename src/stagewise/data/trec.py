"""TREC text formats: runs (``qid iter docno rank score tag``) and qrels (``qid iter docno label``).

Accepted as trec_eval accepts them: fields separated by any run of spaces or tabs, ``#`` comment lines,
document ids that contain ``#``, and extra trailing columns after the last required field (ignored).
Blank lines are skipped. Everything else is an :class:`~stagewise.errors.InputError` naming the line.

Two paths read a file. The fast path hands the bytes to polars' CSV reader when the file uses one
separator throughout; anything it cannot take (mixed separators, blank lines, a bad field) falls back to
a careful line-by-line reader, which either reads the file or names the first bad line.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import parsing
from stagewise.data import shape
from stagewise.data.columns import LineLookup, clip, integer_labels, lines_from, number_hint
from stagewise.data.strings import StringColumn
from stagewise.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

RUN_FIELDS = ("query_id", "iteration", "doc_id", "rank", "score", "tag")
QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
RUN_FORM = "6 fields 'query_id Q0 doc_id rank score run_tag'"
QRELS_FORM = "4 fields 'query_id iteration doc_id relevance'"
#: MS MARCO's and Pyserini's run layout: the rank is the only order (no score).
RANKED_FIELDS = ("query_id", "doc_id", "rank")
RANKED_FORM = "3 fields 'query_id doc_id rank' (an MS MARCO / Pyserini run; tab or space separated)"
#: Qrels as bare pairs, each relevant: what ``qid docid`` lists (MS MARCO's and TREC-COVID-style exports,
#: ir_datasets' ``qrels_iter()`` written without its label) hold.
PAIR_FIELDS = ("query_id", "doc_id")
PAIR_FORM = "2 fields 'query_id doc_id' (every listed pair relevant, label 1)"
#: What a 3-column run's rows say of their scores (``Run.score_from``); the notes of an evaluation repeat it.
RANK_ONLY = "rank"


def _first_data_line(data: bytes) -> bytes | None:
    for raw in data[:65536].splitlines():
        stripped = raw.strip()
        if stripped and not stripped.startswith(b"#"):
            return raw
    return None


def data_fields(data: bytes) -> int:
    """How many fields the first data line of ``data`` (a file's start) has, split as the parsers split; 0
    when the start holds no data line."""
    first = _first_data_line(data)
    return 0 if first is None else len(first.split())


def _fast_frame(data: bytes, fields: tuple[str, ...], exact: bool = False) -> pl.DataFrame | None:
    """Parse with polars when the layout is regular; ``None`` sends the caller to the careful reader. With
    ``exact``, a line with more fields than ``fields`` goes to the careful reader too (which names it)."""
    first = _first_data_line(data)
    if first is None:
        return None
    separator = "\t" if b"\t" in first else " "
    n_columns = len(first.split(separator.encode()))
    if n_columns < len(fields) or (exact and n_columns != len(fields)) or first != first.strip() or b"\r" in first:
        return None
    if b"\x0b" in data or b"\x0c" in data:  # blanks to the parsers, field bytes to polars' CSV reader
        return None
    names = list(fields) + [f"_extra{i}" for i in range(n_columns - len(fields))]
    try:
        frame = pl.read_csv(
            io.BytesIO(data),
            has_header=False,
            separator=separator,
            quote_char=None,
            comment_prefix="#",
            schema=dict.fromkeys(names, pl.String),
            truncate_ragged_lines=not exact,
        ).select(fields)
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if frame.null_count().sum_horizontal().item() != 0:
        return None
    # A line that mixes tabs and spaces would leave a separator inside a field: read it the careful way.
    other = " " if separator == "\t" else "\t"
    if frame.select(pl.any_horizontal(pl.all().str.strip_chars(" ").str.contains(other, literal=True)).any()).item():
        return None
    if separator == "\t":
        frame = frame.with_columns(pl.all().str.strip_chars(" "))
    return frame


def _careful_rows(
    data: bytes, source: str, fields: tuple[str, ...], form: str, exact: bool = False
) -> tuple[list[list[str]], list[int]]:
    decode_text(data, source)  # invalid UTF-8 is an error naming its line
    rows: list[list[str]] = []
    lines: list[int] = []
    n = len(fields)
    # Split bytes, not text: bytes.split() breaks on ASCII white space only, as the C parser and trec_eval do
    # (str.split() would also break on U+00A0 or U+001C inside an id).
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        parts = line.split()
        if not parts or parts[0].startswith(b"#"):
            continue
        if len(parts) < n or (exact and len(parts) != n):
            raise InputError(source, f"found {len(parts)} field(s)", line=lineno, expected=form)
        rows.append([part.decode("utf-8") for part in parts[:n]])
        lines.append(lineno)
    return rows, lines


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text; invalid bytes are an error naming their line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(source, "is not valid UTF-8 text", line=line) from None


def _check_scores(frame: pl.DataFrame, line_of: LineLookup, source: str) -> pl.DataFrame:
    """Cast the score column to float64; non-numeric, NaN and infinite scores are errors."""
    scores = frame["score"].cast(pl.Float64, strict=False)
    bad = scores.is_null() | ~scores.is_finite()
    if bad.any():
        row = int(bad.arg_true()[0])
        value = clip(frame["score"][row])
        raise InputError(
            source,
            f"score {value!r} is not a finite number",
            line=line_of(row),
            expected="a decimal number such as 12.5 or -0.031",
        )
    return frame.with_columns(scores.alias("score"))


def _check_labels(frame: pl.DataFrame, line_of: LineLookup, source: str) -> pl.DataFrame:
    labels = integer_labels(frame["relevance"], source, line_of)
    return frame.with_columns(pl.Series("relevance", labels, dtype=pl.Int32))


def _read(
    data: bytes, source: str, fields: tuple[str, ...], form: str, exact: bool = False
) -> tuple[pl.DataFrame, LineLookup]:
    if not data.strip():
        raise InputError(source, "is empty", expected=f"lines of {form}")
    frame = _fast_frame(data, fields, exact)
    lines: list[int] | None = None
    if frame is None:
        rows, lines = _careful_rows(data, source, fields, form, exact)
        if not rows:
            raise InputError(source, "has no data lines, only comments or blank lines", expected=form)
        frame = pl.DataFrame(rows, schema=dict.fromkeys(fields, pl.String), orient="row")
    elif frame.height == 0:
        raise InputError(source, "has no data lines, only comments or blank lines", expected=form)
    return frame, lines_from(lines, data)


def line_numbers(data: bytes) -> list[int]:
    """1-based line numbers of the data lines (not blank, not comments), in file order.

    Lines are split and stripped as bytes, by the parsers' own rule (ASCII blanks): text rules would also
    strip U+001C or U+0085, count a line such as ``\\x1c#q ...`` as a comment that the parser read as data,
    and point every later error at the wrong line."""
    lines = enumerate(data.split(b"\n"), start=1)
    return [i for i, line in lines if line.strip() and not line.lstrip().startswith(b"#")]


def _prepare(data: bytes | Path, source: str, kind: int, form: str, head: bytes | None = None) -> bytes | Path:
    """Check the encoding and the shape of the first lines; a file with a UTF-8 byte-order mark or CR-only
    line ends comes back as fixed bytes, any other file as given (the C parser reads a path in pieces).
    ``head``: the file's start when the caller has read it already."""
    if isinstance(data, Path):
        head = shape.head_of(data) if head is None else head
        shape.check_encoding(head, source)
        if shape.needs_rewrite(head):
            data = shape.normalise(data.read_bytes(), source)
            head = data[: shape.HEAD_BYTES]
    else:
        data = shape.normalise(data, source)
        head = data[: shape.HEAD_BYTES]
    if kind == 0:
        shape.check_run_shape(head, source, form)
    else:
        shape.check_qrels_shape(head, source, form)
    return data


@dataclass
class Parsed:
    """Columns read by the C parser, in file order: query ids numbered by first appearance."""

    first_seen: list[str]
    codes: np.ndarray
    docs: StringColumn
    values: np.ndarray
    ranks: np.ndarray | None
    keys: np.ndarray
    tag: str | None


_NATIVE_ERRORS = {
    1: ("found {field} field(s)", None, None),
    2: ("score {field!r} is not a finite number", "a decimal number such as 12.5 or -0.031", "score"),
    3: (
        "relevance label {field!r} is not an integer",
        "an integer label such as 0, 1, 2 or -1 (1.0 also reads as 1)",
        "label",
    ),
}


def _parse_native(data: bytes | Path, source: str, kind: int, form: str) -> tuple[Parsed, LineLookup] | None:
    """The compiled parser's columns, or ``None`` without the extension."""
    out = parsing.parse(str(data) if isinstance(data, Path) else data, kind)
    if out is None:
        return None

    def load() -> bytes:
        return data.read_bytes() if isinstance(data, Path) else data

    if isinstance(out, tuple):
        _, code, line, field = out
        if isinstance(field, bytes):
            field = field.decode("utf-8", errors="replace")
        if isinstance(field, str):
            field = clip(field)
        problem, expected, number = _NATIVE_ERRORS[code]
        hint = number_hint(number, field) if number else None
        raise InputError(source, problem.format(field=field), line=line, expected=expected or form, hint=hint)
    if not out["values"]:
        if not load().strip():
            raise InputError(source, "is empty", expected=f"lines of {form}")
        raise InputError(source, "has no data lines, only comments or blank lines", expected=form)
    if b"\x00" in out["doc_data"] or any(b"\x00" in q for q in out["qids"]) or b"\x00" in out["tag"]:
        raw_bytes = load()
        line = raw_bytes[: raw_bytes.find(b"\x00")].count(b"\n") + 1
        raise InputError(source, "holds a NUL byte in an id", line=line, expected="UTF-8 text", hint="save it as UTF-8")
    try:
        first_seen = [q.decode("utf-8") for q in out["qids"]]
        tag = out["tag"].decode("utf-8") if kind == 0 else None
        docs_data = out["doc_data"]
        if not docs_data.isascii():  # ASCII is valid UTF-8; checking it makes no 70 MB string
            docs_data.decode("utf-8")
    except UnicodeDecodeError:
        decode_text(load(), source)  # raises, naming the line of the first invalid byte
        raise
    ranks = np.frombuffer(out["ranks"], dtype=np.int32) if kind == 0 else None
    if ranks is not None and (ranks == np.iinfo(np.int32).min).any():
        ranks = None  # some rank field is not an integer: the rank column is unusable, as trec_eval ignores it
    parsed = Parsed(
        first_seen=first_seen,
        codes=np.frombuffer(out["qcode"], dtype=np.int32),
        docs=StringColumn(np.frombuffer(out["doc_offsets"], dtype=np.int64), docs_data),
        values=np.frombuffer(out["values"], dtype=np.float64 if kind == 0 else np.int32),
        ranks=ranks,
        keys=np.frombuffer(out["keys"], dtype=np.uint64),
        tag=tag,
    )
    return parsed, lines_from(None, load)


def parse_run(data: bytes | Path, source: str) -> tuple[pl.DataFrame | Parsed, LineLookup]:
    """Columns ``query_id, doc_id, score, rank, tag`` (rank as given, not trusted for ordering). ``data`` is
    the file's bytes, or the path of a plain (uncompressed) file, which the C parser reads in pieces."""
    head = shape.head_of(data) if isinstance(data, Path) else data[: shape.HEAD_BYTES]  # read once, used twice
    if data_fields(head) == 3:
        return parse_ranked(data.read_bytes() if isinstance(data, Path) else data, source)
    if not parsing.available() and isinstance(data, Path):
        data = data.read_bytes()  # the polars reader reads the whole file: check all of it
    data = _prepare(data, source, 0, RUN_FORM, head if isinstance(data, Path) else None)
    compiled = _parse_native(data, source, 0, RUN_FORM)
    if compiled is not None:
        return compiled
    if isinstance(data, Path):
        data = data.read_bytes()
    frame, line_of = _read(data, source, RUN_FIELDS, RUN_FORM)
    frame = _check_scores(frame, line_of, source)
    ranks = frame["rank"].cast(pl.Int64, strict=False)
    return frame.select("query_id", "doc_id", "score", ranks.alias("rank"), "tag"), line_of


def parse_qrels(data: bytes | Path, source: str) -> tuple[pl.DataFrame | Parsed, LineLookup]:
    """Columns ``query_id, doc_id, relevance``; ``data`` as for :func:`parse_run`."""
    head = shape.head_of(data) if isinstance(data, Path) else data[: shape.HEAD_BYTES]  # read once, used twice
    if data_fields(head) == 2:
        return parse_pairs(data.read_bytes() if isinstance(data, Path) else data, source)
    if not parsing.available() and isinstance(data, Path):
        data = data.read_bytes()  # the polars reader reads the whole file: check all of it
    data = _prepare(data, source, 1, QRELS_FORM, head if isinstance(data, Path) else None)
    compiled = _parse_native(data, source, 1, QRELS_FORM)
    if compiled is not None:
        return compiled
    if isinstance(data, Path):
        data = data.read_bytes()
    frame, line_of = _read(data, source, QRELS_FIELDS, QRELS_FORM)
    frame = _check_labels(frame, line_of, source)
    return frame.select("query_id", "doc_id", "relevance"), line_of


def read_joined(
    path: Path, keys: np.ndarray, codes: np.ndarray, starts: np.ndarray, docs: StringColumn, query_ids: np.ndarray
) -> dict | str:
    """A plain TREC run file read joined to qrels (their stored pair ``keys``, query ``codes``, each query's
    first row ``starts`` and the row count, ``docs`` and sorted ``query_ids``) by the compiled parser, keeping
    no document id (see ``parse_joined`` in ``_native/trecparse.c``): a dict of the parser's buffers, or why
    the file needs the general reader (a 3-column run, a byte-order mark, a start that the shape checks refuse,
    or what the parser declined: rows not grouped or not in score order, a repeated pair, a bad line, an id
    that is not ASCII). That reader then gives the same numbers, or the error that names the line."""
    if not parsing.available():
        return "the compiled parser is not built"
    head = shape.head_of(path)
    if data_fields(head) < len(RUN_FIELDS) or shape.needs_rewrite(head):
        return "the file starts otherwise than a 6-column run in plain UTF-8"
    try:
        shape.check_encoding(head, str(path))
        shape.check_run_shape(head, str(path), RUN_FORM)
    except InputError:
        return "the shape checks refuse the file's start"
    queries = {query.encode("utf-8"): code for code, query in enumerate(query_ids.tolist())}
    out = parsing.parse_joined(str(path), keys, codes, starts, docs.offsets, docs.data, queries)
    if out is None or isinstance(out, tuple):
        return "declined" if out is None else f"{out[1]} (line {out[2]})"
    return out


def parse_ranked(data: bytes, source: str) -> tuple[pl.DataFrame, LineLookup]:
    """A 3-column ``query_id doc_id rank`` run (MS MARCO's, Pyserini's ``--output-format msmarco``): columns
    ``query_id, doc_id, score, rank``, the score derived from the rank (``-rank``), so the rank is the only
    order; every line has 3 fields and an integer rank, else an error names the line.

    >>> frame, _ = parse_ranked(b"q1\\td7\\t1\\nq1\\td3\\t2\\n", "run.tsv")
    >>> frame["score"].to_list()
    [-1.0, -2.0]
    """
    data = shape.normalise(data, source)
    frame, line_of = _read(data, source, RANKED_FIELDS, RANKED_FORM, exact=True)
    ranks = frame["rank"].cast(pl.Int64, strict=False)
    if ranks.null_count():
        row = int(ranks.is_null().arg_true()[0])
        raise InputError(
            source,
            f"rank {clip(frame['rank'][row])!r} is not an integer",
            line=line_of(row),
            expected=RANKED_FORM + "; the rank is the only order of such a run",
        )
    pairs = pl.DataFrame({"q": frame["query_id"], "r": ranks})
    repeated = ~pairs.select(pl.struct("q", "r").is_first_distinct()).to_series()
    if repeated.any():  # 'qid docid label' qrels given as the run: a label is no rank, and repeats in a query
        row = int(repeated.arg_true()[0])
        raise InputError(
            source,
            f"rank {ranks[row]} is given twice for query {clip(frame['query_id'][row])!r}",
            line=line_of(row),
            expected=RANKED_FORM + "; each rank once a query (is this 3-column qrels 'query_id doc_id label'?)",
        )
    return frame.select("query_id", "doc_id", (-ranks).cast(pl.Float64).alias("score"), ranks.alias("rank")), line_of


def parse_pairs(data: bytes, source: str) -> tuple[pl.DataFrame, LineLookup]:
    """2-column ``query_id doc_id`` qrels: every listed pair relevant (label 1); columns ``query_id, doc_id,
    relevance``. Every line has 2 fields, else an error names the line."""
    data = shape.normalise(data, source)
    frame, line_of = _read(data, source, PAIR_FIELDS, PAIR_FORM, exact=True)
    return frame.with_columns(pl.lit(1, dtype=pl.Int32).alias("relevance")), line_of
