"""Read qrels and runs from files (TREC, JSON, JSONL, CSV, TSV, Parquet; plain, gzip or stdin) and from
in-memory objects (polars or pandas DataFrames, dict-of-dicts with Python or numpy scalars)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

from stagewise._io import PathLike, compression_of, decompressed, display_name, read_bytes
from stagewise._lazy import LazyModule
from stagewise.data import classic, shape, trec
from stagewise.data.columns import LineLookup, clip, lines_from, no_lines, number_hint
from stagewise.data.formats import QRELS_FORMATS as _QRELS_REGISTRY
from stagewise.data.formats import RUN_FORMATS, format_of_extension
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
from stagewise.errors import InputError, StagewiseError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

Format = Literal["trec", "json", "jsonl", "csv", "tsv", "parquet"]
FORMATS: tuple[str, ...] = tuple(RUN_FORMATS.names())
"""What :func:`read_run` reads (the names of :data:`stagewise.data.formats.RUN_FORMATS`)."""
QRELS_FORMATS: tuple[str, ...] = tuple(_QRELS_REGISTRY.names())
"""What :func:`read_qrels` reads: the run formats and the classic collections' qrels layouts
(:data:`stagewise.data.formats.QRELS_FORMATS`)."""

# Column names other tools use, mapped to ours.
_ALIASES = {
    "query_id": ("query_id", "qid", "query", "q_id", "topic", "query-id", "queryid"),
    "doc_id": (
        "doc_id",
        "docid",
        "docno",
        "doc",
        "pid",
        "corpus-id",
        "corpus_id",
        "document_id",
        "passage_id",
    ),
    "score": ("score", "sim", "similarity"),
    "relevance": ("relevance", "label", "rel", "judgement", "judgment", "grade", "score"),
    "rank": ("rank",),
    "tag": ("tag", "run", "run_id", "system"),
}


def _format_of(source: PathLike, declared: str | None, allowed: tuple[str, ...] = FORMATS) -> str:
    if declared is not None:
        if declared not in allowed:
            raise InputError(display_name(source), f"unknown format {declared!r}", expected=f"one of {allowed}")
        return declared
    return format_of_extension(str(source), RUN_FORMATS)


# A UTF-16 surrogate escape that is not half of a pair: JSON allows it, Unicode text cannot hold it.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _json_loads(data: bytes | str, source: str, line: int | None = None, expected: str | None = None) -> Any:
    """``json.loads`` whose every failure is an :class:`InputError` naming the line: bad syntax, nesting
    too deep for the parser, integers longer than Python converts, and lone surrogates (text no UTF-8
    writer can encode)."""
    expected = expected or "an object {query_id: {doc_id: value}} or a list of records"
    try:
        parsed = json.loads(data)
    except json.JSONDecodeError as exc:
        where = exc.lineno if line is None else line
        raise InputError(source, f"is not valid JSON ({exc.msg})", line=where, expected=expected) from None
    except RecursionError:
        raise InputError(source, "is nested too deeply to read as JSON", line=line, expected=expected) from None
    except ValueError as exc:  # int() refuses more than sys.get_int_max_str_digits() digits
        raise InputError(
            source, f"holds a number too long to read ({str(exc).split(':')[0]})", line=line, expected=expected
        ) from None
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data
    if b"\\u" in raw:
        found = _LONE_SURROGATE.search(raw)
        if found is not None:
            escape = found.group().decode("ascii")
            at = line if line is not None else raw[: found.start()].count(b"\n") + 1
            raise InputError(
                source,
                f"holds the escape {escape}, half of a UTF-16 surrogate pair, which is not valid Unicode text",
                line=at,
                expected=expected,
            )
    return parsed


def _headerless_hint(found: list[str], wanted: tuple[str, ...]) -> str | None:
    """A hint when the "header" read is a line of data (a number among its names): the file has no header."""
    if not any(_is_number(name) for name in found):
        return None
    return (
        f"the first line looks like data, not a header: add a header line ({' '.join(wanted)}, tab-separated) "
        "or write the file in TREC's whitespace-separated format"
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _normalise_columns(
    frame: pl.DataFrame, wanted: tuple[str, ...], optional: tuple[str, ...], source: str
) -> pl.DataFrame:
    lower = {c.lower(): c for c in frame.columns}
    chosen: dict[str, str] = {}
    for target in wanted + optional:
        for alias in _ALIASES[target]:
            if alias in lower and lower[alias] not in chosen.values():
                chosen[target] = lower[alias]
                break
    missing = [c for c in wanted if c not in chosen]
    if missing:
        raise InputError(
            source,
            f"missing column(s) {missing}; found {frame.columns}",
            expected=f"columns {list(wanted)} (aliases: "
            + "; ".join(f"{c}: {', '.join(_ALIASES[c][1:4])}" for c in missing)
            + ")",
            hint=_headerless_hint(frame.columns, wanted),
        )
    for target, column in chosen.items():
        dtype = frame[column].dtype
        if dtype.is_nested() or dtype == pl.Object or dtype == pl.Binary:
            what = "a number" if target in ("score", "relevance", "rank") else "a text or integer id"
            raise InputError(
                source,
                f"column {column!r} holds {dtype} values (the first is {frame[column].head(1).to_list()[0]!r:.60})",
                expected=f"{what} in each row of {column!r}",
            )
    return frame.select([pl.col(src).alias(dst) for dst, src in chosen.items()])


def _plain_file(source: PathLike) -> bool:
    """A regular, uncompressed file that the C parser can read in pieces (not stdin, not gzip)."""
    from stagewise._native import parsing

    if not parsing.available() or str(source) == "-":
        return False
    path = Path(source)
    try:
        with path.open("rb") as fh:
            return path.is_file() and compression_of(fh.read(4)) is None
    except OSError:
        return False  # read_bytes then reports the problem with its own message


def _is_polars_frame(obj: Any) -> bool:
    """Whether ``obj`` is a polars DataFrame, asked without importing polars (no frame exists before it is)."""
    return "polars" in sys.modules and isinstance(obj, pl.DataFrame)


def _frame_from_object(obj: Any, value_column: str, source: str) -> pl.DataFrame | None:
    """A frame from a DataFrame, a dict-of-dicts, a ranx ``Qrels``/``Run`` or an iterable of records
    (namedtuples such as ir_datasets' ``TrecQrel`` or ir_measures' ``Qrel``/``ScoredDoc``); ``None`` when
    ``obj`` is none of these."""
    if _is_polars_frame(obj):
        return obj
    module = type(obj).__module__
    if module.startswith("pandas") and hasattr(obj, "to_dict"):
        return pl.from_pandas(obj.reset_index(drop=not _has_named_index(obj)))
    if _is_ranx(obj):
        return _frame_from_nested(obj.to_dict(), value_column, source)
    if isinstance(obj, Mapping):
        return _frame_from_nested(obj, value_column, source)
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes | os.PathLike):
        return _frame_from_tuples(obj, value_column, source)
    return None


def _is_ranx(obj: Any) -> bool:
    """A ranx ``Qrels`` or ``Run`` (told by its class, so ranx is never imported here)."""
    return type(obj).__module__.startswith("ranx") and type(obj).__name__ in ("Qrels", "Run")


def object_name(obj: Any) -> str:
    """The name an object carries (a ranx ``Run``'s ``name``), else ``"run"``."""
    name = getattr(obj, "name", None) if _is_ranx(obj) else None
    return name if isinstance(name, str) and name else "run"


def is_record(item: Any) -> bool:
    """A namedtuple (``_fields``): one row of an ir_datasets or ir_measures iterable, not a run of its own."""
    return isinstance(item, tuple) and isinstance(getattr(item, "_fields", None), tuple)


def _frame_from_tuples(records: Iterable, value_column: str, source: str) -> pl.DataFrame:
    """Columns named by the records' fields (``query_id, doc_id, relevance``/``score``, any further field such
    as ``iteration`` ignored by the column matching); every item must be a namedtuple of the first's fields."""
    expected = f"namedtuples with fields query_id, doc_id, {value_column} (as ir_datasets' and ir_measures')"
    rows = iter(records)
    first = next(rows, None)
    if first is None:
        raise InputError(source, "is empty", expected=expected)
    if not is_record(first):
        raise InputError(source, f"holds a {type(first).__name__}, not a record", expected=expected)
    fields = first._fields
    columns: list[list[Any]] = [[value] for value in first]
    for number, row in enumerate(rows, start=2):
        if not is_record(row) or row._fields != fields:
            raise InputError(
                source, f"item {number} is a {type(row).__name__} {row!r:.80}", expected=f"{expected}, all alike"
            )
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    data = {}
    for field, values in zip(fields, columns, strict=True):
        if field in ("query_id", "doc_id"):
            values = [str(v) for v in values]
        data[field] = pl.Series(field, values, strict=False)
    return pl.DataFrame(data)


def _has_named_index(frame: Any) -> bool:
    return any(name is not None for name in getattr(frame.index, "names", [None]))


def _frame_from_nested(mapping: Mapping, value_column: str, source: str) -> pl.DataFrame:
    queries: list[str] = []
    docs: list[str] = []
    values: list[Any] = []
    for query, ranking in mapping.items():
        if not isinstance(ranking, Mapping):
            raise InputError(
                source,
                f"query {query!r} maps to {type(ranking).__name__}",
                expected="{query_id: {doc_id: value}}",
            )
        for doc, value in ranking.items():
            queries.append(str(query))
            docs.append(str(doc))
            values.append(value.item() if hasattr(value, "item") else value)
    if not queries:
        raise InputError(source, "is empty", expected="{query_id: {doc_id: value}} with at least one entry")
    dtype = pl.Int64 if value_column == "relevance" and all(isinstance(v, int) for v in values) else pl.Float64
    try:
        series = pl.Series(values, dtype=dtype, strict=False)
    except (TypeError, pl.exceptions.PolarsError) as exc:
        raise InputError(source, f"non-numeric value ({exc})", expected="numbers as values") from None
    if series.null_count():
        row = int(series.is_null().arg_true()[0])
        raise InputError(
            source,
            f"value {values[row]!r} for query {queries[row]!r}, document {docs[row]!r} is not a number",
            expected="numbers as values",
        )
    return pl.DataFrame({"query_id": queries, "doc_id": docs, value_column: series})


def _read_tabular(data: bytes, fmt: str, source: str) -> tuple[pl.DataFrame, LineLookup]:
    import io

    if not data.strip():
        raise InputError(source, "is empty", expected=f"a {fmt.upper()} file with a header row")
    try:
        if fmt == "parquet":
            return pl.read_parquet(io.BytesIO(data)), no_lines
        if fmt in ("csv", "tsv"):
            frame = pl.read_csv(io.BytesIO(data), separator="," if fmt == "csv" else "\t", infer_schema_length=0)
            # A header on line 1; each row's line is its index + 2 for files without embedded newlines.
            return frame, lambda row: row + 2
        if fmt == "jsonl":
            records, lines = _read_jsonl(data, source)
            return records, lines_from(lines)
    except pl.exceptions.PolarsError as exc:
        raise InputError(source, f"cannot be read as {fmt.upper()} ({str(exc).splitlines()[0]})") from None
    # JSON: a list of records here; {query: {doc: value}} objects are read by _frame_from_nested.
    parsed = _json_loads(data, source)
    if isinstance(parsed, list) and all(isinstance(record, dict) for record in parsed):
        return _frame_from_records(parsed, source), no_lines
    raise InputError(
        source,
        f"holds a JSON {type(parsed).__name__}",
        expected="an object {query_id: {doc_id: value}} or a list of records",
    )


def json_records(text: str, source: str, first_line: int = 1) -> Iterator[tuple[int, dict]]:
    """(1-based line, object) of each non-blank line of JSON-lines ``text``; a line that is not a JSON object is
    an :class:`InputError` naming it. Runs, qrels and corpora (:mod:`stagewise.data.collections`) read JSONL
    through it; a corpus read in blocks numbers a block's lines from ``first_line``."""
    for lineno, line in enumerate(text.split("\n"), start=first_line):
        if not line.strip():
            continue
        record = _json_loads(line, source, lineno, "one JSON object per line")
        if not isinstance(record, dict):
            raise InputError(
                source, f"a JSON {type(record).__name__}", line=lineno, expected="one JSON object per line"
            )
        yield lineno, record


def _read_jsonl(data: bytes, source: str) -> tuple[pl.DataFrame, list[int]]:
    """Records and the 1-based line of each (blank lines skipped)."""
    records, lines = [], []
    for lineno, record in json_records(trec.decode_text(data, source), source):
        records.append(record)
        lines.append(lineno)
    return _frame_from_records(records, source, lines), lines


def _frame_from_records(records: list[dict], source: str, lines: list[int] | None = None) -> pl.DataFrame:
    try:
        return pl.from_dicts(records, infer_schema_length=None)
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError) as exc:
        # polars names neither record nor field: find the first field whose values change kind
        kinds: dict[str, tuple[str, int]] = {}
        for i, record in enumerate(records):
            for key, value in record.items():
                kind = _json_kind(value)
                if kind == "null":
                    continue
                seen = kinds.setdefault(key, (kind, i))
                if seen[0] != kind:
                    line = lines[i] if lines is not None else None
                    where = "" if line is not None else f" (record {i + 1})"
                    raise InputError(
                        source,
                        f"field {key!r} holds {kind} here{where} but {seen[0]} in an earlier record",
                        line=line,
                        expected=f"one kind of value per field; {key!r}: {seen[0]}",
                    ) from None
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(source, f"records cannot be read as a table ({clip(message, 160)})") from None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def _load(
    source: Any, fmt: str | None, value_column: str, optional: tuple[str, ...]
) -> tuple[pl.DataFrame, str, str, LineLookup, str | None]:
    """(normalised frame, display name for messages, default container name, line lookup, where the scores
    come from: ``"rank"`` for a 3-column run, else ``None``)."""
    where = f"<{type(source).__name__}>"
    frame = _frame_from_object(source, value_column, where)
    if frame is not None:
        frame, score_from = _scores_from_ranks(frame, value_column, where, no_lines)
        frame = _normalise_columns(frame, ("query_id", "doc_id", value_column), optional, where)
        return frame, where, object_name(source), no_lines, score_from
    if not isinstance(source, str | os.PathLike):
        raise InputError(
            where,
            "is not a file path, DataFrame, dict or iterable of records",
            expected="a path, '-', a polars/pandas DataFrame, {query_id: {doc_id: value}}, ranx Qrels/Run or "
            "namedtuples (query_id, doc_id, relevance or score)",
        )
    where = display_name(source)
    name = "stdin" if where == "<stdin>" else Path(source).name
    kind = _format_of(source, fmt, QRELS_FORMATS if value_column == "relevance" else FORMATS)
    parse = trec.parse_run if value_column == "score" else trec.parse_qrels
    if kind == "trec" and _plain_file(source):
        parsed, line_of = parse(Path(source), where)
        return parsed, where, name, line_of, _score_from(parsed)
    data = read_bytes(source)
    if compression_of(data[:4]) == "lz4":  # ranx compresses its .lz4 twice: read_bytes undid the first
        data = decompressed(data, where)
    if data[:1] and 0xA0 <= data[0] <= 0xBF:  # a CBOR map (no UTF-8 text starts with such a byte): ranx's .lz4
        nested = _cbor(data, where)
        return _frame_from_nested(nested, value_column, where), where, name, no_lines, None
    if kind != "parquet":  # a UTF-8 byte-order mark dropped, CR-only line ends made LF, UTF-16 refused
        data = shape.normalise(data, where)
    if kind == "tsv" and _headerless_trec(data, value_column):
        kind = "trec"  # MS MARCO's .tsv runs (qid docid rank) and qrels (qid 0 docid label) have no header
    if kind in ("json", "csv", "tsv"):  # JSONL is decoded line by line where it is parsed
        trec.decode_text(data, where)  # invalid UTF-8 is an error naming its line
    if kind in classic.QRELS_LAYOUTS:
        nested = classic.read_layout(kind, trec.decode_text(data, where), where)
        return _frame_from_nested(nested, value_column, where), where, name, no_lines, None
    if kind == "trec":
        parsed, line_of = parse(data, where)
        return parsed, where, name, line_of, _score_from(parsed)
    if kind == "json" and data.lstrip()[:1] == b"{":
        nested = _json_loads(data, where)
        return _frame_from_nested(nested, value_column, where), where, name, no_lines, None
    frame, line_of = _read_tabular(data, kind, where)
    frame, score_from = _scores_from_ranks(frame, value_column, where, line_of)
    frame = _normalise_columns(frame, ("query_id", "doc_id", value_column), optional, where)
    return frame, where, name, line_of, score_from


