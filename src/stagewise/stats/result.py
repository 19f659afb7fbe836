"""The result of :func:`stagewise.stats.compare`: every pair's test, correction and effect size. It holds data and
never renders itself: :mod:`stagewise.report` turns it into tables, markdown, LaTeX, CSV and JSON."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

#: The keys of one pair in the JSON contract, in order (``n_queries`` and ``significant`` follow them).
PAIR_KEYS = (
    "metric",
    "a",
    "b",
    "test",
    "statistic",
    "p_value",
    "p_adjusted",
    "correction",
    "mean_diff",
    "ci_low",
    "ci_high",
    "effect_size",
    "wins",
    "ties",
    "losses",
)


@dataclass(frozen=True)
class PairResult:
    """One test of run ``b`` against run ``a`` on one metric; ``mean_diff = mean(b) - mean(a)`` over the
    ``n_queries`` paired queries, ``effect_size`` the paired Cohen's d_z, ``wins`` the queries where b is
    better (beyond the tie tolerance)."""

    metric: str
    a: str
    b: str
    test: str
    statistic: float
    p_value: float
    p_adjusted: float
    correction: str
    mean_diff: float
    ci_low: float
    ci_high: float
    effect_size: float
    wins: int
    ties: int
    losses: int
    n_queries: int
    significant: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: non-finite floats (an infinite d_z when every difference is equal) become None."""
        return {k: _finite(v) for k, v in asdict(self).items()}


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def letters(count: int) -> list[str]:
    """Run labels a, b, ..., z, aa, ab, ... (bijective base 26)."""
    out = []
    for i in range(count):
        label, k = "", i + 1
        while k:
            k, r = divmod(k - 1, 26)
            label = chr(ord("a") + r) + label
        out.append(label)
    return out


@dataclass
class Comparison:
    """Paired tests between runs on several metrics, with the conventions that produced them.

    ``pairs`` lists one :class:`PairResult` per metric and pair (metric-major, pairs in run order);
    ``means[run][metric]`` are the evaluation's means; ``labels[run]`` the letter a table uses for a run.
    ``many[metric]`` is a :class:`~stagewise.stats.many.ManySystems` (the ANOVA table, each run's interval and
    letters, ES_E2) when the test was one of many runs at once (``anova``, ``tukey-hsd``, ``maxt``).
    """

    runs: list[str]
    metrics: list[str]
    means: dict[str, dict[str, float]]
    pairs: list[PairResult]
    conventions: dict[str, Any]
    alpha: float
    baseline: str | None = None
    scores: Any = field(default=None, repr=False)
    eval_notes: list[str] = field(default_factory=list, repr=False)
    many: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def labels(self) -> dict[str, str]:
        return dict(zip(self.runs, letters(len(self.runs)), strict=True))

    def pair(self, metric: str, a: str, b: str) -> PairResult:
        """The result for ``metric`` between runs ``a`` and ``b`` (as tested, in either order)."""
        for p in self.pairs:
            if p.metric == metric and {p.a, p.b} == {a, b}:
                return p
        raise KeyError(f"no comparison of {a!r} and {b!r} on {metric!r}")

    def direction(self, metric: str) -> str | None:
        """Which way is better on ``metric``, as its measure says (:attr:`stagewise.Measure.better`):
        ``"higher"`` (most measures, and any name that is no measure), ``"lower"`` (the unjudged share, the RBP
        residual) or ``None`` (a plain count such as num_ret: no run is better for it)."""
        return _direction(metric)

    def better_than(self, run: str, metric: str) -> list[str]:
        """The runs that ``run`` is significantly better than on ``metric`` (adjusted p < alpha): higher, or lower
        where lower is better; none for a plain count."""
        way = self.direction(metric)
        if way is None:
            return []
        sign = 1.0 if way == "higher" else -1.0  # b better than a when sign * (b - a) > 0
        out = []
        for p in self.pairs:
            if p.metric != metric or not p.significant:
                continue
            if p.a == run and sign * p.mean_diff < 0:
                out.append(p.b)
            elif p.b == run and sign * p.mean_diff > 0:
                out.append(p.a)
        order = {name: i for i, name in enumerate(self.runs)}
        return sorted(out, key=order.__getitem__)

    def best(self, metric: str) -> list[str]:
        """The runs with the best mean on ``metric``: the highest, the lowest where lower is better, none for a
        plain count."""
        way = self.direction(metric)
        if way is None:
            return []
        values = [self.means[r][metric] for r in self.runs]
        top = max(values) if way == "higher" else min(values)
        return [r for r, v in zip(self.runs, values, strict=True) if v == top]

    # ----------------------------------------------------------------------------------- per-query deltas
    def per_query_deltas(self, metric: str, a: str, b: str) -> list[dict[str, Any]]:
        """Each paired query's ``{"query_id", "a", "b", "delta"}`` with ``delta = b - a``, largest gain first
        (deltas equal to 12 decimals by query id)."""
        table = self.scores
        if table is None:
            raise KeyError("this comparison kept no per-query scores")
        i, j = table.names.index(a), table.names.index(b)
        common, pi, pj = np.intersect1d(table.query_ids[i], table.query_ids[j], assume_unique=True, return_indices=True)
        va = table.values[i][metric][pi]
        vb = table.values[j][metric][pj]
        delta = vb - va
        order = np.lexsort((common, -np.round(delta, 12)))  # float noise (0.3 - 0.2 vs 0.2 - 0.1) is no order
        return [
            {"query_id": str(common[k]), "a": float(va[k]), "b": float(vb[k]), "delta": float(delta[k])} for k in order
        ]

    # --------------------------------------------------------------------------------------------- output
    def to_json(self, per_query: bool = False, top: int | None = None, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise compare --format json`` writes)."""
        import json

        return json.dumps(self.to_dict(per_query, top), indent=indent, allow_nan=False)

    def to_dict(self, per_query: bool = False, top: int | None = None) -> dict[str, Any]:
        """The stable JSON contract as a dict: ``{"pairs": [...], "means": {run: {metric: mean}}}``, plus
        ``"conventions"``, ``"labels"``, ``"many_systems"`` after a test of many runs at once (per metric: the
        ANOVA table, the residual variance, each run's mean, interval and letters, ES_E2) and, with
        ``per_query``, ``"per_query"`` (each pair's sorted deltas; ``top`` keeps the ``top`` largest gains and
        losses)."""
        out: dict[str, Any] = {
            "pairs": [p.to_dict() for p in self.pairs],
            "means": self.means,
            "labels": self.labels,
            "conventions": self.conventions,
        }
        if self.many:
            out["many_systems"] = [m.to_dict() for m in self.many.values()]
        if per_query:
            out["per_query"] = [
                {"metric": p.metric, "a": p.a, "b": p.b, "deltas": top_and_bottom(self.per_query_deltas(*key), top)}
                for p in self.pairs
                for key in [(p.metric, p.a, p.b)]
            ]
        return out


def _direction(metric: str) -> str | None:
    from stagewise.errors import StagewiseError
    from stagewise.metrics.measures import Measure

    try:
        measure = Measure.parse(metric)
    except (StagewiseError, ValueError, KeyError):
        return "higher"
    return getattr(measure, "better", "higher")


def top_and_bottom(rows: list[dict[str, Any]], top: int | None) -> list[dict[str, Any]]:
    """The ``top`` first and ``top`` last of ``rows`` (all of them when ``top`` is None or they are few)."""
    if top is None or 2 * top >= len(rows):
        return rows
    return rows[:top] + rows[len(rows) - top :]
