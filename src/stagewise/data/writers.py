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


def _format_for(path: PathLike, declared: str | None) -> str:
    if declared is not None:
        if declared not in WRITE_FORMATS:
            raise ConventionError(f"cannot write format {declared!r}; choose one of {WRITE_FORMATS}")
        return declared
    suffix = Path(path).suffix.lower()
    return {".jsonl": "jsonl", ".parquet": "parquet"}.get(suffix, "trec")


def trec_run_frame(run: Run, tag: str | None = None) -> pl.DataFrame:
    """``qid Q0 docid rank score tag`` columns in evaluation order, ranks 1-based."""
    tag = tag or run.tag or run.name
    _refuse_white_space(run.query_ids, run.docs, tag, "run")
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


def _refuse_white_space(query_ids: np.ndarray, docs: StringColumn, tag: str | None, what: str) -> None:
    """A TREC field cannot hold white space. Query ids and the tag are checked once each, not once a row;
    all-ASCII doc ids by a byte scan of their buffer (other white space is only in non-ASCII text)."""
    start, end = (int(docs.offsets[0]), int(docs.offsets[-1])) if len(docs) else (0, 0)
    data = docs.data if (start, end) == (0, len(docs.data)) else bytes(docs.data[start:end])
    for column, spoiled in (
        ("query_id", any(_has_white_space(q) for q in query_ids.tolist())),
        ("tag", tag is not None and _has_white_space(tag)),
        (
            "doc_id",
            any(byte in data for byte in ASCII_WHITE_SPACE)  # bytes' `in` is a memchr
            if data.isascii()
            else bool(docs.series().str.contains(r"\s").any()),
        ),
    ):
        if spoiled:
            raise StagewiseError(
                f"a {column} contains white space, which a TREC {what} cannot hold; write .jsonl or .parquet instead"
            )


def _has_white_space(text: str) -> bool:
    return any(ch.isspace() for ch in text)


def write_trec_run(run: Run, sink: PathLike | IO[bytes], tag: str | None = None) -> None:
    """TREC lines to a path or a binary stream in one polars pass. Scores are written in their shortest form
    that reads back as the same double (what ``repr`` gives, up to exponent spelling)."""
    trec_run_frame(run, tag).write_csv(sink, separator=" ", include_header=False, quote_style="never")


def write_run(run: Run, path: PathLike, *, format: str | None = None, tag: str | None = None) -> None:
    """Write ``run`` to ``path`` atomically; the format follows the extension (``.jsonl``, ``.parquet``, else
    TREC)."""
    kind = _format_for(path, format)
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
    kind = _format_for(path, format)
    if kind == "trec":
        _refuse_white_space(qrels.query_ids, qrels.docs, None, "qrels file")
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
