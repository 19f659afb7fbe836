"""Write qrels and runs as TREC text, JSONL or Parquet, atomically, scores at full double precision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import polars as pl

from stagewise._io import PathLike, atomic_path, atomic_write
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
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
    queries = pl.Series("q", run.query_ids.tolist(), dtype=pl.String).cast(pl.Enum(run.query_ids.tolist()))
    tag = tag or run.tag or run.name
    frame = pl.DataFrame(
        {
            "query_id": queries.gather(run.query_codes),
            "q0": pl.repeat("Q0", len(run), dtype=pl.String, eager=True),
            "doc_id": run.docs.series(),
            "rank": run.within_query_rank(),
            "score": run.scores,
            "tag": pl.repeat(tag, len(run), dtype=pl.String, eager=True),
        }
    )
    for column in ("query_id", "doc_id", "tag"):
        if frame[column].cast(pl.String).str.contains(r"\s").any():
            raise StagewiseError(
                f"a {column} contains white space, which a TREC run cannot hold; write .jsonl or .parquet instead"
            )
    return frame


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
    frame = qrels.to_polars()
    if kind == "trec":
        with atomic_write(path) as fh:
            for q, d, label in frame.iter_rows():
                fh.write(f"{q} 0 {d} {label}\n")
    elif kind == "jsonl":
        _write_jsonl(frame, path)
    else:
        with atomic_path(path) as tmp:
            frame.write_parquet(tmp)


def _write_jsonl(frame: pl.DataFrame, path: PathLike) -> None:
    # json.dumps writes floats with repr, so every double reads back as the same value.
    with atomic_write(path) as fh:
        for record in frame.iter_rows(named=True):
            fh.write(json.dumps(record) + "\n")
