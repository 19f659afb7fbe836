"""Rank fusion: RRF, the CombSUM family, rank-based and supervised methods, normalisations, weight tuning.

>>> from stagewise.fusion import fuse
>>> fused = fuse([{"q1": {"a": 2.0, "b": 1.0}}, {"q1": {"b": 5.0, "c": 4.0}}], "rrf")
>>> fused.doc_ids.to_list()
['b', 'a', 'c']

Methods live in :data:`METHODS` and normalisations in :data:`NORMALIZATIONS`, each a small pure function
chosen by name; :class:`FusionMethod` and :class:`Normalization` are the values that name them (``str`` parses
back), and :class:`FusionOptions` says how to fuse as one value (method, normalisation, depth, policies,
weights), which :func:`fuse`, :func:`optimize` and :func:`fuse_to` take as ``options=``. Every fused run records
how it was made in ``.fusion``. :func:`fuse_to` fuses run files on the stream or
Dask engine (:mod:`stagewise.engines`), a group of queries at a time, straight to a file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import functions_over_submodules, lazy_exports

# The public names load their modules on first use: the catalogues (options, methods) are read by the command
# line for its choices and help without numpy's start-up.
_EXPORTS = {
    "FusedRun": "stagewise.fusion.api",
    "fuse": "stagewise.fusion.api",
    "keep_first": "stagewise.fusion.api",
    "fuse_to": "stagewise.fusion.engine",
    "METHODS": "stagewise.fusion.methods",
    "FusionMethod": "stagewise.fusion.methods",
    "method_names": "stagewise.fusion.methods",
    "MISSING_DOCUMENT_POLICIES": "stagewise.fusion.options",
    "QUERY_POLICIES": "stagewise.fusion.options",
    "FusionOptions": "stagewise.fusion.options",
    "NORMALIZATIONS": "stagewise.fusion.normalize",
    "Normalization": "stagewise.fusion.normalize",
    "normalization_names": "stagewise.fusion.normalize",
    "FoldResult": "stagewise.fusion.optimize",
    "FusionReport": "stagewise.fusion.optimize",
    "grid_weights": "stagewise.fusion.optimize",
    "optimize": "stagewise.fusion.optimize",
    "FusionTable": "stagewise.fusion.table",
    "build_table": "stagewise.fusion.table",
    "write_fused": "stagewise.fusion.writer",
}

__all__ = [
    "METHODS",
    "MISSING_DOCUMENT_POLICIES",
    "NORMALIZATIONS",
    "QUERY_POLICIES",
    "FoldResult",
    "FusedRun",
    "FusionMethod",
    "FusionOptions",
    "FusionReport",
    "FusionTable",
    "Normalization",
    "build_table",
    "fuse",
    "fuse_to",
    "grid_weights",
    "keep_first",
    "method_names",
    "normalization_names",
    "optimize",
    "write_fused",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


functions_over_submodules(__name__, "optimize")

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.fusion.api import FusedRun, fuse, keep_first
    from stagewise.fusion.engine import fuse_to
    from stagewise.fusion.methods import METHODS, FusionMethod, method_names
    from stagewise.fusion.normalize import NORMALIZATIONS, Normalization, normalization_names
    from stagewise.fusion.optimize import FoldResult, FusionReport, grid_weights, optimize
    from stagewise.fusion.options import MISSING_DOCUMENT_POLICIES, QUERY_POLICIES, FusionOptions
    from stagewise.fusion.table import FusionTable, build_table
    from stagewise.fusion.writer import write_fused
