"""Comparing runs: tests against scipy and naive references, reproducibility, corrections, effect sizes."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stagewise.errors import StagewiseError
from stagewise.report import render, rich
from stagewise.stats import (
    adjust,
    bootstrap_test,
    compare,
    compare_scores,
    randomization_test,
    sign_test,
    t_test,
    wilcoxon_test,
)
from stagewise.stats import corrections as C
from stagewise.stats import resampling as R
from stagewise.stats.result import PAIR_KEYS, letters


def scores_of(n: int, runs: int = 3, seed: int = 0, metrics=("m",), step: float | None = None) -> dict:
    """Synthetic per-query scores: a shared query difficulty plus a per-run shift and noise."""
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    out = {}
    for r in range(runs):
        per = {}
        for m in metrics:
            v = np.clip(base + rng.normal(0.03 * r, 0.15, n), 0, 1)
            if step is not None:  # a discrete metric (P@10-like): many exactly tied permuted sums
                v = np.round(v / step) * step
            per[m] = {f"q{i:03d}": float(x) for i, x in enumerate(v)}
        out[f"run{r}"] = per
    return out


# --------------------------------------------------------------------------------------- naive references
def naive_exact_randomization(d: list[Fraction], alternative: str = "two-sided") -> Fraction:
    """All 2^n sign assignments, in exact rational arithmetic."""
    obs = sum(d)
    count = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        t = sum(s * x for s, x in zip(signs, d, strict=True))
        if alternative == "two-sided":
            count += abs(t) >= abs(obs)
        elif alternative == "greater":
            count += t >= obs
        else:
            count += t <= obs
    return Fraction(count, 2 ** len(d))


def naive_holm(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def naive_bh(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 1.0
    for rank in range(m - 1, -1, -1):
        i = order[rank]
        running = min(running, min(1.0, p[i] * m / (rank + 1)))
        out[i] = running
    return out


# ------------------------------------------------------------------------------------------------- scipy
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [5, 12, 30, 100, 700])
def test_t_test_equals_scipy(n: int, alternative: str) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n) + 0.05
    ref = stats.ttest_rel(b, a, alternative=alternative)
    got = t_test(a, b, alternative=alternative)
    assert abs(got.p_value - ref.pvalue) <= 1e-12
    assert abs(got.statistic - ref.statistic) <= 1e-12


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [6, 20, 49, 51, 300])
@pytest.mark.parametrize("discrete", [False, True])
def test_wilcoxon_equals_scipy(n: int, alternative: str, discrete: bool) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n) + 0.05
    if discrete:  # ties and zero differences: scipy switches to the normal approximation
        a, b = np.round(a, 1), np.round(b, 1)
    ref = stats.wilcoxon(b, a, alternative=alternative)
    got = wilcoxon_test(a, b, alternative=alternative)
    assert abs(got.p_value - ref.pvalue) <= 1e-12
    assert abs(got.statistic - ref.statistic) <= 1e-12


def test_all_pairs_t_and_wilcoxon_equal_scipy_per_pair() -> None:
    scores = scores_of(80, runs=5, metrics=("x", "y"), step=0.1)
    for test, ref in (("t", stats.ttest_rel), ("wilcoxon", stats.wilcoxon)):
        result = compare_scores(scores, test=test)
        assert len(result.pairs) == 2 * 10
        for p in result.pairs:
            qs = sorted(scores[p.a][p.metric])
            a = np.array([scores[p.a][p.metric][q] for q in qs])
            b = np.array([scores[p.b][p.metric][q] for q in qs])
            expected = ref(b, a)
            assert abs(p.p_value - expected.pvalue) <= 1e-12
            assert abs(p.statistic - expected.statistic) <= 1e-12


def test_sign_test_is_binomial_on_wins_and_losses() -> None:
    a = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    b = np.array([0.2, 0.3, 0.4, 0.5, 0.4, 0.6, 0.7 + 1e-12, 0.9])
    got = sign_test(a, b)
    assert got.statistic == 5  # one loss, two ties (one within the tolerance)
    assert got.p_value == pytest.approx(stats.binomtest(5, 6).pvalue, abs=1e-15)
    assert sign_test(a, b, alternative="greater").p_value == pytest.approx(7 / 64)


# ---------------------------------------------------------------------------------------- randomization
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [1, 2, 5, 9, 12])
def test_exact_randomization_equals_full_enumeration(n: int, alternative: str) -> None:
    rng = np.random.default_rng(100 + n)
    # Tenths, like P@10: exact rational differences, with many permuted sums equal to the observed one.
    a_t = rng.integers(0, 11, n)
    b_t = np.clip(a_t + rng.integers(-3, 5, n), 0, 10)
    a, b = a_t / 10, b_t / 10
    expected = naive_exact_randomization([Fraction(int(y - x), 10) for x, y in zip(a_t, b_t, strict=True)], alternative)
    if n < 2:
        with pytest.raises(StagewiseError):
            randomization_test(a, b, exact=True)
        return
    got = randomization_test(a, b, exact=True, alternative=alternative)
    assert got.p_value == float(expected)
    assert got.method.startswith("exact")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=10))
def test_exact_randomization_property(pairs: list[tuple[float, float]]) -> None:
    a = np.array([x for x, _ in pairs])
    b = np.array([y for _, y in pairs])
    d = b - a
    got = randomization_test(a, b, exact=True).p_value
    # Float reference with the same relative tolerance (the exact rational one would see float noise).
    obs = abs(d.sum())
    tol = R.REL_TOL * np.abs(d).sum()
    count = sum(
        abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= obs - tol
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    assert got == count / 2 ** len(d)


@pytest.mark.parametrize("n", [14, 18])
def test_monte_carlo_randomization_is_within_monte_carlo_error_of_exact(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n) + 0.15
    exact = randomization_test(a, b, exact=True).p_value
    B = 20_000
    for seed in range(3):
        mc = randomization_test(a, b, resamples=B, seed=seed, exact=False)
        assert mc.method == f"{B} random sign flips"
        assert abs(mc.p_value - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / B) + 2 / B


def test_monte_carlo_counts_equal_a_naive_loop_over_the_same_signs() -> None:
    rng = np.random.default_rng(3)
    d = np.round(rng.normal(0, 0.3, (4, 37)), 1)  # tenths: ties that the tolerance must resolve
    B = 700
    signs = np.concatenate([R.sign_block(5, k, 37) for k in range(3)])[:B]
    for alternative in ("two-sided", "greater", "less"):
        counts = R.randomization_counts(d, B, 5, alternative)
        for row in range(4):
            obs = d[row].sum()
            tol = R.REL_TOL * np.abs(d[row]).sum()
            perm = [np.sum(np.where(s == 1, -d[row], d[row])) for s in signs]
            ref = {
                "two-sided": sum(abs(t) >= abs(obs) - tol for t in perm),
                "greater": sum(t >= obs - tol for t in perm),
                "less": sum(t <= obs + tol for t in perm),
            }[alternative]
            assert counts[row] == ref


def test_randomization_p_value_estimator_and_default_exact_switch() -> None:
    a = [0.1, 0.2, 0.3]
    b = [0.2, 0.4, 0.6]
    auto = randomization_test(a, b)  # 2^3 <= 10,000: enumerated
    assert auto.method == "exact (all 2^3 sign assignments)" and auto.p_value == 0.25
    mc = randomization_test(a, b, exact=False, resamples=999, seed=1)
    counts = R.randomization_counts(np.array([[0.1, 0.2, 0.3]]), 999, 1)
    assert mc.p_value == (counts[0] + 1) / 1000
    with pytest.raises(StagewiseError, match="'exact' parameter"):
        randomization_test(np.zeros(30), np.ones(30), exact=True)


def test_randomization_is_reproducible_and_independent_of_chunking(monkeypatch) -> None:
    scores = scores_of(300, runs=4, metrics=("x", "y"))
    first = compare_scores(scores, test="randomization", resamples=3000, seed=11)
    again = compare_scores(scores, test="randomization", resamples=3000, seed=11)
    assert [p.p_value for p in first.pairs] == [p.p_value for p in again.pairs]
    monkeypatch.setattr(R, "CHUNK_BYTES", 8 * 300 * 7)  # 7-row chunks: blocks cut into pieces
    small = compare_scores(scores, test="randomization", resamples=3000, seed=11)
    assert [p.p_value for p in small.pairs] == [p.p_value for p in first.pairs]
    other = compare_scores(scores, test="randomization", resamples=3000, seed=12)
    assert [p.p_value for p in other.pairs] != [p.p_value for p in first.pairs]


def test_a_pair_gets_the_same_p_value_alone_or_among_others() -> None:
    scores = scores_of(200, runs=5)
    family = compare_scores(scores, test="randomization", resamples=2000, seed=3)
    alone = compare_scores({k: scores[k] for k in ("run1", "run3")}, test="randomization", resamples=2000, seed=3)
    assert alone.pairs[0].p_value == family.pair("m", "run1", "run3").p_value


def test_the_first_permutations_are_shared_across_counts() -> None:
    d = np.random.default_rng(1).normal(0, 1, (3, 50))
    whole = np.concatenate([R.sign_block(9, k, 50) for k in range(4)])
    assert np.array_equal(whole[:300], np.concatenate([R.sign_block(9, 0, 50), R.sign_block(9, 1, 50)])[:300])
    c1 = R.randomization_counts(d, 300, 9)
    c2 = R.randomization_counts(d, 1000, 9)
    assert np.all(c1 <= c2)


_CHILD = """
import json, sys
import numpy as np
from stagewise.stats import compare_scores
rng = np.random.default_rng(0)
base = rng.random(2000)
scores = {f"r{i}": {"m": np.clip(base + rng.normal(0.01 * i, 0.2, 2000), 0, 1)} for i in range(4)}
out = {}
for test in ("randomization", "bootstrap"):
    out[test] = [p.p_value for p in compare_scores(scores, test=test, resamples=2000, seed=5).pairs]
