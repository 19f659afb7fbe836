"""Many systems at once through the front doors: compare(test="anova" | "tukey-hsd" | "maxt"), standardisation,
the command line's outputs and the HTML report's section (issue 23).

Oracles: statsmodels' anova_lm for the ANOVA table on the TREC 2003 Robust runs, statsmodels' psturng for the
studentized range p-values, the library functions of stats.anova/multi/standardise (themselves checked against
slow references in test_stats_anova.py and test_stats_multi.py) for the numbers compare must pass through
unchanged, and the pairwise decisions for the letters.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.errors import ConventionError, StagewiseError
from stagewise.stats import anova as A
from stagewise.stats import compare_scores
from stagewise.stats import multi as M
from stagewise.stats import standardise as S
from stagewise.stats.catalogue import STANDARDISATIONS, TESTS

ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


def _scores(n: int = 12, m: int = 4, seed: int = 0) -> dict[str, dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, 1)) * 0.6 + np.linspace(0, 0.2, m)[None, :] + rng.normal(0, 0.05, (n, m))
    x = np.clip(x, 0, 1)
    return {f"r{j}": {"ap": {f"q{i:02d}": float(x[i, j]) for i in range(n)}} for j in range(m)}


def _matrix(scores: dict, metric: str = "ap") -> np.ndarray:
    runs = list(scores)
    queries = sorted(scores[runs[0]][metric])
    return np.array([[scores[r][metric][q] for r in runs] for q in queries])


@pytest.fixture(scope="module")
def robust():
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    from stagewise import evaluate

    runs = sorted((ROBUST / "runs").glob("input.*.gz"))
    return evaluate(ROBUST / "robust03_qrels.txt", [str(r) for r in runs], ["ap", "ndcg@10"])


def _robust_matrix(result, metric: str) -> np.ndarray:
    return np.column_stack([r.values[metric] for r in result.runs])


# ------------------------------------------------------------------------------------------------ registry
def test_the_many_system_tests_are_registry_entries_of_their_own_kind() -> None:
    many = [name for name in TESTS.names() if TESTS[name].kind == "many"]
    assert many == ["anova", "tukey-hsd", "maxt"]
    assert all(TESTS[name].kind == "paired" for name in TESTS.names() if name not in many)
    assert TESTS.lookup("Tukey").name == "tukey-hsd" and TESTS.lookup("westfall-young").name == "maxt"
    assert TESTS["tukey-hsd"].seeded and TESTS["maxt"].resampling and not TESTS["anova"].seeded
    assert STANDARDISATIONS.names() == ["none", "zscore", "std-cdf", "std-ab"]


# --------------------------------------------------------------------------------------- ANOVA and oracles
def test_the_anova_table_equals_statsmodels_on_the_robust_runs(robust) -> None:
    pd = pytest.importorskip("pandas")
    smf = pytest.importorskip("statsmodels.formula.api")
    sm = pytest.importorskip("statsmodels.api")
    comp = compare_scores(robust, test="anova")
    for metric in ("ap", "ndcg@10"):
        x = _robust_matrix(robust, metric)
        n, m = x.shape
        frame = pd.DataFrame(
            {"score": x.ravel(), "topic": np.repeat(np.arange(n), m), "system": np.tile(np.arange(m), n)}
        )
        ref = sm.stats.anova_lm(smf.ols("score ~ C(topic) + C(system)", data=frame).fit())
        table = comp.many[metric].anova
        for source, label in (("systems", "C(system)"), ("topics", "C(topic)"), ("residual", "Residual")):
            row = table.row(source)
            assert row.df == int(ref.loc[label, "df"])
            assert row.ss == pytest.approx(ref.loc[label, "sum_sq"], rel=1e-9)
            assert row.ms == pytest.approx(ref.loc[label, "mean_sq"], rel=1e-9)
            if source != "residual":
                assert row.f == pytest.approx(ref.loc[label, "F"], rel=1e-9)
                assert row.p == pytest.approx(ref.loc[label, "PR(>F)"], rel=1e-9, abs=1e-300)
        json_rows = {r["source"]: r for r in comp.to_dict()["many_systems"][["ap", "ndcg@10"].index(metric)]["anova"]}
        assert json_rows["systems"]["ss"] == table.row("systems").ss


def test_anova_pairs_are_tukeys_hsd_from_the_residual_variance() -> None:
    libqsturng = pytest.importorskip("statsmodels.stats.libqsturng")
    scores = _scores(20, 5, seed=3)
    x = _matrix(scores)
    comp = compare_scores(scores, test="anova")
    table = A.two_way_anova(x)
    se = np.sqrt(table.residual_variance / x.shape[0])
    for pair in comp.pairs:
        j, k = int(pair.a[1:]), int(pair.b[1:])
        q = (x[:, k].mean() - x[:, j].mean()) / se
        assert pair.statistic == pytest.approx(q, rel=1e-12)
        # psturng is an independent (approximate) studentized range distribution
        expected = float(np.asarray(libqsturng.psturng(abs(q), 5, table.residual_df)).ravel()[0])
        assert pair.p_value == pytest.approx(expected, abs=2e-3)
        assert pair.p_adjusted == pair.p_value


@pytest.mark.parametrize("test", ["tukey-hsd", "maxt"])
def test_compare_passes_the_library_p_values_through_unchanged(test: str) -> None:
    scores = _scores(15, 4, seed=5)
    x = _matrix(scores)
    comp = compare_scores(scores, test=test, resamples=3000, seed=11)
    ref = (M.tukey_hsd if test == "tukey-hsd" else M.maxt)(x, permutations=3000, seed=11)
    assert [p.p_value for p in comp.pairs] == ref.p_values.tolist()
    assert [(p.a, p.b) for p in comp.pairs] == [(f"r{a}", f"r{b}") for a, b in zip(ref.a, ref.b, strict=True)]
    again = compare_scores(scores, test=test, resamples=3000, seed=11)
    assert [p.p_value for p in again.pairs] == [p.p_value for p in comp.pairs]  # seeded
    assert comp.conventions["permutations"] == 3000 and comp.conventions["seed"] == 11


def test_intervals_and_effect_sizes_come_from_the_residual_variance() -> None:
    scores = _scores(25, 4, seed=7)
    x = _matrix(scores)
    many = compare_scores(scores, test="anova", ci_level=0.9).many["ap"]
    ci = A.system_intervals(x, 0.9)
    assert many.lower.tolist() == ci.lower.tolist() and many.upper.tolist() == ci.upper.tolist()
    assert many.margin == ci.margin and many.confidence == 0.9
    # ES_E2[j, k] = (mean_j - mean_k) / sqrt(V_E), by hand
    v_e = ((x - x.mean(1, keepdims=True) - x.mean(0) + x.mean()) ** 2).sum() / ((x.shape[0] - 1) * (x.shape[1] - 1))
    assert many.effect_sizes[2, 0] == pytest.approx((x[:, 2].mean() - x[:, 0].mean()) / np.sqrt(v_e), rel=1e-12)
    systems = {s["run"]: s for s in many.to_dict()["systems"]}
    assert systems["r1"]["ci_low"] == pytest.approx(float(ci.lower[1]))


def _assert_letters_match_decisions(comp, metric: str) -> None:
    many = comp.many[metric]
    for pair in comp.pairs:
        if pair.metric != metric:
            continue
        la, lb = (set(many.letters[many.runs.index(r)]) for r in (pair.a, pair.b))
        assert bool(la & lb) == (not pair.significant), (pair.a, pair.b, la, lb)


def test_the_letters_agree_with_the_pairwise_decisions_on_robust(robust) -> None:
    comp = compare_scores(robust, test="tukey-hsd", resamples=2000, seed=0)
    for metric in ("ap", "ndcg@10"):
        _assert_letters_match_decisions(comp, metric)
    many = comp.many["ap"]
    best = int(np.argmax(many.means))
    assert "a" in many.letters[best]
    # the decisions are those of the library's test on the same matrix
    ref = M.tukey_hsd(_robust_matrix(robust, "ap"), permutations=2000, seed=0)
    assert sum(p.significant for p in comp.pairs if p.metric == "ap") == int((ref.p_values < 0.05).sum())


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=3, max_value=7).flatmap(
        lambda m: st.tuples(st.just(m), st.lists(st.booleans(), min_size=m * (m - 1) // 2, max_size=m * (m - 1) // 2))
    )
)
def test_letters_share_a_letter_exactly_when_a_pair_is_not_significant(case) -> None:
    m, flags = case
    sig = np.zeros((m, m), dtype=bool)
    a, b = M.pairs_of(m)
    sig[a, b] = sig[b, a] = flags
    shown = M.letters(np.linspace(1, 0, m), sig)
    for j, k, s in zip(a, b, flags, strict=True):
        assert bool(set(shown[j]) & set(shown[k])) == (not s)


# ------------------------------------------------------------------------------------------ bad options
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"baseline": "r0"}, "compares every pair of runs at once; give no baseline"),
        ({"alternative": "greater"}, "is two-sided"),
        ({"family": "all"}, "family must be metric"),
        ({"standardise": "rank"}, "unknown standardisation 'rank'; choose one of none, zscore, std-cdf, std-ab"),
    ],
)
def test_options_a_many_system_test_cannot_honour_are_refused(kwargs, match) -> None:
    with pytest.raises(ConventionError, match=match):
        compare_scores(_scores(), test="tukey-hsd", **kwargs)


def test_bad_options_fail_before_any_file_is_read(tmp_path: Path) -> None:
    from stagewise import compare

    with pytest.raises(ConventionError, match="give no baseline"):
        compare(tmp_path / "absent.qrels", [tmp_path / "a.run", tmp_path / "b.run"], ["ap"], test="anova", baseline=0)


# ------------------------------------------------------------------------------------------ standardisation
@pytest.mark.parametrize(("how", "function"), [("zscore", S.z_scores), ("std-cdf", S.std_cdf), ("std-ab", S.std_ab)])
def test_standardised_scores_are_the_library_functions_of_the_reference_runs(how, function) -> None:
    scores = _scores(10, 4, seed=2)
    x = _matrix(scores)
    comp = compare_scores(scores, test="t", standardise=how, reference=("r0", "r2", "r3"))
    expected = function(x, S.reference(x[:, [0, 2, 3]]))
    for j, run in enumerate(comp.runs):
        assert comp.means[run]["ap"] == pytest.approx(float(expected[:, j].mean()), rel=1e-12)
    assert comp.conventions["standardise"] == STANDARDISATIONS[how].description
    assert comp.conventions["standardise_reference"] == ["r0", "r2", "r3"]
    # the paired tests ran on the standardised scores: the same p as on those scores given directly
    direct = {r: {"ap": {f"q{i:02d}": float(expected[i, j]) for i in range(10)}} for j, r in enumerate(comp.runs)}
    assert [p.p_value for p in comp.pairs] == pytest.approx([p.p_value for p in compare_scores(direct).pairs])


def test_standardisation_with_a_many_system_test_and_its_errors() -> None:
    scores = _scores(10, 4, seed=2)
    comp = compare_scores(scores, test="anova", standardise="zscore")
    z = S.z_scores(_matrix(scores))
    assert comp.many["ap"].means.tolist() == pytest.approx(z.mean(axis=0).tolist())
    assert comp.conventions["standardise_reference"] == ["r0", "r1", "r2", "r3"]
    with pytest.raises(ConventionError, match=r"reference run.s. 'zz' are not among the runs compared"):
        compare_scores(scores, standardise="zscore", reference=["zz", "r1"])
    with pytest.raises(ConventionError, match="at least 2 reference runs"):
        compare_scores(scores, standardise="zscore", reference="r1")
    flat = {r: {"ap": {"q1": 0.5, "q2": float(j)}} for j, r in enumerate("abc")}
    with pytest.raises(StagewiseError, match="same score on topic 0"):
        compare_scores(flat, standardise="zscore")
    # raw scores leave the output as it was: no standardise key
    assert "standardise" not in compare_scores(scores).conventions


# ---------------------------------------------------------------------------------------- command line
def _write(tmp_path: Path, topics: int, runs: int) -> tuple[str, list[str]]:
    """A qrels file of one relevant document per topic, and runs that rank it at j + 1 on an even topic i and at
    1 + (i + 2 j) % 5 on an odd one: the runs' AP differ on every topic (a standardisation has a spread)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i:02d} 0 rel{i} 1\n" for i in range(topics)))
    paths = []
    for j in range(runs):
        lines = []
        for i in range(topics):
            docs = [f"x{k}" for k in range(4)]
            docs.insert(j % 5 if i % 2 == 0 else (i + 2 * j) % 5, f"rel{i}")
            lines += [f"q{i:02d} Q0 {d} {r + 1} {10 - r} r{j}\n" for r, d in enumerate(docs)]
        path = tmp_path / f"r{j}.run"
        path.write_text("".join(lines))
        paths.append(str(path))
    return str(qrels), paths


