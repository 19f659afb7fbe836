"""``stagewise gate``: the verdict on the Robust 2003 runs, the interval against independent references (scipy's t
interval on pytrec_eval's per-query nDCG, a naive reciprocal rank), every output format read back, the RAG
ceilings on records whose labels are known by construction, determinism, and bad input as one line, exit 2."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import ConventionError, InputError, MetricError
from stagewise.gate import Check, GateOptions, GateResult, gate

ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"
runner = CliRunner()


@pytest.fixture(scope="module")
def robust() -> dict[str, str]:
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    runs = ROBUST / "runs"
    return {
        "qrels": str(ROBUST / "robust03_qrels.txt"),
        "best": str(runs / "input.pircRBa1.gz"),  # the best MAP of the 17
        "weak": str(runs / "input.humR03dc.gz"),  # about 0.20 lower in nDCG@10
    }


def invoke(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, ["gate", *args], env={"COLUMNS": "200", **(env or {})})


def _read_trec(path: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            qid, _, doc, _, score, *_ = line.split()
            run.setdefault(qid, {})[doc] = float(score)
    return run


# ------------------------------------------------------------------------------------------ the verdict
def test_a_run_that_drops_ndcg_beyond_the_margin_fails_with_scipys_interval_on_pytrec_evals_scores(robust) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    result = gate(robust["qrels"], robust["weak"], robust["best"], metrics="ndcg@10", max_drop=0.01)
    check = result.checks[0]
    # the reference: pytrec_eval's per-query ndcg_cut_10 and scipy's Student t interval of the differences
    qrels: dict[str, dict[str, int]] = {}
    for line in Path(robust["qrels"]).read_text().splitlines():
        qid, _, doc, rel = line.split()
        qrels.setdefault(qid, {})[doc] = int(rel)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    weak, best = evaluator.evaluate(_read_trec(robust["weak"])), evaluator.evaluate(_read_trec(robust["best"]))
    d = np.array([weak.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] - best[q]["ndcg_cut_10"] for q in sorted(qrels)])
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert (check.n, check.mean_diff) == (100, pytest.approx(d.mean(), abs=1e-12))
    assert (check.ci_low, check.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert check.observed == check.ci_low and check.threshold == -0.01
    assert low < -0.01 and not check.passed and not result.passed
    assert check.p_value == pytest.approx(stats.ttest_rel(d, np.zeros_like(d)).pvalue, abs=1e-12)


def test_the_cli_exits_1_on_the_drop_and_0_on_a_run_compared_with_a_copy_of_itself(robust, tmp_path: Path) -> None:
    dropped = invoke(
        robust["qrels"], robust["weak"], "--baseline", robust["best"], "-m", "ndcg@10", "--max-drop", "0.01"
    )
    assert dropped.exit_code == 1, dropped.output
    assert dropped.stderr.startswith("stagewise gate: FAIL: 1 of 1 checks failed")
    assert len(dropped.stderr.splitlines()) == 1  # the verdict is one line, on stderr
    copy = tmp_path / "copy.gz"
    shutil.copyfile(robust["best"], copy)
    same = invoke(robust["qrels"], str(copy), "--baseline", robust["best"], "-m", "ndcg@10", "--max-drop", "0.01")
    assert same.exit_code == 0, same.output
    note, verdict = same.stderr.splitlines()  # a copy passes by construction: said, not failed
    assert note.startswith("stagewise gate: note: ") and "have the same content" in note
    assert verdict == "stagewise gate: pass: 1 of 1 checks passed (copy.gz against baseline input.pircRBa1.gz)"
    assert "pass  margin ndcg@10" in same.stdout


def test_a_wider_margin_lets_the_same_drop_pass_and_floors_are_the_runs_means(robust) -> None:
    from stagewise import evaluate

    means = evaluate(robust["qrels"], robust["weak"], ["ndcg@10", "recall@100"]).means
    [mean] = means.values()
    result = gate(
        robust["qrels"],
        robust["weak"],
        robust["best"],
        GateOptions("ndcg@10", max_drop=0.5, floors={"recall@100": 0.3, "ndcg@10": mean["ndcg@10"] + 1e-9}),
    )
    margin, recall, ndcg = result.checks
    assert margin.passed and margin.ci_low >= -0.5
    assert (recall.kind, recall.observed, recall.passed) == ("floor", mean["recall@100"], mean["recall@100"] >= 0.3)
    assert (ndcg.observed, ndcg.passed) == (mean["ndcg@10"], False)  # just above the mean: fails
    assert [c.id for c in result.failures] == ["floor ndcg@10"]


# ------------------------------------------------------------------ the margin against a naive reference
ranks = st.sampled_from([1, 2, 4, None])  # where the one relevant document stands (None: not retrieved)


def _run_with(positions: list[int | None]) -> dict[str, dict[str, float]]:
    run = {}
    for q, rank in enumerate(positions):
        docs = {f"x{k}": 10.0 - k for k in range(1, 5)}
        if rank is not None:
            docs[f"x{rank}"] = -1.0  # out of the way, below everything
            docs[f"rel{q}"] = 10.0 - rank
        run[f"q{q}"] = docs
    return run


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(ranks, ranks), min_size=3, max_size=12), st.floats(0.0, 0.6))
def test_the_margin_is_the_t_interval_of_naive_reciprocal_ranks(pairs, max_drop: float) -> None:
    qrels = {f"q{q}": {f"rel{q}": 1} for q in range(len(pairs))}
    base, new = _run_with([a for a, _ in pairs]), _run_with([b for _, b in pairs])
    rr = lambda rank: 0.0 if rank is None else 1.0 / rank  # noqa: E731
    d = np.array([rr(b) - rr(a) for a, b in pairs])
    check = gate(qrels, new, base, metrics="mrr", max_drop=max_drop).checks[0]
    sd = d.std(ddof=1)
    half = stats.t.ppf(0.975, len(d) - 1) * sd / math.sqrt(len(d))
    assert check.ci_low == pytest.approx(d.mean() - half, abs=1e-9)
    if abs(check.ci_low + max_drop) > 1e-9:  # away from the boundary, the verdict is the interval's
        assert check.passed == (d.mean() - half >= -max_drop)
    looser = gate(qrels, new, base, metrics="mrr", max_drop=max_drop + 0.1).checks[0]
    assert looser.passed or not check.passed  # a wider margin never turns a pass into a fail


def test_a_measure_where_lower_is_better_is_held_by_the_upper_bound() -> None:
    qrels = {f"q{i}": {"r": 1, "j1": 0, "j2": 0} for i in range(4)}
    judged = {f"q{i}": {"r": 3.0, "j1": 2.0, "j2": 1.0} for i in range(4)}
    unjudged = {f"q{i}": {"r": 3.0, "u1": 2.0, "u2": 1.0} for i in range(4)}
    check = gate(qrels, unjudged, judged, metrics="unj@3", max_drop=0.1).checks[0]
    assert check.mean_diff == pytest.approx(2 / 3) and check.observed == check.ci_high and check.threshold == 0.1
    assert not check.passed and "upper bound" in check.statement
    assert gate(qrels, judged, unjudged, metrics="unj@3", max_drop=0.1).passed  # fewer unjudged: better


# -------------------------------------------------------------------------------------------- RAG ceilings
def _records(path: Path, labels: list[str]) -> Path:
    """Records whose label is known by construction: evidence in context or not, answer right or not."""
    cells = {
        "ok": (True, True),
        "generation_failure": (True, False),
        "lucky": (False, True),
        "retrieval_failure": (False, False),
    }
    with path.open("w") as fh:
        for i, label in enumerate(labels):
            evidence, correct = cells[label]
            fh.write(
                json.dumps(
                    {
                        "id": f"s{i}",
                        "retrieved": ["gold", "x"] if evidence else ["x", "y"],
                        "gold_evidence": ["gold"],
                        "answer": "Jane Austen" if correct else "Charlotte Bronte",
                        "gold_answers": ["Jane Austen"],
                    }
                )
                + "\n"
            )
    return path


def test_ceilings_hold_the_share_of_each_label(tmp_path: Path) -> None:
    records = _records(tmp_path / "rag.jsonl", ["ok"] * 6 + ["retrieval_failure"] * 3 + ["generation_failure"])
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    run = {"q1": {"d1": 2.0, "x": 1.0}, "q2": {"d2": 2.0, "x": 1.0}}
    result = gate(
        qrels, run, dict(run), metrics="mrr", rag=records,
        ceilings={"retrieval_failure": 0.3, "generation_failure": 0.05},
    )  # fmt: skip
    _, retrieval, generation = result.checks
    assert (retrieval.observed, retrieval.passed, retrieval.n) == (0.3, True, 10)  # at the ceiling passes
    assert (generation.observed, generation.passed) == (0.1, False)
    assert result.rag.counts()["ok"] == 6 and "rag" in result.conventions
    cli = invoke(_write(tmp_path, qrels, run, "a"), _write(tmp_path, qrels, run, "b"), "-b", str(tmp_path / "a.run"))
    assert cli.exit_code == 2  # b.run against a.run: 'b' is the run, the baseline is given
    done = invoke(
        str(tmp_path / "qrels.txt"), str(tmp_path / "b.run"), "-b", str(tmp_path / "a.run"), "-m", "mrr",
        "--rag", str(records), "--max", "retrieval_failure=0.2", "--format", "json",
    )  # fmt: skip
    assert done.exit_code == 1, done.output
    data = json.loads(done.stdout)
    assert [c["id"] for c in data["checks"]] == ["margin mrr", "ceiling retrieval_failure"]
    assert [c["passed"] for c in data["checks"]] == [True, False]


def _write(folder: Path, qrels: dict, run: dict, name: str) -> str:
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items()))
    lines = [f"{q} Q0 {d} {i + 1} {s} {name}\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())]
    (folder / f"{name}.run").write_text("".join(lines))
    return str(folder / "qrels.txt")


# --------------------------------------------------------------------------------------------- formats
@pytest.fixture(scope="module")
def two_files(tmp_path_factory) -> tuple[str, str, str]:
    """Three queries; the new run loses the first relevant document on one of them."""
    folder = tmp_path_factory.mktemp("gate")
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(1, 4)}
    old = {q: {d: 2.0, "x": 1.0} for q, docs in qrels.items() for d in docs}
    new = {**old, "q2": {"x": 2.0, "d2": 1.0}}
    path = _write(folder, qrels, old, "old")
    _write(folder, qrels, new, "new")
    return path, str(folder / "new.run"), str(folder / "old.run")


def _gate_args(two_files, *more: str) -> list[str]:
    qrels, new, old = two_files
    return [qrels, new, "--baseline", old, "-m", "mrr", "--min", "P@1=0.5", "--max-drop", "0.05", *more]


def test_json_is_the_results_contract(two_files) -> None:
    done = invoke(*_gate_args(two_files, "--format", "json"))
    assert done.exit_code == 1
    data = json.loads(done.stdout)
    assert set(data) == {"passed", "verdict", "run", "baseline", "checks", "conventions"}
    assert data["passed"] is False and data["verdict"] == done.stderr.removeprefix("stagewise gate: ").rstrip("\n")
    assert [c["id"] for c in data["checks"]] == ["margin mrr", "floor P@1"]
    assert {"interval", "test", "margin", "evaluation", "seed"} <= set(data["conventions"])
    assert data["conventions"]["interval"].startswith("95% Student t interval")


def test_junit_has_the_shape_ci_tools_read(two_files, tmp_path: Path) -> None:
    out = tmp_path / "gate.xml"  # the .xml extension asks for JUnit
    done = invoke(*_gate_args(two_files, "-o", str(out)))
    assert done.exit_code == 1
    root = ET.fromstring(out.read_bytes())
    assert root.tag == "testsuites" and root.get("name") == "stagewise gate"
    [suite] = list(root)
    assert suite.tag == "testsuite"
    # the attributes Jenkins' junit-10.xsd allows on each (tests, failures and errors required on testsuite)
    assert set(root.attrib) <= {"name", "time", "tests", "failures", "errors"}
    assert {"name", "tests", "failures", "errors"} <= set(suite.attrib) <= {*root.attrib, "skipped", "timestamp"}
    for element in (root, suite):  # the counts CI tools sum, consistent with the cases
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == ("2", "1", "0")
        assert float(element.get("time")) == 0.0
    order = [child.tag for child in suite]
    assert order == ["properties", "testcase", "testcase", "system-out"]  # the schema's order
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["margin mrr", "floor P@1"]
    assert all(c.get("classname", "").startswith("stagewise.gate.") and c.get("time") == "0" for c in cases)
    failures = [c.find("failure") for c in cases]
    assert failures[0] is not None and failures[0].get("message") and failures[0].get("type") == "margin"
    assert failures[1] is None  # P@1 is 2/3 >= 0.5: passes
    names = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert names["interval"].startswith("95% Student t") and "evaluation.relevance_level" in names
    assert suite.find("system-out").text.startswith("FAIL: 1 of 2 checks failed")


def test_github_summary_is_markdown_and_is_appended_to_the_step_summary(two_files, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    done = invoke(*_gate_args(two_files, "--format", "github"), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.exit_code == 1
    text = done.stdout
    assert text.startswith("### :x: stagewise gate: FAIL")
    rows = [line for line in text.splitlines() if line.startswith("| :")]
    assert len(rows) == 2 and rows[0].startswith("| :x: | margin mrr |") and rows[1].startswith("| :white_check")
    assert "<details><summary>Conventions</summary>" in text
    assert summary.read_text() == "earlier step\n" + text  # appended, the earlier steps' summary kept


def test_table_lists_each_check_then_every_convention(two_files) -> None:
    done = invoke(*_gate_args(two_files))
    lines = done.stdout.splitlines()
    assert lines[0] == "new.run against baseline old.run: FAIL (1 of 2 checks passed)"
    assert lines[2].startswith("  FAIL  margin mrr  mean(run - baseline) = -0.1667")
    assert lines[3].startswith("  pass  floor P@1   the run's mean 0.6667 is at or above 0.5000")
    assert "conventions:" in lines and any(line.startswith("  interval: 95% Student t") for line in lines)


def test_the_bootstrap_verdict_is_seeded(two_files) -> None:
    args = _gate_args(two_files, "--ci", "bootstrap", "--test", "randomization", "-B", "2000", "--format", "json")
    first, again = invoke(*args, "--seed", "3"), invoke(*args, "--seed", "3")
    assert first.stdout == again.stdout
    data = json.loads(first.stdout)
    assert data["conventions"]["seed"] == 3 and data["conventions"]["resamples"] == 2000
    assert "percentile bootstrap" in data["conventions"]["interval"]


# ------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--min", "recal@100=0.8"], "recal"),
        (["--min", "recall@100"], "is not NAME=VALUE"),
        (["--max-drop", "-0.01"], "'max_drop' parameter of gate must be a finite number >= 0"),
        (["--max", "retrieval_failure=0.05"], "needs RAG records"),
        (["--max", "retreival_failure=0.05", "--rag", "x.jsonl"], "unknown RAG label"),
        (["-m", "ndcg@ten"], "cutoff"),
        (["--test", "tukey-hsd"], "the gate compares a run with its baseline: give one of t, wilcoxon"),
        (["--test", "median"], "unknown statistical test"),
    ],
)
def test_bad_options_are_one_line_exit_2(two_files, extra: list[str], message: str) -> None:
    qrels, new, old = two_files
    done = invoke(qrels, new, "--baseline", old, *extra)
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith("stagewise: error: ") and message in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_missing_file_and_a_baseline_that_is_the_run_are_one_line_exit_2(two_files, tmp_path: Path) -> None:
    qrels, new, old = two_files
    for args in (
        [qrels, str(tmp_path / "nope.run"), "-b", old],
        [qrels, new, "-b", new],
        [qrels, new, "-b", "./" + new],
    ):
        done = invoke(*args)
        assert done.exit_code == 2, done.output
        assert done.stderr.startswith("stagewise: error: ") and len(done.stderr.splitlines()) == 1
    assert "is also the baseline" in invoke(qrels, new, "-b", new).stderr


def test_the_library_checks_before_reading() -> None:
    never = lambda: pytest.fail("read before the checks")  # noqa: E731
    with pytest.raises(MetricError):
        gate(never, "a.run", "b.run", floors={"recal@100": 0.8})
    with pytest.raises(ConventionError):
        gate(never, "a.run", "b.run", max_drop=-0.01)
    with pytest.raises(InputError, match="is also the baseline"):
        gate(never, "a.run", "./a.run")
    with pytest.raises(ConventionError, match=r"unknown keyword.*max_drop, floors"):
        gate(never, "a.run", "b.run", margin=0.01)
    with pytest.raises(ConventionError, match="needs a metric"):
        gate(never, "a.run", "b.run", metrics=(), ceilings={"ok": 0.5}, rag="records.jsonl")


def test_the_result_types_are_exported() -> None:
    assert GateResult.__module__ == "stagewise.gate.result" and Check.__module__ == "stagewise.gate.result"


def _demoted(robust, folder: Path, topics: int) -> str:
    """The best run with, on its first ``topics`` topics (by id), the first relevant document of the top 10 moved
    to rank 11 (docs/gate.md's figures)."""
    relevant = set()
    for line in Path(robust["qrels"]).read_text().splitlines():
        qid, _, doc, rel = line.split()
        if int(rel) > 0:
            relevant.add((qid, doc))
    by_query: dict[str, list[tuple[str, float]]] = {}
    for qid, docs in _read_trec(robust["best"]).items():
        by_query[qid] = sorted(docs.items(), key=lambda item: (-item[1], item[0]))
    path = folder / f"demoted{topics}.run"
    with path.open("w") as fh:
        for i, (qid, ranked) in enumerate(sorted(by_query.items())):
            hit = next((j for j, (doc, _) in enumerate(ranked[:10]) if (qid, doc) in relevant), None)
            if i < topics and hit is not None:
                ranked = ranked[:hit] + ranked[hit + 1 : 11] + [ranked[hit]] + ranked[11:]
            fh.writelines(f"{qid} Q0 {doc} {r + 1} {1000 - r} demoted\n" for r, (doc, _) in enumerate(ranked))
    return str(path)


def test_a_significant_small_drop_passes_inside_the_margin_and_a_larger_one_fails(robust, tmp_path: Path) -> None:
    small = gate(robust["qrels"], _demoted(robust, tmp_path, 5), robust["best"], metrics="ndcg@10").checks[0]
    assert small.mean_diff < 0 and small.ci_high < 0 and small.p_value < 0.05  # a drop, significant
    assert small.passed  # yet within the margin of 0.01: non-inferior
    larger = _demoted(robust, tmp_path, 20)
    assert not gate(robust["qrels"], larger, robust["best"], metrics="ndcg@10", max_drop=0.01).passed
    assert gate(robust["qrels"], larger, robust["best"], metrics="ndcg@10", max_drop=0.05).passed


def test_gate_options_take_mappings_pairs_or_name_value_strings() -> None:
    given = GateOptions("map", floors=["recall@100=0.8", ("P@10", "0.3")], ceilings={"lucky": 0.1})
    assert given.floors == (("recall@100", 0.8), ("P@10", 0.3)) and given.ceilings == (("lucky", 0.1),)
    assert given.measured == ("map", "recall@100", "P@10")
    assert GateOptions(max_drop=0) == GateOptions(max_drop=0.0)  # a value: equal when it checks the same
    for bad in ({"floors": ["map=0.1", "map=0.2"]}, {"ceilings": {"ok": 1.5}}, {"max_drop": float("nan")}):
        with pytest.raises(ConventionError):
            GateOptions(**bad)
    with pytest.raises(ConventionError, match="no ceiling"):
        gate(lambda: pytest.fail("read"), "a.run", "b.run", rag="records.jsonl")
