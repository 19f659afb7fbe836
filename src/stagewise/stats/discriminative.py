"""Discriminative power of evaluation measures by the paired bootstrap (Sakai, SIGIR 2006).

A measure is *discriminative* when, on a given topic set and set of runs, it tells many run pairs apart with
confidence. For every pair ``(a, b)`` of runs and every measure, with ``z = x_b - x_a`` the per-topic
differences over ``n`` topics, Sakai's paired bootstrap test draws ``B`` resamples ``w*`` of the centred
differences ``w = z - mean(z)`` (the null hypothesis made true) and counts how often the resampled statistic is
at least as extreme as the observed one::

    t(z) = mean(z) / (sd(z) / sqrt(n)),   ASL = #{ b : |t(w*_b)| >= |t(z)| } / B

The achieved significance level (ASL) of each pair is that share. A measure's discriminative power is the share
of pairs whose ASL is below ``alpha``, and its **ASL curve** is the pairs' ASLs sorted in increasing order: the
lower and longer the curve stays near 0, the more pairs the measure separates. Comparing the curves of several
measures on the same runs and topics (and the same resamples) is how Sakai chose between measures.

The resampling is :func:`stagewise.stats.resampling.bootstrap`, the kernel of ``compare --test bootstrap``:
every pair of a measure at once, ``B`` resamples in seeded blocks, so an ASL is a function of ``(seed, B, the
scores)`` only, and every measure sees the same resamples of the topics. Resampling ``w`` is resampling ``z``
and shifting by its mean, which is how the kernel computes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagewise.errors import InputError, parameter_error
from stagewise.stats import resampling as R

__all__ = ["DiscriminativePower", "MeasurePower", "asl", "discriminative_power", "discriminative_power_scores"]

#: Sakai's B (SIGIR 2006): 1,000 bootstrap resamples.
DEFAULT_RESAMPLES = 1000


def _check(resamples: Any, seed: Any, alpha: Any) -> None:
    owner = "discriminative_power"
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise parameter_error("resamples", owner, "an int >= 1", resamples)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise parameter_error("seed", owner, "an int >= 0", seed)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < float(alpha) < 1.0:
        raise parameter_error("alpha", owner, "a number in (0, 1)", alpha)


def score_matrices(result: Any, metrics: Sequence[str] | None = None) -> tuple[list[str], list[str], dict]:
    """The run names, the topics and ``{metric: (topics, runs) matrix}`` of an evaluation.

    The topics are those every run has (sorted, as the evaluation orders them); with the default ``missing="zero"``
    that is every judged topic. Fewer than two topics in common is an :class:`InputError`.
    """
    metrics = list(result.metric_names if metrics is None else metrics)
    runs = result.runs
    common = np.asarray(runs[0].query_ids) if runs else np.array([], dtype=str)
    for r in runs[1:]:
        common = np.intersect1d(common, np.asarray(r.query_ids))
    if len(common) < 2:
        raise InputError("runs", f"the runs have {len(common)} topic(s) in common", expected="at least 2")
    matrices = {}
    for metric in metrics:
        columns = []
        for r in runs:
            ids = np.asarray(r.query_ids)
            pos = np.searchsorted(ids, common) if np.all(ids[:-1] <= ids[1:]) else None
            if pos is None or not np.array_equal(ids[pos], common):
                order = {q: i for i, q in enumerate(ids.tolist())}
                pos = np.array([order[q] for q in common.tolist()], dtype=np.int64)
            columns.append(np.asarray(r.values[metric], dtype=np.float64)[pos])
        matrices[metric] = np.column_stack(columns)
    return [r.name for r in runs], [str(q) for q in common.tolist()], matrices


def asl(scores: Any, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The achieved significance level of every pair of columns of a ``(topics, runs)`` score matrix.

    Returns ``(a, b, asl)``: the column indices of each pair ``a < b`` (``numpy.triu_indices`` order) and its
    two-sided ASL by the paired bootstrap, ``#{|t(w*)| >= |t(z)|} / B`` with ``z = x_b - x_a``. A pair whose
    differences are all 0 has ASL 1.

    >>> x = [[0.1, 0.5, 0.2], [0.2, 0.6, 0.2], [0.0, 0.4, 0.3], [0.3, 0.8, 0.1], [0.2, 0.5, 0.3]]
    >>> a, b, p = asl(x, resamples=1000, seed=1)
    >>> a.tolist(), b.tolist(), p.tolist()
    ([0, 0, 1], [1, 2, 2], [0.001, 0.439, 0.032])
    """
    from stagewise.stats.anova import as_matrix
    from stagewise.stats.multi import pairs_of

    _check(resamples, seed, 0.05)
    x = as_matrix(scores, "scores")
    a, b = pairs_of(x.shape[1])
    diffs = (x[:, b] - x[:, a]).T
    counts, _ = R.bootstrap(diffs, int(resamples), int(seed), "two-sided")
    return a, b, counts / float(resamples)