def _invoke(*args: str):
    from stagewise.cli import app

    return CliRunner().invoke(app, ["compare", *args])


def test_the_command_line_writes_every_number_and_convention_in_json(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path, 16, 4)
    done = _invoke(qrels, *runs, "-m", "ap", "--test", "tukey-hsd", "-B", "500", "--seed", "3", "-f", "json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    conv = data["conventions"]
    assert (conv["test"], conv["permutations"], conv["seed"], conv["alpha"]) == ("tukey-hsd", 500, 3, 0.05)
    assert "system_interval" in conv and "letters" in conv and conv["family_size"] == 6
    (many,) = data["many_systems"]
    assert [r["source"] for r in many["anova"]] == ["systems", "topics", "residual"]
    assert many["residual_variance"] > 0 and many["interval_level"] == 0.95 and many["residual_df"] == 45
    assert [s["run"] for s in many["systems"]] == ["r0.run", "r1.run", "r2.run", "r3.run"]
    assert all(s["letters"] and s["ci_low"] < s["mean"] < s["ci_high"] for s in many["systems"])
    assert set(many["effect_sizes_e2"]["r0.run"]) == {"r1.run", "r2.run", "r3.run"}
    assert len(data["pairs"]) == 6 and all(p["test"] == "tukey-hsd" for p in data["pairs"])


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex", "csv"])
def test_the_command_line_shows_the_anova_and_the_intervals(tmp_path: Path, fmt: str) -> None:
    qrels, runs = _write(tmp_path, 16, 3)
    done = _invoke(qrels, *runs, "-m", "ap", "--test", "anova", "-f", fmt, "--standardise", "std-ab")
    assert done.exit_code == 0, done.output
    if fmt == "csv":
        assert done.stdout.splitlines()[0].startswith("metric,a,b,test")
        return
    assert "two-way ANOVA (topic x system), 16 topics x 3 runs" in done.stdout
    assert "group letters" in done.stdout and "residual" in done.stdout
    assert "std-AB" in done.stdout  # the standardisation is stated in the notes


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--test", "anova", "--baseline", "r0.run"], "give no baseline"),
        (["--test", "maxt", "--alternative", "less"], "is two-sided"),
        (["--standardise", "rank"], "unknown standardisation 'rank'"),
        (["--standardise", "zscore", "--reference", "nope"], "'nope' are not among the runs compared"),
    ],
)
def test_command_line_errors_are_one_line_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    qrels, runs = _write(tmp_path, 8, 3)
    done = _invoke(qrels, *runs, "-m", "ap", *extra)
    assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output


