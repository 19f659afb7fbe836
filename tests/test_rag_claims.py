"""Claim-level RAG metrics (stagewise.rag.claims).

Oracles: RAGChecker's own stored metrics in its example ``checking_outputs.json`` (per sample, and the printed
aggregate); a naive numpy reference written here from RAGChecker's published formulas (array max/mean over the
check matrices, independent of the module's loops); hand-worked numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import InputError, StagewiseError
from stagewise.rag.claims import (
    CLAIM_METRICS,
    ClaimChecks,
    check_claims,
    claim_report,
    ragchecker_printed,
    read_ragchecker,
    sample_metrics,
    split_claims,
)
from stagewise.rag.judges import LexicalJudge

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ragchecker"
OUTPUTS = DATA / "checking_outputs.json"
needs_data = pytest.mark.skipif(not OUTPUTS.exists(), reason=f"RAGChecker's example output not found at {OUTPUTS}")


def _reference(r_ans, a_resp, r_chunks, a_chunks, n_chunks) -> dict[str, float]:
    """RAGChecker's formulas over numpy arrays (max over axes, means), with its zero rules."""
    r_ans, a_resp = np.array(r_ans, dtype=bool), np.array(a_resp, dtype=bool)
    rc = np.array(r_chunks, dtype=bool).reshape(len(r_ans), n_chunks)
    ac = np.array(a_chunks, dtype=bool).reshape(len(a_resp), n_chunks)
    out = dict.fromkeys(CLAIM_METRICS, 0.0)
    p = r_ans.mean() if r_ans.size else 0.0
    r = a_resp.mean() if a_resp.size else 0.0
    out.update(precision=p, recall=r, f1=2 * p * r / (p + r) if p > 0 and r > 0 else 0.0)
    if a_resp.size and n_chunks:
        recalled = ac.max(axis=1)
        relevant = ac.max(axis=0)
        out["claim_recall"], out["context_precision"] = recalled.mean(), relevant.mean()
        if recalled.sum():
            out["context_utilization"] = (recalled & a_resp).sum() / recalled.sum()
        if r_ans.size:
            rel = (rc & relevant[None, :]).max(axis=1)
            irr = (rc & ~relevant[None, :]).max(axis=1) & ~rel
            out["noise_sensitivity_in_relevant"] = (rel & ~r_ans).mean()
            out["noise_sensitivity_in_irrelevant"] = (irr & ~r_ans).mean()
    if r_ans.size and n_chunks:
        unfaithful = ~rc.max(axis=1)
        out["hallucination"] = (unfaithful & ~r_ans).mean()
        out["self_knowledge"] = (unfaithful & r_ans).mean()
        out["faithfulness"] = (~unfaithful).mean()
    return {k: float(v) for k, v in out.items()}


@needs_data
def test_ragchecker_metrics_recomputed_from_its_checking_results_equal_what_it_stored() -> None:
    output = read_ragchecker(OUTPUTS)
    assert len(output.checks) == 2
    for checks, stored in zip(output.checks, output.stored_sample_metrics, strict=True):
        assert set(stored) == set(CLAIM_METRICS)
        ours = sample_metrics(checks)
        for name in CLAIM_METRICS:
            assert ours[name] == pytest.approx(stored[name], abs=1e-12), (checks.id, name)
    report = claim_report(output.checks)
    assert report.printed() == output.stored_metrics  # to RAGChecker's printed precision (one decimal of x100)
    assert report.judge == "ragchecker-output"
    # the aggregate as the SOURCE.md states it, read from the file independently of our reader
    raw = json.loads(OUTPUTS.read_text())["metrics"]
    assert report.printed()["generator"]["self_knowledge"] == raw["generator"]["self_knowledge"] == 27.3


@needs_data
def test_the_reference_agrees_with_ragchecker_on_its_example() -> None:
    raw = json.loads(OUTPUTS.read_text())["results"]
    for item in raw:
        n = len(item["retrieved_context"])

        def flags(labels):
            return [label == "Entailment" for label in labels]

        ref = _reference(
            flags(item["answer2response"]),
            flags(item["response2answer"]),
            [flags(row) for row in item["retrieved2response"]],
            [flags(row) for row in item["retrieved2answer"]],
            n,
        )
        for name in CLAIM_METRICS:
            assert ref[name] == pytest.approx(item["metrics"][name], abs=1e-12)


