"""Real data: the CLAP NQ pipeline of examples/ and the lexical judge on ExpertQA, with the figures that
docs/rag.md reports. Skipped when ../shared is absent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
CLAPNQ = SHARED / "data" / "clapnq"
EXPERTQA = SHARED / "data" / "expertqa" / "rand_test.jsonl"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def clapnq():
    if not (CLAPNQ / "clapnq_dev_answerable.jsonl").is_file():
        pytest.skip(f"CLAP NQ is not at {CLAPNQ} (../shared is absent)")
    return _example("clapnq_pipeline")


@pytest.fixture(scope="module")
def expertqa():
    if not EXPERTQA.is_file():
        pytest.skip(f"ExpertQA is not at {EXPERTQA} (../shared is absent)")
    return _example("expertqa_agreement")


def test_clapnq_loader(clapnq) -> None:
    passages, questions = clapnq.load_clapnq(CLAPNQ)
    assert len(questions) == 600
    assert sum(1 for q in questions if q["gold_answers"]) == 300
    assert all(q["gold_evidence"][0] in passages for q in questions if q["gold_answers"])
    assert len(passages) == 593  # shared texts are one passage; 4 gold ids with two texts keep the first


def test_clapnq_with_gold_context_and_gold_answers_is_all_ok(clapnq) -> None:
    """An oracle: the gold passage as context and an annotator's answer as the answer."""
    from stagewise.rag import evaluate_rag

    _, questions = clapnq.load_clapnq(CLAPNQ)
    records = [
        {
            "id": q["id"],
            "retrieved": q["gold_evidence"],
            "gold_evidence": q["gold_evidence"],
            "answer": q["gold_answers"][0] if q["gold_answers"] else "I don't know.",
            "gold_answers": q["gold_answers"],
        }
        for q in questions
    ]
    report = evaluate_rag(records, correct="em", judge="none")
    assert report.counts() == {"ok": 600, "generation_failure": 0, "retrieval_failure": 0, "lucky": 0}


def test_clapnq_pipeline_tiny_bm25_figures(clapnq) -> None:
    """The self-contained retriever's figures are pinned exactly (docs/rag.md quotes them)."""
    report, retriever, _, _ = clapnq.diagnose(CLAPNQ, retriever="tiny")
    assert retriever.startswith("tiny BM25")
    assert report.counts() == {"ok": 168, "generation_failure": 419, "retrieval_failure": 13, "lucky": 0}
    assert report.reasons() == {
        "ok": {"correct_answer": 89, "correct_abstention": 79},
        "generation_failure": {
            "wrong_answer": 165,
            "partial_answer": 8,
            "false_abstention": 25,
            "hallucinated_answer": 221,
        },
        "retrieval_failure": {"not_retrieved": 5, "ranked_too_low": 8},
        "lucky": {},
    }


def test_clapnq_pipeline_default_retriever(clapnq) -> None:
    report, _, answers, _ = clapnq.diagnose(CLAPNQ)
    assert report.n == 600 and len(answers) == 600
    counts = report.counts()
    assert sum(counts.values()) == 600
    unanswerable = [r for r in report.rows if not r["answerable"]]
    assert len(unanswerable) == 300
    assert all(r["evidence_in_context"] for r in unanswerable)
    assert report.retrieval_means()["samples_with_gold_evidence"] == 300


def test_expertqa_lexical_judge_agreement(expertqa) -> None:
    claims = expertqa.load_claims(EXPERTQA)
    assert len(claims) == 1292
    result = expertqa.measure(claims)
    headline = result["with_text"]
    assert headline["n"] == 793 and headline["human_supported"] == 562
    assert round(headline["accuracy"], 4) == 0.4792
    assert round(headline["kappa"], 4) == 0.0816
    wider = result["all_labelled"]
    assert wider["n"] == 1230
    assert (round(wider["accuracy"], 4), round(wider["kappa"], 4)) == (0.5252, 0.1429)
