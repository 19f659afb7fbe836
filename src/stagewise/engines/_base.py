"""What every engine does: evaluate runs, with per-query values and means identical to the in-memory path."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels, read_run
from stagewise.data.run import Run
from stagewise.metrics.context import Conventions, conventions_from
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.metrics.evaluate import parse_metrics, resolve_measures, resolved_scores
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import EvalResult, RunScores

from ._sources import run_sources

#: ``progress(done, total)``: how an engine reports its work (runs measured, or the Dask engine's tasks).
Progress = Callable[[int, int], None]
#: ``on_run(run, source)``: called with each run an engine holds whole in memory, before it is measured.
OnRun = Callable[[Run, Any], None]


class Engine:
    """How the per-query work of an evaluation is partitioned and gathered. Subclasses say how a list of
    ``(name, source)`` runs becomes :class:`RunScores` (:meth:`score_runs`); the kernels are the metrics
    engine's, so every engine gives the same numbers.

    ``progress``, when set, is called as ``progress(done, total)`` while the engine works, and ``on_run`` as
    ``on_run(run, source)`` with each run it reads whole (the front door sets both for one call from its
    ``progress=`` and ``on_run=``). ``progress_text`` is what a progress display says: before the first report,
    after it, and the unit counted."""

    name = "engine"
    progress: Progress | None = None
    on_run: OnRun | None = None
    progress_text: tuple[str, str, str] = ("reading runs", "reading runs", "runs")

    def evaluate(
        self,
        qrels: Any,
        runs: Any,
        metrics: str | Iterable[str] = DEFAULT_METRICS,
        conventions: Conventions | None = None,
        *,
        duplicates: str = "error",
        **overrides: Any,
    ) -> EvalResult:
        """As :func:`stagewise.evaluate`, run by this engine: ``conventions`` with the ``overrides`` (its fields
        as keywords) applied; ``duplicates`` is read_run's policy."""
        parsed = parse_metrics(metrics)
        base = conventions_from(conventions, **overrides)
        # The qrels and runs may be functions that read them, called once the cheap checks passed.
        judgements: Qrels = read_qrels(qrels() if callable(qrels) else qrels)
        sources = run_sources(runs() if callable(runs) else runs)

        def score(chosen: list[tuple[str, Any]], measures: list[tuple[str, Measure]]) -> list[RunScores]:
            return self.score_runs(judgements, chosen, measures, base, duplicates)

        scores = resolved_scores(judgements, sources, parsed, base, score)
        # the measures as evaluated, data-dependent defaults stated (err's max_label), so outputs say the value used
        stated = resolve_measures(parsed, judgements)
        return EvalResult(conventions=base, measures=stated, runs=scores, qrels_name=judgements.name)

    def _report(self, done: int, total: int) -> None:
        """Tell ``progress`` (if any) how far the work is."""
        if self.progress is not None:
            self.progress(done, total)

    def _read_whole(self, source: Any, name: str, duplicates: str) -> Run:
        """A run read whole into memory, shown to ``on_run`` (if any)."""
        run = read_run(source, name=name, duplicates=duplicates)
        if self.on_run is not None:
            self.on_run(run, source)
        return run

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
