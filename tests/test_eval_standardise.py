"""Score standardisation as an option of evaluation (issue 23): ``standardise_result`` and ``stagewise eval
--standardise HOW [--reference RUN]...``.

Oracles: the direct formula ``(x_ij - mean_i) / sd_i`` (sd with n - 1) written out in this file with plain
Python loops and ``statistics``, on random score matrices drawn by hypothesis; Phi from ``math.erf``; std-AB's
``0.5 + 0.15 z`` clipped; and what ``compare(..., standardise=...)`` gives for the same runs (its means must be
the same numbers, as standardisation is one convention shared by both commands).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stagewise
from stagewise.errors import ConventionError
from stagewise.stats import compare_scores
from stagewise.stats.standardise import standardise_result
from tests.test_compare_many import _write  # one relevant document per topic, placed differently per run


# ------------------------------------------------------------------------------------------------ helpers
def _result(x: np.ndarray, metrics: tuple[str, ...] = ("P@1",)) -> stagewise.EvalResult:
    """An EvalResult whose runs r0.. have the per-query values ``x[:, j]`` on every metric (built through the
    public evaluate, then given the values: the function only reads values, ids and names)."""
    from dataclasses import replace

    topics, runs = x.shape
    qrels = {f"q{i:02d}": {"d": 1} for i in range(topics)}
    base = stagewise.evaluate(qrels, {f"r{j}": {"q00": {"d": 1.0}} for j in range(runs)}, list(metrics))
    ids = np.array([f"q{i:02d}" for i in range(topics)])
    scored = [
        replace(
            r,
            query_ids=ids,
            values={m: x[:, j].copy() for m in metrics},
            means={m: float(x[:, j].mean()) for m in metrics},
        )
        for j, r in enumerate(base.runs)
    ]
    return replace(base, runs=scored)


def _naive(x: list[list[float]], ref_cols: list[int], how: str) -> list[list[float]]:
    """The formula, topic by topic, with no numpy."""
    out = []
    for row in x:
        ref = [row[c] for c in ref_cols]
        mu, sd = statistics.fmean(ref), statistics.stdev(ref)
        z = [(v - mu) / sd for v in row]
        if how == "std-cdf":
            z = [0.5 * (1 + math.erf(v / math.sqrt(2))) for v in z]
        elif how == "std-ab":
            z = [min(1.0, max(0.0, 0.5 + 0.15 * v)) for v in z]
        out.append(z)
    return out


matrices = st.integers(2, 9).flatmap(
    lambda topics: st.integers(2, 6).flatmap(
        lambda runs: st.lists(
            st.lists(st.floats(0, 1, allow_nan=False), min_size=runs, max_size=runs).filter(
                lambda row: max(row) - min(row) > 1e-3
            ),
            min_size=topics,
            max_size=topics,
        )
    )
)


# ------------------------------------------------------------------------------------------------ library
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(x=matrices, how=st.sampled_from(["zscore", "std-cdf", "std-ab"]), data=st.data())
def test_standardised_values_and_means_are_the_direct_formula(x, how, data) -> None:
    m = np.array(x)
    runs = m.shape[1]
    cols = sorted(data.draw(st.sets(st.integers(0, runs - 1), min_size=2, max_size=runs)))
    # the reference runs must differ on every topic for the formula to be defined
    spread = [max(row[c] for c in cols) - min(row[c] for c in cols) for row in x]
    if min(spread) <= 1e-3:
        return
    got = standardise_result(_result(m), how, [f"r{c}" for c in cols])
    want = _naive(x, cols, how)
    for j, run in enumerate(got.runs):
        expected = [row[j] for row in want]
        assert run.values["P@1"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert run.means["P@1"] == pytest.approx(statistics.fmean(expected), rel=1e-9, abs=1e-12)
    assert got.standardised["reference_runs"] == [f"r{c}" for c in cols]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(x=matrices, how=st.sampled_from(["zscore", "std-cdf", "std-ab"]))
def test_the_means_equal_what_compare_gives_for_the_same_runs(x, how) -> None:
    result = _result(np.array(x))
    mine = standardise_result(result, how)
    theirs = compare_scores(result, test="t", standardise=how)
    for name, means in mine.means.items():
        assert means["P@1"] == pytest.approx(theirs.means[name]["P@1"], rel=1e-12, abs=1e-12)


ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


@pytest.mark.parametrize("how", ["zscore", "std-cdf"])
def test_on_the_robust_runs_the_means_equal_compares_and_the_formula(how: str) -> None:
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    runs = sorted((ROBUST / "runs").glob("input.*.gz"))
    raw = stagewise.evaluate(ROBUST / "robust03_qrels.txt", [str(r) for r in runs], ["ap", "ndcg@10"])
    names = [r.name for r in raw.runs]
    reference = names[1:]
    got = standardise_result(raw, how, reference)
    theirs = compare_scores(raw, test="t", standardise=how, reference=tuple(reference))
    cols = [names.index(n) for n in reference]
    for metric in ("ap", "ndcg@10"):
        x = [[float(r.values[metric][i]) for r in raw.runs] for i in range(len(raw.runs[0].query_ids))]
        want = _naive(x, cols, how)
        for j, name in enumerate(names):
            assert got.means[name][metric] == pytest.approx(theirs.means[name][metric], rel=1e-12, abs=1e-12)
            assert got.means[name][metric] == pytest.approx(statistics.fmean(row[j] for row in want), rel=1e-9)


def test_zscores_average_to_zero_over_all_runs_when_every_run_is_the_reference() -> None:
    rng = np.random.default_rng(4)
    got = standardise_result(_result(rng.uniform(0, 1, (20, 5))), "z")  # an alias
    assert sum(got.means[r]["P@1"] for r in got.means) == pytest.approx(0.0, abs=1e-12)
    assert got.standardised["method"] == "zscore"
    assert "standardised zscore" in repr(got) and "standardised zscore" in got._repr_html_()


def test_raw_scores_return_the_result_itself_and_the_input_is_unchanged() -> None:
    x = np.random.default_rng(1).uniform(0, 1, (6, 3))
    result = _result(x)
    assert standardise_result(result, "none") is result
    standardise_result(result, "std-ab")
    assert np.array_equal(result.runs[0].values["P@1"], x[:, 0]) and result.standardised is None
    assert "standardised" not in result.conventions_report() and not any("standardised" in n for n in result.notes())


def test_only_the_queries_every_run_has_are_standardised() -> None:
    from dataclasses import replace

    x = np.random.default_rng(2).uniform(0, 1, (6, 3))
    result = _result(x)
    short = replace(result.runs[1], query_ids=result.runs[1].query_ids[1:], values={"P@1": x[1:, 1]})
    got = standardise_result(replace(result, runs=[result.runs[0], short, result.runs[2]]), "zscore")
    want = _naive(x[1:].tolist(), [0, 1, 2], "zscore")
    assert [r.query_ids.tolist() for r in got.runs] == [[f"q{i:02d}" for i in range(1, 6)]] * 3
    assert got.runs[2].values["P@1"] == pytest.approx([row[2] for row in want])
    assert got.standardised["queries"] == 5


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (["r0", "nope"], "'nope' are not among the runs evaluated"),
        (["r1"], "at least 2 reference runs"),
        (["r1", "r1"], "at least 2 reference runs"),
    ],
)
def test_bad_references_are_convention_errors(reference, message) -> None:
    result = _result(np.random.default_rng(3).uniform(0, 1, (5, 3)))
    with pytest.raises(ConventionError, match=message):
        standardise_result(result, "zscore", reference)


def test_a_query_on_which_every_reference_run_scores_the_same_is_named() -> None:
    x = np.array([[0.2, 0.5, 0.9], [0.3, 0.3, 0.8], [0.1, 0.4, 0.6]])
    with pytest.raises(ConventionError, match=re.escape("every reference run scores 0.3 on query q01 (1 such query)")):
        standardise_result(_result(x), "zscore", ["r0", "r1"])
    assert standardise_result(_result(x), "zscore", ["r0", "r2"]).standardised["queries"] == 3


def test_one_run_alone_is_refused_its_sd_is_undefined() -> None:
    """Decision: one run with no reference cannot be standardised (a sd of one value is undefined); the error says
    so rather than returning NaN or the raw scores."""
    with pytest.raises(ConventionError, match="at least 2 reference runs"):
        standardise_result(_result(np.array([[0.2], [0.4]])), "zscore")


# ------------------------------------------------------------------------------------------- command line
def _invoke(*args: str):
    from stagewise.cli import app

    return CliRunner().invoke(app, ["eval", *args])


def test_the_json_states_the_standardisation_and_holds_its_numbers(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path, 10, 4)
    done = _invoke(
        qrels,
        *runs,
        "-m",
        "ap",
        "--standardise",
        "zscore",
        "--reference",
        runs[0],
        "--reference",
        "r2.run",
        "-f",
        "json",
        "-q",
    )
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    std = data["conventions"]["standardised"]
    assert std["method"] == "zscore" and std["reference_runs"] == ["r0.run", "r2.run"] and std["queries"] == 10
    raw = stagewise.evaluate(qrels, runs, ["ap"])
    x = [[raw.runs[j].values["ap"][i] for j in range(4)] for i in range(10)]
    want = _naive(x, [0, 2], "zscore")
    for j, name in enumerate(["r0.run", "r1.run", "r2.run", "r3.run"]):
        assert data["runs"][name]["ap"] == pytest.approx(statistics.fmean(row[j] for row in want))
        assert list(data["per_query"][name]["ap"].values()) == pytest.approx([row[j] for row in want])


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_the_tables_state_the_standardisation(tmp_path: Path, fmt: str) -> None:
    qrels, runs = _write(tmp_path, 8, 3)
    done = _invoke(qrels, *runs, "-m", "ap", "--standardise", "std-ab", "-f", fmt)
    assert done.exit_code == 0, done.output
    assert "standardised: std-ab from reference runs [r0.run, r1.run, r2.run]" in done.stdout.replace("\\_", "_")


def test_without_the_option_the_output_is_the_raw_evaluation(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path, 8, 3)
    plain = _invoke(qrels, *runs, "-m", "ap", "-f", "json")
    raw = _invoke(qrels, *runs, "-m", "ap", "-f", "json", "--standardise", "none")
    assert plain.exit_code == 0 and plain.stdout == raw.stdout and "standardised" not in plain.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--standardise", "zscore", "--reference", "nope"], "'nope' are not among the runs evaluated"),
        (["--standardise", "rank"], "unknown standardisation 'rank'"),
        (["--reference", "r0.run"], "--reference is a reference run of --standardise"),
    ],
)
def test_command_line_errors_are_one_line_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    qrels, runs = _write(tmp_path, 8, 3)
    done = _invoke(qrels, *runs, "-m", "ap", *extra)
    assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output


def test_one_run_without_a_reference_is_a_one_line_error(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path, 8, 1)
    done = _invoke(qrels, *runs, "-m", "ap", "--standardise", "zscore")
    assert done.exit_code == 2 and "at least 2 reference runs" in done.output and "Traceback" not in done.output
