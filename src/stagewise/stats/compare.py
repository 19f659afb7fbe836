"""``compare(qrels, runs, metrics)``: paired tests between runs, corrected per family, with effect sizes.

The work is done on the per-query scores of the metrics engine. Every pair of runs (or every run against a
baseline) and every metric becomes one row of a matrix of paired differences, and each test runs on all
rows at once; the multiple-comparison correction is then applied per family (by default, the pairs of one
metric).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import InitVar, dataclass, fields, replace
from typing import Any

import numpy as np

from stagewise.errors import ConventionError, StagewiseError, parameter_error
from stagewise.metrics.defaults import DEFAULT_METRICS
from stagewise.stats import corrections as C
from stagewise.stats import resampling as R
from stagewise.stats.catalogue import CI_METHODS, CORRECTIONS, FAMILY_SCOPES, STANDARDISATIONS, PairedTest
from stagewise.stats.paired import TestOptions, check_options, deprecated_permutations, get_test, run_batched
from stagewise.stats.result import Comparison, PairResult


@dataclass
class ScoreTable:
    """Per-query scores of several runs: ``values[r][metric]`` is aligned with ``query_ids[r]`` (sorted)."""

    names: list[str]
    metrics: list[str]
    query_ids: list[np.ndarray]
    values: list[dict[str, np.ndarray]]
    means: dict[str, dict[str, float]]
    eval_conventions: dict[str, Any] | None = None
    eval_notes: tuple[str, ...] = ()
    non_mean_metrics: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------------- inputs
def _from_eval(result) -> ScoreTable:
    metrics = result.metric_names
    non_mean = tuple(name for name, m in result.measures if m.spec.aggregate != "mean")
    return ScoreTable(
        names=[r.name for r in result.runs],
        metrics=metrics,
        query_ids=[np.asarray(r.query_ids) for r in result.runs],
        values=[{m: np.asarray(r.values[m], dtype=np.float64) for m in metrics} for r in result.runs],
        means=result.means,
        eval_conventions=result.conventions_report(),
        eval_notes=tuple(result.notes()),
        non_mean_metrics=non_mean,
    )


def _from_mapping(scores: Mapping[str, Mapping[str, Any]], metrics: Sequence[str] | None) -> ScoreTable:
    names = [str(k) for k in scores]
    if not names:
        raise StagewiseError("compare needs at least two runs; got none")
    first = scores[next(iter(scores))]
    metrics = list(first) if metrics is None else list(metrics)
    query_ids, values = [], []
    for name, per_metric in scores.items():
        ids: np.ndarray | None = None
        vals: dict[str, np.ndarray] = {}
        for metric in metrics:
            if metric not in per_metric:
                raise StagewiseError(f"run {name!r} has no scores for metric {metric!r}")
            raw = per_metric[metric]
            if isinstance(raw, Mapping):
                keys = np.array([str(q) for q in raw], dtype=object).astype(str)
                v = np.fromiter((float(x) for x in raw.values()), dtype=np.float64, count=len(raw))
                order = np.argsort(keys, kind="stable")
                keys, v = keys[order], v[order]
            else:
                v = np.asarray(raw, dtype=np.float64).ravel()
                keys = np.arange(len(v)).astype(str)
                order = np.argsort(keys, kind="stable")
                keys, v = keys[order], v[order]
            if ids is None:
                ids = keys
            elif not np.array_equal(ids, keys):
                raise StagewiseError(f"run {name!r}: metric {metric!r} covers other queries than {metrics[0]!r}")
            if not np.all(np.isfinite(v)):
                raise StagewiseError(f"run {name!r}, metric {metric!r}: scores must be finite numbers")
            vals[metric] = v
        query_ids.append(ids if ids is not None else np.array([], dtype=str))
        values.append(vals)
    means = {
        n: {m: float(v[m].mean()) if len(v[m]) else 0.0 for m in metrics} for n, v in zip(names, values, strict=True)
    }
    return ScoreTable(names, metrics, query_ids, values, means)


def _as_table(scores: Any, metrics: Sequence[str] | None) -> ScoreTable:
    result_module = sys.modules.get("stagewise.metrics.result")  # not imported: scores cannot be an EvalResult
    if result_module is not None and isinstance(scores, result_module.EvalResult):
        table = _from_eval(scores)
        if metrics is not None:
            unknown = [m for m in metrics if m not in table.metrics]
            if unknown:
                raise StagewiseError(f"metric(s) {', '.join(unknown)} were not evaluated; have {table.metrics}")
            table.metrics = list(metrics)
        return table
    if isinstance(scores, ScoreTable):
        return scores
    if isinstance(scores, Mapping):
        return _from_mapping(scores, metrics)
    raise StagewiseError(
        f"compare_scores takes an EvalResult or {{run: {{metric: {{query: value}}}}}}; got {type(scores).__name__}"
    )


# ------------------------------------------------------------------------------------------------ helpers
def _resolve_baseline(names: list[str], baseline: str | int | None, given: Sequence[str] | None) -> int | None:
    if baseline is None:
        return None
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        if not 0 <= baseline < len(names):
            raise parameter_error("baseline", "compare", f"a run index in 0..{len(names) - 1}", baseline)
        return baseline
    if baseline in names:
        return names.index(baseline)
    if given is not None and baseline in given:
        return list(given).index(baseline)
    raise StagewiseError(f"baseline {baseline!r} is not one of the runs: {', '.join(names)}")


def _pairs(count: int, baseline: int | None) -> list[tuple[int, int]]:
    if baseline is None:
        return [(i, j) for i in range(count) for j in range(i + 1, count)]
    return [(baseline, j) for j in range(count) if j != baseline]


def _paired(table: ScoreTable, i: int, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query ids both runs have, and the positions of those queries in run i and run j."""
    qi, qj = table.query_ids[i], table.query_ids[j]
    if len(qi) == len(qj) and np.array_equal(qi, qj):
        pos = np.arange(len(qi))
        return qi, pos, pos
    common, pi, pj = np.intersect1d(qi, qj, assume_unique=True, return_indices=True)
    return common, pi, pj