def test_reference_runs_may_be_named_by_path(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path, 8, 3)
    done = _invoke(qrels, *runs, "-m", "ap", "--standardise", "zscore", "--reference", runs[0], "--reference", "r2.run",
                   "-f", "json")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["conventions"]["standardise_reference"] == ["r0.run", "r2.run"]


# --------------------------------------------------------------------------------------------- the report
def test_the_html_report_has_the_anova_letters_and_error_bars() -> None:
    import stagewise
    from stagewise.report.html import render

    scores = _scores(10, 3, seed=1)
    qrels = {q: {"rel": 1} for q in scores["r0"]["ap"]}
    runs = {
        r: {q: {"rel": 2.0 if v > 0.5 else 1.0, "x": 1.5} for q, v in per["ap"].items()} for r, per in scores.items()
    }
    study = stagewise.study(qrels, runs, ["ap"], test="tukey-hsd", resamples=300, cutoffs=(1, 10))
    assert study.comparison.many["ap"].test == "tukey-hsd"
    page = render(study)
    assert "two-way ANOVA (topic x system), 10 topics x 3 runs" in page
    assert 'class="groups"' in page  # letters beside each mean of the comparison table
    assert "each run&#x27;s mean and interval" in page and "<svg" in page
    plain = render(stagewise.study(qrels, runs, ["ap"], cutoffs=(1, 10)))
    assert "two-way ANOVA" not in plain and 'class="groups"' not in plain


