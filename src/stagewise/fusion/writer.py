"""Writing a fused run: TREC lines built column-wise by polars, and the fusion metadata beside them.

``stagewise.write_run`` formats one Python string per line, which takes longer than the fusion itself on
millions of rows; here polars writes the whole file in one pass. Scores are written in their shortest form
that reads back to the same double (round-trip exact, the same values ``repr`` gives).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from stagewise._io import PathLike, atomic_path, atomic_write
from stagewise.data.run import Run


def trec_frame(run: Run, tag: str | None = None) -> pl.DataFrame:
    """``qid Q0 docid rank score tag`` columns in evaluation order, ranks 1-based."""
    queries = pl.Series("q", run.query_ids.tolist(), dtype=pl.String).cast(pl.Enum(run.query_ids.tolist()))
    tag = tag or run.tag or run.name
    return pl.DataFrame(
        {
            "query_id": queries.gather(run.query_codes),
            "q0": pl.repeat("Q0", len(run), dtype=pl.String, eager=True),
            "doc_id": run.docs.series(),
            "rank": run.within_query_rank(),
            "score": run.scores,
            "tag": pl.repeat(tag, len(run), dtype=pl.String, eager=True),
        }
    )


def write_fused(
    run: Run, path: PathLike, *, tag: str | None = None, metadata: PathLike | bool | None = None
) -> Path | None:
    """Write ``run`` to ``path`` atomically (TREC unless the extension says ``.jsonl`` or ``.parquet``), and its
    ``fusion`` metadata as JSON to ``metadata`` (``True``: ``<path>.meta.json``). Returns the metadata path."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix in (".jsonl", ".parquet"):
        from stagewise.data.writers import write_run

        write_run(run, target, tag=tag)
    else:
        frame = trec_frame(run, tag)
        for column in ("query_id", "doc_id", "tag"):
            if frame[column].cast(pl.String).str.contains(r"\s").any():
                from stagewise.errors import StagewiseError

                raise StagewiseError(f"a {column} contains white space, which a TREC run cannot hold")
        with atomic_path(target) as tmp:
            frame.write_csv(tmp, separator=" ", include_header=False, quote_style="never")
    if not metadata:
        return None
    meta_path = target.with_name(target.name + ".meta.json") if metadata is True else Path(metadata)
    write_metadata(getattr(run, "fusion", None) or {}, meta_path)
    return meta_path


def write_metadata(info: dict[str, Any], path: PathLike) -> None:
    """``info`` as indented JSON, atomically."""
    with atomic_write(path) as fh:
        json.dump(info, fh, indent=2, sort_keys=False)
        fh.write("\n")
