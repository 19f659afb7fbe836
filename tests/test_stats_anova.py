"""Two-way ANOVA without replication, residual-variance intervals, effect sizes, and score standardisation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stagewise.errors import InputError
from stagewise.stats import anova as A
from stagewise.stats import standardise as S

ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


def _statsmodels_table(x: np.ndarray):
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    sm = pytest.importorskip("statsmodels.api")
    n, m = x.shape
    frame = pd.DataFrame({"score": x.ravel(), "topic": np.repeat(np.arange(n), m), "system": np.tile(np.arange(m), n)})
    return sm.stats.anova_lm(smf.ols("score ~ C(topic) + C(system)", data=frame).fit())


def _assert_equal_to_statsmodels(x: np.ndarray) -> None:
    ref = _statsmodels_table(x)
    ours = A.two_way_anova(x)
    for source, label in (("systems", "C(system)"), ("topics", "C(topic)"), ("residual", "Residual")):
        row = ours.row(source)
        assert row.df == int(ref.loc[label, "df"])
        assert row.ss == pytest.approx(ref.loc[label, "sum_sq"], rel=1e-9, abs=1e-12)
        assert row.ms == pytest.approx(ref.loc[label, "mean_sq"], rel=1e-9, abs=1e-12)
        if source != "residual":
            assert row.f == pytest.approx(ref.loc[label, "F"], rel=1e-9)
            assert row.p == pytest.approx(ref.loc[label, "PR(>F)"], rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("shape", [(5, 3), (30, 8), (100, 17)])
def test_two_way_table_equals_statsmodels_on_random_matrices(shape) -> None:
    rng = np.random.default_rng(sum(shape))
    n, m = shape
    # a topic effect far larger than the system effect, as in IR data
    x = rng.uniform(0, 1, (n, 1)) * 0.6 + rng.uniform(0, 0.1, (1, m)) + rng.normal(0, 0.05, (n, m))
    _assert_equal_to_statsmodels(x)


@pytest.fixture(scope="module")
def robust_ap() -> np.ndarray:
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    from stagewise import evaluate

    runs = sorted((ROBUST / "runs").glob("input.*.gz"))
    result = evaluate(ROBUST / "robust03_qrels.txt", [str(r) for r in runs], ["ap"])
    ids = result.runs[0].query_ids
    assert all(list(r.query_ids) == list(ids) for r in result.runs)
    return np.column_stack([r.values["ap"] for r in result.runs])


def test_two_way_table_equals_statsmodels_on_the_robust_runs(robust_ap) -> None:
    assert robust_ap.shape == (100, 17)
    _assert_equal_to_statsmodels(robust_ap)
    table = A.two_way_anova(robust_ap)
    assert table.row("systems").p < 1e-10  # 17 systems with MAP from 0.07 to 0.31 differ


def test_one_way_equals_scipy_f_oneway() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (12, 4))
    ours = A.one_way_anova(x).row("systems")
    ref = stats.f_oneway(*x.T)
    assert ours.f == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-10)
    # the two-way residual removes the topic variance: never larger than the one-way residual
    assert A.two_way_anova(x).row("residual").ss <= A.one_way_anova(x).row("residual").ss + 1e-12


def test_intervals_and_effect_sizes_follow_the_residual_variance() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (20, 5))
    n, m = x.shape
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    v_e = (resid**2).sum() / ((n - 1) * (m - 1))
    ci = A.system_intervals(x, confidence=0.9)
    margin = stats.t.ppf(0.95, (n - 1) * (m - 1)) * np.sqrt(v_e / n)
    assert ci.margin == pytest.approx(margin, rel=1e-12)
    np.testing.assert_allclose(ci.lower, x.mean(axis=0) - margin, rtol=1e-12)
    es = A.effect_sizes(x)
    assert es[1, 3] == pytest.approx((x[:, 1].mean() - x[:, 3].mean()) / np.sqrt(v_e), rel=1e-12)
    np.testing.assert_allclose(es, -es.T)


@pytest.mark.parametrize(
    ("scores", "match"),
    [
        ([1.0, 2.0], "1 dimension"),
        ([[0.1, 0.2]], "1 topics x 2 systems"),
        ([[0.1, float("nan")], [0.2, 0.3]], "score of system 1 on topic 0"),
        ([["a", "b"], ["c", "d"]], "not a numeric matrix"),
    ],
)
def test_bad_matrices_are_one_line_input_errors(scores, match) -> None:
    with pytest.raises(InputError, match=match):
        A.two_way_anova(scores)
    with pytest.raises(InputError):
        A.system_intervals(np.ones((3, 3)) + np.eye(3), confidence=1.5)


# ------------------------------------------------------------------------------------------ standardisation
def test_z_scores_use_the_reference_runs_mean_and_sd() -> None:
    rng = np.random.default_rng(9)
    ref_runs = rng.uniform(0, 1, (10, 6))
    new = rng.uniform(0, 1, (10, 2))
    ref = S.reference(ref_runs)
    z = S.z_scores(new, ref)
    for i in range(10):
        mu, sd = ref_runs[i].mean(), ref_runs[i].std(ddof=1)
        np.testing.assert_allclose(z[i], (new[i] - mu) / sd, rtol=1e-12)
    np.testing.assert_allclose(S.std_cdf(new, ref), stats.norm.cdf(z), rtol=1e-12)
    np.testing.assert_allclose(S.std_ab(new, ref), np.clip(0.5 + 0.15 * z, 0, 1), rtol=1e-12)
    # standardised against itself, every topic has mean 0 and sd 1
    self_z = S.z_scores(ref_runs)
    np.testing.assert_allclose(self_z.mean(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(self_z.std(axis=1, ddof=1), 1, rtol=1e-12)


def test_standardisation_refuses_flat_topics_and_mismatched_topics() -> None:
    with pytest.raises(InputError, match="same score on topic 1"):
        S.reference([[0.1, 0.3], [0.0, 0.0], [0.2, 0.5]])
    ref = S.reference([[0.1, 0.3], [0.2, 0.5]])
    with pytest.raises(InputError, match="3 topics but the reference has 2"):
        S.z_scores(np.ones((3, 1)), ref)