@dataclass(frozen=True)
class MeasurePower:
    """One measure's pairs: ``a[i]``, ``b[i]`` (run names), their means, and the pair's ``asl[i]``."""

    metric: str
    a: tuple[str, ...]
    b: tuple[str, ...]
    mean_a: tuple[float, ...]
    mean_b: tuple[float, ...]
    asl: tuple[float, ...]
    alpha: float

    @property
    def pairs(self) -> int:
        """The number of run pairs."""
        return len(self.asl)

    @property
    def significant(self) -> int:
        """How many pairs have ``ASL < alpha``."""
        return sum(p < self.alpha for p in self.asl)

    @property
    def share(self) -> float:
        """The discriminative power: the share of pairs with ``ASL < alpha``."""
        return self.significant / self.pairs if self.pairs else 0.0

    @property
    def curve(self) -> tuple[float, ...]:
        """The ASL curve: every pair's ASL, smallest first."""
        return tuple(sorted(self.asl))

    def curve_at(self, share: float) -> float:
        """The ASL at ``share`` of the pairs along the curve (the pair ranked ``ceil(share * pairs)``)."""
        curve = self.curve
        rank = max(1, int(np.ceil(share * len(curve) - 1e-9)))
        return curve[rank - 1]

    def to_dict(self) -> dict[str, Any]:
        """The measure's summary, its curve and every pair (JSON values)."""
        return {
            "metric": self.metric,
            "pairs": self.pairs,
            "significant": self.significant,
            "discriminative_power": self.share,
            "asl_curve": list(self.curve),
            "pair_asl": [
                {"a": a, "b": b, "mean_a": ma, "mean_b": mb, "diff": mb - ma, "asl": p}
                for a, b, ma, mb, p in zip(self.a, self.b, self.mean_a, self.mean_b, self.asl, strict=True)
            ],
        }


@dataclass(frozen=True)
class DiscriminativePower:
    """The discriminative power of each measure on the same runs, topics and bootstrap resamples.

    ``measures`` in the order asked; ``runs`` and ``topics`` are what was resampled; ``conventions`` the
    evaluation's (when it came from runs); ``notes`` what a reader needs beside the table.
    """

    measures: tuple[MeasurePower, ...]
    runs: tuple[str, ...]
    topics: int
    resamples: int
    seed: int
    alpha: float
    conventions: dict[str, Any] | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()

    @property
    def method(self) -> str:
        """The sentence the outputs state."""
        return (
            f"paired bootstrap test (Sakai, SIGIR 2006): ASL = #{{|t(w*)| >= |t(z)|}} / B over B = "
            f"{self.resamples:,} resamples of the {self.topics} topics, seed {self.seed}, the same resamples for "
            f"every measure; a pair is significant when ASL < {self.alpha:g}"
        )

    def ranking(self) -> list[str]:
        """The measures from the most discriminative to the least (share, then the median ASL, then order)."""
        order = sorted(
            range(len(self.measures)),
            key=lambda i: (-self.measures[i].share, self.measures[i].curve_at(0.5), i),
        )
        return [self.measures[i].metric for i in order]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON contract: method, inputs, each measure (summary, curve, pairs), the ranking."""
        out: dict[str, Any] = {
            "method": self.method,
            "runs": list(self.runs),
            "topics": self.topics,
            "resamples": self.resamples,
            "seed": self.seed,
            "alpha": self.alpha,
            "ranking": self.ranking(),
            "measures": [m.to_dict() for m in self.measures],
            "notes": list(self.notes),
        }
        if self.conventions is not None:
            out["conventions"] = self.conventions
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise power discriminative --format json`` writes)."""
        return json.dumps(self.to_dict(), indent=indent)