def _scores_from_ranks(
    frame: pl.DataFrame, value_column: str, source: str, line_of: LineLookup
) -> tuple[pl.DataFrame, str | None]:
    """A run's table with a ``rank`` column and no score (``qid, docid, rank``): the score ``-rank``, so the rank
    is the only order, and ``"rank"`` to say so; any other table as it is, with ``None``."""
    lower = {c.lower(): c for c in frame.columns}
    if value_column != "score" or "rank" not in lower or any(a in lower for a in _ALIASES["score"]):
        return frame, None
    column = lower["rank"]
    ranks = frame[column].cast(pl.Int64, strict=False)
    if ranks.null_count():
        row = int(ranks.is_null().arg_true()[0])
        raise InputError(
            source,
            f"rank {frame[column][row]!r} is not an integer",
            line=line_of(row),
            expected="an integer rank in every row: a run without scores is ordered by its ranks alone",
        )
    return frame.with_columns(ranks.alias(column), (-ranks).cast(pl.Float64).alias("score")), trec.RANK_ONLY


def _cbor(data: bytes, source: str) -> Any:
    """The ``{query: {doc: value}}`` a ranx ``.lz4`` file holds, as CBOR (read with the cbor2 package)."""
    expected = "ranx's .lz4 layout: {query_id: {doc_id: value}} as CBOR"
    try:
        import cbor2
    except ImportError:
        raise InputError(source, "holds CBOR (ranx's .lz4 layout), which needs the cbor2 package",
                         hint="pip install cbor2") from None  # fmt: skip
    try:
        content = cbor2.loads(data)
    except (cbor2.CBORDecodeError, ValueError, TypeError) as exc:
        raise InputError(source, f"is not valid CBOR ({exc})", expected=expected) from None
    if not isinstance(content, Mapping):
        raise InputError(source, f"holds a CBOR {type(content).__name__}", expected=expected)
    return content


