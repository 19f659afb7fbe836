"""Every run's per-query metric values, and their means exactly as :func:`stagewise.evaluate` computes them.

A relabel changes one query's values only, so the web app recomputes that query and puts its values here. The
means are not kept as running sums: a running sum, even a compensated one, rounds differently from the mean
the library computes (numpy's pairwise sum over the queries in evaluation order), so the served means would
drift from ``stagewise evaluate`` in the last bits. Instead each run and metric keeps one contiguous float64
array, its queries in the order the evaluation reports them (judged query ids in byte order, trec_eval's
``strcmp``), and a mean is the library's own :func:`~stagewise.metrics.measures.aggregate` over that array: the
same numbers in the same order, so the same bits, for one C pass over the queries (microseconds at thousands of
queries), done only when a value changed since the last read.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import numpy as np

from stagewise.metrics.measures import Measure, aggregate
from stagewise.metrics.result import RunScores

__all__ = ["QueryValues"]

Values = dict[str, float]  # metric -> value, for one run and one query


def _order_key(qid: str) -> bytes:
    """Where a query id sorts among the evaluated ones: its UTF-8 bytes (the evaluation's byte order)."""
    return qid.encode("utf-8", errors="surrogatepass")


class QueryValues:
    """The values of every judged query for every run and metric, and each run's means over them.

    Not thread-safe: the workspace holds its lock around every call.
    """

    def __init__(self, runs: Sequence[str], measures: Sequence[tuple[str, Measure]]) -> None:
        self.runs = list(runs)
        self.measures = list(measures)
        self.ids: list[str] = []  # judged query ids, in evaluation order
        self._keys: list[bytes] = []  # their sort keys, for bisect
        self.by_query: dict[str, dict[str, Values]] = {name: {} for name in self.runs}  # run -> qid -> values
        self._columns = {name: {m: np.empty(0) for m, _ in self.measures} for name in self.runs}
        self._means: dict[str, Values] | None = None

    def load(self, scores: Iterable[RunScores]) -> None:
        """Take a whole evaluation's per-query values (every judged query of every run), as they are."""
        for run in scores:
            ids = [str(q) for q in run.query_ids]
            keys = [_order_key(q) for q in ids]
            if keys != sorted(keys) or (self.ids and ids != self.ids):
                raise ValueError("an evaluation's queries must be the judged ids in byte order, the same for all runs")
            self.ids, self._keys = ids, keys
            self._columns[run.name] = {m: np.array(run.values[m], dtype=np.float64) for m, _ in self.measures}
            self.by_query[run.name] = {
                q: {m: float(self._columns[run.name][m][i]) for m, _ in self.measures} for i, q in enumerate(ids)
            }
        self._means = None

    def get(self, run: str, qid: str) -> Values | None:
        """One query's values in one run (None: the query is not judged)."""
        return self.by_query[run].get(qid)

    def put(self, qid: str, values: dict[str, Values]) -> None:
        """Set one query's values for every run (``{run: {metric: value}}``); a query not yet judged joins."""
        key = _order_key(qid)
        at = bisect.bisect_left(self._keys, key)
        new = at == len(self._keys) or self._keys[at] != key
        if new:
            self.ids.insert(at, qid)
            self._keys.insert(at, key)
        for name in self.runs:
            row = {m: float(values[name][m]) for m, _ in self.measures}
            self.by_query[name][qid] = row
            for m, column in self._columns[name].items():
                if new:
                    self._columns[name][m] = np.insert(column, at, row[m])
                else:
                    column[at] = row[m]
        self._means = None

    def drop(self, qid: str) -> None:
        """A query without judgements any more: it leaves every mean."""
        key = _order_key(qid)
        at = bisect.bisect_left(self._keys, key)
        if at == len(self._keys) or self._keys[at] != key:
            return
        del self.ids[at], self._keys[at]
        for name in self.runs:
            self.by_query[name].pop(qid, None)
            for m, column in self._columns[name].items():
                self._columns[name][m] = np.delete(column, at)
        self._means = None

    def means(self) -> dict[str, Values]:
        """Each run's mean of every metric over the judged queries (0 when none is judged, as evaluate)."""
        if self._means is None:
            self._means = {
                name: {m: aggregate(measure, self._columns[name][m]) for m, measure in self.measures}
                for name in self.runs
            }
        return {name: dict(values) for name, values in self._means.items()}
