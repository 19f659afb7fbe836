"""Evidence metrics: the metrics engine with gold evidence as qrels, KILT-style scores, DPR's has_answer,
records from a Run plus answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import InputError
from stagewise.rag import evaluate_rag, records_from_run
from stagewise.rag.diagnose import _engine_metrics
from stagewise.report import render


def test_ranking_metrics_by_hand() -> None:
    report = evaluate_rag(
        [
            {
                "id": "q",
                "retrieved": ["a", "p4", "b", "p9"],
                "gold_evidence": ["p9", ["p4", "p5"]],
                "answer": "x",
                "gold_answers": ["y"],
            }
        ],
        judge="none",
        metrics=["recall@2", "recall@4", "mrr", "P@4"],
    )
    row = report.rows[0]
    # qrels = every id of every alternative: {p9, p4, p5}
    assert row.metrics["recall@2"] == pytest.approx(1 / 3)
    assert row.metrics["recall@4"] == pytest.approx(2 / 3)
    assert row.metrics["mrr"] == pytest.approx(0.5)
    assert row.metrics["P@4"] == pytest.approx(0.5)
    assert row.first_gold_rank == 2
    assert report.retrieval_means()["samples_with_gold_evidence"] == 1


def test_engine_equals_stagewise_evaluate_on_the_same_lists() -> None:
    records = [
        {
            "id": "q1",
            "retrieved": ["a", "b", "g1", "c"],
            "gold_evidence": ["g1", "g2"],
            "answer": "",
            "gold_answers": ["x"],
        },
        {"id": "q2", "retrieved": ["g3", "d"], "gold_evidence": [["g3", "g4"]], "answer": "", "gold_answers": ["x"]},
        {"id": "q3", "retrieved": ["e"], "gold_evidence": ["g5"], "answer": "", "gold_answers": ["x"]},
    ]
    metrics = ["recall@1", "recall@5", "mrr", "ndcg@10", "map"]
    report = evaluate_rag(records, judge="none", metrics=metrics)
    qrels = {"q1": {"g1": 1, "g2": 1}, "q2": {"g3": 1, "g4": 1}, "q3": {"g5": 1}}
    run = {"q1": {"a": -1, "b": -2, "g1": -3, "c": -4}, "q2": {"g3": -1, "d": -2}, "q3": {"e": -1}}
    expected = stagewise.evaluate(qrels, run, metrics).per_query("run")
    for row in report.rows:
        for m in metrics:
            assert row.metrics[m] == pytest.approx(expected[m][row.id])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from("abcdefghij"), max_size=8, unique=True),
            st.lists(st.sampled_from("abcdefghijk"), max_size=3, unique=True),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_cutting_lists_after_the_last_gold_id_changes_nothing(samples) -> None:
    retrieved = [tuple(r) for r, _ in samples]
    gold = [tuple(g) for _, g in samples]
    last = [max((r.index(g) + 1 for g in gs if g in r), default=0) for r, gs in zip(retrieved, gold, strict=True)]
    metrics = ["recall@3", "P@5", "ndcg@10", "mrr", "map", "success@2", "Rprec"]
    cut, _ = _engine_metrics(gold, retrieved, metrics, last)
    whole, _ = _engine_metrics(gold, retrieved, [*metrics, "num_ret"], last)  # num_ret forces whole lists
    for i, values in cut.items():
        for m in metrics:
            assert values[m] == pytest.approx(whole[i][m])


# -- KILT -------------------------------------------------------------------------------------------------------


def kilt_rprec(alternatives: list[list[str]], predicted: list[str]) -> float:
    """A transcription of KILT's eval_retrieval.rprecision (max over provenance sets of R-precision)."""
    scores = []
    for gold in alternatives:
        gold = list(set(gold))
        r = len(gold)
        dedup: list[str] = []
        for x in predicted:
            if x not in dedup:
                dedup.append(x)
                if len(dedup) == r:
                    break
        scores.append(sum(1 for p in dedup if p in gold) / r)
    return max(scores)


@pytest.mark.parametrize(
    ("retrieved", "alternatives"),
    [
        (["a", "b"], [["a"]]),
        (["b", "a"], [["a"]]),
        (["a", "b", "c"], [["b", "a"], ["c"]]),
        (["a", "a", "b"], [["a", "b"]]),
        (["x", "y"], [["a", "b", "c"]]),
        ([], [["a"]]),
    ],
)
def test_rprec_and_kilt_scores_follow_kilt(retrieved: list[str], alternatives: list[list[str]]) -> None:
    row = evaluate_rag(
        [
            {
                "id": "q",
                "retrieved": retrieved,
                "gold_evidence": alternatives,
                "answer": "Emma",
                "gold_answers": ["emma"],
            }
        ],
        judge="none",
    ).rows[0]
    rprec = kilt_rprec(alternatives, retrieved)
    assert row.rprec == pytest.approx(rprec)
    assert row.kilt_em == (1.0 if rprec == 1 else 0.0)
    assert row.kilt_correct is (rprec == 1)