print(json.dumps(out))
"""


def test_p_values_do_not_depend_on_the_number_of_threads() -> None:
    outputs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
        proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]


# -------------------------------------------------------------------------------------------- bootstrap
def test_bootstrap_counts_equal_a_naive_loop_over_the_same_resamples() -> None:
    rng = np.random.default_rng(8)
    d = rng.normal(0.05, 0.2, (2, 25))
    B = 150
    weights = np.concatenate([R.bootstrap_block(4, k, 25) for k in range(3)])[:B]
    counts, means = R.bootstrap(d, B, 4, keep_means=True)
    for row in range(2):
        x = d[row]
        t_obs = x.mean() / (x.std(ddof=1) / math.sqrt(25))
        ref, ref_means = 0, []
        for w in weights:
            star = np.repeat(x, w)
            ref_means.append(star.mean())
            t = (star.mean() - x.mean()) / (star.std(ddof=1) / math.sqrt(25))
            ref += abs(t) >= abs(t_obs) * (1 - R.REL_TOL)
        assert counts[row] == ref
        np.testing.assert_allclose(means[:, row], ref_means, rtol=0, atol=1e-12)


def test_bootstrap_test_agrees_with_the_t_test_on_large_samples() -> None:
    rng = np.random.default_rng(2)
    a = rng.random(400)
    b = a + rng.normal(0.02, 0.2, 400)
    boot = bootstrap_test(a, b, resamples=20_000, seed=0)
    t = t_test(a, b)
    assert boot.statistic == pytest.approx(t.statistic, abs=1e-12)
    assert abs(boot.p_value - t.p_value) < 0.02


def test_bootstrap_interval_is_seeded_and_near_the_t_interval() -> None:
    scores = scores_of(500, runs=2)
    t_ci = compare_scores(scores, ci="t").pairs[0]
    boot = compare_scores(scores, ci="bootstrap", resamples=4000, seed=2).pairs[0]
    again = compare_scores(scores, ci="bootstrap", resamples=4000, seed=2).pairs[0]
    assert (boot.ci_low, boot.ci_high) == (again.ci_low, again.ci_high)
    width = t_ci.ci_high - t_ci.ci_low
    assert abs(boot.ci_low - t_ci.ci_low) < 0.1 * width
    assert abs(boot.ci_high - t_ci.ci_high) < 0.1 * width


# ------------------------------------------------------------------------------------------ corrections
def test_holm_hand_worked() -> None:
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06)
    assert adjust([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1, and monotone after sorting
    assert adjust([0.5, 0.3, 0.02], "holm") == pytest.approx([0.6, 0.6, 0.06])


def test_benjamini_hochberg_hand_worked() -> None:
    # sorted: 0.005 (x4/1 = 0.02), 0.01 (x4/2 = 0.02), 0.03 (x4/3 = 0.04), 0.04 (x4/4 = 0.04)
    assert adjust([0.01, 0.04, 0.03, 0.005], "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # step-up: a larger p can pull a smaller one's adjusted value down to its own
    assert adjust([0.01, 0.02, 0.03, 0.04, 0.05], "bh") == pytest.approx([0.05] * 5)
    assert adjust([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205], "bh") == pytest.approx(
        [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.0845714285714, 0.205]
    )


def test_bonferroni_and_none() -> None:
    assert adjust([0.01, 0.2, 0.6], "bonferroni") == pytest.approx([0.03, 0.6, 1.0])
    assert adjust([0.01, 0.2], "none").tolist() == [0.01, 0.2]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_corrections_equal_naive_loops(p: list[float]) -> None:
    assert C.holm(p) == pytest.approx(naive_holm(p), abs=1e-15)
    assert C.benjamini_hochberg(p) == pytest.approx(naive_bh(p), abs=1e-15)
    for name in C.CORRECTIONS:
        adj = adjust(p, name)
        assert np.all(adj >= np.asarray(p) - 1e-15) and np.all(adj <= 1.0)


def test_correction_names_and_errors() -> None:
    assert C.canonical("Holm-Bonferroni") == "holm" and C.canonical("fdr_bh") == "bh"
    with pytest.raises(StagewiseError, match="unknown correction 'sidak'; choose one of none, bonferroni, holm, bh, "
                       "holm-sidak, by"):
        adjust([0.1], "sidak")


def test_family_is_per_metric_or_all() -> None:
    scores = scores_of(60, runs=4, metrics=("x", "y"))
    per_metric = compare_scores(scores, correction="bonferroni")
    together = compare_scores(scores, correction="bonferroni", family="all")
    assert per_metric.conventions["family_size"] == 6 and together.conventions["family_size"] == 12
    for p in per_metric.pairs:
        assert p.p_adjusted == pytest.approx(min(1.0, 6 * p.p_value))
    for p in together.pairs:
        assert p.p_adjusted == pytest.approx(min(1.0, 12 * p.p_value))


# ----------------------------------------------------------------------------------------- effect sizes
def test_effect_sizes_hand_worked() -> None:
    scores = {"A": {"m": {"q1": 0.2, "q2": 0.4, "q3": 0.1, "q4": 0.5, "q5": 0.3}},
              "B": {"m": {"q1": 0.3, "q2": 0.6, "q3": 0.1, "q4": 0.4, "q5": 0.3 + 1e-12}}}  # fmt: skip
    p = compare_scores(scores).pairs[0]
    d = np.array([0.1, 0.2, 0.0, -0.1, 1e-12])
    assert (p.a, p.b) == ("A", "B")
    assert p.mean_diff == pytest.approx(d.mean(), abs=1e-15)
    assert (p.wins, p.ties, p.losses) == (2, 2, 1)
    sd = d.std(ddof=1)
    assert p.effect_size == pytest.approx(d.mean() / sd)
    half = stats.t.ppf(0.975, 4) * sd / math.sqrt(5)
    assert (p.ci_low, p.ci_high) == pytest.approx((d.mean() - half, d.mean() + half))
    ref = stats.ttest_rel(np.array([0.3, 0.6, 0.1, 0.4, 0.3 + 1e-12]), np.array([0.2, 0.4, 0.1, 0.5, 0.3]))
    ci = ref.confidence_interval()
    assert (p.ci_low, p.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    loose = compare_scores(scores, tie_tolerance=0.0).pairs[0]
    assert (loose.wins, loose.ties, loose.losses) == (3, 1, 1)


def test_identical_runs_give_p_one_for_every_test() -> None:
    scores = {"A": {"m": [0.1, 0.5, 0.3]}, "B": {"m": [0.1, 0.5, 0.3]}}
    for test in ("t", "wilcoxon", "randomization", "bootstrap", "sign"):
        p = compare_scores(scores, test=test, resamples=200).pairs[0]
        assert (p.statistic, p.p_value, p.mean_diff, p.effect_size) == (0.0, 1.0, 0.0, 0.0)
        assert (p.wins, p.ties, p.losses) == (0, 3, 0)


def test_constant_nonzero_difference() -> None:
    scores = {"A": {"m": [0.1, 0.2, 0.3, 0.4]}, "B": {"m": [0.2, 0.3, 0.4, 0.5]}}
    p = compare_scores(scores).pairs[0]
    assert p.statistic > 1e6 or math.isinf(p.statistic)
    assert p.p_value < 1e-6
    assert json.loads(render(compare_scores(scores), "json"))  # non-finite values become null, valid JSON


# ------------------------------------------------------------------------------------- families and table
def test_baseline_family_orients_pairs_from_the_baseline() -> None:
    scores = scores_of(100, runs=4)
    result = compare_scores(scores, baseline="run2")
    assert [(p.a, p.b) for p in result.pairs] == [("run2", "run0"), ("run2", "run1"), ("run2", "run3")]
    assert result.conventions["family"] == "each run against the baseline 'run2'"
    assert compare_scores(scores, baseline=2).pairs == result.pairs
    with pytest.raises(StagewiseError, match="baseline 'nope' is not one of the runs"):
        compare_scores(scores, baseline="nope")


def test_letters_mark_significantly_better_runs() -> None:
    n = 200
    rng = np.random.default_rng(0)
    base = rng.random(n)
    scores = {
        "weak": {"m": base},
        "mid": {"m": base + 0.1 + rng.normal(0, 0.05, n)},
        "strong": {"m": base + 0.2 + rng.normal(0, 0.05, n)},
        "mid2": {"m": base + 0.1 + rng.normal(0, 0.05, n)},
    }
    result = compare_scores(scores)
    assert result.labels == {"weak": "a", "mid": "b", "strong": "c", "mid2": "d"}
    assert result.better_than("strong", "m") == ["weak", "mid", "mid2"]
    assert result.better_than("mid", "m") == ["weak"]
    assert result.better_than("weak", "m") == []
    assert result.best("m") == ["strong"]
    text = render(result, "table")
    assert "strong  0.7" in text and "* abd" in text
    md = render(result, "markdown")
    assert "<sup>abd</sup>" in md and "**0.7" in md
    tex = render(result, "latex")
    assert "\\textsuperscript{abd}" in tex and "\\textbf{0.7" in tex


def test_letters_beyond_z() -> None:
    assert letters(28)[24:] == ["y", "z", "aa", "ab"]


def test_skip_policy_pairs_on_common_queries() -> None:
    scores = {
        "A": {"m": {"q1": 0.1, "q2": 0.2, "q3": 0.3, "q4": 0.9}},
        "B": {"m": {"q1": 0.2, "q2": 0.4, "q3": 0.5}},
        "C": {"m": {"q2": 0.1, "q3": 0.2, "q4": 0.3}},
    }
    result = compare_scores(scores, test="randomization")
    ab = result.pair("m", "A", "B")
    assert ab.n_queries == 3 and ab.mean_diff == pytest.approx(0.5 / 3)
    assert result.pair("m", "B", "C").n_queries == 2
    assert result.conventions["pairing"] == "each pair uses the queries both runs have scores for"
    assert result.conventions["n_queries"] == {"min": 2, "max": 3}
    deltas = result.per_query_deltas("m", "A", "C")
    assert [d["query_id"] for d in deltas] == ["q2", "q3", "q4"]
    assert [round(d["delta"], 10) for d in deltas] == [-0.1, -0.1, -0.6]
    with pytest.raises(StagewiseError, match="share 0 scored queries"):
        compare_scores({"A": {"m": {"q1": 0.1}}, "B": {"m": {"q2": 0.1}}})


def test_json_contract() -> None:
    result = compare_scores(scores_of(40, runs=3, metrics=("x", "y")), test="randomization", seed=4)
    data = json.loads(render(result, "json", per_query=True, top=2))
    assert {"pairs", "means"} <= set(data)
    assert set(data["means"]) == {"run0", "run1", "run2"} and set(data["means"]["run0"]) == {"x", "y"}
    for pair in data["pairs"]:
        assert list(pair)[: len(PAIR_KEYS)] == list(PAIR_KEYS)
        means = data["means"]
        assert pair["mean_diff"] == pytest.approx(means[pair["b"]][pair["metric"]] - means[pair["a"]][pair["metric"]])
        assert pair["test"] == "randomization" and pair["correction"] == "holm"
        assert pair["wins"] + pair["ties"] + pair["losses"] == 40
        assert pair["ci_low"] <= pair["mean_diff"] <= pair["ci_high"]
        assert pair["p_value"] <= pair["p_adjusted"] <= 1
    conv = data["conventions"]
    assert conv["seed"] == 4 and conv["permutations"] == 10_000 and conv["alternative"] == "two-sided"
    assert len(data["per_query"]) == 6 and len(data["per_query"][0]["deltas"]) == 4
    deltas = [d["delta"] for d in data["per_query"][0]["deltas"]]
    assert deltas == sorted(deltas, reverse=True)


def test_mean_diff_is_b_minus_a() -> None:
    scores = {"A": {"m": [0.1, 0.2, 0.3]}, "B": {"m": [0.3, 0.3, 0.6]}}
    p = compare_scores(scores).pairs[0]
    assert p.mean_diff == pytest.approx(0.2) and p.statistic > 0


def test_csv_has_every_pair_field() -> None:
    result = compare_scores(scores_of(30, runs=3))
    lines = render(result, "csv").splitlines()
    assert lines[0].split(",") == [*PAIR_KEYS, "n_queries", "significant"]
    assert len(lines) == 4


def test_bad_options_raise_stagewise_errors() -> None:
    scores = scores_of(10, runs=2)
    for kwargs, match in (
        ({"test": "kw"}, "unknown statistical test 'kw'; choose one of t, wilcoxon, randomization, bootstrap"),
        ({"alternative": "bigger"}, "'alternative' parameter"),
        ({"resamples": 0}, "'resamples' parameter of compare must be an int >= 1"),
        ({"seed": -1}, "'seed' parameter"),
        ({"alpha": 1.5}, "'alpha' parameter"),
        ({"ci": "normal"}, "'ci' parameter"),
        ({"family": "everything"}, "'family' parameter"),
        ({"corection": "bh"}, "unknown keyword.s. 'corection'; the options are test, baseline, correction"),
    ):
        with pytest.raises(StagewiseError, match=match):
            compare_scores(scores, **kwargs)
    with pytest.raises(StagewiseError, match="at least two runs"):
        compare_scores({"A": {"m": [0.1, 0.2]}})


def test_test_aliases() -> None:
    scores = scores_of(12, runs=2)
    assert compare_scores(scores, test="fisher").pairs[0].test == "randomization"
    assert compare_scores(scores, test="student").pairs[0].test == "t"


# ------------------------------------------------------------------------------------------- end to end
def test_compare_from_qrels_and_runs() -> None:
    qrels = {f"q{i}": {"d1": 1, "d2": 1} for i in range(12)}
    good = {f"q{i}": {"d1": 3.0, "d2": 2.0, "x": 1.0} for i in range(12)}
    bad = {f"q{i}": {"x": 3.0, "d1": 2.0, "y": 1.0} if i % 3 else {"d1": 3.0, "d2": 2.0} for i in range(12)}
    result = compare(qrels, {"bad": bad, "good": good}, ["P@2", "mrr"], test="randomization")
    p2 = result.pair("P@2", "bad", "good")
    assert p2.mean_diff == pytest.approx(0.5 * 8 / 12)
    assert (p2.wins, p2.ties, p2.losses) == (8, 4, 0)
    assert p2.p_value == 2 / 2**8  # exact: only the all-positive and all-negative flips are as extreme
    assert result.means["good"]["P@2"] == 1.0
    assert result.conventions["evaluation"]["missing_queries"].startswith("judged queries absent")
    assert result.better_than("good", "P@2") == ["bad"]


def test_compare_missing_skip_states_pairing() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}, "q3": {"d1": 1}}
    a = {"q1": {"d1": 1.0}, "q2": {"d1": 1.0}, "q3": {"x": 1.0, "d1": 0.5}}
    b = {"q1": {"x": 1.0, "d1": 0.5}, "q2": {"d1": 1.0}}
    zero = compare(qrels, {"a": a, "b": b}, ["mrr"])
    assert zero.pairs[0].n_queries == 3
    skip = compare(qrels, {"a": a, "b": b}, ["mrr"], missing="skip")
    assert skip.pairs[0].n_queries == 2
    assert skip.conventions["pairing"] == "each pair uses the queries both runs have scores for"


def test_rich_pairs_table_fits_the_terminal_without_cutting_cells():
    """At 80 columns the pairs table leaves out the statistic and the unadjusted p (and says so) instead of
    truncating every cell; a wide terminal shows every column."""
    from rich.console import Console

    rng = np.random.default_rng(4)
    scores = {
        f"a_long_run_name_{i}": {"map": {f"q{j}": float(v) for j, v in enumerate(rng.random(30))}} for i in range(3)
    }
    result = compare_scores(scores)

    def shown(width: int) -> str:
        console = Console(width=width, record=True, color_system=None)
        console.print(rich(result, show_pairs=True))
        return console.export_text()

    narrow, wide = shown(80), shown(200)
    assert "…" not in narrow
    assert "p_adj" in narrow and " stat " not in narrow and "left out at this width" in narrow
    assert " stat " in wide and "left out" not in wide
    assert "b - a" in wide  # runs are named by the letters of the table above