def _effects(diffs: np.ndarray, tol: float, level: float) -> dict[str, np.ndarray]:
    from scipy.special import stdtrit  # the t quantile scipy.stats.t.ppf uses, without importing scipy.stats

    n = diffs.shape[1]
    mean = diffs.mean(axis=1)
    sd = diffs.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(sd > 0, mean / sd, np.copysign(np.inf, mean))
    dz = np.where((sd == 0) & (mean == 0), 0.0, dz)
    half = stdtrit(n - 1, 0.5 + level / 2.0) * sd / np.sqrt(n)
    return {
        "mean": mean,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "dz": dz,
        "wins": (diffs > tol).sum(axis=1),
        "losses": (diffs < -tol).sum(axis=1),
    }


def _bootstrap_ci(diffs: np.ndarray, resamples: int, seed: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the mean difference from the same seeded resamples as the bootstrap test."""
    low = np.empty(diffs.shape[0])
    high = np.empty(diffs.shape[0])
    rows = max(1, (64 * 2**20) // (8 * resamples))  # bound the kept resample means to 64 MB
    for r0 in range(0, diffs.shape[0], rows):
        _, means = R.bootstrap(diffs[r0 : r0 + rows], resamples, seed, keep_means=True)
        q = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
        low[r0 : r0 + rows], high[r0 : r0 + rows] = q[0], q[1]
    return low, high


# ----------------------------------------------------------------------------------------------- options
@dataclass(frozen=True)
class CompareOptions:
    """How runs are compared: the test, the pairs, the correction and the intervals (see :func:`compare` for
    each field's meaning). :func:`compare` and :func:`compare_scores` take one (``options=``) or its fields as
    keywords, which override the ones it holds; ``dataclasses.replace`` makes a variant.

    ``permutations`` is the old name of ``resamples`` (deprecated: one word for the sign flips of the
    randomization test and the resamples of the bootstrap). ``standardise`` names a per-topic standardisation
    of :data:`~stagewise.stats.catalogue.STANDARDISATIONS` (``none``, ``zscore``, ``std-cdf``, ``std-ab``) and
    ``reference`` the runs whose per-topic mean and sd it uses (default: every run compared).

    >>> CompareOptions(test="bootstrap", resamples=2000).resamples
    2000
    """

    test: str = "t"
    baseline: str | int | None = None
    correction: str = "holm"
    alpha: float = 0.05
    alternative: str = "two-sided"
    resamples: int = 10_000
    seed: int = 0
    exact: bool | None = None
    tie_tolerance: float = 1e-9
    ci: str = "t"
    ci_level: float = 0.95
    family: str = "metric"
    standardise: str = "none"
    reference: tuple[str, ...] | None = None
    permutations: InitVar[int | None] = None

    def __post_init__(self, permutations: int | None) -> None:
        if permutations is not None:
            object.__setattr__(self, "resamples", deprecated_permutations(permutations, "CompareOptions", 4))
        if isinstance(self.reference, str):
            object.__setattr__(self, "reference", (self.reference,))
        elif self.reference is not None:
            object.__setattr__(self, "reference", tuple(str(r) for r in self.reference))


OPTION_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CompareOptions))


def split_options(
    options: CompareOptions | None,
    conventions: Any,
    overrides: dict[str, Any],
    where: str,
    *,
    with_conventions: bool = True,
) -> tuple[CompareOptions, Any]:
    """The options and the conventions a call works under: ``overrides`` (keywords) split between the fields of
    :class:`CompareOptions` and of :class:`~stagewise.metrics.context.Conventions` and applied over
    ``options`` and ``conventions``. An unknown keyword is a :class:`~stagewise.errors.ConventionError` listing
    both (only the options when ``with_conventions`` is False: scores already computed have their conventions)."""
    from stagewise.metrics.context import CONVENTION_FIELDS, conventions_from, split_conventions

    overrides = dict(overrides)
    if "permutations" in overrides:
        overrides["resamples"] = deprecated_permutations(overrides.pop("permutations"), where, 4)
    convention_keys, rest = split_conventions(overrides) if with_conventions else ({}, overrides)
    unknown = sorted(set(rest) - set(OPTION_FIELDS))
    if unknown:
        known = f"the options are {', '.join(OPTION_FIELDS)}"
        if with_conventions:
            known += f"; the conventions are {', '.join(CONVENTION_FIELDS)}"
        raise ConventionError(f"{where}() got unknown keyword(s) {', '.join(map(repr, unknown))}; {known}")
    base = CompareOptions() if options is None else options
    if not isinstance(base, CompareOptions):
        raise ConventionError(f"options must be a CompareOptions value, not {type(base).__name__}")
    opts = replace(base, **rest) if rest else base
    return opts, conventions_from(conventions, **convention_keys) if with_conventions else None


def _resolve(opts: CompareOptions) -> tuple[PairedTest, CompareOptions, TestOptions]:
    """The test, the options with the correction's canonical name, and the tests' own options; every value
    checked (in the order the errors have always come)."""
    paired_test = get_test(opts.test)
    opts = replace(opts, correction=C.canonical(opts.correction))
    test_opts = check_options(
        TestOptions(
            alternative=opts.alternative,
            resamples=opts.resamples,
            seed=opts.seed,
            exact=opts.exact,
            tie_tolerance=opts.tie_tolerance,
        )
    )
    if not (isinstance(opts.alpha, int | float) and 0 < opts.alpha < 1):
        raise parameter_error("alpha", "compare", "a float in (0, 1)", opts.alpha)
    if not (isinstance(opts.ci_level, int | float) and 0 < opts.ci_level < 1):
        raise parameter_error("ci_level", "compare", "a float in (0, 1)", opts.ci_level)
    if opts.ci not in CI_METHODS:
        raise parameter_error("ci", "compare", f"one of {', '.join(CI_METHODS)}", opts.ci)
    if opts.family not in FAMILY_SCOPES:
        raise parameter_error("family", "compare", f"one of {', '.join(FAMILY_SCOPES)}", opts.family)
    opts = replace(opts, standardise=STANDARDISATIONS.lookup(str(opts.standardise)).name)
    if paired_test.kind == "many":
        from stagewise.stats.many import check_many

        check_many(opts, paired_test)
    return paired_test, opts, test_opts


# ----------------------------------------------------------------------------------------------- testing
Row = tuple[str, int, int]  # (metric, run i, run j)
Pairing = dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class _RowStats:
    """Each row's test statistic, p-value, effect sizes and counts, filled batch by batch."""

    stat: np.ndarray
    p: np.ndarray
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    dz: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    nq: np.ndarray
    methods: set[str]

    @classmethod
    def empty(cls, total: int) -> _RowStats:
        floats = [np.empty(total) for _ in range(6)]
        ints = [np.empty(total, np.int64) for _ in range(3)]
        return cls(*floats, *ints, methods=set())


def _pairing(table: ScoreTable, pairs: list[tuple[int, int]]) -> Pairing:
    pairing = {(i, j): _paired(table, i, j) for i, j in pairs}
    for (i, j), (common, _, _) in pairing.items():
        if len(common) < 2:
            raise StagewiseError(
                f"runs {table.names[i]!r} and {table.names[j]!r} share {len(common)} scored quer"
                f"{'y' if len(common) == 1 else 'ies'}; a paired test needs at least 2"
            )
    return pairing


def _test_rows(
    table: ScoreTable,
    rows: list[Row],
    pairing: Pairing,
    paired_test: PairedTest,
    test_opts: TestOptions,
    opts: CompareOptions,
    progress: Callable[[float, int], None] | None,
) -> _RowStats:
    """Every row tested, rows sharing a query set in one batch."""
    keys = {pq: "\x00".join(common.tolist()) for pq, (common, _, _) in pairing.items()}
    groups: dict[str, list[int]] = {}
    for k, (_, i, j) in enumerate(rows):
        groups.setdefault(keys[(i, j)], []).append(k)

    out = _RowStats.empty(len(rows))
    # Progress in comparisons tested (twice over with bootstrap intervals); the resampling kernels report
    # each chunk, and each batch's end sets the exact count (the tests without resampling report nothing).
    work = len(rows) * (2 if opts.ci == "bootstrap" else 1)
    done = 0.0

    def advance(amount: float) -> None:
        nonlocal done
        done = min(done + amount, work)
        if progress is not None:
            progress(done, work)

    for members in groups.values():
        a = np.stack([table.values[rows[k][1]][rows[k][0]][pairing[rows[k][1:]][1]] for k in members])
        b = np.stack([table.values[rows[k][2]][rows[k][0]][pairing[rows[k][1:]][2]] for k in members])
        start = done
        with R.reporting(advance if progress is not None else None):
            s, pv, method = run_batched(paired_test, a, b, test_opts)
            advance(start + len(members) - done)
            out.methods.add(method)
            eff = _effects(b - a, test_opts.tie_tolerance, opts.ci_level)
            if opts.ci == "bootstrap":
                eff["ci_low"], eff["ci_high"] = _bootstrap_ci(b - a, opts.resamples, opts.seed, opts.ci_level)
                advance(start + 2 * len(members) - done)
        idx = np.asarray(members)
        out.stat[idx], out.p[idx] = s, pv
        out.mean[idx], out.lo[idx], out.hi[idx], out.dz[idx] = eff["mean"], eff["ci_low"], eff["ci_high"], eff["dz"]
        out.wins[idx], out.losses[idx], out.nq[idx] = eff["wins"], eff["losses"], a.shape[1]
    return out


def _adjust(p: np.ndarray, rows: list[Row], metrics: list[str], correction: str, family: str) -> np.ndarray:
    """The corrected p-values, per family: the rows of one metric, or all rows."""
    adjust = CORRECTIONS.lookup(correction)
    if family != "metric":
        return adjust(p)
    adjusted = np.empty(len(rows))
    for metric in metrics:
        idx = np.array([k for k, r in enumerate(rows) if r[0] == metric])
        adjusted[idx] = adjust(p[idx])
    return adjusted


def _pair_results(
    table: ScoreTable, rows: list[Row], st: _RowStats, adjusted: np.ndarray, test: str, opts: CompareOptions
) -> list[PairResult]:
    return [
        PairResult(
            metric=m,
            a=table.names[i],
            b=table.names[j],
            test=test,
            statistic=float(st.stat[k]),
            p_value=float(st.p[k]),
            p_adjusted=float(adjusted[k]),
            correction=opts.correction,
            mean_diff=float(st.mean[k]),
            ci_low=float(st.lo[k]),
            ci_high=float(st.hi[k]),
            effect_size=float(st.dz[k]),
            wins=int(st.wins[k]),
            ties=int(st.nq[k] - st.wins[k] - st.losses[k]),
            losses=int(st.losses[k]),
            n_queries=int(st.nq[k]),
            significant=bool(adjusted[k] < opts.alpha),
        )
        for k, (m, i, j) in enumerate(rows)
    ]


def _conventions(
    table: ScoreTable,
    opts: CompareOptions,
    paired_test: PairedTest,
    test_opts: TestOptions,
    base: int | None,
    pairs: list[tuple[int, int]],
    pairing: Pairing,
    st: _RowStats,
) -> dict[str, Any]:
    """Every convention behind the numbers, for the JSON contract and the notes under a table."""
    ci, ci_level, resamples, seed = opts.ci, opts.ci_level, opts.resamples, opts.seed
    seeded = paired_test.seeded or ci == "bootstrap"
    uses_b = paired_test.resampling or ci == "bootstrap"
    counts = sorted(set(st.nq.tolist()))
    aligned = all(len(pairing[pq][0]) == len(table.query_ids[pq[0]]) == len(table.query_ids[pq[1]]) for pq in pairs)
    conventions: dict[str, Any] = {
        "test": paired_test.name,
        "test_description": paired_test.statement(test_opts),
        "test_method": sorted(st.methods),
        "alternative": opts.alternative,
        "family": "all pairs of runs" if base is None else f"each run against the baseline {table.names[base]!r}",
        "family_scope": "the pairs of one metric" if opts.family == "metric" else "all pairs of all metrics together",
        "family_size": len(pairs) if opts.family == "metric" else len(st.p),
        "correction": opts.correction,
        "correction_description": CORRECTIONS.lookup(opts.correction).description,
        "alpha": opts.alpha,
        "significant_when": "p_adjusted < alpha",
        "permutations": resamples if uses_b else None,  # the JSON contract's name for B
        "seed": seed if seeded else None,
        "tie_tolerance": test_opts.tie_tolerance,
        "wins_ties_losses": "win: b - a > tol, loss: b - a < -tol, tie otherwise (per query)",
        "mean_diff": "mean over the paired queries of b - a",
        "confidence_interval": (
            f"{ci_level:.0%} Student t interval of the mean difference (n - 1 degrees of freedom)"
            if ci == "t"
            else f"{ci_level:.0%} percentile bootstrap interval of the mean difference "
            f"({resamples} seeded resamples, seed {seed}, numpy's linear quantiles)"
        ),
        "effect_size": "paired Cohen's d_z = mean(b - a) / sd(b - a), sd with n - 1",
        "n_queries": counts[0] if len(counts) == 1 else {"min": counts[0], "max": counts[-1]},
        "pairing": "every run has the same queries"
        if aligned
        else "each pair uses the queries both runs have scores for",
    }
    if opts.standardise != "none":
        conventions["standardise"] = STANDARDISATIONS.lookup(opts.standardise).description
        conventions["standardise_reference"] = list(opts.reference or table.names)
    if table.non_mean_metrics:
        conventions["note"] = (
            f"{', '.join(table.non_mean_metrics)}: the table shows the metric's own aggregate (sum or geometric "
            "mean) while the tests compare arithmetic means of the per-query values"
        )
    if table.eval_conventions is not None:
        conventions["evaluation"] = table.eval_conventions
    return conventions


# ----------------------------------------------------------------------------------------------- compare
def compare_scores(
    scores: Any,
    metrics: Iterable[str] | None = None,
    *,
    options: CompareOptions | None = None,
    run_args: Sequence[str] | None = None,
    progress: Callable[[float, int], None] | None = None,
    **overrides: Any,
) -> Comparison:
    """Compare runs from per-query scores already computed: an :class:`~stagewise.EvalResult`, or
    ``{run: {metric: {query_id: value}}}`` (or ``{run: {metric: array}}`` with one value per query, in the
    same query order for every run). Takes the options of :func:`compare` (a :class:`CompareOptions`, or its
    fields as keywords; ``run_args``: the run arguments as the user gave them, so ``baseline`` may name one by
    its path; ``progress``: as in :func:`compare`).

    >>> scores = {"bm25": {"ndcg@10": {"q1": 0.2, "q2": 0.4, "q3": 0.1, "q4": 0.5}},
    ...           "dense": {"ndcg@10": {"q1": 0.3, "q2": 0.6, "q3": 0.2, "q4": 0.6}}}
    >>> pair = compare_scores(scores).pairs[0]
    >>> pair.a, pair.b, round(pair.mean_diff, 3), pair.wins, pair.ties, pair.losses, round(pair.p_value, 4)
    ('bm25', 'dense', 0.125, 4, 0, 0, 0.0154)
    """
    opts, _ = split_options(options, None, overrides, "compare_scores", with_conventions=False)
    table = _as_table(scores, None if metrics is None else [metrics] if isinstance(metrics, str) else list(metrics))
    if len(table.names) < 2:
        raise StagewiseError(f"compare needs at least two runs; got {len(table.names)}")
    if not table.metrics:
        raise StagewiseError("give at least one metric")
    paired_test, opts, test_opts = _resolve(opts)
    if opts.standardise != "none":
        from stagewise.stats.many import standardise_table

        table = standardise_table(table, opts.standardise, opts.reference)
    if paired_test.kind == "many":
        from stagewise.stats.many import compare_many

        return compare_many(table, opts, paired_test, test_opts, progress)
    base = _resolve_baseline(table.names, opts.baseline, run_args)
    pairs = _pairs(len(table.names), base)
    rows: list[Row] = [(m, i, j) for m in table.metrics for i, j in pairs]  # one row per (metric, pair)
    pairing = _pairing(table, pairs)
    st = _test_rows(table, rows, pairing, paired_test, test_opts, opts, progress)
    adjusted = _adjust(st.p, rows, table.metrics, opts.correction, opts.family)
    return Comparison(
        runs=table.names,
        metrics=table.metrics,
        means=table.means,
        pairs=_pair_results(table, rows, st, adjusted, paired_test.name, opts),
        conventions=_conventions(table, opts, paired_test, test_opts, base, pairs, pairing, st),
        alpha=opts.alpha,
        baseline=None if base is None else table.names[base],
        scores=table,
        eval_notes=list(table.eval_notes),
    )


def compare(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str] = DEFAULT_METRICS,
    *,
    conventions: Any = None,
    options: CompareOptions | None = None,
    progress: Callable[[float, int], None] | None = None,
    engine: Any = None,
    scheduler: str | None = None,
    duplicates: str = "error",
    **overrides: Any,
) -> Comparison:
    """Evaluate runs and test every pair (or every run against ``baseline``) on every metric.

    Parameters
    ----------
    qrels, runs, metrics, conventions, engine, scheduler, duplicates
        As :func:`stagewise.evaluate` (at least two runs; files are read after every cheap argument is checked,
        and a function given for ``qrels`` or ``runs`` is called then; ``engine``: ``"local"`` (default),
        ``"stream"``, ``"dask"`` or an engine object). With ``missing="skip"`` runs may score different
        queries; each pair is then tested on the queries both runs have, and the output says so. The tests run
        on the gathered per-query values, so the p-values are the same on every engine.
    options : CompareOptions, optional
        The test, baseline, correction and intervals in one value (its fields are documented there and in
        ``docs/compare.md``): ``test`` (a name of :data:`stagewise.stats.TESTS`: ``t``, ``wilcoxon``,
        ``randomization``, ``bootstrap``, ``sign``), ``baseline`` (a run's name or index: every run against it
        instead of all pairs), ``correction`` (a name of :data:`stagewise.stats.CORRECTIONS`), ``alpha``,
        ``alternative`` (``two-sided``, ``greater``: b better than a, ``less``), ``resamples`` (random sign
        flips or bootstrap resamples), ``seed`` (same seed, same p-values, with any threads and chunking),
        ``exact`` (randomization: all ``2**n`` sign assignments always, never, or None: when
        ``2**n <= resamples``), ``tie_tolerance``, ``ci`` and ``ci_level`` (Student t or percentile bootstrap
        interval of the mean difference) and ``family`` (correct per ``metric`` or over ``all``).
    progress : callable, optional
        Called as ``progress(done, total)`` while the tests run, in comparisons (pairs x metrics; twice that
        with ``ci="bootstrap"``), after each chunk of resamples; it changes no number.
    **overrides
        Any field of :class:`CompareOptions` or of :class:`~stagewise.Conventions` as a keyword, over
        ``options`` and ``conventions``; another keyword is a :class:`~stagewise.errors.ConventionError`
        listing both. ``permutations`` is the deprecated name of ``resamples``.

    Returns
    -------
    Comparison
        ``pairs`` (one :class:`PairResult` per metric and pair), ``means``, the conventions, ``to_json`` and
        ``per_query_deltas``; :func:`stagewise.report.render` turns it into a table, markdown, LaTeX or CSV.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    >>> runs = {"A": {"q1": {"d1": 2, "x": 1}, "q2": {"x": 2, "d2": 1}, "q3": {"x": 2, "y": 1, "d3": 0}},
    ...         "B": {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}, "q3": {"d3": 2, "x": 1}}}
    >>> result = compare(qrels, runs, ["mrr"], test="randomization")
    >>> p = result.pairs[0]
    >>> (p.a, p.b, round(p.mean_diff, 4), p.wins, p.ties, p.losses, p.p_value)
    ('A', 'B', 0.3889, 2, 1, 0, 0.5)
    """
    from stagewise.engines import evaluate

    opts, conv = split_options(options, conventions, overrides, "compare")
    _resolve(opts)  # a bad option fails before any file is read
    if isinstance(runs, list | tuple) and len(runs) < 2:
        raise StagewiseError(f"compare needs at least two runs; got {len(runs)}")
    result = evaluate(
        qrels, runs, metrics, conventions=conv, engine=engine or "local", scheduler=scheduler, duplicates=duplicates
    )
    given = [str(r) for r in runs] if isinstance(runs, list | tuple) else None
    return compare_scores(result, options=opts, run_args=given, progress=progress)