def discriminative_power_scores(
    scores: Any,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
    runs: Sequence[str] | None = None,
    progress: Callable[[float, int], None] | None = None,
) -> DiscriminativePower:
    """The discriminative power of each measure of ``scores``: an :class:`~stagewise.EvalResult`, or
    ``{metric: (topics, runs) matrix}`` with the runs named by ``runs`` (default ``run0``, ``run1``...).

    ``progress(done, total)`` hears the pairs tested so far (over all measures); it changes no number.

    >>> x = [[0.1, 0.5, 0.2], [0.2, 0.6, 0.2], [0.0, 0.4, 0.3], [0.3, 0.8, 0.1], [0.2, 0.5, 0.3]]
    >>> d = discriminative_power_scores({"ap": x}, seed=1, runs=["a", "b", "c"])
    >>> m = d.measures[0]
    >>> m.significant, m.pairs, m.curve
    (2, 3, (0.001, 0.032, 0.439))
    """
    _check(resamples, seed, alpha)
    conventions, notes = None, ()
    if isinstance(scores, Mapping):
        matrices = {str(k): np.asarray(v, dtype=np.float64) for k, v in scores.items()}
        if not matrices:
            raise InputError("scores", "no measures were given", expected="{metric: topics x runs matrix}")
        width = next(iter(matrices.values())).shape[-1] if next(iter(matrices.values())).ndim == 2 else 0
        names = list(runs) if runs is not None else [f"run{i}" for i in range(width)]
        topics = next(iter(matrices.values())).shape[0]
    else:
        names, ids, matrices = score_matrices(scores)
        topics, conventions, notes = len(ids), scores.conventions_report(), tuple(scores.notes())
    total = sum(len(names) * (len(names) - 1) // 2 for _ in matrices)
    done = 0.0

    def hook(amount: float) -> None:
        if progress is not None:
            progress(done + amount, total)

    measures = []
    for metric, x in matrices.items():
        if x.ndim != 2 or x.shape != (topics, len(names)):
            raise InputError("scores", f"{metric}: a matrix of shape {x.shape}", expected=f"({topics}, {len(names)})")
        with R.reporting(hook):
            a, b, p = asl(x, resamples, seed)
        done += len(p)
        means = x.mean(axis=0)
        measures.append(
            MeasurePower(
                metric,
                tuple(names[i] for i in a),
                tuple(names[j] for j in b),
                tuple(float(means[i]) for i in a),
                tuple(float(means[j]) for j in b),
                tuple(float(v) for v in p),
                float(alpha),
            )
        )
    return DiscriminativePower(
        tuple(measures), tuple(names), topics, int(resamples), int(seed), float(alpha), conventions, notes
    )


def discriminative_power(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
    conventions: Any = None,
    engine: Any = None,
    duplicates: str = "error",
    progress: Callable[[float, int], None] | None = None,
    **overrides: Any,
) -> DiscriminativePower:
    """Evaluate ``runs`` on ``metrics`` and give each measure's discriminative power (module docstring).

    Parameters
    ----------
    qrels, runs, metrics, conventions, engine, duplicates, **overrides
        As :func:`stagewise.evaluate` (at least two runs; files are read after every cheap argument is
        checked). The topics are those every run has (all judged topics with the default ``missing="zero"``).
    resamples : int, default=1000
        Bootstrap resamples ``B`` (Sakai used 1,000).
    seed : int, default=0
        Seed of the resamples: the same seed, the same ASLs, on any machine and with any threads.
    alpha : float, default=0.05
        A pair is significant when its ASL is below it.
    progress : callable, optional
        ``progress(done, total)`` in pairs over all measures, after each chunk of resamples.

    Returns
    -------
    DiscriminativePower
        Per measure the pairs' ASLs, the share significant and the ASL curve; ``ranking()``;
        :func:`stagewise.report.render` writes it as a table, JSON or CSV.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
    >>> runs = {"x": {"q1": {"a": 2, "z": 1}, "q2": {"z": 2, "b": 1}, "q3": {"c": 1}, "q4": {"z": 1}},
    ...         "y": {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"z": 2, "c": 1}, "q4": {"d": 1}}}
    >>> d = discriminative_power(qrels, runs, ["mrr", "P@1"], resamples=200)
    >>> [(m.metric, m.pairs, m.asl) for m in d.measures]
    [('mrr', 1, (0.485,)), ('P@1', 1, (0.625,))]
    """
    from stagewise.engines import evaluate

    _check(resamples, seed, alpha)
    if isinstance(runs, list | tuple) and len(runs) < 2:
        raise InputError("runs", f"{len(runs)} run(s) were given", expected="at least two runs")
    result = evaluate(
        qrels,
        runs,
        [metrics] if isinstance(metrics, str) else list(metrics),
        conventions=conventions,
        engine=engine or "local",
        duplicates=duplicates,
        **overrides,
    )
    if len(result.runs) < 2:
        raise InputError("runs", f"{len(result.runs)} run(s) were given", expected="at least two runs")
    return discriminative_power_scores(result, resamples=resamples, seed=seed, alpha=alpha, progress=progress)
