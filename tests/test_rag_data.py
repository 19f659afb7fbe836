"""Real data: an oracle on the bundled CLAP NQ dev, and the lexical judge on ExpertQA with the figures that
docs/rag.md reports (skipped when ../shared is absent)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
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
def expertqa():
    if not EXPERTQA.is_file():
        pytest.skip(f"ExpertQA is not at {EXPERTQA} (../shared is absent)")
    return _example("expertqa_agreement")


def test_clapnq_with_gold_context_and_gold_answers_is_all_ok() -> None:
    """An oracle on the bundled CLAP NQ dev: the gold passage as context and an annotator's answer as the answer."""
    from stagewise.demo.data import load
    from stagewise.rag import evaluate_rag

    records = [
        {
            "id": q.id,
            "retrieved": [q.gold_passage] if q.gold_passage else [],
            "gold_evidence": [q.gold_passage] if q.gold_passage else [],
            "answer": q.gold_answers[0] if q.gold_answers else "I don't know.",
            "gold_answers": list(q.gold_answers),
        }
        for q in load().questions
    ]
    report = evaluate_rag(records, correct="em", judge="none")
    assert report.counts() == {"ok": 600, "generation_failure": 0, "retrieval_failure": 0, "lucky": 0}


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
