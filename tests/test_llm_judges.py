"""LLM judges (stagewise.rag.llm_judges) over a real loopback endpoint: support, relevance and nugget verdicts,
defensive parsing (every answer a label or an unjudged row with its reason, never a crash), the call budget, the
dry run, token counts, the cache on rerun, and a run killed with SIGKILL that resumes from its cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError
from stagewise.rag.judges import JUDGES, Passage, parse_judge
from stagewise.rag.llm_judges import (
    NUGGET_LABELS,
    LlmJudge,
    load_prompt,
    parse_nuggets,
    parse_relevance,
    parse_support,
    plan_summary,
    prompt_names,
)
from stagewise.rag.verdicts import RELEVANCE_LABELS, SUPPORT_LABELS, judge_tasks, relevance_verdicts, support_verdicts
from tests.llm_helpers import loopback, ok, status

pytest.importorskip("httpx", reason="LLM judges need httpx (the llm extra)")

ROOT = Path(__file__).resolve().parents[1]
EMMA = [Passage("p1", "Jane Austen published Emma in 1815.")]


def judge(url: str, tmp_path: Path, **params) -> LlmJudge:
    return LlmJudge(model="loopback-model", url=url, cache=str(tmp_path / "replies.jsonl"), **params)


def claim(case: str) -> tuple[list[Passage], str]:
    return EMMA, f"Emma appeared in 1815. case:{case}"


# ------------------------------------------------------------------------------------------------ support


def test_support_answers_in_every_shape_give_a_label_or_an_unjudged_reason(tmp_path: Path) -> None:
    scripts = {
        "json": [ok('{"label": "supported", "rationale": "the passage says 1815"}')],
        "fenced": [ok('Here you go:\n```json\n{"label": "Partially supported"}\n```')],
        "bare": [ok("Not supported.")],
        "schema": [ok('{"verdict": "supported"}')],
        "label": [ok('{"label": "probably"}')],
        "prose": [ok("I think the passage is about a novel. " * 20)],
        "down": [status(503)],
    }
    with loopback(scripts) as server:
        j = judge(server.url, tmp_path, retries=0)
        verdicts = support_verdicts(j, [claim(c) for c in scripts])
    got = {c: v for c, v in zip(scripts, verdicts, strict=True)}
    assert (got["json"].label, got["json"].score, got["json"].rationale) == ("supported", 1.0, "the passage says 1815")
    assert (got["fenced"].label, got["fenced"].score) == ("partial", 0.5)
    assert (got["bare"].label, got["bare"].score) == ("not", 0.0)
    assert got["schema"].reason.startswith("wrong schema (no 'label' key; keys ['verdict']); the answer began: ")
    assert "label 'probably' is not one of supported, partial, not" in got["label"].reason
    assert got["prose"].reason.startswith("unparseable answer") and len(got["prose"].reason) < 400
    assert "I think the passage is about a novel." in got["prose"].reason  # the answer's start, for the reader
    assert got["down"].reason == "endpoint failed: HTTP 503:  (1 attempt)" and got["down"].score is None
    assert all(v.usage["completion_tokens"] > 0 for c, v in got.items() if c != "down")
    assert sum(not v.judged for v in verdicts) == 4


def test_the_request_holds_the_claim_the_passages_and_the_prompt(tmp_path: Path) -> None:
    with loopback() as server:
        judge(server.url, tmp_path, seed=3).support_verdicts([claim("a")])
    body = server.requests[0][1]
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"] == load_prompt("support-v1").system
    assert "[1] (p1) Jane Austen published Emma in 1815." in user["content"]
    assert "Claim: Emma appeared in 1815. case:a" in user["content"] and "$" not in user["content"]
    assert body["temperature"] == 0 and body["seed"] == 3


# ------------------------------------------------------------------------------------------------ relevance


def test_relevance_grades_0_to_3_and_refuses_anything_else(tmp_path: Path) -> None:
    answers = {
        "g3": '{"grade": 3}',
        "g0": "0",
        "str": '{"grade": "2"}',
        "big": '{"grade": 4}',
        "half": '{"grade": 1.5}',
    }
    with loopback({c: [ok(a)] for c, a in answers.items()}) as server:
        j = judge(server.url, tmp_path)
        verdicts = relevance_verdicts(j, [(f"who wrote Emma case:{c}", EMMA[0]) for c in answers])
    assert [(v.label, v.score) for v in verdicts[:3]] == [("3", 1.0), ("0", 0.0), ("2", 2 / 3)]
    assert [v.grade for v in verdicts[:3]] == [3, 0, 2]
    assert "grade 4 is not one of 0, 1, 2, 3" in verdicts[3].reason and "grade 1.5" in verdicts[4].reason
    user = next(body for case, body, _ in server.requests if case == "g3")["messages"][1]["content"]
    assert "Query: who wrote Emma case:g3" in user and "Passage: Jane Austen published Emma in 1815." in user


# ------------------------------------------------------------------------------------------------ nuggets


def test_nuggets_are_assessed_ten_a_call_and_a_miscounted_list_is_unjudged(tmp_path: Path) -> None:
    nuggets = [f"fact {n}" for n in range(12)]
    first = ["support", "partial_support", "not_support", "support", "Support", "not supported", "partial", "support",
             "not_support", "support"]  # fmt: skip
    with loopback({"n": [ok(json.dumps({"labels": first})), ok('{"labels": ["support"]}')]}) as server:
        j = judge(server.url, tmp_path, concurrency=1)
        (verdicts,) = j.nugget_verdicts([("question case:n", "the answer", nuggets)])
    assert len(verdicts) == 12 and server.counts["n"] == 2
    assert [v.label for v in verdicts[:10]] == [
        "support", "partial_support", "not_support", "support", "support", "not_support", "partial_support",
        "support", "not_support", "support",
    ]  # fmt: skip
    assert [v.score for v in verdicts[:3]] == [1.0, 0.5, 0.0]
    assert all(v.reason.startswith("wrong schema (1 labels for 2 nuggets)") for v in verdicts[10:])
    second_user = server.requests[1][1]["messages"][1]["content"]
    assert "1. fact 10\n2. fact 11" in second_user and "For each of the 2 nuggets" in second_user


# ------------------------------------------------------------------------------------------------ budget, dry run


def test_the_budget_leaves_the_rest_unjudged_and_a_dry_run_plans(tmp_path: Path) -> None:
    items = [claim(c) for c in "abcd"]
    with loopback() as server:
        spent = judge(server.url, tmp_path, max_calls=3, concurrency=1).support_verdicts(items)
        dry = judge(server.url, tmp_path, dry_run=True)
        planned = dry.support_verdicts([*items, claim("e")])
        plan = dry.plan("support", [*items, claim("e")])
    assert [v.judged for v in spent] == [True, True, True, False]
    assert spent[3].reason == "call budget spent (max_calls=3)" and sorted(server.counts) == ["a", "b", "c"]
    assert [v.judged for v in planned] == [True, True, True, False, False]  # the cache answers a dry run too
    assert planned[4].reason == "dry run: no call made" and planned[4].usage["prompt_tokens_estimated"] > 100
    assert [p["cached"] for p in plan] == [True, True, True, False, False]
    assert plan[4]["prompt"] == "support-v1" and plan[4]["max_completion_tokens"] == 256
    summary = plan_summary(plan)
    assert summary.startswith("2 calls to make (3 answered by the cache): about ")
    assert summary.endswith(" prompt tokens, at most 512 completion tokens")
    assert len(server.requests) == 3


# ------------------------------------------------------------------------------------------------ cache


def test_a_rerun_makes_no_call_and_reports_the_same_verdicts(tmp_path: Path) -> None:
    items = [claim(c) for c in "abc"]
    with loopback({"b": [ok("partial")]}) as server:
        first = judge(server.url, tmp_path).support_verdicts(items)
        again = judge(server.url, tmp_path)
        second = again.support_verdicts(items)
    assert len(server.requests) == 3 and again.stats.calls == 0 and again.stats.cache_hits == 3
    assert [(v.label, v.score) for v in second] == [(v.label, v.score) for v in first] == [
        ("supported", 1.0), ("partial", 0.5), ("supported", 1.0)]  # fmt: skip
    assert all(v.usage["cache_hits"] == 1 and v.usage["completion_tokens"] > 0 for v in second)


RUNNER = """
import sys
from stagewise.rag.judges import Passage
from stagewise.rag.llm_judges import LlmJudge
url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
judge = LlmJudge(model="loopback-model", url=url, cache=cache, concurrency=1)
judge.support_verdicts([([Passage("p1", "text")], f"claim case:k{i}") for i in range(n)])
print("finished")
"""


def test_a_run_killed_midway_resumes_from_its_cache(tmp_path: Path) -> None:
    n, cache = 12, tmp_path / "replies.jsonl"
    with loopback({f"k{i}": [ok(delay=0.25)] for i in range(n)}) as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER, server.url, str(cache), str(n)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not cache.exists() or len(cache.read_text().splitlines()) < 4):
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        saved = [json.loads(line) for line in cache.read_text().splitlines()]
        assert 4 <= len(saved) < n and b"finished" not in proc.stdout.read()
        resumed = LlmJudge(model="loopback-model", url=server.url, cache=str(cache))
        verdicts = resumed.support_verdicts([([Passage("p1", "text")], f"claim case:k{i}") for i in range(n)])
    assert all(v.label == "supported" for v in verdicts)
    assert resumed.stats.cache_hits == len(saved) and resumed.stats.calls == n - len(saved)
    # each answer that reached the cache was asked once in all; at most the one in flight at the kill twice
    assert all(server.counts[f"k{i}"] == 1 for i in range(len(saved)))
    assert sum(server.counts.values()) <= n + 1 and len(cache.read_text().splitlines()) == n


# ------------------------------------------------------------------------------------------------ naming, registry


def test_the_name_carries_model_prompts_and_settings_and_parses_back(tmp_path: Path) -> None:
    spec = parse_judge("llm(model='qwen2.5:7b',url='http://127.0.0.1:11434/v1',cache=off,seed=2)")
    built = spec.build()
    assert built.name == (
        "llm(model='qwen2.5:7b',url='http://127.0.0.1:11434/v1',support_prompt=support-v1,"
        "relevance_prompt=umbrela-v1,seed=2)"
    )
    assert parse_judge(built.name).build().name == built.name
    assert built.version.startswith("prompts-") and built.cache_path is None
    assert JUDGES["llm"].tasks == ("support", "relevance") and judge_tasks(built)[:2] == ("support", "relevance")
    assert {"support-v1", "umbrela-v1", "nugget-v1"} <= set(prompt_names())


def test_url_and_model_come_from_the_environment_and_a_missing_model_is_a_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("STAGEWISE_LLM_URL", "http://10.0.0.1:8000/v1")
    monkeypatch.setenv("STAGEWISE_LLM_MODEL", "env-model")
    monkeypatch.setenv("STAGEWISE_LLM_CACHE", str(tmp_path / "env.jsonl"))
    j = parse_judge("llm").build()
    assert j.options.url == "http://10.0.0.1:8000/v1" and j.options.model == "env-model"
    assert j.cache_path == tmp_path / "env.jsonl" and "url" not in j.name
    monkeypatch.delenv("STAGEWISE_LLM_MODEL")
    with pytest.raises(ConventionError, match=r"needs a model: llm\(model='qwen2\.5:7b'\), or set STAGEWISE_LLM_MODEL"):
        parse_judge("llm").build()
    with pytest.raises(ConventionError, match="no prompt 'support-v9'; the prompts that ship are answer-v1, nugget-v1"):
        parse_judge("llm(model=m,support_prompt=support-v9)").build()


def test_every_prompt_fills_every_placeholder() -> None:
    values = {"claim": "C", "passages": "P", "query": "Q", "passage": "P", "answer": "A", "nuggets": "N", "count": "2"}
    for name in prompt_names():
        prompt = load_prompt(name)
        user = prompt.messages(**values)[1][1]
        assert "$" not in user and "JSON" in user and len(prompt.sha256) == 64


# ------------------------------------------------------------------------------------------------ invariants


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=300)
    | st.builds(
        json.dumps,
        st.dictionaries(
            st.sampled_from(["label", "grade", "labels", "x"]),
            st.one_of(st.text(max_size=12), st.integers(-2, 5), st.floats(), st.lists(st.text(max_size=12))),
        ),
    )
)
def test_any_answer_parses_to_a_valid_label_or_an_unjudged_reason(text: str) -> None:
    for verdict, labels in ((parse_support(text), SUPPORT_LABELS), (parse_relevance(text), RELEVANCE_LABELS)):
        assert (verdict.label in labels and 0 <= verdict.score <= 1) or (
            not verdict.judged and verdict.score is None and "the answer began" in verdict.reason
        )
    nuggets = parse_nuggets(text, 3)
    assert len(nuggets) == 3 and all(v.label in NUGGET_LABELS or v.reason for v in nuggets)


def test_digits_that_are_not_ascii_are_unjudged_not_a_crash() -> None:
    from stagewise.rag.llm_judges import parse_relevance

    for text in ("¹", "３", '{"grade": "²"}'):  # str.isdigit() accepts them; int() does not
        verdict = parse_relevance(text)
        assert verdict.label == "unjudged" and verdict.reason
