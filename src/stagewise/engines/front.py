"""The front door of evaluation, :func:`evaluate` (also :func:`stagewise.evaluate`), and :func:`get_engine`:
the one place an engine is chosen."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stagewise.errors import ConventionError
from stagewise.metrics.context import Conventions, conventions_from
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.result import EvalResult

from ._base import Engine, OnRun, Progress
from .catalogue import ENGINES

__all__ = ["evaluate", "get_engine"]


def get_engine(engine: str | Engine | None = "local", *, scheduler: str | None = None, **options: Any) -> Engine:
    """An engine by name (an entry of :data:`~stagewise.engines.catalogue.ENGINES`: ``local``, ``stream``,
    ``dask``) or the one given; ``scheduler`` is the Dask scheduler's address, ``options`` the engine's own
    (``block_bytes``, ``n_workers``, ``partition_bytes``...).

    >>> get_engine("stream", block_bytes=2**20)
    StreamEngine(block_bytes=1048576)
    """
    if isinstance(engine, Engine):
        if scheduler is not None or options:
            raise ConventionError("give the scheduler and options to the engine object itself, not beside it")
        return engine
    return ENGINES.lookup("local" if engine is None else engine).make(scheduler, **options)


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
