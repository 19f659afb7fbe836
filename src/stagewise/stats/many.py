"""Many systems at once: the front door of the ANOVA, randomised Tukey HSD and MaxT tests, and standardisation.

:func:`stagewise.compare` (``test="anova"``, ``"tukey-hsd"`` or ``"maxt"``: the entries of
:data:`stagewise.stats.TESTS` whose ``kind`` is ``"many"``) comes here after its checks. Each metric's per-query
scores become one ``(topics, runs)`` matrix over the queries every run has, and on it:

- the two-way ANOVA table without replication (topic x system; :func:`stagewise.stats.anova.two_way_anova`),
- every pair's family-wise p-value from the test (its kernel below, on the whole matrix at once),
- each run's mean with its interval ``mean +- t(phi_E; (1 - level)/2) sqrt(V_E / n)`` from the ANOVA
  residual variance ``V_E`` (Sakai's book, 4.4), and the effect sizes ``ES_E2 = (mean_j - mean_k) / sqrt(V_E)``,
- the compact letter display of the test's decisions at ``alpha`` (Piepho 2004): two runs share a letter
  exactly when their pair is not significant.

The result is a :class:`~stagewise.stats.result.Comparison` like any other (pairs, means, conventions), with
``many[metric]`` a :class:`ManySystems` holding the rest. The tests control the family-wise error rate over all
``m (m - 1) / 2`` pairs of a metric themselves, so no correction is applied on top (the output says so).

>>> from stagewise.stats import compare_scores
>>> scores = {"a": {"ap": [0.2, 0.1, 0.4, 0.3, 0.2]}, "b": {"ap": [0.3, 0.3, 0.6, 0.3, 0.4]},
...           "c": {"ap": [0.5, 0.2, 0.7, 0.5, 0.4]}}
>>> comp = compare_scores(scores, test="tukey-hsd", resamples=2000, seed=1)
>>> many = comp.many["ap"]
>>> [round(r.ss, 4) for r in many.anova.rows], many.letters
([0.124, 0.2093, 0.0427], ('b', 'ab', 'a'))
>>> [(p.a, p.b, round(p.p_value, 3)) for p in comp.pairs]
[('a', 'b', 0.254), ('a', 'c', 0.018), ('b', 'c', 0.654)]

Standardisation (``standardise="zscore" | "std-cdf" | "std-ab"``, the registry
:data:`stagewise.stats.catalogue.STANDARDISATIONS`) rescales each topic by a reference set of runs before any
test, paired or not (Webber, Moffat and Zobel, SIGIR 2008; Sakai's std-AB, ICTIR 2016); see
:func:`standardise_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise.errors import ConventionError, StagewiseError
from stagewise.stats import anova as A
from stagewise.stats import multi as M
from stagewise.stats import standardise as S

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.stats.catalogue import PairedTest
    from stagewise.stats.compare import CompareOptions, ScoreTable
    from stagewise.stats.paired import TestOptions
    from stagewise.stats.result import Comparison

__all__ = ["ManySystems", "common_matrix", "compare_many", "many_systems", "standardise_table"]

#: What ``correction`` reads in the output of a many-system test: its p-values are family-wise already.
OWN_CORRECTION = "the test's own (family-wise)"


# ------------------------------------------------------------------------------------------------ kernels
def anova_kernel(x: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    """Tukey's HSD from the two-way ANOVA: ``q = (mean_k - mean_j) / sqrt(V_E / n)``, p from the studentized
    range distribution with ``m`` means and ``phi_E`` degrees of freedom (``scipy.stats.studentized_range``)."""
    from scipy import stats

    table = A.two_way_anova(x)
    a, b = M.pairs_of(x.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (table.means[b] - table.means[a]) / np.sqrt(table.residual_variance / table.n_topics)
    q = np.where(table.means[b] == table.means[a], 0.0, q)
    p = np.asarray(stats.studentized_range.sf(np.abs(q), x.shape[1], table.residual_df), dtype=np.float64)
    p = np.where(np.isinf(q), 0.0, np.where(q == 0, 1.0, p))
    return q, p, "studentized range distribution"


def tukey_kernel(x: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    """The randomised Tukey HSD (:func:`stagewise.stats.multi.tukey_hsd`); the statistic is the mean difference."""
    r = M.tukey_hsd(x, permutations=opts.resamples, seed=opts.seed)
    return r.statistic, r.p_values, f"{r.permutations} seeded within-topic shuffles"


def maxt_kernel(x: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    """Single-step Westfall-Young MaxT (:func:`stagewise.stats.multi.maxt`); the statistic is the paired t."""
    r = M.maxt(x, permutations=opts.resamples, seed=opts.seed)
    a, b = M.pairs_of(x.shape[1])
    d = x[:, b] - x[:, a]
    n = x.shape[0]
    t = M._t_from_sums(d.sum(axis=0), (d**2).sum(axis=0), n)
    return t, r.p_values, f"{r.permutations} seeded sign flips"


def describe_anova(o: TestOptions) -> str:
    return (
        "two-way ANOVA without replication (topic x system) over all runs; each pair by Tukey's HSD: "
        "q = (mean(b) - mean(a)) / sqrt(V_E / n), p from the studentized range (m runs, phi_E df); statistic: q"
    )


def describe_tukey(o: TestOptions) -> str:
    return (
        f"randomised Tukey HSD (Carterette 2012): {o.resamples} seeded within-topic shuffles of all runs' scores, "
        f"seed {o.seed}; p = share of shuffles whose range of run means >= |mean(b) - mean(a)|; statistic: "
        "mean(b) - mean(a)"
    )


def describe_maxt(o: TestOptions) -> str:
    return (
        f"Westfall-Young MaxT, single-step (Boytsov et al. 2013): {o.resamples} seeded sign flips of every pair's "
        f"differences at once, seed {o.seed}; p = share of flips whose max |t| over all pairs >= |t|; "
        "statistic: paired t"
    )


# ------------------------------------------------------------------------------------------ standardisation
def zscore(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``(x - mean_i) / sd_i`` per topic, ``mean_i`` and ``sd_i`` (n - 1) over the reference runs' columns."""
    return S.z_scores(x, S.reference(reference))


