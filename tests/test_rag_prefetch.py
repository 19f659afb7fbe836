"""A judge that answers batches is asked each sentence's first question at once: same numbers, same counts."""

from __future__ import annotations

import json
from pathlib import Path

from stagewise.rag import evaluate_rag
from stagewise.rag.calibrated import CalibratedJudge
from stagewise.rag.judges import CachedJudge, Passage
from stagewise.report import render


class OneAtATime:
    """The calibrated judge without its batch method: asked claim by claim."""

    name = "calibrated(features=lexical)"

    def __init__(self) -> None:
        self.inner = CalibratedJudge(features="lexical")
        self.version = self.inner.version

    def supports(self, passages, claim) -> bool:
        return self.inner.supports(passages, claim)


class Batching(OneAtATime):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def verdicts(self, items):
        self.batches.append(len(items))
        return self.inner.verdicts(items)


def _records() -> list[dict]:
    from tests.report_helpers import RAG_RECORDS

    many = []
    for i in range(6):  # the same answers under other ids: a cache must not merge samples
        many += [{**r, "id": f"{r['id']}-{i}"} for r in RAG_RECORDS]
    return many


def test_prefetching_changes_no_number_and_no_count() -> None:
    records = _records()
    batching = Batching()
    plain = evaluate_rag(records, judge=OneAtATime())
    batched = evaluate_rag(records, judge=batching)
    assert render(batched, "jsonl") == render(plain, "jsonl")
    assert batched.judges == plain.judges  # requests, calls and cache hits as if asked one by one
    stats = batched.judges["support"]
    assert stats["requests"] == stats["calls"] + stats["cache_hits"]
    assert batching.batches and batching.batches[0] > 1  # the first questions went in one batch


def test_a_prefetched_answer_lands_in_the_disk_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    judge = CachedJudge(Batching(), cache)
    items = [([Passage("p1", "Emma appeared in 1815.")], "Emma appeared in 1815."), ([Passage("p2", "x")], "y")]
    assert judge.prefetch(items) == 2 and judge.prefetch(items) == 0
    assert len(cache.read_text().splitlines()) == 2
    again = CachedJudge(Batching(), cache)
    assert again.prefetch(items) == 0 and [again.supports(p, c) for p, c in items] == [judge.supports(p, c)
                                                                                      for p, c in items]  # fmt: skip
    assert json.loads(cache.read_text().splitlines()[0])["supports"] in (True, False)
