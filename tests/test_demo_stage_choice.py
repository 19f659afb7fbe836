"""The demo diagnoses the RAG on its best stage by nDCG@10, not blindly on its last (issue 24: with the dense
extra, reranking took nDCG@10 from 0.991 back to 0.951 and the verdict was computed on it), says which and why
in the summary and pipeline.json, and says before the dense stage what it costs and how to skip it."""

from __future__ import annotations

import json

from stagewise.demo.pipeline import PRIMARY, Step, dense_notice, diagnosed_stage, run_demo
from tests.test_demo import HashedWords


def test_the_best_stage_is_diagnosed_when_the_last_one_is_worse() -> None:
    means = {
        "bm25-stem": {PRIMARY: 0.95},
        "dense": {PRIMARY: 0.97},
        "rrf": {PRIMARY: 0.991},
        "reranked": {PRIMARY: 0.951},
    }
    stage, why = diagnosed_stage(means, list(means))
    assert stage == "rrf"
    assert "best stage by ndcg@10 (0.9910)" in why and "reranked, scores 0.9510" in why


def test_a_tie_goes_to_the_later_stage() -> None:
    means = {"a": {PRIMARY: 0.5}, "b": {PRIMARY: 0.4}, "c": {PRIMARY: 0.5}}
    assert diagnosed_stage(means, list(means))[0] == "c"
    assert diagnosed_stage({"a": {PRIMARY: 0.1}}, ["a"])[0] == "a"


def test_the_dense_notice_gives_the_time_and_the_way_out() -> None:
    text = dense_notice(1192)
    assert "dense extra is installed" in text and "about" in text and " s" in text and "--no-dense" in text


def test_a_demo_states_the_stage_it_diagnosed_and_warns_before_dense(tmp_path) -> None:
    steps: list[Step] = []
    result = run_demo(tmp_path / "out", encoder=HashedWords(), report=False, progress=steps.append)
    assert steps[0].number == 0 and "--no-dense" in steps[0].detail  # said before any stage ran
    means = result.evaluation.means
    best = max(means[s][PRIMARY] for s in means)
    assert means[result.diagnosed][PRIMARY] == best
    pipeline = json.loads((tmp_path / "out" / "pipeline.json").read_text())
    assert pipeline["rag"]["diagnosed_run"] == result.diagnosed
    assert pipeline["rag"]["diagnosed_because"] == result.diagnosed_why
    assert f"RAG diagnosis of {result.diagnosed}, the best stage by {PRIMARY}" in result.summary()
    answers = next(s for s in steps if s.name == "answers")
    assert f"top 3 of {result.diagnosed} " in answers.detail
