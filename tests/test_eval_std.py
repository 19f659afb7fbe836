"""The standard deviation of per-query scores (``--std``, ``EvalResult.stds``) against ranx's ``return_std``."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.report import render

ranx = pytest.importorskip("ranx")

PAIRS = {"ndcg@10": "ndcg@10", "map@100": "map@100", "hits@5": "hits@5", "recall@20": "recall@20", "mrr": "mrr"}


def _collection(seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(15):  # every query judged and answered: ranx evaluates the queries both have
        docs = [f"d{i}" for i in range(50)]
        qrels[f"q{q}"] = {d: rng.choice([1, 1, 2, 3]) for d in rng.sample(docs, 6)}
        run[f"q{q}"] = {d: rng.random() for d in rng.sample(docs, 30)}
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_std_equals_ranx_return_std(seed: int) -> None:
    qrels, run = _collection(seed)
    ours = stagewise.evaluate(qrels, run, list(PAIRS)).stds()["run"]
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(PAIRS.values()), return_std=True)
    for name, ranx_name in PAIRS.items():
        assert ours[name] == pytest.approx(theirs[ranx_name]["std"], abs=1e-9), name


def test_std_rows_are_stated_and_never_marked_best(tmp_path) -> None:
    qrels, run = _collection(4)
    result = stagewise.evaluate(qrels, {"a": run, "b": {q: {d: -s for d, s in r.items()} for q, r in run.items()}},
                                ["ndcg@10"])  # fmt: skip
    table = render(result, "table", std=True)
    rows = [line.split() for line in table.splitlines() if line.startswith(("a", "b"))]
    assert [r[:2] for r in rows if r[1] == "std"] == [["a", "std"], ["b", "std"]]
    assert [r[0] for r in rows] == ["a", "a", "b", "b"]
    assert sum(r[-1].endswith("*") for r in rows) == 1 and not any(r[-1].endswith("*") for r in rows if r[1] == "std")
    assert "ddof 0" in table
    doc = json.loads(render(result, "json", std=True))
    assert doc["std"]["a"]["ndcg@10"] == pytest.approx(float(np.std(result.runs[0].values["ndcg@10"])))
    assert "ranx" in doc["conventions"]["std"]
    assert "std" not in json.loads(render(result, "json"))


def test_the_command_line_takes_std(tmp_path) -> None:
    qrels, run = _collection(5)
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {lab}\n" for q, r in qrels.items() for d, lab in r.items()))
    (tmp_path / "run.txt").write_text(
        "".join(f"{q} Q0 {d} {i + 1} {s} r\n" for q, r in run.items() for i, (d, s) in enumerate(r.items()))
    )
    out = CliRunner().invoke(app, ["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "-m", "map",
                                   "--std", "-f", "csv"])  # fmt: skip
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[lines.index("run,map") + 2].startswith("run.txt std,")
