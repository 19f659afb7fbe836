"""The LLM judge against a real model: llama.cpp's OpenAI-compatible server with the packaged Gemma 3 270M.

Skipped unless ``STAGEWISE_LLAMA_URL`` names the server (``make llm-check`` builds llama-cpp-python, starts the
server and sets it). Gemma 3 270M is a base model and no judge: this checks the plumbing only, on ten ExpertQA
claims and five (question, passage) pairs: every item judged or unjudged with a reason, tokens counted from the
server's ``usage``, and a rerun answered wholly from the cache. It prints the figures ``docs/judges.md`` reports.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from stagewise.rag.llm_judges import LlmJudge
from stagewise.rag.verdicts import relevance_verdicts, support_verdicts

URL = os.environ.get("STAGEWISE_LLAMA_URL", "")
MODEL = os.environ.get("STAGEWISE_LLAMA_MODEL", "gemma-3-270m")
ROOT = Path(__file__).resolve().parents[1]
EXPERTQA = ROOT.parent / "shared" / "data" / "expertqa" / "rand_test.jsonl"

pytestmark = pytest.mark.skipif(not URL, reason="set STAGEWISE_LLAMA_URL to a llama.cpp server (make llm-check)")


def claims(n: int, max_chars: int) -> tuple[list[dict], list]:
    """The first ``n`` ExpertQA claims with passage text whose passages fit the server's context, and their
    ``(passages, claim)`` items."""
    if not EXPERTQA.exists():
        pytest.skip(f"{EXPERTQA} is absent (ExpertQA, ../shared/data)")
    sys.path.insert(0, str(ROOT / "tools"))
    from fit_support_judge import items_of, load_claims

    chosen = [c for c in load_claims(EXPERTQA) if sum(len(t) for t in c["texts"]) <= max_chars][:n]
    return chosen, items_of(chosen)


def test_a_real_llama_server_judges_expertqa_claims_and_a_rerun_makes_no_call(tmp_path: Path) -> None:
    chosen, items = claims(10, max_chars=1500)  # short passages: a busy 2-core machine evaluates ~15-35 tokens/s
    pairs = [(c["claim"], p) for c, (passages, _) in zip(chosen[:5], items[:5], strict=True) for p in passages[:1]]
    cache = str(tmp_path / "replies.jsonl")
    settings = {"model": MODEL, "url": URL, "cache": cache, "max_tokens": 48}  # the rerun's must be the same
    judge = LlmJudge(**settings, concurrency=1, timeout=600, retries=1)  # llama.cpp's server answers one at a time
    start = time.perf_counter()
    support = support_verdicts(judge, items)
    seconds = time.perf_counter() - start
    relevance = relevance_verdicts(judge, pairs)
    stats = judge.stats.as_dict()

    for verdict in [*support, *relevance]:
        assert verdict.judged or verdict.reason, verdict
    assert stats["calls"] == len(items) + len(pairs) and stats["failures"] == 0
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert all(v.usage.get("prompt_tokens", 0) > 0 for v in support if "endpoint failed" not in (v.reason or ""))

    again = LlmJudge(**settings)
    rerun = support_verdicts(again, items)
    assert again.stats.calls == 0 and again.stats.cache_hits == len(items)
    assert [(v.label, v.reason) for v in rerun] == [(v.label, v.reason) for v in support]

    labels = Counter(v.label for v in support)
    grades = Counter(v.label for v in relevance)
    reasons = Counter((v.reason or "").split(";")[0] for v in [*support, *relevance] if not v.judged)
    print(
        f"\nllm-check: {judge.name} at {URL}\n"
        f"  support: {len(items)} ExpertQA claims in {seconds:.1f} s ({len(items) / seconds:.2f} claims/s, "
        f"concurrency 1, max_tokens 48); labels {dict(labels)}\n"
        f"  relevance: {len(pairs)} pairs; labels {dict(grades)}\n"
        f"  tokens: prompt {stats['prompt_tokens']}, completion {stats['completion_tokens']} "
        f"(server's usage); attempts {stats['attempts']}, retries {stats['retries']}\n"
        f"  unjudged reasons: {dict(reasons)}\n"
        f"  rerun: {again.stats.cache_hits} cache hits, {again.stats.calls} calls"
    )
