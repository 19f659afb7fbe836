"""Engines: how the per-query work of an evaluation is partitioned and gathered (the kernels stay in metrics/).

:func:`evaluate` here is the library's one front door for evaluation (:func:`stagewise.evaluate` is the same
function): it takes the conventions as a value, chooses the engine, and reports progress.

- ``local``: every run read whole into memory and measured at once (the default).
- ``stream``: a TREC run file larger than memory, read in blocks of whole queries; memory is bounded by the
  block. The run must be grouped by query (``LC_ALL=C sort -k1,1 -s`` groups one).
- ``dask``: many run files (globs too), each large file read in partitions of whole queries by the tasks of a
  Dask cluster (a local one unless a scheduler address is given); per-query values and means gathered on the
  client. Needs the ``stagewise[dask]`` extra, imported only when this engine is used.

Every engine gives the same per-query values and the same means, bit for bit, as the local engine: a measure's
value for a query depends on that query's rows and judgements only, and the means are taken on the client over
the gathered values in the same order.

>>> from stagewise.engines import evaluate
>>> result = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}}, ["P@1"], engine="stream")
>>> result.means["run"]["P@1"]
1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

from .catalogue import ENGINES, EngineEntry

# Light at import (the command line reads ENGINES for its choices): the engines load on first use.
_EXPORTS = {
    "DaskEngine": "stagewise.engines._dask",  # dask and distributed are imported only when this engine is asked for
    "Engine": "stagewise.engines._base",
    "LocalEngine": "stagewise.engines._local",
    "StreamEngine": "stagewise.engines._stream",
    "evaluate": "stagewise.engines.front",
    "expand_globs": "stagewise.engines._sources",
    "get_engine": "stagewise.engines.front",
}

__all__ = [
    "ENGINES",
    "DaskEngine",
    "Engine",
    "EngineEntry",
    "LocalEngine",
    "StreamEngine",
    "evaluate",
    "expand_globs",
    "get_engine",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.engines._base import Engine
    from stagewise.engines._dask import DaskEngine
    from stagewise.engines._local import LocalEngine
    from stagewise.engines._sources import expand_globs
    from stagewise.engines._stream import StreamEngine
    from stagewise.engines.front import evaluate, get_engine

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
