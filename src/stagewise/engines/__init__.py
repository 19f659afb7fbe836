"""Engines: how the per-query work of an evaluation is partitioned and gathered (the kernels stay in metrics/).

- ``local``: every run read whole into memory and measured at once (the default; :func:`stagewise.evaluate`).
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

from collections.abc import Iterable
from typing import Any

from stagewise.errors import ConventionError as _ConventionError
from stagewise.metrics.defaults import DEFAULT_METRICS

from ._base import Engine
from ._local import LocalEngine
from ._sources import expand_globs
from ._stream import StreamEngine

ENGINES: tuple[str, ...] = ("local", "stream", "dask")

__all__ = ["ENGINES", "DaskEngine", "Engine", "LocalEngine", "StreamEngine", "evaluate", "expand_globs", "get_engine"]


def __getattr__(name: str) -> Any:
    if name == "DaskEngine":  # dask and distributed are imported only when this engine is asked for
        from ._dask import DaskEngine

        return DaskEngine
    raise AttributeError(name)


def get_engine(engine: str | Engine | None = "local", *, scheduler: str | None = None, **options: Any) -> Engine:
    """An engine by name (``local``, ``stream``, ``dask``) or the one given; ``scheduler`` is the Dask
    scheduler's address, ``options`` the engine's own (``block_bytes``, ``n_workers``, ``partition_bytes``...)."""
    if isinstance(engine, Engine):
        if scheduler is not None or options:
            raise _ConventionError("give the scheduler and options to the engine object itself, not beside it")
        return engine
    chosen = "local" if engine is None else engine
    if scheduler is not None and chosen != "dask":
        raise _ConventionError(f"a scheduler address is for the dask engine, not {chosen!r} (use --engine dask)")
    if chosen == "local":
        if options:
            raise _ConventionError(f"the local engine takes no options; got {sorted(options)}")
        return LocalEngine()
    if chosen == "stream":
        return StreamEngine(**options)
    if chosen == "dask":
        from ._dask import DaskEngine

        return DaskEngine(scheduler, **options)
    raise _ConventionError(f"unknown engine {chosen!r}; choose one of {', '.join(ENGINES)}")


def evaluate(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
    *,
    engine: str | Engine = "local",
    scheduler: str | None = None,
    **conventions: Any,
):
    """:func:`stagewise.evaluate` run by an engine: ``engine="stream"`` or ``engine="dask"`` (with
    ``scheduler="tcp://host:8786"``, else a local cluster for the call), or an engine object, which is left
    open. ``conventions`` are evaluate's (``relevance_level``, ``ties``, ``missing``, ``max_ret``,
    ``judged_only``) and ``duplicates``. Runs may be globs (``"runs/*.trec"``)."""
    chosen = get_engine(engine, scheduler=scheduler)
    try:
        return chosen.evaluate(qrels, runs, metrics, **conventions)
    finally:
        if chosen is not engine:
            chosen.close()
