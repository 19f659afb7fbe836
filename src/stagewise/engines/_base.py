"""What every engine does: evaluate runs, with per-query values and means identical to the in-memory path."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels
from stagewise.metrics.context import Conventions
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.evaluate import parse_metrics
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import EvalResult, RunScores

from ._sources import run_sources


def _top_label(qrels: Qrels, query_ids: np.ndarray | None) -> int:
    """The highest label among the judgements of ``query_ids`` (all queries: None), 1 when there are none:
    the default ``max_label`` of ERR, which the local engine takes from the evaluated queries' judgements."""
    labels = qrels.labels if query_ids is None else qrels.labels[np.isin(qrels.query_ids[qrels.query_codes], query_ids)]
    return int(labels.max()) if len(labels) else 1


def _pin_err(parsed: list[tuple[str, Measure]], top: int) -> list[tuple[str, Measure]]:
    """ERR without ``max_label`` takes the highest label of the evaluated judgements; a part of a run sees only
    its own, so the engines state it (the result keeps the measures as given)."""
    out = []
    for name, measure in parsed:
        if measure.family == "err" and "max_label" not in dict(measure.options):
            measure = dataclasses.replace(measure, options=tuple(sorted((*measure.options, ("max_label", top)))))
        out.append((name, measure))
    return out


class Engine:
    """How the per-query work of an evaluation is partitioned and gathered. Subclasses say how a list of
    ``(name, source)`` runs becomes :class:`RunScores` (:meth:`score_runs`); the kernels are the metrics
    engine's, so every engine gives the same numbers."""

    name = "engine"

    def evaluate(
        self,
        qrels: Any,
        runs: Any,
        metrics: str | Iterable[str] = DEFAULT_METRICS,
        *,
        relevance_level: int = 1,
        ties: str = "docid",
        missing: str = "zero",
        max_ret: int | None = None,
        judged_only: bool = False,
        duplicates: str = "error",
    ) -> EvalResult:
        """As :func:`stagewise.evaluate`, run by this engine; ``duplicates`` is read_run's policy."""
        parsed = parse_metrics(metrics)
        base = Conventions(
            relevance_level=relevance_level,
            ties=ties,  # type: ignore[arg-type]
            missing=missing,  # type: ignore[arg-type]
            max_ret=max_ret,
            judged_only=judged_only,
        )
        # Like evaluate(), the qrels may be a function that reads them, called once the cheap checks passed.
        judgements: Qrels = read_qrels(qrels() if callable(qrels) else qrels)
        sources = run_sources(runs)
        top = _top_label(judgements, None)
        scores = self.score_runs(judgements, sources, _pin_err(parsed, top), base, duplicates)
        if base.missing == "skip" and _pin_err(parsed, top) != parsed:
            for i, run in enumerate(scores):  # err's default depends on which judged queries the run has
                own = _top_label(judgements, run.query_ids)
                if own != top:
                    scores[i] = self.score_runs(judgements, [sources[i]], _pin_err(parsed, own), base, duplicates)[0]
        return EvalResult(conventions=base, measures=parsed, runs=scores, qrels_name=judgements.name)

    def score_runs(
        self,
        qrels: Qrels,
        sources: list[tuple[str, Any]],
        parsed: list[tuple[str, Measure]],
        base: Conventions,
        duplicates: str,
    ) -> list[RunScores]:
        raise NotImplementedError

    def map_groups(
        self, runs: Any, fn: Callable[[list[Any]], Any], *, duplicates: str = "error"
    ) -> Iterator[Any]:
        """``fn(group)`` for groups of whole queries of several runs, in query order: a group is one Run per
        run (in the order given) holding that run's rows of the group's queries (none, if it lacks them all).
        For stages whose result for a query depends on that query's rows only (fusion); ``fn`` must be
        picklable for the Dask engine."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the engine started (a local Dask cluster); nothing for the others."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
