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

from collections.abc import Iterable
from typing import Any

from stagewise.errors import ConventionError as _ConventionError
from stagewise.metrics.context import Conventions, conventions_from
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.result import EvalResult

from ._base import Engine, OnRun, Progress
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
    conventions: Conventions | None = None,
    engine: str | Engine = "local",
    scheduler: str | None = None,
    progress: Progress | None = None,
    duplicates: str = "error",
    on_run: OnRun | None = None,
    **overrides: Any,
) -> EvalResult:
    """Measure one or more runs against judgements: the library's one front door for evaluation
    (:func:`stagewise.evaluate`).

    Parameters
    ----------
    qrels : Qrels, path, DataFrame or dict, or a function that returns one
        Judgements (anything :func:`stagewise.read_qrels` takes).
    runs : Run, path, glob, DataFrame or dict, a list or ``{name: run}`` mapping of them, or a function returning one
        Each run is read with :func:`stagewise.read_run`; a glob (``"runs/*.trec"``) names every file it matches.

        Files are read only after the cheap arguments (metrics, conventions) are checked, so a misspelt metric
        fails at once; a function given for ``qrels`` or ``runs`` is called then (the command line passes its own
        readers this way).
    metrics : str or iterable of str, default=("map", "ndcg@10", "recall@100", "mrr@10", "P@10")
        Metric names such as ``ndcg@10``, ``ndcg@10(gain=exp)``, ``P@5(rel=2)``, ``map``, ``bpref`` or
        trec_eval spellings (``ndcg_cut_10``, ``P_5``). Results are keyed by the names as given.
    conventions : Conventions, optional
        The choices that change a value (relevance level, ties, missing queries, ``max_ret``, ``judged_only``);
        default :class:`~stagewise.metrics.context.Conventions`'s: trec_eval's, except that judged queries absent
        from a run score 0 (trec_eval ``-c``) and the count is reported.
    engine : {"local", "stream", "dask"} or Engine, default="local"
        Who does the per-query work (see :mod:`stagewise.engines`); every engine gives the same numbers. An
        engine object is used as is and left open; one named here is closed after the call.
    scheduler : str, optional
        A Dask scheduler's address (``tcp://host:8786``) for ``engine="dask"``; without it a local cluster is
        started for the call.
    progress : callable, optional
        Called as ``progress(done, total)`` while the engine works: runs measured out of the runs (local,
        stream), tasks finished out of the tasks (dask).
    duplicates : {"error", "first", "max"}, default="error"
        A document listed twice for one query of a run: an error naming the line, or keep the first or the
        best-scored listing (see :func:`stagewise.read_run`).
    on_run : callable, optional
        Called as ``on_run(run, source)`` with each run the engine reads whole into memory, before it is
        measured (the local engine: every run; the stream engine: runs given as objects); the command line
        checks a run's columns with it. An engine reading a run in parts never holds it whole and does not call it.
    **overrides
        Fields of :class:`~stagewise.metrics.context.Conventions` as keywords (``missing="skip"``,
        ``relevance_level=2``), applied over ``conventions``; an unknown one is a ``ConventionError``.

    Returns
    -------
    EvalResult
        Means and per-query values for every run and metric, with the conventions that produced them.

    Examples
    --------
    >>> from stagewise.metrics.context import Conventions
    >>> qrels = {"q1": {"d1": 2, "d2": 0, "d3": 1}}
    >>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7}}
    >>> result = evaluate(qrels, run, ["ndcg@3", "P@2", "mrr"])
    >>> {k: round(v, 4) for k, v in result.means["run"].items()}
    {'ndcg@3': 0.9502, 'P@2': 0.5, 'mrr': 1.0}
    >>> strict = Conventions(relevance_level=2)
    >>> evaluate(qrels, run, "P@2", conventions=strict).means["run"]
    {'P@2': 0.5}
    >>> evaluate(qrels, run, "P@2", conventions=strict, relevance_level=1, engine="stream").means["run"]
    {'P@2': 0.5}
    """
    base = conventions_from(conventions, **overrides)  # checked before an engine (a cluster) starts
    chosen = get_engine(engine, scheduler=scheduler)
    before = chosen.progress, chosen.on_run
    chosen.progress = progress or before[0]
    chosen.on_run = on_run or before[1]
    try:
        return chosen.evaluate(qrels, runs, metrics, base, duplicates=duplicates)
    finally:
        chosen.progress, chosen.on_run = before
        if chosen is not engine:
            chosen.close()
