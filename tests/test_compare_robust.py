"""Comparing the 17 real TREC 2003 Robust runs (../shared/data/trec_robust03_runs): the all-pairs table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import typer
from scipy import stats
from typer.testing import CliRunner

from stagewise.cli import compare_cmd
from stagewise.report import render

SHARED = Path(__file__).resolve().parents[2] / "shared"
ROBUST = SHARED / "data" / "trec_robust03_runs"

# MAP from SOURCE.md (trec_eval 10.0-rc3, -m map), to 4 decimals.
TREC_EVAL_MAP = {
    "InexpC2": 0.2249,
    "MU03rob01": 0.1929,
    "NLPR03vb10": 0.1055,
    "SABIR03BASE": 0.2021,
    "Sel50": 0.2190,
    "THUIRr0301": 0.2597,
    "UAmsT03RDesc": 0.2065,
    "UIUC03Rd1": 0.2424,
    "VTcdhgp1": 0.2649,
    "aplrob03a": 0.2998,
    "fub03IeOLKe3": 0.2503,
    "humR03dc": 0.1248,
    "oce03noXbmD": 0.1986,
    "pircRBa1": 0.3101,
    "rutcor03100": 0.0737,
    "uic0301": 0.2404,
    "uwmtCR0": 0.2763,
}


@pytest.fixture(scope="module")
def robust() -> tuple[Path, list[Path]]:
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    return ROBUST / "robust03_qrels.txt", sorted((ROBUST / "runs").glob("input.*.gz"))


@pytest.fixture(scope="module")
def all_pairs(robust):
    from stagewise.stats import compare

    qrels, runs = robust
    return compare(qrels, [str(r) for r in runs], ["map", "ndcg@10"], correction="holm")


def test_all_pairs_table_means_and_family(all_pairs) -> None:
    assert len(all_pairs.runs) == 17
    assert len(all_pairs.pairs) == 2 * 136
    assert all_pairs.conventions["family_size"] == 136
    assert all_pairs.conventions["n_queries"] == 100
    for run in all_pairs.runs:
        tag = run.removeprefix("input.").removesuffix(".gz")
        assert round(all_pairs.means[run]["map"], 4) == pytest.approx(TREC_EVAL_MAP[tag], abs=1e-9)
    assert all_pairs.best("map") == ["input.pircRBa1.gz"]


def test_t_test_p_values_equal_scipy_on_the_engine_scores(all_pairs, robust) -> None:
    from stagewise import evaluate

    qrels, runs = robust
    result = evaluate(qrels, [str(r) for r in runs], ["map", "ndcg@10"])
    values = {r.name: r.values for r in result.runs}
    for p in all_pairs.pairs:
        ref = stats.ttest_rel(values[p.b][p.metric], values[p.a][p.metric])
        assert abs(p.p_value - ref.pvalue) <= 1e-12
    for metric in ("map", "ndcg@10"):
        raw = np.array([p.p_value for p in all_pairs.pairs if p.metric == metric])
        adj = np.array([p.p_adjusted for p in all_pairs.pairs if p.metric == metric])
        order = np.argsort(raw, kind="stable")
        expected = np.maximum.accumulate(np.minimum(1.0, (136 - np.arange(136)) * raw[order]))
        np.testing.assert_allclose(adj[order], expected, rtol=0, atol=1e-15)


def test_significance_letters_agree_with_the_pairs(all_pairs) -> None:
    labels = all_pairs.labels
    best = "input.pircRBa1.gz"
    worse = all_pairs.better_than(best, "map")
    assert "input.rutcor03100.gz" in worse  # MAP 0.3101 vs 0.0737
    for other in worse:
        pair = all_pairs.pair("map", best, other)
        assert pair.p_adjusted < 0.05
    text = render(all_pairs, "markdown")
    row = next(line for line in text.splitlines() if best in line)
    assert "".join(labels[r] for r in worse) in row


def test_cli_same_seed_prints_identical_output(robust) -> None:
    qrels, runs = robust
    app = typer.Typer(add_completion=False)

    @app.callback()
    def _group() -> None:
        pass

    app.command("compare")(compare_cmd.compare_command)
    args = ["compare", str(qrels), *(str(r) for r in runs[:6]), "-m", "map,ndcg@10", "-t", "randomization"]
    runner = CliRunner()
    first = runner.invoke(app, [*args, "--seed", "7"], env={"COLUMNS": "200"})
    second = runner.invoke(app, [*args, "--seed", "7"], env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    assert "seed 7" in first.stdout and "15 comparisons per metric" in first.stdout
