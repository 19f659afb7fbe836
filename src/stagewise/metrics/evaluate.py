"""``evaluate(qrels, runs, metrics)``: the library's front door for measuring runs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels, read_runs
from stagewise.data.run import Run
from stagewise.errors import MetricError
from stagewise.metrics.context import Conventions, EvalContext, build_context
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.measures import Measure, aggregate, compute
from stagewise.metrics.result import EvalResult, RunScores

__all__ = ["DEFAULT_METRICS", "evaluate", "measure_run", "parse_metrics"]


def evaluate(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
    *,
    relevance_level: int = 1,
    ties: str = "docid",
    missing: str = "zero",
    max_ret: int | None = None,
    judged_only: bool = False,
) -> EvalResult:
    """Measure one or more runs against judgements.

    Parameters
    ----------
    qrels : Qrels, path, DataFrame or dict, or a function that returns one
        Judgements (anything :func:`stagewise.read_qrels` takes).
    runs : Run, path, DataFrame or dict, or a list or ``{name: run}`` mapping of them, or a function that returns one
        Each run is read with :func:`stagewise.read_run`.

        Files are read only after the cheap arguments (metrics, conventions) are checked, so a misspelt metric
        fails at once; a function given for ``qrels`` or ``runs`` is called then (the command line passes its own
        readers, with their progress display, this way).
    metrics : str or iterable of str, default=("map", "ndcg@10", "recall@100", "mrr@10", "P@10")
        Metric names such as ``ndcg@10``, ``ndcg@10(gain=exp)``, ``P@5(rel=2)``, ``map``, ``bpref`` or
        trec_eval spellings (``ndcg_cut_10``, ``P_5``). Results are keyed by the names as given.
    relevance_level, ties, missing, max_ret, judged_only
        The conventions; see :class:`stagewise.metrics.context.Conventions`. Defaults are trec_eval's, except
        that judged queries absent from a run score 0 (trec_eval ``-c``) and the count is reported.

    Returns
    -------
    EvalResult
        Means and per-query values for every run and metric, with the conventions that produced them.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 2, "d2": 0, "d3": 1}}
    >>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7}}
    >>> result = evaluate(qrels, run, ["ndcg@3", "P@2", "mrr"])
    >>> {k: round(v, 4) for k, v in result.means["run"].items()}
    {'ndcg@3': 0.9502, 'P@2': 0.5, 'mrr': 1.0}
    """
    parsed = parse_metrics(metrics)
    base = Conventions(
        relevance_level=relevance_level,
        ties=ties,
        missing=missing,
        max_ret=max_ret,  # type: ignore[arg-type]
        judged_only=judged_only,
    )
    judgements: Qrels = read_qrels(_deferred(qrels))
    loaded = read_runs(_deferred(runs))
    scores = [measure_run(judgements, run, parsed, base) for run in loaded]
    return EvalResult(conventions=base, measures=parsed, runs=scores, qrels_name=judgements.name)


def parse_metrics(metrics: str | Iterable[str]) -> list[tuple[str, Measure]]:
    """``(name as given, Measure)`` for each metric; at least one."""
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise MetricError("give at least one metric, such as ndcg@10 or map")
    return [(name, Measure.parse(name)) for name in names]


def measure_run(judgements: Qrels, run: Run, parsed: list[tuple[str, Measure]], base: Conventions) -> RunScores:
    """One run's per-query values and means: a context per relevance level the measures ask for, shared by
    the measures at that level. The engines (``stagewise.engines``) call it once per part of a run."""
    contexts: dict[int, EvalContext] = {}
    values: dict[str, np.ndarray] = {}
    for name, measure in parsed:
        level = _level_of(measure, base.relevance_level)
        if level not in contexts:
            conv = base if level == base.relevance_level else _with_level(base, level)
            contexts[level] = build_context(judgements, run, conv)
        values[name] = compute(measure, contexts[level])
    ctx = contexts[next(iter(contexts))]
    return RunScores(
        name=run.name,
        query_ids=ctx.query_ids,
        values=values,
        means={name: aggregate(measure, values[name]) for name, measure in parsed},
        missing_queries=ctx.missing_queries,
        run_only_queries=ctx.run_only_queries,
    )


def _deferred(source: Any) -> Any:
    """A source given as a function is read now, after the cheap checks (no Qrels, Run, frame or path is
    callable)."""
    return source() if callable(source) else source


def _level_of(measure: Measure, default: int) -> int:
    if "rel" in measure.spec.options and measure.option("rel") is not None:
        return int(measure.option("rel"))
    return default


def _with_level(base: Conventions, level: int) -> Conventions:
    return Conventions(
        relevance_level=level,
        ties=base.ties,
        missing=base.missing,
        max_ret=base.max_ret,
        judged_only=base.judged_only,
    )
