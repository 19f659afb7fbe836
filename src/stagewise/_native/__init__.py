"""Compiled helpers, built with the package (``_trecparse.c``). ``parser`` is ``None`` when the extension is
not built; callers then use the polars readers, which give the same results more slowly."""

from __future__ import annotations

try:
    from stagewise._native import _trecparse as parser
except ImportError:  # pragma: no cover - exercised only where no C compiler was available at install
    parser = None

__all__ = ["parser"]
