"""Paired significance tests on per-query scores: t, Wilcoxon, randomization, bootstrap and sign.

Each test is a function from two aligned score arrays ``a`` and ``b`` (one value per query, same query
order) to a :class:`TestResult`; the differences are always ``d = b - a``, so a positive statistic means
``b`` scored higher. ``alternative`` is ``"two-sided"`` (default), ``"greater"`` (``b`` better than ``a``)
or ``"less"``. The functions are thin wrappers of the batched kernels in :data:`TESTS`, which
:func:`stagewise.stats.compare` uses to test every pair of runs at once.

When every difference is exactly 0 there is nothing to test: every test returns statistic 0 and p = 1
(scipy's t-test would give nan).

scipy is imported only when a t, Wilcoxon or sign test runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stagewise.errors import parameter_error
from stagewise.stats import catalogue as K
from stagewise.stats import resampling as R
from stagewise.stats.catalogue import TESTS, PairedTest


@dataclass(frozen=True)
class TestResult:
    """The outcome of one paired test of ``b`` against ``a`` (``d = b - a``)."""

    test: str
    statistic: float
    p_value: float
    n: int
    method: str

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class TestOptions:
    """Options shared by the batched tests (each test reads the ones it needs)."""

    alternative: str = "two-sided"
    resamples: int = 10_000
    seed: int = 0
    exact: bool | None = None
    tie_tolerance: float = 1e-9

    __test__ = False


Batched = Callable[[np.ndarray, np.ndarray, TestOptions], tuple[np.ndarray, np.ndarray, str]]


# ------------------------------------------------------------------------------------------------- kernels
def t_kernel(a: np.ndarray, b: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    from scipy import stats

    with warnings.catch_warnings():  # scipy warns of precision loss when all differences are (nearly) equal
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_rel(b, a, axis=1, alternative=opts.alternative)
    return np.asarray(res.statistic, dtype=np.float64), np.asarray(res.pvalue, dtype=np.float64), "exact"


def wilcoxon_kernel(a: np.ndarray, b: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    from scipy import stats

    stat = np.empty(a.shape[0])
    p = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        if np.all(a[i] == b[i]):
            stat[i], p[i] = 0.0, 1.0
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = stats.wilcoxon(b[i], a[i], alternative=opts.alternative)
        stat[i], p[i] = float(res.statistic), float(res.pvalue)
    return stat, p, "scipy auto (exact for n <= 50 without ties or zeros, else normal approximation)"


def _use_exact(n: int, opts: TestOptions) -> bool:
    if opts.exact is None:
        return n <= R.EXACT_LIMIT and (1 << n) <= opts.resamples
    if opts.exact and n > R.EXACT_LIMIT:
        raise parameter_error(
            "exact", "the randomization test", f"False or None when n > {R.EXACT_LIMIT} queries", opts.exact
        )
    return bool(opts.exact)


def randomization_kernel(a: np.ndarray, b: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    d = b - a
    n = d.shape[1]
    stat = d.mean(axis=1)
    if _use_exact(n, opts):
        counts = R.randomization_exact_counts(d, opts.alternative)
        return stat, counts / float(1 << n), f"exact (all 2^{n} sign assignments)"
    counts = R.randomization_counts(d, opts.resamples, opts.seed, opts.alternative)
    return stat, (counts + 1.0) / (opts.resamples + 1.0), f"{opts.resamples} random sign flips"


def bootstrap_kernel(a: np.ndarray, b: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    d = b - a
    counts, _ = R.bootstrap(d, opts.resamples, opts.seed, opts.alternative)
    n = d.shape[1]
    sd = d.std(axis=1, ddof=1)
    mean = d.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(sd > 0, mean / (sd / np.sqrt(n)), np.copysign(np.inf, mean))
    stat = np.where((sd == 0) & (mean == 0), 0.0, stat)
    return stat, (counts + 1.0) / (opts.resamples + 1.0), f"{opts.resamples} resamples"


def sign_kernel(a: np.ndarray, b: np.ndarray, opts: TestOptions) -> tuple[np.ndarray, np.ndarray, str]:
    from scipy import stats

    d = b - a
    wins = (d > opts.tie_tolerance).sum(axis=1)
    losses = (d < -opts.tie_tolerance).sum(axis=1)
    p = np.array(
        [
            stats.binomtest(int(w), int(w + lo), 0.5, alternative=opts.alternative).pvalue if w + lo else 1.0
            for w, lo in zip(wins, losses, strict=True)
        ],
        dtype=np.float64,
    )
    return wins.astype(np.float64), p, "exact binomial"


def _alt(opts: TestOptions) -> str:
    return {"two-sided": "two-sided", "greater": "one-sided, b > a", "less": "one-sided, b < a"}[opts.alternative]


# ------------------------------------------------------------------------------- what the output states
def describe_t(o: TestOptions) -> str:
    return f"paired Student's t-test ({_alt(o)}), scipy.stats.ttest_rel; statistic: t"


def describe_wilcoxon(o: TestOptions) -> str:
    return (
        f"Wilcoxon signed-rank test ({_alt(o)}), scipy.stats.wilcoxon defaults: zero_method='wilcox' "
        "(zero differences dropped), correction=False, method='auto'; statistic: scipy's "
        "(min(W+, W-) when two-sided, W+ when one-sided)"
    )


def describe_randomization(o: TestOptions) -> str:
    return (
        f"Fisher's paired randomization test ({_alt(o)}): sign flips of the per-query differences, "
        f"statistic: mean difference; p = (count + 1) / (B + 1) with B = {o.resamples} "
        f"seeded sign flips (seed {o.seed}), or count / 2^n when all 2^n sign assignments are "
        f"enumerated ({'always' if o.exact else 'never' if o.exact is False else 'when 2^n <= B'}); "
        f"a permuted statistic within a relative {R.REL_TOL:g} of the observed counts as equal"
    )


def describe_bootstrap(o: TestOptions) -> str:
    return (
        f"studentized paired bootstrap test ({_alt(o)}; Efron & Tibshirani 1993, Sakai 2006): "
        f"t* = (mean(d*) - mean(d)) / (sd(d*)/sqrt(n)) over B = {o.resamples} seeded resamples of "
        f"the queries (seed {o.seed}) against t = mean(d) / (sd(d)/sqrt(n)); p = (count + 1) / (B + 1)"
    )


def describe_sign(o: TestOptions) -> str:
    return (
        f"sign test ({_alt(o)}): exact binomial test (p = 0.5) on wins vs losses, scipy.stats.binomtest; "
        f"differences within {o.tie_tolerance:g} are ties and dropped; statistic: wins (b > a)"
    )


def get_test(name: str) -> PairedTest:
    """The registered test called ``name`` (or one of its aliases, e.g. ``fisher`` or ``student``); an unknown
    name is a :class:`~stagewise.errors.ConventionError` listing the tests of :data:`TESTS`."""
    return TESTS.lookup(str(name))


def check_options(opts: TestOptions) -> TestOptions:
    """``opts`` with every field checked against its :mod:`~stagewise.stats.catalogue` parameter (the first bad
    one raises, in field order) and converted to its type."""
    checked = {
        name: param.coerce("compare", name, getattr(opts, name))
        for name, param in (
            ("alternative", K.ALTERNATIVE),
            ("resamples", K.RESAMPLES),
            ("seed", K.SEED),
            ("exact", K.EXACT),
            ("tie_tolerance", K.TIE_TOLERANCE),
        )
    }
    return TestOptions(**checked)


def run_batched(test: PairedTest, a: np.ndarray, b: np.ndarray, opts: TestOptions):
    """Run ``test`` on every row of ``a`` and ``b`` (``(comparisons, n)``); all-zero rows get (0, 1)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    stat, p, method = test.kernel()(a, b, opts)
    null = np.all(a == b, axis=1)
    stat = np.where(null, 0.0, stat)
    p = np.where(null, 1.0, np.clip(p, 0.0, 1.0))
    return stat, p, method