@st.composite
def _checks(draw: st.DrawFn) -> ClaimChecks:
    nr, ng, nc = draw(st.integers(0, 6)), draw(st.integers(0, 6)), draw(st.integers(0, 5))
    bits = st.booleans()
    return ClaimChecks(
        "q",
        "random",
        tuple(f"r{i}" for i in range(nr)),
        tuple(f"g{i}" for i in range(ng)),
        tuple(draw(st.lists(bits, min_size=nr, max_size=nr))),
        tuple(draw(st.lists(bits, min_size=ng, max_size=ng))),
        tuple(tuple(draw(st.lists(bits, min_size=nc, max_size=nc))) for _ in range(nr)),
        tuple(tuple(draw(st.lists(bits, min_size=nc, max_size=nc))) for _ in range(ng)),
        nc,
    )


@settings(max_examples=300, deadline=None)
@given(_checks())
def test_every_metric_equals_the_numpy_reference_and_keeps_its_invariants(checks: ClaimChecks) -> None:
    ours = sample_metrics(checks)
    ref = _reference(
        checks.response_in_answer,
        checks.answer_in_response,
        checks.response_in_chunks,
        checks.answer_in_chunks,
        checks.n_chunks,
    )
    assert ours == pytest.approx(ref, abs=1e-12)
    assert all(0.0 <= v <= 1.0 for v in ours.values())
    p, r = ours["precision"], ours["recall"]
    assert min(p, r) - 1e-12 <= ours["f1"] <= max(p, r) + 1e-12 or ours["f1"] == 0.0
    if checks.response_claims and checks.n_chunks:
        # every response claim is faithful, or hallucinated, or self-knowledge: exactly one
        total = ours["faithfulness"] + ours["hallucination"] + ours["self_knowledge"]
        assert total == pytest.approx(1.0)
    # noise sensitivity counts wrong claims only, each in one of the two kinds
    wrong = 1 - p if checks.response_claims else 0.0
    assert ours["noise_sensitivity_in_relevant"] + ours["noise_sensitivity_in_irrelevant"] <= wrong + 1e-12


def test_hand_worked_sample() -> None:
    # 3 response claims, 2 ground-truth claims, 2 chunks; chunk 0 entails ground-truth claim 0 (relevant),
    # chunk 1 entails none (irrelevant)
    checks = ClaimChecks(
        "q",
        "hand",
        ("a", "b", "c"),
        ("x", "y"),
        response_in_answer=(True, False, False),
        answer_in_response=(True, False),
        response_in_chunks=((True, False), (True, False), (False, True)),
        answer_in_chunks=((True, False), (False, False)),
        n_chunks=2,
    )
    m = sample_metrics(checks)
    assert m["precision"] == pytest.approx(1 / 3)
    assert m["recall"] == 0.5
    assert m["f1"] == pytest.approx(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5))  # 0.4
    assert m["claim_recall"] == 0.5  # x is in chunk 0, y nowhere
    assert m["context_precision"] == 0.5  # chunk 0 relevant, chunk 1 not
    assert m["context_utilization"] == 1.0  # x recalled and in the response
    assert m["noise_sensitivity_in_relevant"] == pytest.approx(1 / 3)  # b: wrong, from relevant chunk 0
    assert m["noise_sensitivity_in_irrelevant"] == pytest.approx(1 / 3)  # c: wrong, from irrelevant chunk 1
    assert m["hallucination"] == 0.0 and m["self_knowledge"] == 0.0 and m["faithfulness"] == 1.0


def test_empty_claims_or_chunks_score_zero_as_ragchecker() -> None:
    none = ClaimChecks("q", "hand", (), (), (), (), (), (), 0)
    assert set(sample_metrics(none).values()) == {0.0}
    no_chunks = ClaimChecks("q", "hand", ("a",), ("x",), (True,), (True,), ((),), ((),), 0)
    m = sample_metrics(no_chunks)
    assert m["precision"] == m["recall"] == m["f1"] == 1.0
    assert m["faithfulness"] == m["claim_recall"] == m["self_knowledge"] == 0.0


def test_printed_form_is_x100_one_decimal_grouped() -> None:
    printed = ragchecker_printed(dict.fromkeys(CLAIM_METRICS, 0.19090909))
    assert list(printed) == ["overall", "retriever", "generator"]
    assert printed["generator"]["noise_sensitivity_in_relevant"] == 19.1


