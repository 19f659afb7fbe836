"""Topic-set-size design against statsmodels' independent power functions and Cohen's published tables (Sakai's
own table values were not at hand offline).

For every setting the returned n must be the smallest: statsmodels' power at n reaches 1 - beta and at n - 1
does not. statsmodels' TTestPower and FTestAnovaPower compute power from the noncentral t and F with their
own code; FTestAnovaPower takes Cohen's f and the total sample size, so Sakai's lambda = n minD^2 / (2 sigma^2)
over m systems is f^2 = minD^2 / (2 m sigma^2) with nobs = m n.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stagewise.errors import ConventionError, InputError, StagewiseError
from stagewise.stats import anova as A
from stagewise.stats import discriminative as D
from stagewise.stats import power as P
from stagewise.stats import resampling as R

power_mod = pytest.importorskip("statsmodels.stats.power")
ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"

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


# Published sample sizes (alpha 0.05, power 0.80), each the classic worked value of its design: a one-sample
# (paired) t-test for a medium effect d = 0.5 needs 34 (Cohen 1988, ch. 2; G*Power's "difference from constant"
# example), and a one-way ANOVA for Cohen's medium f = 0.25 needs 64, 53, 45 and 40 per group for 2 to 5 groups
# (Cohen 1988, Table 8.4.4; G*Power's totals 128, 159, 180, 200). Sakai's designs are these designs: his paired
# t-test's minDt is Cohen's d, and his ANOVA's minD between the best and the worst of m systems, the others at the
# grand mean, is f = minD / sqrt(2 m sigma^2).
@pytest.mark.parametrize(("systems", "per_group"), [(2, 64), (3, 53), (4, 45), (5, 40)])
def test_anova_topics_equal_cohens_published_table_for_a_medium_effect(systems: int, per_group: int) -> None:
    assert P.topics_for_anova(systems, min_diff=0.25 * np.sqrt(2 * systems), variance=1.0) == per_group


def test_t_test_topics_equal_the_published_value_for_a_medium_effect() -> None:
    assert P.topics_for_t_test(min_diff=0.5, variance=1.0) == 34
    # the two-sample design with the same effect is the two-group ANOVA above: 64 a group
    assert P.topics_for_anova(2, min_diff=0.5, variance=1.0) == 64


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
        (lambda: P.topics_for_t_test(0.0, 0.1), "minimum difference 0.0 is not a positive finite number"),
        (lambda: P.topics_for_t_test(0.1, -1.0), "variance -1.0 is not a positive finite number"),
        (lambda: P.topics_for_t_test(0.1, 0.1, alpha=1.5), "alpha 1.5 is outside"),
        (lambda: P.topics_for_anova(1, 0.1, 0.1), "1 systems"),
        (lambda: P.topics_for_t_test(1e-6, 10.0), "more than 10,000,000 topics"),
        (lambda: P.variance_from_runs([]), "no score matrices"),
    ],
)
def test_bad_inputs_are_one_line_errors(call, match) -> None:
    with pytest.raises(InputError, match=match):
        call()


# ------------------------------------------------------------------------------- the front door: topic_set_size
@pytest.mark.parametrize(("alpha", "beta", "min_diff", "variance"), SETTINGS)
def test_the_front_door_reads_twice_v_for_a_difference_and_v_for_anova(alpha, beta, min_diff, variance) -> None:
    t = P.topic_set_size("t", min_diff, variance, alpha=alpha, beta=beta)
    assert t.topics == P.topics_for_t_test(min_diff, 2 * variance, alpha, beta)
    assert t.design_variance == 2 * variance and t.variance.source == "stated"
    solver = power_mod.TTestPower()  # independent power at the answer and one topic fewer
    effect = min_diff / np.sqrt(2 * variance)
    assert t.achieved == pytest.approx(solver.power(effect, t.topics, alpha), rel=1e-7)
    assert t.achieved_before == pytest.approx(solver.power(effect, t.topics - 1, alpha), rel=1e-7)
    assert t.achieved >= 1 - beta > t.achieved_before
    a = P.topic_set_size("anova", min_diff, variance, alpha=alpha, beta=beta, systems=5)
    assert a.topics == P.topics_for_anova(5, min_diff, variance, alpha, beta) and a.systems == 5
    c = P.topic_set_size("ci", min_diff, variance, alpha=alpha, beta=beta)
    assert c.topics == P.topics_for_ci_width(min_diff, 2 * variance, alpha) and c.beta is None
    assert c.achieved <= min_diff < c.achieved_before


def test_designs_are_a_registry_with_aliases_and_a_listing_error() -> None:
    assert P.DESIGNS.names() == ["t", "anova", "ci"]
    assert P.DESIGNS.lookup("T-Test").name == "t" and P.DESIGNS.lookup("interval").name == "ci"
    with pytest.raises(ConventionError, match="unknown design 'z'; choose one of t, anova, ci"):
        P.topic_set_size("z", 0.1, 0.1)


def test_anova_takes_the_number_of_systems_from_the_estimate_or_says_it_needs_it() -> None:
    estimate = P.VarianceEstimate(0.05, "test", systems=5)
    assert P.topic_set_size("anova", 0.1, estimate).topics == P.topics_for_anova(5, 0.1, 0.05)
    assert P.topic_set_size("anova", 0.1, estimate, systems=2).systems == 2
    with pytest.raises(InputError, match="needs the number of systems"):
        P.topic_set_size("anova", 0.1, 0.05)
    with pytest.raises(InputError, match="1 systems"):
        P.check_design("anova", 0.1, systems=1)
    with pytest.raises(InputError, match="the variance 'x' is not a number"):
        P.topic_set_size("t", 0.1, "x")  # type: ignore[arg-type]


def test_the_result_serialises_every_input() -> None:
    data = json.loads(P.topic_set_size("t", 0.05, 0.01).to_json())
    assert data["topics"] == 65 and data["variance"] == {"value": 0.01, "source": "stated"}
    assert {"design", "alpha", "beta", "min_diff", "design_variance", "achieved", "achieved_before"} <= set(data)


def test_the_designs_catalogue_imports_no_numpy() -> None:
    code = (
        "import sys, stagewise.stats.power as p; p.DESIGNS.names(); "
        "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def _robust():
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    return ROBUST / "robust03_qrels.txt", sorted((ROBUST / "runs").glob("input.*.gz"))


def test_the_variance_from_runs_is_the_two_way_anova_residual_on_robust_ap() -> None:
    from stagewise import evaluate

    qrels, runs = _robust()
    estimate = P.estimate_variance(str(qrels), [str(r) for r in runs], "map")
    ev = evaluate(str(qrels), [str(r) for r in runs], ["map"])
    x = np.column_stack([r.values["map"] for r in ev.runs])  # every run has the 100 judged topics
    # statsmodels' OLS residual mean square of score ~ C(topic) + C(system), independently of stats.anova
    smf = pytest.importorskip("statsmodels.formula.api")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        [(i, j, x[i, j]) for i in range(x.shape[0]) for j in range(x.shape[1])], columns=["topic", "system", "score"]
    )
    fit = smf.ols("score ~ C(topic) + C(system)", data=frame).fit()
    assert estimate.value == pytest.approx(fit.mse_resid, rel=1e-9)
    assert (estimate.topics, estimate.systems, estimate.metric) == (100, 17, "map")
    assert "17 runs on 100 topics" in estimate.source
    assert P.topic_set_size("t", 0.05, estimate).topics == 65  # docs/multi_system.md's figure
    assert P.topic_set_size("anova", 0.1, estimate).topics == 39


# --------------------------------------------------------------------------------- discriminative power (ASL)
def _slow_asl_same_resamples(x: np.ndarray, resamples: int, seed: int) -> list[float]:
    """Sakai's ASL pair by pair, topic by topic, on the kernel's own resamples (each count row expanded to the
    indices it counts): w = z - mean(z), t(w*) = mean(w*) / (sd(w*) / sqrt(n)), |t(w*)| >= |t(z)|."""
    n, m = x.shape
    draws = []
    for block in range(-(-resamples // R.BOOT_BLOCK)):
        for counts in R.bootstrap_block(seed, block, n):
            draws.append(np.repeat(np.arange(n), counts))
    draws = draws[:resamples]
    out = []
    for a in range(m):
        for b in range(a + 1, m):
            z = x[:, b] - x[:, a]
            t_obs = _t(z)
            w = z - z.mean()
            hits = 0
            for idx in draws:
                t_star = _t(w[idx])
                hits += abs(t_star) >= abs(t_obs) - 1e-9 * abs(t_obs)
            out.append(hits / resamples)
    return out


def _t(v: np.ndarray) -> float:
    sd = float(np.std(v, ddof=1))
    mean = float(np.mean(v))
    if sd == 0:
        return 0.0 if abs(mean) < 1e-15 else float(np.copysign(np.inf, mean))
    return mean / (sd / np.sqrt(len(v)))


def test_asl_equals_a_slow_loop_on_the_same_resamples() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (30, 4)) + np.array([0.0, 0.05, 0.2, 0.21])
    a, b, p = D.asl(x, resamples=300, seed=9)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert p.tolist() == pytest.approx(_slow_asl_same_resamples(x, 300, 9), abs=1e-12)


def test_asl_agrees_with_sakais_loop_on_an_unrelated_generator() -> None:
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 1, (40, 3)) + np.array([0.0, 0.08, 0.15])
    resamples = 4000
    _, _, p = D.asl(x, resamples=resamples, seed=0)
    other = np.random.default_rng(123)
    for k, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
        z = x[:, b] - x[:, a]
        w = z - z.mean()
        t_obs = abs(_t(z))
        hits = sum(abs(_t(w[other.integers(0, len(w), len(w))])) >= t_obs for _ in range(resamples))
        slow = hits / resamples
        assert abs(p[k] - slow) <= 4 * np.sqrt(max(slow * (1 - slow), 1 / resamples) * 2 / resamples) + 1 / resamples


@settings(max_examples=25, deadline=None)
@given(
    st.integers(5, 25),
    st.integers(2, 5),
    st.integers(0, 2**32 - 1),
    st.floats(0.1, 10.0),
)
def test_asl_ignores_topic_effects_scale_and_the_order_of_a_pair(n, m, seed, scale) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, m))
    _, _, p = D.asl(x, resamples=200, seed=3)
    shifted = x * scale + rng.uniform(-1, 1, (n, 1))  # a topic effect cancels in every difference
    assert D.asl(shifted, resamples=200, seed=3)[2].tolist() == p.tolist()
    _, _, q = D.asl(x[:, ::-1], resamples=200, seed=3)  # pair (a, b) becomes (b, a): two-sided, the same ASL
    a, b = np.triu_indices(m, 1)
    flipped = {(m - 1 - int(j), m - 1 - int(i)): v for i, j, v in zip(a, b, q, strict=True)}
    assert [flipped[(int(i), int(j))] for i, j in zip(a, b, strict=True)] == p.tolist()


def test_discriminative_power_counts_shares_and_curves() -> None:
    rng = np.random.default_rng(2)
    good = rng.uniform(0, 1, (50, 4)) + np.array([0.0, 0.3, 0.6, 0.9])
    noisy = good + rng.normal(0, 2.0, good.shape)
    d = D.discriminative_power_scores({"good": good, "noisy": noisy}, resamples=500, seed=1, runs=list("abcd"))
    g, n = d.measures
    assert g.pairs == n.pairs == 6 and g.a[:3] == ("a", "a", "a") and g.b[:3] == ("b", "c", "d")
    assert g.significant == sum(v < 0.05 for v in g.asl) and g.share == g.significant / 6
    assert g.curve == tuple(sorted(g.asl)) and g.curve_at(0.5) == g.curve[2]
    assert d.ranking() == ["good", "noisy"] and g.share > n.share
    # the same seed gives the same ASLs whatever else is measured with it
    alone = D.discriminative_power_scores({"noisy": noisy}, resamples=500, seed=1, runs=list("abcd"))
    assert alone.measures[0].asl == n.asl
    data = json.loads(d.to_json())
    assert data["ranking"] == ["good", "noisy"] and data["measures"][0]["asl_curve"] == list(g.curve)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: D.asl([[0.1, 0.2], [0.3, 0.4]], resamples=0), "'resamples' parameter"),
        (lambda: D.asl([[0.1, 0.2], [0.3, 0.4]], seed=-1), "'seed' parameter"),
        (lambda: D.discriminative_power_scores({"m": [[0.1, 0.2], [0.3, 0.4]]}, alpha=2), "'alpha' parameter"),
        (lambda: D.asl([[0.1, 0.2]]), "1 topics x 2 systems"),
        (lambda: D.discriminative_power_scores({}), "no measures"),
    ],
)
def test_bad_discriminative_inputs_are_one_line_errors(call, match) -> None:
    with pytest.raises(StagewiseError, match=match):
        call()


def test_discriminative_power_on_robust_is_reproducible() -> None:
    qrels, runs = _robust()
    first = D.discriminative_power(str(qrels), [str(r) for r in runs], ["map", "P@10"], resamples=300, seed=4)
    again = D.discriminative_power(str(qrels), [str(r) for r in runs], ["P@10"], resamples=300, seed=4)
    assert first.measures[1].asl == again.measures[0].asl
    assert first.topics == 100 and len(first.runs) == 17 and first.measures[0].pairs == 136
    assert first.conventions is not None and first.conventions["qrels"].endswith("robust03_qrels.txt")


def test_progress_hears_every_pair_and_changes_no_number() -> None:
    rng = np.random.default_rng(8)
    scores = {"m1": rng.uniform(0, 1, (20, 4)), "m2": rng.uniform(0, 1, (20, 4))}
    heard: list[tuple[float, int]] = []
    with_progress = D.discriminative_power_scores(scores, resamples=300, progress=lambda d, t: heard.append((d, t)))
    assert heard and heard[-1] == pytest.approx((12.0, 12)) and all(t == 12 for _, t in heard)
    assert [d for d, _ in heard] == sorted(d for d, _ in heard)
    assert with_progress.measures == D.discriminative_power_scores(scores, resamples=300).measures