def test_letters_start_at_the_lowest_mean_where_lower_is_better() -> None:
    scores = {r: {"unjudged@10": per["ap"]} for r, per in _scores(20, 4, seed=8).items()}
    comp = compare_scores(scores, test="anova")
    many = comp.many["unjudged@10"]
    assert many.better == "lower"
    lowest = int(np.argmin(many.means))
    assert many.best_first()[0] == lowest and "a" in many.letters[lowest]
    _assert_letters_match_decisions(comp, "unjudged@10")


def test_a_many_system_test_runs_on_the_queries_every_run_has() -> None:
    scores = {
        "a": {"ap": {"q1": 0.1, "q2": 0.5, "q3": 0.3}},
        "b": {"ap": {"q1": 0.2, "q3": 0.4, "q4": 0.9}},
        "c": {"ap": {"q1": 0.0, "q2": 0.2, "q3": 0.35}},
    }
    comp = compare_scores(scores, test="anova")
    assert comp.many["ap"].n_topics == 2 and comp.conventions["pairing"] == "the queries every run has"
    assert comp.many["ap"].means.tolist() == pytest.approx([0.2, 0.3, 0.175])
    assert all(p.n_queries == 2 for p in comp.pairs)


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.floats(min_value=0.2, max_value=5.0))
def test_z_scores_make_the_comparison_blind_to_each_topics_scale_and_shift(seed: int, scale: float) -> None:
    scores = _scores(12, 4, seed=seed)
    rng = np.random.default_rng(seed + 1)
    stretch = {q: (scale * rng.uniform(0.5, 2.0), rng.uniform(-1, 1)) for q in scores["r0"]["ap"]}
    moved = {
        r: {"ap": {q: stretch[q][0] * v + stretch[q][1] for q, v in per["ap"].items()}} for r, per in scores.items()
    }
    a = compare_scores(scores, test="anova", standardise="zscore")
    b = compare_scores(moved, test="anova", standardise="zscore")
    assert b.many["ap"].anova.row("systems").f == pytest.approx(a.many["ap"].anova.row("systems").f, rel=1e-9)
    assert [p.p_value for p in b.pairs] == pytest.approx([p.p_value for p in a.pairs], rel=1e-6, abs=1e-12)
    assert b.many["ap"].letters == a.many["ap"].letters


def test_stagewise_report_takes_a_many_system_test_and_a_standardisation(tmp_path: Path) -> None:
    from stagewise.cli import app

    qrels, runs = _write(tmp_path, 10, 3)
    out = tmp_path / "report.html"
    args = [
        "report",
        qrels,
        *runs,
        "-m",
        "ap",
        "--test",
        "maxt",
        "-B",
        "200",
        "--standardise",
        "zscore",
        "-o",
        str(out),
    ]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    page = out.read_text()
    assert "two-way ANOVA (topic x system), 10 topics x 3 runs" in page and "z-scores per topic" in page
