"""Compiled helpers, built with the package: ``trecparse.c`` (reading TREC files), ``rows.c`` (joining
result lists on (query, document), for fusion and evaluation, and putting them in trec_eval's order) and
``bm25.c`` (BM25 tokenising, indexing and search). ``parser``, ``rows`` and ``bm25`` are ``None`` when an
extension is not built. Library code does not test that itself: one facade per extension decides, compiled or
the numpy and polars code that gives the same results more slowly (:mod:`stagewise._native.parsing`,
:mod:`stagewise._native.rowops`, and for BM25 :mod:`stagewise.retrieval._kernels`)."""

from __future__ import annotations

try:
    from stagewise._native import _trecparse as parser
except ImportError:  # pragma: no cover - exercised only where no C compiler was available at install
    parser = None

try:
    from stagewise._native import _rows as rows
except ImportError:  # pragma: no cover
    rows = None

try:
    from stagewise._native import _bm25 as bm25
except ImportError:  # pragma: no cover
    bm25 = None

__all__ = ["bm25", "parser", "rows"]
