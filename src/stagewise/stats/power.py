"""Topic-set-size design: how many topics a test collection needs (Sakai, Information Retrieval Journal 19(3), 2016).

Given a significance level ``alpha``, a type II error rate ``beta`` (power ``1 - beta``), a minimum
difference worth detecting and a variance estimate, each design returns the smallest number of topics ``n``
whose power (or expected interval width) meets the target. The power functions are exact, from the
noncentral t and F distributions (``scipy.stats.nct``, ``ncf``); Sakai's Excel tools iterate ``n`` upward
from a normal approximation with an approximate power, so they can differ from these by a topic or so.
Power grows with ``n``, so the smallest ``n`` is found by doubling then bisection, which gives the same
``n`` as the upward iteration.

Designs (``sigma2`` is the variance of one system's score, ``V_E`` of the two-way ANOVA):

- paired t-test (:func:`topics_for_t_test`): ``Delta = minD / sigma_t`` with ``sigma_t^2`` the variance of
  the score *differences* (estimate ``2 V_E``); two-sided power at ``n`` is ``P(|T'| >= t(n-1; alpha/2))``
  with ``T' ~ nct(n - 1, sqrt(n) Delta)``.
- one-way ANOVA over ``m`` systems (:func:`topics_for_anova`): the worst case where two systems differ by
  ``minD`` and the others sit at their midpoint, ``lambda = n minD^2 / (2 sigma^2)``; power is
  ``P(F' >= F(m-1, m(n-1); alpha))`` with ``F' ~ ncf(m-1, m(n-1), lambda)``.
- confidence-interval width (:func:`topics_for_ci_width`): the smallest ``n`` whose *expected* width
  ``2 t(n-1; alpha/2) E[s] / sqrt(n)`` is at most ``delta``, with ``E[s] = sigma sqrt(2/(n-1))
  Gamma(n/2) / Gamma((n-1)/2)``.

The tests check every n against statsmodels' independent ``TTestPower`` and ``FTestAnovaPower`` (power at
``n`` reaches the target and at ``n - 1`` does not); Sakai's published table values were not available to
this implementation, so they are not what it was checked against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from stagewise.errors import InputError
from stagewise.stats.anova import two_way_anova

_MAX_TOPICS = 10_000_000


def _check(alpha: float, beta: float, diff: float, variance: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise InputError("power", f"alpha {alpha!r} is outside (0, 1)", expected="e.g. 0.05")
    if not 0.0 < beta < 1.0:
        raise InputError("power", f"beta {beta!r} is outside (0, 1)", expected="e.g. 0.20")
    if not (np.isfinite(diff) and diff > 0):
        raise InputError("power", f"the minimum difference {diff!r} is not positive", expected="e.g. 0.05")
    if not (np.isfinite(variance) and variance > 0):
        raise InputError("power", f"the variance {variance!r} is not positive", hint="estimate it from runs")


def _smallest_n(meets: Callable[[int], bool], low: int = 2) -> int:
    """The smallest ``n >= low`` with ``meets(n)``, for a ``meets`` that stays true once true."""
    if meets(low):
        return low
    hi = low
    while not meets(hi):
        lo, hi = hi, hi * 2
        if hi > _MAX_TOPICS:
            raise InputError("power", f"more than {_MAX_TOPICS:,} topics would be needed", hint="raise minD")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def t_test_power(n: int, effect: float, alpha: float = 0.05) -> float:
    """Exact two-sided power of the paired t-test with ``n`` topics and ``effect = minD / sigma_t``.

    >>> round(t_test_power(50, 0.4), 4)
    0.7918
    """
    from scipy import stats

    df = n - 1
    tc = stats.t.isf(alpha / 2.0, df)
    lam = np.sqrt(n) * effect
    return float(stats.nct.sf(tc, df, lam) + stats.nct.cdf(-tc, df, lam))


def topics_for_t_test(min_diff: float, variance: float, alpha: float = 0.05, beta: float = 0.20) -> int:
    """Topics for a two-sided paired t-test to detect ``min_diff`` with power ``1 - beta``.

    ``variance`` is that of the per-topic score differences (``2 V_E`` from :func:`variance_from_runs`).

    >>> topics_for_t_test(0.1, 0.1)
    81
    """
    _check(alpha, beta, min_diff, variance)
    effect = min_diff / np.sqrt(variance)
    return _smallest_n(lambda n: t_test_power(n, effect, alpha) >= 1.0 - beta)


def anova_power(n: int, systems: int, min_diff: float, variance: float, alpha: float = 0.05) -> float:
    """Exact power of the one-way ANOVA over ``systems`` systems and ``n`` topics (the worst case above).

    >>> round(anova_power(100, 5, 0.1, 0.05), 4)
    0.7113
    """
    from scipy import stats

    df1, df2 = systems - 1, systems * (n - 1)
    lam = n * min_diff**2 / (2.0 * variance)
    return float(stats.ncf.sf(stats.f.isf(alpha, df1, df2), df1, df2, lam))


def topics_for_anova(systems: int, min_diff: float, variance: float, alpha: float = 0.05, beta: float = 0.20) -> int:
    """Topics for a one-way ANOVA over ``systems`` systems to detect a best-worst gap ``min_diff``.

    ``variance`` is one system's score variance (``V_E`` from :func:`variance_from_runs`).

    >>> topics_for_anova(5, 0.1, 0.05)
    121
    """
    _check(alpha, beta, min_diff, variance)
    if isinstance(systems, bool) or not isinstance(systems, (int, np.integer)) or systems < 2:
        raise InputError("power", f"{systems!r} systems", expected="an int >= 2")
    return _smallest_n(lambda n: anova_power(n, int(systems), min_diff, variance, alpha) >= 1.0 - beta)


def expected_ci_width(n: int, variance: float, alpha: float = 0.05) -> float:
    """Expected width ``2 t(n-1; alpha/2) E[s] / sqrt(n)`` of the t interval of a mean over ``n`` topics.

    >>> round(expected_ci_width(100, 0.1), 4)
    0.1252
    """
    from scipy import special, stats

    c4 = np.sqrt(2.0 / (n - 1)) * np.exp(special.gammaln(n / 2.0) - special.gammaln((n - 1) / 2.0))
    return float(2.0 * stats.t.isf(alpha / 2.0, n - 1) * c4 * np.sqrt(variance / n))


def topics_for_ci_width(width: float, variance: float, alpha: float = 0.05) -> int:
    """Topics for the expected width of the ``1 - alpha`` interval to be at most ``width``.

    ``variance`` is that of the quantity the interval is on (``2 V_E`` for a difference between systems).

    >>> topics_for_ci_width(0.1, 0.1)
    156
    """
    _check(alpha, 0.5, width, variance)
    return _smallest_n(lambda n: expected_ci_width(n, variance, alpha) <= width)


def variance_from_runs(matrices: Sequence) -> float:
    """Pooled residual variance ``sum_C (n_C - 1) V_E,C / sum_C (n_C - 1)`` of one or more score matrices.

    Each matrix is ``(topics, systems)`` from one test collection (Sakai 2016, section 4). Use it as
    ``variance`` for :func:`topics_for_anova` and twice it for :func:`topics_for_t_test` and a difference's
    :func:`topics_for_ci_width`.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> round(variance_from_runs([x]), 5)
    0.00639
    """
    if len(matrices) == 0:
        raise InputError("power", "no score matrices were given", expected="at least one topics x systems matrix")
    tables = [two_way_anova(x, f"matrix {i}") for i, x in enumerate(matrices)]
    weights = np.array([t.n_topics - 1 for t in tables], dtype=np.float64)
    return float((weights * np.array([t.residual_variance for t in tables])).sum() / weights.sum())
