"""The local engine: every run read whole into memory, all queries evaluated at once (the default path)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_run
from stagewise.metrics.context import Conventions
from stagewise.metrics.evaluate import measure_run
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import RunScores

from ._base import Engine
from ._sources import run_sources


class LocalEngine(Engine):
    """Each run read into memory whole and measured in one pass: :func:`stagewise.evaluate`'s own path."""

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
            out.append(measure_run(qrels, self._read_whole(source, name, duplicates), parsed, base))
        self._report(len(sources), len(sources))
        return out

    def map_groups(
        self, runs: Any, fn: Callable[[list[Any]], Any], *, duplicates: str = "error"
    ) -> Iterator[Any]:
        yield fn([read_run(source, name=name, duplicates=duplicates) for name, source in run_sources(runs)])
