"""Write qrels and runs as TREC text, JSONL or Parquet, atomically, scores at full double precision."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from stagewise._io import PathLike, atomic_path, atomic_write
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
from stagewise.errors import ConventionError

WRITE_FORMATS = ("trec", "jsonl", "parquet")


def _format_for(path: PathLike, declared: str | None) -> str:
    if declared is not None:
        if declared not in WRITE_FORMATS:
            raise ConventionError(f"cannot write format {declared!r}; choose one of {WRITE_FORMATS}")
        return declared
    suffix = Path(path).suffix.lower()
    return {".jsonl": "jsonl", ".parquet": "parquet"}.get(suffix, "trec")


def run_to_trec_lines(run: Run, tag: str | None = None) -> list[str]:
    """``qid Q0 docid rank score tag`` lines, ranks 1-based in evaluation order, scores as ``repr`` (exact)."""
    frame = run.to_polars()
    tag = tag or run.tag or run.name
    return [
        f"{q} Q0 {d} {r} {s!r} {tag}"
        for q, d, s, r in zip(frame["query_id"], frame["doc_id"], frame["score"].to_list(), frame["rank"], strict=True)
    ]


def write_run(run: Run, path: PathLike, *, format: str | None = None, tag: str | None = None) -> None:
    """Write ``run`` to ``path``; the format follows the extension (``.jsonl``, ``.parquet``, else TREC)."""
    kind = _format_for(path, format)
    if kind == "trec":
        with atomic_write(path) as fh:
            for line in run_to_trec_lines(run, tag):
                fh.write(line + "\n")
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
