"""Write qrels and runs as TREC text, JSONL or Parquet, atomically, scores at full double precision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import numpy as np
import polars as pl

from stagewise._io import PathLike, atomic_path, atomic_write
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
from stagewise.data.strings import StringColumn
from stagewise.errors import ConventionError, StagewiseError

WRITE_FORMATS = ("trec", "jsonl", "parquet")


def format_for(path: PathLike, declared: str | None) -> str:
    """The format a run or qrels file is written in: ``declared`` when given (checked), else by the
    extension (``.jsonl``, ``.parquet``), else ``trec``."""
    if declared is not None:
        if declared not in WRITE_FORMATS:
            raise ConventionError(f"cannot write format {declared!r}; choose one of {WRITE_FORMATS}")
        return declared
    suffix = Path(path).suffix.lower()
    return {".jsonl": "jsonl", ".parquet": "parquet"}.get(suffix, "trec")


def trec_run_frame(run: Run, tag: str | None = None) -> pl.DataFrame:
    """``qid Q0 docid rank score tag`` columns in evaluation order, ranks 1-based."""
    tag = tag or run.tag or run.name
    _refuse_unreadable(run.query_ids, run.query_codes, run.docs, tag, "run")
    return pl.DataFrame(
        {
            "query_id": _query_column(run.query_ids, run.query_codes),
            "q0": pl.repeat("Q0", len(run), dtype=pl.String, eager=True),
            "doc_id": run.docs.series(),
            "rank": run.within_query_rank(),
            "score": run.scores,
            "tag": pl.repeat(tag, len(run), dtype=pl.String, eager=True),
        }
    )


def _query_column(query_ids: np.ndarray, codes: np.ndarray) -> pl.Series:
    """Each row's query id, as a categorical column (its strings are stored once)."""
    vocabulary = query_ids.tolist()
    return pl.Series("query_id", vocabulary, dtype=pl.String).cast(pl.Enum(vocabulary)).gather(codes)


# What splits a TREC line into fields (trec_eval reads fields with scanf's %s, C's isspace).
ASCII_WHITE_SPACE = b" \t\n\r\x0b\x0c"


def _refuse_unreadable(
    query_ids: np.ndarray, codes: np.ndarray, docs: StringColumn, tag: str | None, what: str
) -> None:
    """Refuse a value that a TREC reader would not read back as written: white space in any field (it would
    split the field), an empty field (the line would lose a column), or a query id starting with ``#`` (the
    line would read as a comment, and the query vanish). The first such row is named.

    Query ids and the tag are checked once each, not once a row; all-ASCII doc ids by a byte scan of their
    buffer (other white space is only in non-ASCII text)."""
    for code, query in enumerate(query_ids.tolist()):
        problem = _field_problem(query, "query_id")
        if problem is None and query.startswith("#"):
            problem = "a query_id starts with '#', which a TREC reader takes for a comment line"
        if problem:
            row = int(np.flatnonzero(codes == code)[0]) if len(codes) else 0
            _refuse(problem, f"query {query!r}, output row {row + 1}", what)
    if tag is not None and (problem := _field_problem(tag, "tag")):
        _refuse(problem, f"tag {tag!r}", what)
    if not len(docs):
        return
    empty = np.flatnonzero(np.diff(docs.offsets) == 0)
    if len(empty):
        row = int(empty[0])
        _refuse("a doc_id is empty, which leaves its TREC line a field short", f"output row {row + 1}", what)
    start, end = int(docs.offsets[0]), int(docs.offsets[-1])
    data = docs.data if (start, end) == (0, len(docs.data)) else bytes(docs.data[start:end])
    if data.isascii():
        spoiled = any(byte in data for byte in ASCII_WHITE_SPACE)  # bytes' `in` is a memchr
    else:
        spoiled = bool(docs.series().str.contains(r"\s").any())
    if spoiled:
        row = int(docs.series().str.contains(r"\s").arg_true()[0])
        _refuse(_WHITE_SPACE.format("doc_id"), f"output row {row + 1}, doc_id {docs.value(row)!r}", what)


_WHITE_SPACE = "a {} contains white space, which a TREC {{what}} cannot hold"


def _field_problem(value: str, column: str) -> str | None:
    if value == "":
        return f"a {column} is empty, which leaves its TREC line a field short"
    if _has_white_space(value):
        return _WHITE_SPACE.format(column)
    return None


def _refuse(problem: str, where: str, what: str) -> None:
    raise StagewiseError(f"{problem.format(what=what)} ({where}); write .jsonl or .parquet instead")


def _has_white_space(text: str) -> bool:
    return any(ch.isspace() for ch in text)


def write_trec_run(run: Run, sink: PathLike | IO[bytes], tag: str | None = None) -> None:
    """TREC lines to a path or a binary stream in one polars pass. Scores are written in their shortest form
    that reads back as the same double (what ``repr`` gives, up to exponent spelling)."""
    trec_run_frame(run, tag).write_csv(sink, separator=" ", include_header=False, quote_style="never")


def write_run(run: Run, path: PathLike, *, format: str | None = None, tag: str | None = None) -> None:
    """Write ``run`` to ``path`` atomically; the format follows the extension (``.jsonl``, ``.parquet``, else
    TREC)."""
    kind = format_for(path, format)
    if kind == "trec":
        with atomic_path(path) as tmp:
            write_trec_run(run, tmp, tag)
    elif kind == "jsonl":
        _write_jsonl(run.to_polars(), path)
    else:
        with atomic_path(path) as tmp:
            run.to_polars().write_parquet(tmp)


def write_qrels(qrels: Qrels, path: PathLike, *, format: str | None = None) -> None:
    """Write ``qrels`` to ``path`` as TREC (``qid 0 docid label``), JSONL or Parquet."""
    kind = format_for(path, format)
    if kind == "trec":
        _refuse_unreadable(qrels.query_ids, qrels.query_codes, qrels.docs, None, "qrels file")
        lines = pl.DataFrame(
            {
                "query_id": _query_column(qrels.query_ids, qrels.query_codes),
                "iteration": pl.repeat("0", len(qrels), dtype=pl.String, eager=True),
                "doc_id": qrels.docs.series(),
                "relevance": qrels.labels,
            }
        )
        with atomic_path(path) as tmp:
            lines.write_csv(tmp, separator=" ", include_header=False, quote_style="never")
        return
    frame = qrels.to_polars()
    if kind == "jsonl":
        _write_jsonl(frame, path)
    else:
        with atomic_path(path) as tmp:
            frame.write_parquet(tmp)


def _write_jsonl(frame: pl.DataFrame, path: PathLike) -> None:
    # json.dumps writes floats with repr, so every double reads back as the same value.
    with atomic_write(path) as fh:
        for record in frame.iter_rows(named=True):
            fh.write(json.dumps(record) + "\n")