def test_checks_with_a_stagewise_judge_name_the_judge_and_split_sentences() -> None:
    samples = [
        {
            "id": "nile",
            "response": "The Nile is the longest river. It flows into the Red Ocean [1].",
            "gt_answer": "The Nile is the longest river in Africa. It flows into the Mediterranean Sea.",
            "chunks": ["The Nile, the longest river, flows north.", "Bananas grow in the tropics."],
        }
    ]
    (checks,) = check_claims(LexicalJudge(), samples)
    assert checks.judge == "lexical(threshold=0.6)"
    assert checks.response_claims == ("The Nile is the longest river.", "It flows into the Red Ocean .")
    assert checks.n_chunks == 2 and len(checks.response_in_chunks[0]) == 2
    # "nile longest river" (3 of 3 words) is in chunk 0; "flows red ocean" has 1 of 3 words there
    assert checks.response_in_chunks == ((True, False), (False, False))
    assert checks.response_in_answer == (True, False)  # the answer has "flow" but not "red ocean": 1 of 3 words
    report = claim_report([checks])
    assert report.to_dict()["judge"] == "lexical(threshold=0.6)"
    assert report.means["faithfulness"] == 0.5 and report.means["hallucination"] == 0.5


def test_a_judge_that_extracts_claims_is_used() -> None:
    class Extracting(LexicalJudge):
        def extract_claims(self, text: str) -> list[str]:
            return [part.strip() for part in text.split(",") if part.strip()]

    (checks,) = check_claims(Extracting(), [{"id": 1, "response": "a b, c d", "gt_answer": "a b", "chunks": []}])
    assert checks.response_claims == ("a b", "c d") and checks.n_chunks == 0


def test_split_claims_drops_list_numbers_and_markers() -> None:
    assert split_claims("1. **Books** are used [2].\n2. Web text too.") == ["**Books** are used .", "Web text too."]
    assert split_claims("") == []


def test_reader_names_the_file_and_result_when_checks_are_missing(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"results": [{"query_id": "0", "response_claims": [], "gt_answer_claims": []}]}))
    with pytest.raises(InputError, match=r"out\.json: results\[0\] lacks answer2response") as info:
        read_ragchecker(path)
    assert "stagewise judge" in str(info.value)
    path.write_text(json.dumps({"answers": []}))
    with pytest.raises(InputError, match='"results" list'):
        read_ragchecker(path)


def test_reader_rejects_a_row_of_the_wrong_width(tmp_path: Path) -> None:
    sample = {
        "query_id": "0",
        "retrieved_context": [{"doc_id": "a", "text": "x"}, {"doc_id": "b", "text": "y"}],
        "response_claims": [["s", "r", "o"]],
        "gt_answer_claims": [],
        "answer2response": ["Entailment"],
        "response2answer": [],
        "retrieved2response": [["Entailment"]],
        "retrieved2answer": [],
    }
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"results": [sample]}))
    with pytest.raises(InputError, match=r"retrieved2response\[0\] has 1 labels for 2 chunks"):
        read_ragchecker(path)
    sample["retrieved2response"] = [["Entailment", "Neutral"]]
    path.write_text(json.dumps({"results": [sample]}))
    (checks,) = read_ragchecker(path).checks
    assert checks.response_claims == ("s r o",) and checks.response_in_chunks == ((True, False),)


def test_report_refuses_mixed_judges_and_repeated_ids() -> None:
    a = ClaimChecks("q", "lexical", (), (), (), (), (), (), 0)
    b = ClaimChecks("q2", "calibrated", (), (), (), (), (), (), 0)
    with pytest.raises(StagewiseError, match="several judges"):
        claim_report([a, b])
    with pytest.raises(StagewiseError, match="checked twice"):
        claim_report([a, a])


# -- inside the stage diagnosis ----------------------------------------------------------------------------------


def _invoke(*args: str):
    from typer.testing import CliRunner

    from stagewise.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@needs_data
def test_the_diagnosis_reads_ragcheckers_checks_and_keeps_its_labels() -> None:
    from stagewise.rag.adapters import load_records
    from stagewise.rag.diagnose import evaluate_rag

    records = load_records(OUTPUTS, "ragchecker")
    plain = evaluate_rag(records)
    report = evaluate_rag(records, claims=OUTPUTS)
    assert [(r.label, r.reason) for r in report.rows] == [(r.label, r.reason) for r in plain.rows]
    summary = report.summary()["claims"]
    assert summary["ragchecker"] == json.loads(OUTPUTS.read_text())["metrics"]
    assert summary["judge"] == "ragchecker-output" and "claims" in report.conventions()
    assert "claims" not in plain.summary() and "claims" not in plain.conventions()


