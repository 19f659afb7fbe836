"""Writing a fused run and the fusion metadata beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stagewise._io import PathLike, atomic_write
from stagewise.data.run import Run
from stagewise.data.writers import write_run


def write_fused(
    run: Run, path: PathLike, *, tag: str | None = None, metadata: PathLike | bool | None = None
) -> Path | None:
    """Write ``run`` to ``path`` with :func:`stagewise.write_run` (TREC unless the extension says ``.jsonl`` or
    ``.parquet``), and its ``fusion`` metadata as JSON to ``metadata`` (``True``: ``<path>.meta.json``).
    Returns the metadata path."""
    write_run(run, path, tag=tag)
    if not metadata:
        return None
    target = Path(path)
    meta_path = target.with_name(target.name + ".meta.json") if metadata is True else Path(metadata)
    write_metadata(getattr(run, "fusion", None) or {}, meta_path)
    return meta_path


def write_metadata(info: dict[str, Any], path: PathLike) -> None:
    """``info`` as indented JSON, atomically."""
    with atomic_write(path) as fh:
        json.dump(info, fh, indent=2, sort_keys=False)
        fh.write("\n")
