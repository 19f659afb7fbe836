"""The local engine: every run read whole into memory, all queries evaluated at once (the default path)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_run
from stagewise.data.run import Run
from stagewise.metrics.context import Conventions, JoinedRun
from stagewise.metrics.evaluate import measure_run
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import RunScores

from ._base import Engine
from ._fast_eval import joinable, read_joined
from ._sources import run_sources


class LocalEngine(Engine):
    """Each run read into memory and measured in one pass: :func:`stagewise.evaluate`'s own path.

    A plain TREC run file is read joined to the qrels when it can be (``_fast_eval``: the run grouped by query
    and in score order, ties by doc id, ordinary qrels): no document id is kept, and ``on_run`` is shown a
    :class:`~stagewise.metrics.context.JoinedRun`, which the checks of ``stagewise.checks`` read as a run."""

    name = "local"

    def score_runs(
        self,
        qrels: Qrels,
        sources: list[tuple[str, Any]],
        parsed: list[tuple[str, Measure]],
        base: Conventions,
        duplicates: str,
    ) -> list[RunScores]:
        out = []
        for done, (name, source) in enumerate(sources):
            self._report(done, len(sources))
            out.append(measure_run(qrels, self._read_for(qrels, source, name, base, duplicates), parsed, base))
        self._report(len(sources), len(sources))
        return out

    def _read_for(self, qrels: Qrels, source: Any, name: str, base: Conventions, duplicates: str) -> Run | JoinedRun:
        """The run joined to ``qrels`` as it is read when the joined parse takes it, else read whole."""
        joined = read_joined(qrels, source, name) if joinable(qrels, source, base) else None
        if not isinstance(joined, JoinedRun):
            return self._read_whole(source, name, duplicates)
        if self.on_run is not None:
            self.on_run(joined, source)
        return joined

    def map_groups(
        self, runs: Any, fn: Callable[[list[Any]], Any], *, duplicates: str = "error"
    ) -> Iterator[Any]:
        yield fn([read_run(source, name=name, duplicates=duplicates) for name, source in run_sources(runs)])