def _score_from(parsed: Any) -> str | None:
    """``"rank"`` for what :func:`stagewise.data.trec.parse_run` read from a 3-column run (a frame without the
    tag column: the scores are ``-rank``)."""
    ranked = _is_polars_frame(parsed) and "score" in parsed.columns and "tag" not in parsed.columns
    return trec.RANK_ONLY if ranked else None


_KNOWN_COLUMNS = frozenset(alias for aliases in _ALIASES.values() for alias in aliases)


def _headerless_trec(data: bytes, value_column: str) -> bool:
    """True when a ``.tsv`` file's first line is data in a TREC layout, not a header: a run's ``qid docid
    rank`` (MS MARCO, Pyserini) or ``qid Q0 docid rank score tag``, qrels' ``qid docid`` or ``qid 0 docid
    label``; no field is a column name the tabular reader knows."""
    line = data[: shape.HEAD_BYTES].split(b"\n", 1)[0].strip()
    fields = line.split(b"\t")
    if not line or any(f.strip().lower().decode("utf-8", "replace") in _KNOWN_COLUMNS for f in fields):
        return False
    integer = [f.strip().lstrip(b"+-").isdigit() for f in fields]
    if value_column == "score":
        return (len(fields) == 3 and integer[2]) or (len(fields) == 6 and integer[3])
    return len(fields) == 2 or (len(fields) == 4 and integer[3])


