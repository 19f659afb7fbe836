"""Fusion on the real TREC 2003 Robust runs: the numbers in docs/fusion.md are the ones the code computes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stagewise import evaluate, read_qrels, read_run
from stagewise.fusion import fuse, method_names, normalization_names, optimize

SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "data" / "trec_robust03_runs"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "fusion.md"
TOP3 = ("pircRBa1", "aplrob03a", "uwmtCR0")

needs_data = pytest.mark.skipif(
    not (DATA / "robust03_qrels.txt").exists(),
    reason=f"the TREC 2003 Robust runs are not at {DATA} (research-only data kept outside the repository)",
)


def docs_table() -> dict[str, tuple[float, float]]:
    """``{fusion: (map, ndcg@10)}`` from the Robust 2003 table of docs/fusion.md."""
    rows = {}
    for line in DOCS.read_text().splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"0\.\d{4}", cells[1]):
            rows[cells[0]] = (float(cells[1]), float(cells[4]))
    return rows


@pytest.fixture(scope="module")
def robust():
    qrels = read_qrels(DATA / "robust03_qrels.txt")
    runs = {name: read_run(DATA / "runs" / f"input.{name}.gz", name=name) for name in TOP3}
    return qrels, runs


def test_docs_name_every_method_and_normalisation():
    text = DOCS.read_text()
    for name in method_names() + normalization_names():
        assert f"`{name}`" in text, name


@needs_data
@pytest.mark.parametrize(
    ("label", "method", "norm"),
    [
        ("rrf", "rrf", None),
        ("combsum, minmax", "combsum", "minmax"),
        ("combmnz, minmax", "combmnz", "minmax"),
        ("combsum, zscore", "combsum", "zscore"),
        ("combmax, minmax", "combmax", "minmax"),
        ("bordafuse", "bordafuse", None),
        ("isr", "isr", None),
        ("rbc", "rbc", None),
    ],
)
def test_docs_table_matches_the_fusions(robust, label, method, norm):
    qrels, runs = robust
    fused = fuse(runs, method, norm=norm, name=label)
    means = evaluate(qrels, fused, ["map", "ndcg@10"]).runs[0].means
    assert (round(means["map"], 4), round(means["ndcg@10"], 4)) == docs_table()[label]


@needs_data
def test_docs_table_matches_the_best_single_run(robust):
    qrels, runs = robust
    means = evaluate(qrels, runs["pircRBa1"], ["map", "ndcg@10"]).runs[0].means
    assert (round(means["map"], 4), round(means["ndcg@10"], 4)) == docs_table()["pircRBa1 (best single run)"]


@needs_data
def test_docs_table_matches_cross_validated_posfuse(robust):
    qrels, runs = robust
    report = optimize(runs, qrels, "posfuse", metric="map", folds=5, seed=0)
    means = evaluate(qrels, report.run, ["map", "ndcg@10"]).runs[0].means
    assert (round(means["map"], 4), round(means["ndcg@10"], 4)) == docs_table()["posfuse (5-fold CV)"]
    assert report.held_out_score == pytest.approx(means["map"])


@needs_data
def test_real_runs_fuse_every_query_and_keep_rrf_order_for_one_run(robust):
    _, runs = robust
    fused = fuse(runs, "rrf")
    assert fused.n_queries == 100
    single = fuse([runs["pircRBa1"]], "rrf")
    assert single.doc_ids.to_list() == runs["pircRBa1"].doc_ids.to_list()