def test_kilt_k() -> None:
    record = {"id": "q", "retrieved": ["x", "a"], "gold_evidence": ["a"], "answer": "Emma", "gold_answers": ["emma"]}
    assert evaluate_rag([record], judge="none").rows[0].kilt_em == 0.0
    assert evaluate_rag([record], judge="none", kilt_k=2).rows[0].kilt_em == 1.0


def test_no_evidence_means_no_kilt_scores() -> None:
    row = evaluate_rag([{"id": "q", "retrieved": ["a"], "answer": "", "gold_answers": []}], judge="none").rows[0]
    assert row.rprec is None and row.kilt_em is None


# -- evidence from answers (DPR has_answer) ------------------------------------------------------------------------


def test_evidence_from_answers() -> None:
    record = {
        "id": "q",
        "retrieved": ["p1", "p2", "p3"],
        "answer": "Jane Austen",
        "gold_answers": ["Jane Austen"],
        "passages": {"p1": "Dickens wrote Bleak House.", "p2": "Emma, by Jane Austen.", "p3": "Austenite steel."},
    }
    by_ids = evaluate_rag([record], judge="none").rows[0]
    by_answers = evaluate_rag([record], judge="none", evidence="answers").rows[0]
    assert (by_ids.label, by_ids.gold_evidence) == ("lucky", [])
    assert (by_answers.label, by_answers.gold_evidence, by_answers.first_gold_rank) == ("ok", [["p2"]], 2)
    given = evaluate_rag([{**record, "gold_evidence": ["p3"]}], judge="none", evidence="answers").rows[0]
    assert given.gold_evidence == [["p3"]]  # a record's own evidence wins


# -- records from a Run and an answers file ------------------------------------------------------------------------


def test_records_from_run_and_qrels(tmp_path: Path) -> None:
    run = tmp_path / "bm25.trec"
    run.write_text("q1 Q0 p1 1 2.0 bm25\nq1 Q0 p9 2 1.5 bm25\nq2 Q0 p7 1 3.0 bm25\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 p9 1\nq1 0 p4 0\nq2 0 p8 2\n")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "\n".join(
            json.dumps(a)
            for a in [
                {"id": "q1", "answer": "Jane Austen [p9]", "gold_answers": ["Jane Austen"]},
                {"id": "q2", "answer": "Dickens", "gold_answers": ["Austen"]},
                {"id": "q3", "answer": "I don't know", "gold_answers": []},
            ]
        )
    )
    records = records_from_run(str(run), str(answers), str(qrels))
    assert [r.retrieved for r in records] == [("p1", "p9"), ("p7",), ()]
    assert [r.gold_evidence for r in records] == [(("p9",),), (("p8",),), ()]
    labels = [(r.label, r.reason) for r in evaluate_rag(records, judge="none").rows]
    assert labels == [("ok", "correct_answer"), ("retrieval_failure", "not_retrieved"), ("ok", "correct_abstention")]


def test_records_from_run_conflicts(tmp_path: Path) -> None:
    answers = [{"id": "q1", "retrieved": ["a"], "answer": "", "gold_answers": []}]
    with pytest.raises(InputError, match="given both by the record and by the run"):
        records_from_run({"q1": {"a": 1.0}}, answers)
    answers = [{"id": "q1", "gold_evidence": ["a"], "answer": "", "gold_answers": []}]
    with pytest.raises(InputError, match="given both by the record and by the qrels"):
        records_from_run(None, answers, {"q1": {"a": 1}})


def test_means_and_table() -> None:
    report = evaluate_rag(
        [
            {"id": "1", "retrieved": ["g"], "gold_evidence": ["g"], "answer": "Emma", "gold_answers": ["Emma"]},
            {"id": "2", "retrieved": ["g"], "gold_evidence": ["g"], "answer": "Persuasion", "gold_answers": ["Emma"]},
            {"id": "3", "retrieved": ["x"], "gold_evidence": ["g"], "answer": "Emma", "gold_answers": ["Emma"]},
            {"id": "4", "retrieved": ["x"], "gold_evidence": ["g"], "answer": "Persuasion", "gold_answers": ["Emma"]},
        ],
        judge="none",
    )
    table = report.table()
    assert table["evidence_in_context"]["answer_correct"] == {"label": "ok", "count": 1, "share": 0.25}
    assert table["evidence_missing"]["answer_wrong"]["label"] == "retrieval_failure"
    assert report.counts() == {"ok": 1, "generation_failure": 1, "retrieval_failure": 1, "lucky": 1}
    assert report.retrieval_means()["recall@1"] == 0.5
    assert report.answer_means()["em"] == 0.5


def test_speed_benchmark_records_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/rag_speed.py's synthetic records stay valid (a smoke test, not a timing)."""
    import importlib.util
    import os

    # the module sets POLARS_MAX_THREADS at import; restore the environment afterwards
    monkeypatch.setenv("POLARS_MAX_THREADS", os.environ.get("POLARS_MAX_THREADS", "0"))
    monkeypatch.delenv("POLARS_MAX_THREADS")

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "rag_speed.py"
    spec = importlib.util.spec_from_file_location("_rag_speed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records = module.make_records(300, with_texts=True)
    report = evaluate_rag(records, judge="lexical")
    assert report.n == 300 and sum(report.counts().values()) == 300
    assert render(report, "jsonl").count("\n") == 300