def std_cdf(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Webber et al.'s ``Phi(z)``."""
    return S.std_cdf(x, S.reference(reference))


def std_ab(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Sakai's std-AB, ``0.5 + 0.15 z`` clipped to [0, 1]."""
    return S.std_ab(x, S.reference(reference))


def common_matrix(table: ScoreTable, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The queries every run has (sorted) and the ``(queries, runs)`` matrix of ``metric`` on them."""
    common = table.query_ids[0]
    for ids in table.query_ids[1:]:
        if len(ids) != len(common) or not np.array_equal(ids, common):
            common = np.intersect1d(common, ids, assume_unique=True)
    cols = []
    for ids, values in zip(table.query_ids, table.values, strict=True):
        pos = np.arange(len(ids)) if len(ids) == len(common) else np.searchsorted(ids, common)
        cols.append(values[metric][pos])
    return common, np.column_stack(cols) if cols else np.empty((0, 0))


def _reference_columns(names: Sequence[str], reference: Sequence[str] | None) -> list[int]:
    if reference is None:
        return list(range(len(names)))
    wanted = [reference] if isinstance(reference, str) else list(reference)
    unknown = [r for r in wanted if r not in names]
    if unknown:
        raise ConventionError(
            f"reference run(s) {', '.join(map(repr, unknown))} are not among the runs compared: {', '.join(names)}"
        )
    if len(set(wanted)) < 2:
        raise ConventionError(f"standardisation needs at least 2 reference runs; got {len(set(wanted))}")
    return [names.index(r) for r in dict.fromkeys(wanted)]


def standardise_table(table: ScoreTable, how: str, reference: Sequence[str] | None = None) -> ScoreTable:
    """``table`` with every metric's scores standardised per topic (the registry entry ``how``), over the queries
    every run has; ``reference`` names the runs whose per-topic mean and sd are used (default: all of them).
    The means become the standardised means; ``eval_notes`` say what was done.

    >>> from stagewise.stats.compare import _as_table
    >>> t = standardise_table(_as_table({"a": {"ap": [0.2, 0.1]}, "b": {"ap": [0.4, 0.5]}}, None), "std-ab")
    >>> [round(float(v), 4) for v in t.values[0]["ap"]], round(t.means["b"]["ap"], 4)
    ([0.3939, 0.3939], 0.6061)
    """
    from dataclasses import replace

    from stagewise.stats.catalogue import STANDARDISATIONS

    entry = STANDARDISATIONS.lookup(how)
    if entry.apply is None:
        return table
    cols = _reference_columns(table.names, reference)
    values: list[dict[str, np.ndarray]] = [{} for _ in table.names]
    common = np.array([], dtype=str)
    for metric in table.metrics:
        common, x = common_matrix(table, metric)
        if len(common) < 1:
            raise StagewiseError("standardisation needs queries that every run has; the runs share none")
        z = entry(x, x[:, cols])
        for j in range(len(table.names)):
            values[j][metric] = np.asarray(z[:, j], dtype=np.float64)
    means = {n: {m: float(values[j][m].mean()) for m in table.metrics} for j, n in enumerate(table.names)}
    ref_names = [table.names[c] for c in cols]
    note = (
        f"scores standardised per topic: {entry.description}; reference runs: {', '.join(ref_names)} "
        f"({len(common)} queries every run has)"
    )
    return replace(
        table,
        query_ids=[common] * len(table.names),
        values=values,
        means=means,
        eval_notes=(*table.eval_notes, note),
        non_mean_metrics=(),
    )


# ---------------------------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class ManySystems:
    """What a many-system test adds for one metric: the ANOVA table, each run's interval and letters, ES_E2.

    ``means``, ``lower``, ``upper`` and ``letters`` follow ``runs``; ``effect_sizes[j, k]`` is
    ``(mean_j - mean_k) / sqrt(V_E)``; ``p_values[j, k]`` the test's family-wise p of the pair (1 on the
    diagonal). ``n_topics`` are the queries every run has (the matrix the test ran on). ``better`` is
    ``"lower"`` for a measure where lower is better: its letters then start (``a``) at the lowest mean.
    """

    def best_first(self) -> list[int]:
        """The runs' indices, best mean first (the highest, or the lowest where lower is better)."""
        sign = -1.0 if self.better == "lower" else 1.0
        return sorted(range(len(self.runs)), key=lambda j: -sign * float(self.means[j]))

    metric: str
    runs: tuple[str, ...]
    test: str
    anova: A.Anova
    means: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    margin: float
    confidence: float
    letters: tuple[str, ...]
    effect_sizes: np.ndarray
    p_values: np.ndarray
    alpha: float
    n_topics: int
    better: str = "higher"

    @property
    def residual_variance(self) -> float:
        """``V_E``, the ANOVA's residual mean square."""
        return self.anova.residual_variance

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every number, non-finite ones as None."""

        def f(v: float) -> float | None:
            v = float(v)
            return v if np.isfinite(v) else None

        return {
            "metric": self.metric,
            "test": self.test,
            "n_topics": self.n_topics,
            "anova": [
                {"source": r.source, "ss": f(r.ss), "df": r.df, "ms": f(r.ms), "f": f(r.f), "p": f(r.p)}
                for r in self.anova.rows
            ],
            "residual_variance": f(self.residual_variance),
            "residual_df": self.anova.residual_df,
            "interval_level": self.confidence,
            "interval_margin": f(self.margin),
            "alpha": self.alpha,
            "systems": [
                {"run": run, "mean": f(m), "ci_low": f(lo), "ci_high": f(hi), "letters": let}
                for run, m, lo, hi, let in zip(self.runs, self.means, self.lower, self.upper, self.letters, strict=True)
            ],
            "effect_sizes_e2": {
                a: {b: f(self.effect_sizes[i, j]) for j, b in enumerate(self.runs) if j != i}
                for i, a in enumerate(self.runs)
            },
        }


def many_systems(
    scores: Any,
    runs: Sequence[str] | None = None,
    *,
    metric: str = "score",
    test: str = "tukey-hsd",
    resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    confidence: float = 0.95,
    better: str = "higher",
) -> tuple[ManySystems, np.ndarray, np.ndarray, str]:
    """A many-system test on a ``(topics, runs)`` matrix: the :class:`ManySystems` and each pair's statistic,
    family-wise p-value and method (pairs ``j < k`` in ``numpy.triu_indices`` order). ``better="lower"`` letters
    the runs from the lowest mean (a measure where lower is better).

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5], [0.2, 0.4, 0.4]]
    >>> many, stat, p, _ = many_systems(x, ["a", "b", "c"], test="anova")
    >>> many.letters, [round(float(v), 4) for v in p]
    (('b', 'a', 'a'), [0.0388, 0.0036, 0.2521])
    """
    from stagewise.stats.catalogue import TESTS
    from stagewise.stats.paired import TestOptions, check_options

    entry = TESTS.lookup(test)
    if entry.kind != "many":
        raise ConventionError(f"{entry.name!r} is a paired test; the tests of many runs at once are {_many_names()}")
    x = A.as_matrix(scores)
    names = tuple(runs) if runs is not None else tuple(f"run{j}" for j in range(x.shape[1]))
    opts = check_options(TestOptions(resamples=resamples, seed=seed))
    stat, p, method = entry.kernel()(x, opts)
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    table = A.two_way_anova(x)
    ci = A.system_intervals(x, confidence)
    m = x.shape[1]
    a, b = M.pairs_of(m)
    pm = np.ones((m, m))
    pm[a, b] = pm[b, a] = p
    many = ManySystems(
        metric=metric,
        runs=names,
        test=entry.name,
        anova=table,
        means=table.means,
        lower=ci.lower,
        upper=ci.upper,
        margin=ci.margin,
        confidence=ci.confidence,
        letters=tuple(M.letters(-table.means if better == "lower" else table.means, pm < alpha)),
        effect_sizes=A.effect_sizes(x),
        p_values=pm,
        alpha=float(alpha),
        n_topics=x.shape[0],
        better="lower" if better == "lower" else "higher",
    )
    return many, np.asarray(stat, dtype=np.float64), p, method


def _many_names() -> str:
    from stagewise.stats.catalogue import TESTS

    return ", ".join(n for n in TESTS.names() if TESTS[n].kind == "many")


# ----------------------------------------------------------------------------------------------- compare
def check_many(opts: CompareOptions, paired_test: PairedTest) -> None:
    """The options a many-system test cannot honour, refused before any file is read."""
    name = paired_test.name
    if opts.baseline is not None:
        raise ConventionError(f"test {name!r} compares every pair of runs at once; give no baseline")
    if opts.alternative != "two-sided":
        raise ConventionError(f"test {name!r} is two-sided; alternative {opts.alternative!r} is not available")
    if opts.family != "metric":
        raise ConventionError(f"test {name!r} controls the error rate over each metric's pairs; family must be metric")


def compare_many(
    table: ScoreTable,
    opts: CompareOptions,
    paired_test: PairedTest,
    test_opts: TestOptions,
    progress: Callable[[float, int], None] | None = None,
) -> Comparison:
    """Every metric of ``table`` tested by the many-system ``paired_test`` (see the module docstring)."""
    from stagewise.stats.compare import _bootstrap_ci, _effects
    from stagewise.stats.result import Comparison, PairResult, _direction

    check_many(opts, paired_test)
    names = table.names
    pairs_out: list[PairResult] = []
    many: dict[str, ManySystems] = {}
    methods: set[str] = set()
    n_common = 0
    for done, metric in enumerate(table.metrics):
        common, x = common_matrix(table, metric)
        if len(common) < 2:
            raise StagewiseError(f"the runs share {len(common)} scored queries; test {paired_test.name!r} needs 2")
        n_common = len(common)
        result, stat, p, method = many_systems(
            x, names, metric=metric, test=paired_test.name, resamples=test_opts.resamples, seed=test_opts.seed,
            alpha=opts.alpha, confidence=opts.ci_level, better=_direction(metric) or "higher",
        )  # fmt: skip
        many[metric] = result
        methods.add(method)
        a, b = M.pairs_of(len(names))
        diffs = x[:, b].T - x[:, a].T
        eff = _effects(diffs, test_opts.tie_tolerance, opts.ci_level)
        if opts.ci == "bootstrap":
            eff["ci_low"], eff["ci_high"] = _bootstrap_ci(diffs, opts.resamples, opts.seed, opts.ci_level)
        for k, (i, j) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
            wins, losses = int(eff["wins"][k]), int(eff["losses"][k])
            pairs_out.append(
                PairResult(
                    metric=metric, a=names[i], b=names[j], test=paired_test.name, statistic=float(stat[k]),
                    p_value=float(p[k]), p_adjusted=float(p[k]), correction=OWN_CORRECTION,
                    mean_diff=float(eff["mean"][k]), ci_low=float(eff["ci_low"][k]), ci_high=float(eff["ci_high"][k]),
                    effect_size=float(eff["dz"][k]), wins=wins, ties=n_common - wins - losses, losses=losses,
                    n_queries=n_common, significant=bool(p[k] < opts.alpha),
                )
            )  # fmt: skip
        if progress is not None:
            progress(done + 1, len(table.metrics))
    return Comparison(
        runs=names,
        metrics=table.metrics,
        means=table.means,
        pairs=pairs_out,
        conventions=_conventions(table, opts, paired_test, test_opts, sorted(methods), n_common),
        alpha=opts.alpha,
        baseline=None,
        scores=table,
        eval_notes=list(table.eval_notes),
        many=many,
    )


def _conventions(
    table: ScoreTable,
    opts: CompareOptions,
    paired_test: PairedTest,
    test_opts: TestOptions,
    methods: list[str],
    n_common: int,
) -> dict[str, Any]:
    """Every convention of a many-system comparison, in the keys of the paired one plus its own."""
    m = len(table.names)
    aligned = all(len(ids) == n_common for ids in table.query_ids)
    uses_b = paired_test.resampling or opts.ci == "bootstrap"
    level = opts.ci_level
    conventions: dict[str, Any] = {
        "test": paired_test.name,
        "test_description": paired_test.statement(test_opts),
        "test_method": methods,
        "alternative": "two-sided",
        "family": "all pairs of runs",
        "family_scope": "the pairs of one metric",
        "family_size": m * (m - 1) // 2,
        "correction": OWN_CORRECTION,
        "correction_description": "none on top: the test's p-values control the family-wise error rate over all "
        "pairs of runs of a metric",
        "alpha": opts.alpha,
        "significant_when": "p_adjusted < alpha",
        "permutations": opts.resamples if uses_b else None,
        "seed": opts.seed if (paired_test.seeded or opts.ci == "bootstrap") else None,
        "tie_tolerance": test_opts.tie_tolerance,
        "wins_ties_losses": "win: b - a > tol, loss: b - a < -tol, tie otherwise (per query)",
        "mean_diff": "mean over the paired queries of b - a",
        "confidence_interval": (
            f"{level:.0%} Student t interval of the mean difference (n - 1 degrees of freedom)"
            if opts.ci == "t"
            else f"{level:.0%} percentile bootstrap interval of the mean difference "
            f"({opts.resamples} seeded resamples, seed {opts.seed}, numpy's linear quantiles)"
        ),
        "effect_size": "paired Cohen's d_z = mean(b - a) / sd(b - a), sd with n - 1",
        "n_queries": n_common,
        "pairing": "every run has the same queries" if aligned else "the queries every run has",
        "anova": "two-way ANOVA without replication (topic x system): SS, df, MS, F, p per source",
        "system_interval": f"{level:.0%} interval of each run's mean: mean +- t(phi_E; {(1 - level) / 2:g}) "
        "sqrt(V_E / n), V_E the ANOVA residual variance (one margin for every run)",
        "effect_size_e2": "ES_E2[x][y] = (mean(x) - mean(y)) / sqrt(V_E)",
        "letters": f"compact letter display (Piepho 2004): runs sharing a letter do not differ at alpha {opts.alpha:g}"
        "; a is the group of the best mean (the lowest where lower is better)",
    }
    if opts.standardise != "none":
        from stagewise.stats.catalogue import STANDARDISATIONS

        conventions["standardise"] = STANDARDISATIONS.lookup(opts.standardise).description
        conventions["standardise_reference"] = list(opts.reference or table.names)
    if table.eval_conventions is not None:
        conventions["evaluation"] = table.eval_conventions
    return conventions