def read_run(
    source: Any,
    *,
    format: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
) -> Run:
    """Read a run from a path (``-`` for stdin, ``.gz`` accepted) or an in-memory object.

    Parameters
    ----------
    source : path, "-", polars.DataFrame, pandas.DataFrame or dict
        A TREC run file (``qid Q0 docid rank score tag``), JSON (``{qid: {docid: score}}`` or a list of
        records), JSONL, CSV, TSV or Parquet with columns ``query_id, doc_id, score`` (common aliases such
        as ``qid``/``docno`` are accepted); or the same as an object.
    format : {"trec", "json", "jsonl", "csv", "tsv", "parquet"}, optional
        Overrides the format guessed from the file extension (anything unknown is read as TREC).
    name : str, optional
        The run's name in reports; by default the file name.
    duplicates : {"error", "first", "best"}, default="error"
        A document listed twice for one query is an error naming the line, or its first or best-scored
        occurrence is kept.

    Examples
    --------
    >>> run = read_run({"q1": {"d1": 2.0, "d2": 1.5}})
    >>> run.n_queries, len(run)
    (1, 2)
    """
    if isinstance(source, Run):
        return source if name is None or name == source.name else source.renamed(name)
    with _unicode_checked(source):
        frame, where, default_name, line_of, score_from = _load(source, format, "score", ("rank", "tag"))
    if isinstance(frame, trec.Parsed):
        return Run.from_columns(
            frame.first_seen,
            frame.codes,
            frame.docs,
            frame.values,
            frame.ranks,
            frame.keys,
            owned=True,  # the parser's fresh columns: reordered in place
            name=name or default_name,
            source=where,
            tag=frame.tag,
            line_of=line_of,
            duplicates=duplicates,
        )
    if frame["score"].dtype == pl.String:
        frame = _strict_numeric(frame, "score", where, line_of)
    with _unicode_checked(where):
        return Run.from_frame(
            frame,
            name=name or default_name,
            source=where,
            line_of=line_of,
            duplicates=duplicates,
            score_from=score_from,
        )


