"""The support judges' speed (issue 27: >= 200 claims/s after loading for an offline default) and the calibrated
judge's bfloat16 MiniLM: named in its output, refused where it means nothing, close to float32's scores."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from stagewise.errors import ConventionError
from stagewise.rag.calibrated import CalibratedJudge
from stagewise.rag.judges import Passage, parse_judge

ROOT = Path(__file__).resolve().parents[1]
EXPERTQA = ROOT.parent / "shared" / "data" / "expertqa" / "rand_test.jsonl"


def expertqa_items(n: int) -> list:
    if not EXPERTQA.is_file():
        pytest.skip(f"ExpertQA not found at {EXPERTQA} (shared data)")
    sys.path.insert(0, str(ROOT / "tools"))
    from fit_support_judge import items_of, load_claims

    return items_of(load_claims(EXPERTQA))[:n]


@pytest.mark.parametrize("name", ["lexical", "calibrated(features=lexical)"])
def test_the_numpy_judges_pass_200_claims_per_cpu_second_on_expertqa(name: str) -> None:
    # CPU seconds of this process, not wall time: the machine is shared, and a busy one must not fail the test
    items = expertqa_items(300)
    judge = parse_judge(name).build()
    judge.supports(*items[0])  # loading (the fitted parameters) is not counted, as in the benchmark
    start = time.process_time()
    if hasattr(judge, "scores"):
        judge.scores(items)
    else:
        for passages, claim in items:
            judge.supports(passages, claim)
    rate = len(items) / max(time.process_time() - start, 1e-9)
    assert rate >= 200, f"{name}: {rate:.0f} claims per CPU second"


def test_bfloat16_is_named_versioned_and_refused_without_minilm() -> None:
    spec = parse_judge("calibrated(precision=bfloat16)")
    judge = spec.build()  # cheap: MiniLM loads on the first claim
    assert spec.name == judge.name == "calibrated(precision=bfloat16)" and parse_judge(spec.name) == spec
    assert judge.version.endswith("-dense-bfloat16") and CalibratedJudge().version.endswith("-dense")
    assert parse_judge("calibrated(precision=float32)").name == "calibrated"  # the default is left out
    with pytest.raises(ConventionError, match="features=dense only"):
        parse_judge("calibrated(features=lexical, precision=bfloat16)").build()
    with pytest.raises(ConventionError, match="precision"):
        parse_judge("calibrated(precision=float16)")


def test_bfloat16_scores_stay_close_to_float32() -> None:
    pytest.importorskip("torch", reason="bfloat16 MiniLM runs on torch (the dense extra)")
    pytest.importorskip("onnxruntime", reason="float32 MiniLM runs on onnxruntime (the dense extra)")
    passages = [Passage("p1", "Jane Austen published Emma in 1815. It was the last novel she saw published.")]
    claims = ["Emma was published by Jane Austen in 1815.", "Charles Dickens wrote Emma in 1852.", "Emma is a novel."]
    items = [(passages, c) for c in claims]
    full = CalibratedJudge().scores(items)
    half = CalibratedJudge(precision="bfloat16").scores(items)
    # bfloat16 products moved MiniLM's cosines by up to 1.7e-3 and scores by up to 2.2e-3 on 60 ExpertQA
    # claims: far less than the gap between a supported and an unsupported claim
    assert half == pytest.approx(full, abs=0.02)
    assert half[0] > half[1] and full[0] > full[1]