def _pair(name: str, a, b, **options) -> TestResult:  # a one-row batch, with the same checks as compare()
    from stagewise.errors import StagewiseError

    a = np.asarray(a, dtype=np.float64).reshape(1, -1)
    b = np.asarray(b, dtype=np.float64).reshape(1, -1)
    if a.shape != b.shape:
        raise StagewiseError(f"a and b must hold one value per query each; got {a.shape[1]} and {b.shape[1]}")
    if a.shape[1] < 2:
        raise StagewiseError(f"a paired test needs at least 2 queries; got {a.shape[1]}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise StagewiseError("scores must be finite numbers (no nan or inf)")
    opts = check_options(TestOptions(**options))
    test = get_test(name)
    stat, p, method = run_batched(test, a, b, opts)
    return TestResult(test.name, float(stat[0]), float(p[0]), a.shape[1], method)


def t_test(a, b, *, alternative: str = "two-sided") -> TestResult:
    """Paired Student's t-test of ``d = b - a``: ``t = mean(d) / (sd(d) / sqrt(n))``, n - 1 degrees of freedom.

    The p-value is scipy.stats.ttest_rel's, bit for bit.

    >>> r = t_test([0.2, 0.4, 0.1, 0.5], [0.3, 0.6, 0.2, 0.6])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (5.0, 0.0154)
    """
    return _pair("t", a, b, alternative=alternative)


def wilcoxon_test(a, b, *, alternative: str = "two-sided") -> TestResult:
    """Wilcoxon signed-rank test of ``d = b - a``: scipy.stats.wilcoxon with its defaults.

    Zero differences are dropped (``zero_method='wilcox'``), no continuity correction, and the exact
    distribution when n <= 50 with no ties or zeros (``method='auto'``), else the normal approximation.

    >>> r = wilcoxon_test([0.2, 0.4, 0.1, 0.5, 0.3], [0.3, 0.6, 0.2, 0.7, 0.6])
    >>> r.statistic, r.p_value
    (0.0, 0.0625)
    """
    return _pair("wilcoxon", a, b, alternative=alternative)


def randomization_test(
    a,
    b,
    *,
    resamples: int = 10_000,
    seed: int = 0,
    exact: bool | None = None,
    alternative: str = "two-sided",
    permutations: int | None = None,
) -> TestResult:
    """Fisher's paired randomization test: how often does flipping the signs of ``d = b - a`` give a mean
    at least as far from 0 as the observed one?

    Monte Carlo: ``p = (count + 1) / (B + 1)`` over ``B = resamples`` seeded sign-flip vectors
    (Phipson & Smyth 2010: never 0, and a valid p-value). Exact (``exact=True``, or by default when
    ``2**n <= resamples``): ``p = count / 2**n`` over all sign assignments, the identity included.
    The same seed gives the same p-value on every call, with any number of threads. ``permutations`` is the
    old name of ``resamples`` (deprecated).

    >>> r = randomization_test([0.2, 0.4, 0.1, 0.5], [0.3, 0.6, 0.2, 0.6], exact=True)
    >>> r.p_value, r.method
    (0.125, 'exact (all 2^4 sign assignments)')
    """
    if permutations is not None:
        resamples = deprecated_permutations(permutations, "randomization_test")
    return _pair("randomization", a, b, resamples=resamples, seed=seed, exact=exact, alternative=alternative)


def deprecated_permutations(value: int, where: str, stacklevel: int = 3) -> int:
    """``value``, after a DeprecationWarning that ``permutations`` is now called ``resamples`` (``stacklevel``:
    the frames up to the user's call, this one counted)."""
    warnings.warn(
        f"{where}(permutations=...) is deprecated; use resamples=... (one word for the random sign flips "
        "and the bootstrap resamples)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return value


def bootstrap_test(a, b, *, resamples: int = 10_000, seed: int = 0, alternative: str = "two-sided") -> TestResult:
    """Studentized paired bootstrap test (Sakai 2006): resample the queries with replacement ``resamples``
    times; ``p = (count + 1) / (B + 1)`` where count is the number of resamples with
    ``|t*| >= |t|``, ``t* = (mean(d*) - mean(d)) / (sd(d*)/sqrt(n))`` (the null imposed by shifting).

    >>> r = bootstrap_test([0.2, 0.4, 0.1, 0.5, 0.3], [0.3, 0.6, 0.2, 0.7, 0.6], resamples=2000, seed=1)
    >>> round(r.statistic, 4), r.p_value < 0.05
    (4.8107, True)
    """
    return _pair("bootstrap", a, b, resamples=resamples, seed=seed, alternative=alternative)


def sign_test(a, b, *, tie_tolerance: float = 1e-9, alternative: str = "two-sided") -> TestResult:
    """Sign test: the exact binomial test (p = 0.5) of wins (``b - a > tol``) against losses
    (``b - a < -tol``); ties are dropped.

    >>> r = sign_test([0.2, 0.4, 0.1, 0.5, 0.3, 0.3], [0.3, 0.6, 0.2, 0.7, 0.6, 0.3])
    >>> r.statistic, r.p_value
    (5.0, 0.0625)
    """
    return _pair("sign", a, b, tie_tolerance=tie_tolerance, alternative=alternative)