def _is_single_nested_run(obj: Mapping) -> bool:
    """True for ``{query: {doc: score}}``; False for ``{name: run}``."""
    first = next(iter(obj.values()), None)
    return isinstance(first, Mapping) and not any(isinstance(v, Mapping) for v in first.values())


def path_labels(paths: Sequence[str]) -> list[str]:
    """A name for each run file: its file name, or where files share one, the shortest path suffix that tells
    them apart (``a/run.trec`` and ``b/run.trec``; ``x/a/run.trec`` and ``y/a/run.trec``). The same file
    given twice can only be told apart by position: ``run.trec`` and ``run.trec#2``.

    >>> path_labels(["a/run.trec", "b/run.trec", "x/bm25.run", "../c/a/dense.run", "/d/a/dense.run"])
    ['a/run.trec', 'b/run.trec', 'bm25.run', 'c/a/dense.run', 'd/a/dense.run']
    >>> path_labels(["run.trec", "./run.trec"])
    ['run.trec', 'run.trec#2']
    >>> path_labels(["a/run.trec", "b/run.trec", "a/run.trec"])
    ['a/run.trec', 'b/run.trec', 'a/run.trec#2']
    """
    parts = [PurePath(os.path.normpath(p)).parts if p != "-" else ("stdin",) for p in paths]
    parts = [tuple(x for x in ps if x not in ("..", ".", os.sep)) or ps for ps in parts]
    groups: dict[str, list[int]] = {}
    for i, ps in enumerate(parts):
        groups.setdefault(ps[-1], []).append(i)
    labels = [ps[-1] for ps in parts]
    for members in groups.values():
        distinct = {parts[i] for i in members}  # the same file twice is told apart by position, below
        if len(distinct) < 2:
            continue
        longest = max(len(ps) for ps in distinct)
        for k in range(2, longest + 1):  # one depth for the whole group, so its labels read alike
            if len({ps[-k:] for ps in distinct}) == len(distinct):
                for i in members:
                    labels[i] = "/".join(parts[i][-k:])
                break
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):  # what is left is the same file twice
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label}#{seen[label]}"
    return labels


