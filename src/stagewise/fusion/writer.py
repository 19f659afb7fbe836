"""Writing a fused run and the fusion metadata beside it."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import IO, Any

import numpy as np

from stagewise._io import PathLike, atomic_paths, atomic_write
from stagewise.data.run import Run
from stagewise.data.writers import _refuse_unreadable, format_for, write_run, write_trec_run
from stagewise.errors import InputError

# Queries formatted per C call: about this many rows (~4 MB of text), so memory holds one chunk whatever the
# size of the run, and the allocator reuses its pages (at 500k rows a chunk, page faults cost 0.5 s in 14M rows).
ROWS_PER_CHUNK = 1 << 16


def write_trec_lines(run: Run, sink: IO[bytes], tag: str | None = None) -> None:
    """``run`` as TREC lines to the binary stream ``sink``: the bytes :func:`stagewise.data.writers.write_trec_run`
    writes (scores in polars' spelling of their shortest round-trip digits), formatted in C a chunk of whole
    queries at a time, so memory holds one chunk of text, not the whole file. Without the compiled helpers it
    is ``write_trec_run``."""
    from stagewise._native import rowops
    from stagewise.data.strings import StringColumn

    tag = tag or run.tag or run.name
    native = rowops.native
    if native is None or not len(run):
        write_trec_run(run, sink, tag)
        return
    _refuse_unreadable(run.query_ids, run.query_codes, run.docs, tag, "run")
    ids = StringColumn.from_strings(run.query_ids.tolist())
    offsets = np.ascontiguousarray(run.offsets, dtype=np.int64)
    scores = np.ascontiguousarray(run.scores, dtype=np.float64)
    docs = [(np.ascontiguousarray(run.docs.offsets, dtype=np.int64), run.docs.data)]
    queries = [(ids.offsets, ids.data)]
    encoded_tag = tag.encode("utf-8")
    # chunk boundaries: the first query of each run of about ROWS_PER_CHUNK rows
    bounds = np.unique(np.searchsorted(offsets, np.arange(0, len(run), ROWS_PER_CHUNK), side="right") - 1)
    bounds = [*bounds.tolist(), len(offsets) - 1]
    for start, stop in itertools.pairwise(bounds):
        sink.write(native.trec_lines(queries, offsets, docs, scores, encoded_tag, start, stop))


def write_fused(
    run: Run, path: PathLike, *, tag: str | None = None, metadata: PathLike | bool | None = None
) -> Path | None:
    """Write ``run`` to ``path`` with :func:`stagewise.write_run` (TREC unless the extension says ``.jsonl`` or
    ``.parquet``), and its ``fusion`` metadata as JSON to ``metadata`` (``True``: ``<path>.meta.json``).
    Returns the metadata path.

    The run and its metadata land together or not at all: both are written to temporary files first, and
    if the second rename fails the first file gets its old content back."""
    if not metadata:
        _write_run(run, path, None, tag)
        return None
    target = Path(path)
    meta_path = target.with_name(target.name + ".meta.json") if metadata is True else Path(metadata)
    if os.path.realpath(meta_path) == os.path.realpath(target):
        raise InputError(meta_path, "is both the run and its metadata file", hint="give --meta another path")
    kind = format_for(target, None)
    with atomic_paths([target, meta_path]) as (run_tmp, meta_tmp):
        _write_run(run, run_tmp, kind, tag)
        with open(meta_tmp, "w", encoding="utf-8", newline="") as fh:
            dump_metadata(getattr(run, "fusion", None) or {}, fh)
    return meta_path


def _write_run(run: Run, path: PathLike, kind: str | None, tag: str | None) -> None:
    """:func:`write_run`, with TREC lines from :func:`write_trec_lines`."""
    kind = format_for(path, kind)
    if kind != "trec":
        write_run(run, path, format=kind, tag=tag)
        return
    with atomic_paths([path]) as (tmp,), open(tmp, "wb") as fh:
        write_trec_lines(run, fh, tag)


def write_metadata(info: dict[str, Any], path: PathLike) -> None:
    """``info`` as indented JSON, atomically."""
    with atomic_write(path) as fh:
        dump_metadata(info, fh)


def dump_metadata(info: dict[str, Any], fh: IO[str]) -> None:
    """``info`` as the metadata file holds it: indented JSON in insertion order, one final newline."""
    json.dump(info, fh, indent=2, sort_keys=False)
    fh.write("\n")


def fuse_to_file(
    runs: Any, path: PathLike, meta_path: PathLike | None, method: Any = None, *, engine: Any, **options: Any
) -> dict[str, Any]:
    """Fuse on ``engine`` group by group (:func:`stagewise.fusion.engine.fuse_to`), streaming TREC lines into
    ``path`` and the fusion metadata into ``meta_path`` (when given): both land together or not at all.
    Returns the metadata."""
    from stagewise.fusion.engine import fuse_to

    targets = [path] if meta_path is None else [path, meta_path]
    with atomic_paths(targets) as tmps:
        with open(tmps[0], "wb") as fh:
            info = fuse_to(runs, fh, method, engine=engine, **options)
        if meta_path is not None:
            with open(tmps[1], "w", encoding="utf-8", newline="") as fh:
                dump_metadata(info, fh)
    return info
