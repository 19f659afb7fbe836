"""Topic-set-size design against statsmodels' independent power functions (Sakai's table values were not at hand).

For every setting the returned n must be the smallest: statsmodels' power at n reaches 1 - beta and at n - 1
does not. statsmodels' TTestPower and FTestAnovaPower compute power from the noncentral t and F with their
own code; FTestAnovaPower takes Cohen's f and the total sample size, so Sakai's lambda = n minD^2 / (2 sigma^2)
over m systems is f^2 = minD^2 / (2 m sigma^2) with nobs = m n.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stagewise.errors import InputError
from stagewise.stats import anova as A
from stagewise.stats import power as P

power_mod = pytest.importorskip("statsmodels.stats.power")

SETTINGS = [  # (alpha, beta, minD, variance)
    (0.05, 0.20, 0.10, 0.10),
    (0.05, 0.20, 0.05, 0.02),
    (0.01, 0.10, 0.10, 0.05),
    (0.05, 0.50, 0.20, 0.08),
]


@pytest.mark.parametrize(("alpha", "beta", "min_diff", "variance"), SETTINGS)
def test_t_test_topics_are_the_smallest_n_by_statsmodels(alpha, beta, min_diff, variance) -> None:
    n = P.topics_for_t_test(min_diff, variance, alpha=alpha, beta=beta)
    effect = min_diff / np.sqrt(variance)
    solver = power_mod.TTestPower()
    assert solver.power(effect, n, alpha, alternative="two-sided") >= 1 - beta
    assert solver.power(effect, n - 1, alpha, alternative="two-sided") < 1 - beta
    assert n == int(np.ceil(solver.solve_power(effect, None, alpha, 1 - beta, alternative="two-sided") - 1e-9))
    assert P.t_test_power(n, effect, alpha) == pytest.approx(solver.power(effect, n, alpha), rel=1e-7)


@pytest.mark.parametrize("systems", [2, 5, 20])
@pytest.mark.parametrize(("alpha", "beta", "min_diff", "variance"), SETTINGS)
def test_anova_topics_are_the_smallest_n_by_statsmodels(systems, alpha, beta, min_diff, variance) -> None:
    n = P.topics_for_anova(systems, min_diff, variance, alpha=alpha, beta=beta)
    f = np.sqrt(min_diff**2 / (2 * systems * variance))
    solver = power_mod.FTestAnovaPower()
    assert solver.power(f, systems * n, alpha, k_groups=systems) >= 1 - beta
    assert solver.power(f, systems * (n - 1), alpha, k_groups=systems) < 1 - beta


def test_more_systems_or_a_smaller_difference_need_more_topics() -> None:
    assert P.topics_for_anova(10, 0.1, 0.05) > P.topics_for_anova(2, 0.1, 0.05)
    assert P.topics_for_t_test(0.05, 0.1) > P.topics_for_t_test(0.1, 0.1)


@pytest.mark.parametrize(("width", "variance", "alpha"), [(0.1, 0.1, 0.05), (0.05, 0.02, 0.05), (0.2, 0.1, 0.01)])
def test_ci_width_topics_by_the_chi_distribution_mean(width, variance, alpha) -> None:
    def expected(n: int) -> float:
        # E[s] = sigma * E[chi_{n-1}] / sqrt(n - 1): an independent route to Nagata's Gamma-function factor
        e_s = np.sqrt(variance) * stats.chi(n - 1).mean() / np.sqrt(n - 1)
        return 2 * stats.t.isf(alpha / 2, n - 1) * e_s / np.sqrt(n)

    n = P.topics_for_ci_width(width, variance, alpha)
    assert P.expected_ci_width(n, variance, alpha) == pytest.approx(expected(n), rel=1e-10)
    assert expected(n) <= width < expected(n - 1)


def test_variance_from_runs_pools_the_residual_variances() -> None:
    rng = np.random.default_rng(2)
    x1, x2 = rng.uniform(0, 1, (30, 4)), rng.uniform(0, 1, (50, 6))
    v1, v2 = A.two_way_anova(x1).residual_variance, A.two_way_anova(x2).residual_variance
    assert P.variance_from_runs([x1, x2]) == pytest.approx((29 * v1 + 49 * v2) / 78, rel=1e-12)
    assert P.variance_from_runs([x1]) == pytest.approx(v1, rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: P.topics_for_t_test(0.0, 0.1), "minimum difference 0.0 is not positive"),
        (lambda: P.topics_for_t_test(0.1, -1.0), "variance -1.0 is not positive"),
        (lambda: P.topics_for_t_test(0.1, 0.1, alpha=1.5), "alpha 1.5 is outside"),
        (lambda: P.topics_for_anova(1, 0.1, 0.1), "1 systems"),
        (lambda: P.topics_for_t_test(1e-6, 10.0), "more than 10,000,000 topics"),
        (lambda: P.variance_from_runs([]), "no score matrices"),
    ],
)
def test_bad_inputs_are_one_line_errors(call, match) -> None:
    with pytest.raises(InputError, match=match):
        call()
