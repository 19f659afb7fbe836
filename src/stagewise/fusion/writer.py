"""Writing a fused run and the fusion metadata beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from stagewise._io import PathLike, atomic_paths, atomic_write
from stagewise.data.run import Run
from stagewise.data.writers import format_for, write_run
from stagewise.errors import InputError


def write_fused(
    run: Run, path: PathLike, *, tag: str | None = None, metadata: PathLike | bool | None = None
) -> Path | None:
    """Write ``run`` to ``path`` with :func:`stagewise.write_run` (TREC unless the extension says ``.jsonl`` or
    ``.parquet``), and its ``fusion`` metadata as JSON to ``metadata`` (``True``: ``<path>.meta.json``).
    Returns the metadata path.

    The run and its metadata land together or not at all: both are written to temporary files first, and
    if the second rename fails the first file gets its old content back."""
    if not metadata:
        write_run(run, path, tag=tag)
        return None
    target = Path(path)
    meta_path = target.with_name(target.name + ".meta.json") if metadata is True else Path(metadata)
    if os.path.realpath(meta_path) == os.path.realpath(target):
        raise InputError(meta_path, "is both the run and its metadata file", hint="give --meta another path")
    kind = format_for(target, None)
    with atomic_paths([target, meta_path]) as (run_tmp, meta_tmp):
        write_run(run, run_tmp, format=kind, tag=tag)
        with open(meta_tmp, "w", encoding="utf-8", newline="") as fh:
            dump_metadata(getattr(run, "fusion", None) or {}, fh)
    return meta_path


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