@needs_data
def test_stagewise_rag_claims_on_the_command_line() -> None:
    result = _invoke(
        "rag", str(OUTPUTS), "--from", "ragchecker", "--claims", str(OUTPUTS), "-f", "json", "--per-sample"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["summary"]["claims"]["ragchecker"]["overall"] == {"precision": 76.4, "recall": 62.5, "f1": 68.3}
    assert data["claim_samples"]["1"]["f1"] == pytest.approx(0.7741935483870969)
    judged = _invoke("rag", str(OUTPUTS), "--from", "ragchecker", "--claim-judge", "lexical")
    assert judged.exit_code == 0, judged.output
    assert "# claims judge lexical(threshold=0.6): 2 samples" in judged.stdout
    assert "claims.faithfulness" in judged.stdout


def test_claims_that_match_no_record_are_one_line_errors(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "a", "answer": "x", "gold_answers": ["x"]}) + "\n")
    checks = tmp_path / "checks.json"
    sample = {"query_id": "zz", "response_claims": [], "gt_answer_claims": [], "answer2response": [],
              "response2answer": [], "retrieved2response": [], "retrieved2answer": []}  # fmt: skip
    checks.write_text(json.dumps({"results": [sample]}))
    result = _invoke("rag", str(records), "--claims", str(checks))
    assert result.exit_code == 2
    assert "checks.json: no query_id matches a record id" in result.stderr and "the file has zz" in result.stderr
    gold = _invoke("rag", str(records), "--claim-judge", "gold")
    assert gold.exit_code == 2 and "the claim judge must read text" in gold.stderr


@needs_data
def test_jsonl_rows_carry_each_samples_claim_metrics_and_judge() -> None:
    result = _invoke("rag", str(OUTPUTS), "--from", "ragchecker", "--claims", str(OUTPUTS), "-f", "jsonl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    stored = [item["metrics"] for item in json.loads(OUTPUTS.read_text())["results"]]
    for row, metrics in zip(rows, stored, strict=True):
        assert row["claims"]["judge"] == "ragchecker-output" and "label" in row
        assert {k: row["claims"][k] for k in metrics} == pytest.approx(metrics, abs=1e-12)


def _meta_eval_module():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "rag_meta_eval.py"
    spec = importlib.util.spec_from_file_location("rag_meta_eval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_meta_eval_delta_follows_ragcheckers_protocol() -> None:
    meta = _meta_eval_module()
    delta = meta.normalised_delta([0.0, 0.5, 0.2, 0.1], [1.0, 0.5, float("nan"), 0.4])
    # raw deltas 1.0, 0.0, NaN -> median 0.3, 0.3; scaled from [0, 1] to [-2, 2]
    assert delta.tolist() == pytest.approx([2.0, -2.0, -0.8, -0.8])


@pytest.mark.skipif(not (DATA / "human_labeled_data.json").exists(), reason=f"meta-evaluation data not in {DATA}")
def test_meta_eval_reproduces_the_correlation_of_ragcheckers_stored_f1() -> None:
    meta = _meta_eval_module()
    human, instances = meta.load(DATA)
    first = [i["model1"]["ragchecker"]["overall_label"] for i in instances]
    second = [i["model2"]["ragchecker"]["overall_label"] for i in instances]
    pearson, spearman, _ = meta.correlations(meta.normalised_delta(first, second), np.array(
        [h["overall_label"] for h in human], dtype=float))  # fmt: skip
    # oracle: numpy's correlation of the raw deltas (no NaN here; scaling leaves r unchanged), label by label
    raw = np.array(second) - np.array(first)
    x = np.array([raw[i // 2] for i in range(len(human))])
    y = np.array([h["overall_label"] for h in human], dtype=float)
    assert pearson == pytest.approx(100 * np.corrcoef(x, y)[0, 1])

    def average_ranks(values: np.ndarray) -> np.ndarray:  # ties share the mean of their ranks
        _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        ends = np.cumsum(counts)
        return ((ends - counts + 1 + ends) / 2)[inverse]

    # ranks of the scaled deltas, as the protocol ranks them (scaling can merge deltas that differ in the last bit)
    scaled = np.repeat(meta.normalised_delta(first, second), 2)
    assert spearman == pytest.approx(100 * np.corrcoef(average_ranks(scaled), average_ranks(y))[0, 1])
