"""``stagewise agreement`` and ``stagewise merge`` on qrels files: every figure equal to the peers' (scikit-learn,
statsmodels, krippendorff) computed here on the same aligned labels, and merged qrels equal to the library's
with the policy stated."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise.assess import merge_adjudicator, merge_majority, merge_mean
from stagewise.cli import app
from stagewise.data.readers import read_qrels


def _write_qrels(path: Path, labels: dict[tuple[str, str], int]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {label}\n" for (q, d), label in labels.items()))
    return path


@pytest.fixture
def assessors(tmp_path: Path) -> dict[str, dict[tuple[str, str], int]]:
    """Three assessors over 120 (query, doc) pairs, each skipping about a fifth, agreeing more often than not."""
    rng = random.Random(22)
    truth = {(f"q{rng.randint(1, 6)}", f"d{i}"): rng.choice([0, 0, 1, 2]) for i in range(120)}
    tables = {}
    for name in ("ann", "bob", "cy"):
        tables[name] = {
            pair: (label if rng.random() < 0.7 else rng.choice([0, 1, 2]))
            for pair, label in truth.items()
            if rng.random() > 0.2
        }
    return tables


def _files(tmp_path: Path, tables: dict[str, dict]) -> list[str]:
    return [str(_write_qrels(tmp_path / f"{name}.qrels", table)) for name, table in tables.items()]


def _run(args: list[str]) -> str:
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    return done.stdout


def test_agreement_json_equals_the_peers(tmp_path: Path, assessors: dict) -> None:
    from krippendorff import alpha
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    report = json.loads(_run(["agreement", *_files(tmp_path, assessors), "--format", "json"]))
    names = list(assessors)
    pairs = sorted(set().union(*assessors.values()))
    table = np.array([[assessors[n].get(p, np.nan) for n in names] for p in pairs], dtype=float)
    assert report["assessors"] == [f"{n}.qrels" for n in names]
    assert report["items"] == len(pairs)
    for entry in report["pairs"]:
        i, j = (names.index(entry[k].removesuffix(".qrels")) for k in ("first", "second"))
        both = ~np.isnan(table[:, i]) & ~np.isnan(table[:, j])
        assert entry["both"] == int(both.sum())
        x, y = table[both, i], table[both, j]
        assert entry["kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
        assert entry["kappa_linear"] == pytest.approx(cohen_kappa_score(x, y, weights="linear"), abs=1e-12)
        assert entry["kappa_quadratic"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"), abs=1e-12)
        assert sum(map(sum, entry["confusion"]["counts"])) == entry["both"]
    complete = table[~np.isnan(table).any(axis=1)].astype(int)
    assert report["fleiss_items"] == len(complete)
    assert report["fleiss_kappa"] == pytest.approx(fleiss_kappa(aggregate_raters(complete)[0]), abs=1e-12)
    for level in ("nominal", "ordinal"):
        expected = alpha(reliability_data=table.T, level_of_measurement=level)
        assert report[f"alpha_{level}"] == pytest.approx(expected, abs=1e-12)
    assert report["diff"] is None  # a diff only for two files
    assert [f["labelled"] for f in report["assessors_figures"]] == [len(assessors[n]) for n in names]


def test_agreement_of_two_files_gives_the_diff_and_binary_figures(tmp_path: Path, assessors: dict) -> None:
    from sklearn.metrics import cohen_kappa_score

    two = {n: assessors[n] for n in ("ann", "bob")}
    report = json.loads(_run(["agreement", *_files(tmp_path, two), "-f", "json", "-l", "1"]))
    shared = sorted(set(two["ann"]) & set(two["bob"]))
    x = [int(two["ann"][p] >= 1) for p in shared]
    y = [int(two["bob"][p] >= 1) for p in shared]
    assert report["relevance_level"] == 1
    assert report["pairs"][0]["kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
    diff = report["diff"]
    assert diff["added"] == len(set(two["bob"]) - set(two["ann"]))
    assert diff["removed"] == len(set(two["ann"]) - set(two["bob"]))
    assert diff["relabelled"] == sum(two["ann"][p] != two["bob"][p] for p in shared)


def test_agreement_table_names_every_figure(tmp_path: Path, assessors: dict) -> None:
    text = _run(["agreement", *_files(tmp_path, assessors)])
    for phrase in (
        "Fleiss' kappa",
        "Krippendorff's alpha",
        "nominal",
        "ordinal",
        "linear",
        "confusion:",
        "per assessor",
    ):
        assert phrase in text


@pytest.mark.parametrize(
    ("policy", "library"),
    [
        ("majority", lambda t: merge_majority(t)),
        ("majority(ties=min)", lambda t: merge_majority(t, ties="min")),
        ("adjudicator(name=cy.qrels)", lambda t: merge_adjudicator(t, "cy.qrels")),
        ("mean(threshold=1.5)", lambda t: merge_mean(t, threshold=1.5)),
    ],
)
def test_merge_writes_the_librarys_qrels_under_a_header_naming_the_policy(
    tmp_path: Path, assessors: dict, policy: str, library
) -> None:
    files = _files(tmp_path, assessors)
    out = tmp_path / "merged.qrels"
    done = CliRunner().invoke(app, ["merge", *files, "--policy", policy, "-o", str(out)])
    assert done.exit_code == 0, done.output
    expected = library({Path(f).name: f for f in files})
    header = out.read_text().splitlines()[0]
    assert header.startswith("# merged by stagewise: policy ") and str(expected.policy) in header
    assert "ann.qrels, bob.qrels, cy.qrels" in header
    assert read_qrels(str(out)).to_dict() == expected.qrels.to_dict()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agreement", "ONE"], "two qrels files or more"),
        (["merge", "A", "B", "--policy", "median"], "choose one of majority, max, adjudicator, mean"),
        (["merge", "A", "B", "--policy", "mean"], "needs threshold"),
        (["merge", "A", "B", "--policy", "adjudicator(name=zed)"], "adjudicator"),
    ],
)
def test_errors_are_one_line_exit_2(tmp_path: Path, assessors: dict, args: list[str], message: str) -> None:
    files = _files(tmp_path, {n: assessors[n] for n in ("ann", "bob")})
    args = [{"ONE": files[0], "A": files[0], "B": files[1]}.get(a, a) for a in args]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2, done.output
    assert message in done.output and "Traceback" not in done.output


def test_nan_figures_are_null_in_json(tmp_path: Path) -> None:
    """Two assessors who gave one label only: kappa is 0/0, printed as null (JSON has no NaN)."""
    files = _files(tmp_path, {"a": {("q", "d1"): 1, ("q", "d2"): 1}, "b": {("q", "d1"): 1, ("q", "d2"): 1}})
    report = json.loads(_run(["agreement", *files, "-f", "json"]))
    assert report["pairs"][0]["kappa"] is None and report["fleiss_kappa"] is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in report.values())


@pytest.mark.parametrize("command", ["agreement", "merge"])
def test_the_same_file_twice_is_refused(tmp_path: Path, command: str) -> None:
    a = _write_qrels(tmp_path / "a.qrels", {("q1", "d1"): 1, ("q1", "d2"): 0})
    b = _write_qrels(tmp_path / "b.qrels", {("q1", "d1"): 0})
    result = CliRunner().invoke(app, [command, str(a), str(b), str(tmp_path / "." / "a.qrels")])
    assert result.exit_code == 2, result.output
    assert "the same file as" in result.output and "Traceback" not in result.output
