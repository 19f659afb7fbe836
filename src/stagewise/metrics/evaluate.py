"""The metrics layer's entry for measuring runs: :func:`parse_metrics`, :func:`measure_run` (one run, all queries
at once) and :func:`resolved_scores` (the one place a measure's data-dependent defaults are fixed).

The front door is :func:`stagewise.evaluate` (:func:`stagewise.engines.evaluate`), which chooses the engine; the
engines sit above this layer and call these functions. ``evaluate`` here is the former front door, kept for old
imports: it is the local engine's path and warns that it is deprecated.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels, read_runs
from stagewise.data.run import Run
from stagewise.errors import MetricError
from stagewise.metrics.context import Conventions, EvalContext, build_context, conventions_from
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.measures import Measure, aggregate, compute
from stagewise.metrics.result import EvalResult, RunScores

__all__ = ["DEFAULT_METRICS", "evaluate", "measure_run", "parse_metrics", "resolve_measures", "resolved_scores"]

Parsed = list[tuple[str, Measure]]
T = TypeVar("T")


def evaluate(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
    *,
    conventions: Conventions | None = None,
    **overrides: Any,
) -> EvalResult:
    """Deprecated: use :func:`stagewise.evaluate` (the same arguments, and ``engine=``).

    The local engine's path, kept so that ``from stagewise.metrics.evaluate import evaluate`` still works; the
    numbers are the front door's.

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     result = evaluate({"q1": {"d1": 2, "d3": 1}}, {"q1": {"d1": 0.9, "d2": 0.8}}, ["P@2"])
    >>> result.means["run"]
    {'P@2': 0.5}
    """
    warnings.warn(
        "stagewise.metrics.evaluate is deprecated; use stagewise.evaluate (the same arguments, and engine=)",
        DeprecationWarning,
        stacklevel=2,
    )
    parsed = parse_metrics(metrics)
    base = conventions_from(conventions, **overrides)
    judgements: Qrels = read_qrels(_deferred(qrels))
    loaded = read_runs(_deferred(runs))

    def score(chosen: list[Run], measures: Parsed) -> list[RunScores]:
        return [measure_run(judgements, run, measures, base) for run in chosen]

    scores = resolved_scores(judgements, loaded, parsed, base, score)
    stated = resolve_measures(parsed, judgements)  # the outputs say each default taken from the data
    return EvalResult(conventions=base, measures=stated, runs=scores, qrels_name=judgements.name)


def split_metrics(metrics: str | Iterable[str]) -> list[str]:
    """Metric names from a name, a comma list or an iterable of them, as the command line's ``-m`` reads them:
    commas inside parentheses kept, trec_eval's cutoff lists expanded to the names trec_eval prints.

    >>> split_metrics("map,ndcg@10")
    ['map', 'ndcg@10']
    >>> split_metrics(["ndcg_cut.10,20", "P@5(rel=2)", "wsum(weights=(0.7,0.3))"])
    ['ndcg_cut_10', 'ndcg_cut_20', 'P@5(rel=2)', 'wsum(weights=(0.7,0.3))']
    """
    from stagewise.metrics.measures import expand_cutoff_lists

    out: list[str] = []
    for value in [metrics] if isinstance(metrics, str) else list(metrics):
        if not isinstance(value, str) or "," not in value:
            out.append(value)
            continue
        pieces, depth, start = [], 0, 0
        for i, ch in enumerate(value):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                pieces.append(value[start:i])
                start = i + 1
        pieces.append(value[start:])
        out.extend(expand_cutoff_lists([piece.strip() for piece in pieces if piece.strip()]))
    return out


def parse_metrics(metrics: str | Iterable[str]) -> Parsed:
    """``(name as given, Measure)`` for each metric (a comma list is split: :func:`split_metrics`); at least
    one."""
    names = split_metrics(metrics)
    if not names:
        raise MetricError("give at least one metric, such as ndcg@10 or map")
    return [(name, Measure.parse(name)) for name in names]


def resolve_measures(parsed: Parsed, judgements: Qrels, query_ids: np.ndarray | None = None) -> Parsed:
    """Each measure with its data-dependent defaults stated (:meth:`Measure.resolve`), from the judgements of
    ``query_ids`` (None: every judged query); the names stay as given."""
    return [(name, measure.resolve(judgements, query_ids)) for name, measure in parsed]


def resolved_scores(
    judgements: Qrels,
    runs: Sequence[T],
    parsed: Parsed,
    conventions: Conventions,
    score: Callable[[list[T], Parsed], list[RunScores]],
) -> list[RunScores]:
    """``score(runs, measures)`` with each measure's data-dependent defaults fixed: the one place they are.

    A default such as ERR's ``max_label`` comes from the judgements of the evaluated queries. Every judged
    query is evaluated unless ``missing="skip"``, so the defaults are taken from all the judgements first and
    the measures handed to ``score`` already state them (an engine that measures a run in parts gives every
    part the same value). Under ``skip`` a run is evaluated on the judged queries it has; a run whose queries
    give another default is scored again with it. ``runs`` are whatever ``score`` reads (sources or runs).
    """
    pinned = resolve_measures(parsed, judgements)
    scores = score(list(runs), pinned)
    if conventions.missing == "skip" and pinned != parsed:
        for i, run_scores in enumerate(scores):
            own = resolve_measures(parsed, judgements, run_scores.query_ids)
            if own != pinned:
                scores[i] = score([runs[i]], own)[0]
    return scores


def measure_run(judgements: Qrels, run: Run, parsed: Parsed, base: Conventions) -> RunScores:
    """One run's per-query values and means: a context per relevance level the measures ask for, shared by
    the measures at that level. The engines (``stagewise.engines``) call it once per part of a run, with the
    measures resolved (:func:`resolved_scores`)."""
    contexts: dict[int, EvalContext] = {}
    values: dict[str, np.ndarray] = {}
    for name, measure in parsed:
        level = _level_of(measure, base.relevance_level)
        if level not in contexts:
            contexts[level] = build_context(judgements, run, base.with_(relevance_level=level))
        values[name] = compute(measure, contexts[level])
    ctx = contexts[next(iter(contexts))]
    return RunScores(
        name=run.name,
        query_ids=ctx.query_ids,
        values=values,
        means={name: aggregate(measure, values[name]) for name, measure in parsed},
        missing_queries=ctx.missing_queries,
        run_only_queries=ctx.run_only_queries,
        score_from=getattr(run, "score_from", None),
        num_ret=ctx.num_ret,
    )


def _deferred(source: Any) -> Any:
    """A source given as a function is read now, after the cheap checks (no Qrels, Run, frame or path is
    callable)."""
    return source() if callable(source) else source


def _level_of(measure: Measure, default: int) -> int:
    if "rel" in measure.spec.options and measure.option("rel") is not None:
        return int(measure.option("rel"))
    return default