def read_runs(runs: Any) -> list[Run]:
    """Runs from one source, a list of sources or a ``{name: run}`` mapping (anything :func:`read_run` takes).

    Files are named by :func:`path_labels` (``a/run.txt`` and ``b/run.txt`` keep their folders); any name
    still given twice becomes ``name`` and ``name#2``, so each run stays its own row. A single
    ``{query: {doc: score}}`` dict is one run.
    """
    if isinstance(runs, Mapping) and runs and not _is_single_nested_run(runs):
        loaded = [read_run(v, name=str(k)) for k, v in runs.items()]
    elif isinstance(runs, list | tuple) and runs and is_record(runs[0]):
        loaded = [read_run(runs)]  # one run as namedtuples (ir_measures' ScoredDoc), not a list of runs
    elif isinstance(runs, list | tuple):
        if not runs:
            raise StagewiseError("no runs given: pass a run, or a list or {name: run} mapping of runs")
        paths = [i for i, item in enumerate(runs) if isinstance(item, str | os.PathLike)]
        labels = dict(zip(paths, path_labels([os.fspath(runs[i]) for i in paths]), strict=True))
        loaded = [read_run(item, name=labels.get(i)) for i, item in enumerate(runs)]
    else:
        loaded = [read_run(runs)]
    seen: dict[str, int] = {}
    named = []
    for run in loaded:  # two runs of one name (the same file twice, or two objects) must stay two rows
        count = seen.get(run.name, 0)
        seen[run.name] = count + 1
        named.append(run.renamed(f"{run.name}#{count + 1}") if count else run)
    return named


def read_qrels(source: Any, *, format: str | None = None, name: str | None = None) -> Qrels:
    """Read relevance judgements (``qid iter docid label`` in TREC form, or the formats of :func:`read_run`
    with columns ``query_id, doc_id, relevance``).

    Examples
    --------
    >>> qrels = read_qrels({"q1": {"d1": 1, "d3": 0}})
    >>> qrels.label_histogram()
    {0: 1, 1: 1}
    """
    if isinstance(source, Qrels):
        return source
    if format is not None and getattr(_QRELS_REGISTRY.get(format), "name", None) == "subtopics":
        from stagewise.data.subtopics import read_subtopic_qrels

        return read_subtopic_qrels(source, name=name)
    with _unicode_checked(source):
        frame, where, default_name, line_of, _ = _load(source, format, "relevance", ())
    if isinstance(frame, trec.Parsed):
        return Qrels.from_columns(
            frame.first_seen,
            frame.codes,
            frame.docs,
            frame.values,
            frame.keys,
            name=name or default_name,
            source=where,
            line_of=line_of,
        )
    with _unicode_checked(where):
        return Qrels.from_frame(
            frame,
            name=name or (default_name if default_name != "run" else "qrels"),
            source=where,
            line_of=line_of,
        )


@contextlib.contextmanager
def _unicode_checked(source: Any) -> Iterator[None]:
    """Text that UTF-8 cannot encode (a lone surrogate in an id built in Python) is an input error; files are
    checked where they are parsed, with their line. ``source`` is the display name, or what was read."""
    try:
        yield
    except UnicodeEncodeError as exc:
        where = source if isinstance(source, str) else f"<{type(source).__name__}>"
        bad = exc.object[exc.start : exc.end]
        raise InputError(where, f"holds {bad!r}, which is not valid Unicode text ({exc.reason})") from None


def _strict_numeric(frame: pl.DataFrame, column: str, where: str, line_of: LineLookup) -> pl.DataFrame:
    values = frame[column].cast(pl.Float64, strict=False)
    bad = values.is_null() | ~values.is_finite()
    if bad.any():
        row = int(bad.arg_true()[0])
        raise InputError(
            where,
            f"{column} {frame[column][row]!r} is not a finite number",
            line=line_of(row),
            expected="a decimal number",
            hint=number_hint("score", frame[column][row]),
        )
    return frame.with_columns(values.alias(column))


__all__ = ["FORMATS", "lines_from", "read_qrels", "read_run", "read_runs"]
