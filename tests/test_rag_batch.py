"""ALCE's citation questions asked in rounds (issue 27): every sample's first questions in one batch, then the
follow-ups those answers call for (each citation alone, the others without it) in one batch per round. Checked
against ALCE's serial logic (the same questions, the same number of them), against the unbatched path with a
counting judge (the same bytes, the same counts, no extra call), and over a real loopback endpoint (the calls of
a round overlap)."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.rag import evaluate_rag
from stagewise.rag.citations import CitedSentence, alce_rounds, alce_scores
from stagewise.rag.verdicts import Verdict
from stagewise.report import render
from tests.test_rag_citations import alce_reference

WORDS = [
    "austen",
    "emma",
    "novel",
    "published",
    "1815",
    "dickens",
    "london",
    "river",
    "bridge",
    "opera",
    "violin",
    "castle",
]


def serial_questions(spec, needs):
    """The questions ALCE's own loop (the transcription in test_rag_citations) asks, in its order."""
    asked = []

    def nli(ids, sentence):
        asked.append((tuple(f"d{i}" for i in ids), sentence))
        return int(needs[sentence] <= {f"d{i}" for i in ids})

    alce_reference([(f"s{i}", list(cited)) for i, (cited, _) in enumerate(spec)], 4, nli)
    return asked


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 4), max_size=4, unique=True),  # cited docs (d4 is outside the context)
            st.sets(st.integers(0, 3), min_size=1, max_size=3),  # docs the sentence needs
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_rounds_ask_alces_questions_no_more_no_fewer(spec) -> None:
    needs = {f"s{i}": {f"d{j}" for j in need} for i, (_, need) in enumerate(spec)}
    sentences = [CitedSentence(f"s{i}", tuple(f"d{j}" for j in cited)) for i, (cited, _) in enumerate(spec)]
    rounds = alce_rounds(sentences, {"d0", "d1", "d2", "d3"}, {})
    asked, sizes = [], []
    try:
        questions = next(rounds)
        while True:
            sizes.append(len(questions))
            asked += [(tuple(p.id for p in passages), claim) for passages, claim in questions]
            questions = rounds.send([needs[claim] <= {p.id for p in passages} for passages, claim in questions])
    except StopIteration as done:
        recall, precision = done.value
    assert Counter(asked) == Counter(serial_questions(spec, needs))  # every question ALCE asks, as often
    assert len(sizes) <= 3 and all(sizes)  # at most three rounds, none empty

    def nli(ids, sentence):
        return int(needs[sentence] <= {f"d{i}" for i in ids})

    ref_recall, ref_precision = alce_reference([(f"s{i}", list(c)) for i, (c, _) in enumerate(spec)], 4, nli)
    assert recall == pytest.approx(ref_recall) and (precision or 0) == pytest.approx(ref_precision)


def test_a_hand_worked_sample_takes_three_rounds() -> None:
    # "A." cites p1, p2, p3 and needs p1 and p2: supported together; alone none supports it; without p1 or p2
    # the rest does not (both precise), without p3 the rest does (p3 is not): precision 2/3 over 4 citations
    # counted with "B." (one citation, supported): (2 + 1) / 4
    needs = {"A.": {"p1", "p2"}, "B.": {"p4"}}
    sentences = [CitedSentence("A.", ("p1", "p2", "p3")), CitedSentence("B.", ("p4",))]
    rounds = alce_rounds(sentences, {"p1", "p2", "p3", "p4"}, {})
    seen = []
    try:
        questions = next(rounds)
        while True:
            seen.append([(tuple(p.id for p in passages), claim) for passages, claim in questions])
            questions = rounds.send([needs[c] <= {p.id for p in passages} for passages, c in questions])
    except StopIteration as done:
        assert done.value == (1.0, 0.75)
    assert seen == [
        [(("p1", "p2", "p3"), "A."), (("p4",), "B.")],
        [(("p1",), "A."), (("p2",), "A."), (("p3",), "A.")],
        [(("p2", "p3"), "A."), (("p1", "p3"), "A."), (("p1", "p2"), "A.")],
    ]


class WordJudge:
    """Supported when every word of the claim (lower-cased, four letters or more) is in the passages' text;
    counts every question that reaches it, one by one."""

    name = "words"
    version = None

    def __init__(self) -> None:
        self.answered = 0

    def supports(self, passages, claim) -> bool:
        self.answered += 1
        text = " ".join(p.text for p in passages).lower()
        return all(w in text.split() for w in re.findall(r"[a-z0-9]{4,}", claim.lower()))


class BatchWordJudge(WordJudge):
    """The same judge with a batch method, noting the size of each batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def verdicts(self, items):
        self.batches.append(len(items))
        return [Verdict("supported", 1.0) if self.supports(p, c) else Verdict("not", 0.0) for p, c in items]


def word_records(n: int = 40, seed: int = 0) -> list[dict]:
    """Samples whose sentences cite one to three of five passages, often more than they need."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        passages = {f"p{j}": " ".join(rng.sample(WORDS, 3)) for j in range(5)}
        sentences = []
        for _ in range(rng.randint(1, 3)):
            cited = rng.sample(sorted(passages), rng.randint(1, 3))
            words = [w for pid in cited[:2] for w in passages[pid].split()[:1]]
            sentences.append(" ".join(words).capitalize() + " " + "".join(f"[{c}]" for c in cited) + ".")
        out.append({
            "id": f"q{i}", "retrieved": sorted(passages), "passages": passages, "answer": " ".join(sentences),
            "gold_answers": ["emma"], "gold_evidence": ["p0"],
        })  # fmt: skip
    return out


def test_batched_rounds_change_no_number_no_count_and_make_no_extra_call() -> None:
    records = word_records()
    serial, batched = WordJudge(), BatchWordJudge()
    plain = evaluate_rag(records, judge=serial)
    rounds = evaluate_rag(records, judge=batched)
    assert render(rounds, "jsonl") == render(plain, "jsonl")
    assert rounds.judges == plain.judges  # requests, calls and cache hits as if asked one by one
    assert batched.answered == serial.answered == plain.judges["support"]["calls"]  # no question asked twice
    assert len(batched.batches) == 3 and min(batched.batches) > 1  # one batch per round, three rounds
    precisions = [row.sentence_citation_precision for row in plain.rows]
    assert any(p is not None and 0 < p < 1 for p in precisions)  # the follow-ups decided something


def test_a_rerun_through_rounds_reads_every_answer_from_the_disk_cache(tmp_path) -> None:
    records = word_records(12, seed=3)
    cache = tmp_path / "cache.jsonl"
    first = evaluate_rag(records, judge=BatchWordJudge(), judge_cache=cache)
    again_judge = BatchWordJudge()
    again = evaluate_rag(records, judge=again_judge, judge_cache=cache)
    assert render(again, "jsonl") == render(first, "jsonl")
    assert again_judge.answered == 0 and again.judges["support"]["calls"] == 0  # all from the disk cache
    assert again.judges["support"]["cache_hits"] == first.judges["support"]["requests"]


def test_serial_alce_scores_still_answer_one_question_at_a_time() -> None:
    judge = WordJudge()
    sentences = [CitedSentence("Emma austen", ("p1", "p2"))]
    texts = {"p1": "emma austen", "p2": "austen"}
    assert alce_scores(sentences, {"p1", "p2"}, judge, texts) == (1.0, 0.5)
    assert judge.answered == 4  # together; p1 alone (yes); p2 alone (no), p1 without p2 (yes: p2 imprecise)


class FirstCaseJudge:
    """What the loopback server below answers, in process: supported when the first passage says case:yes."""

    name = "first-case"
    version = None

    def supports(self, passages, claim) -> bool:
        return bool(passages) and passages[0].text.startswith("case:yes")


def case_records() -> list[dict]:
    rng = random.Random(7)
    out = []
    for i in range(8):
        passages = {f"p{j}": f"case:{rng.choice(['yes', 'no'])} passage {i}.{j}" for j in range(4)}
        cites = ["".join(f"[{c}]" for c in rng.sample(sorted(passages), rng.randint(1, 3))) for _ in range(2)]
        answer = f"First claim of {i} {cites[0]}. Second claim of {i} {cites[1]}."
        out.append({"id": f"q{i}", "retrieved": sorted(passages), "passages": passages, "answer": answer,
                    "gold_answers": ["x"], "gold_evidence": ["p0"]})  # fmt: skip
    return out


def test_an_llm_judge_over_a_loopback_endpoint_gets_each_round_concurrently(tmp_path) -> None:
    pytest.importorskip("httpx", reason="LLM judges need httpx (the llm extra)")
    from stagewise.rag.llm_judges import LlmJudge
    from tests.llm_helpers import loopback, ok

    replies = {
        "yes": [ok('{"label": "supported", "rationale": "it says so"}', delay=0.05)],
        "no": [ok('{"label": "not", "rationale": "it does not"}', delay=0.05)],
    }
    records = case_records()
    expected = evaluate_rag(records, judge=FirstCaseJudge())
    batches: list[int] = []

    class NotingLlm(LlmJudge):
        def support_verdicts(self, items):
            batches.append(len(items))
            return super().support_verdicts(items)

    with loopback(replies) as server:
        llm = NotingLlm(model="loopback-model", url=server.url, cache="off", concurrency=4)
        got = evaluate_rag(records, judge=llm)
    assert [row.to_dict() for row in got.rows] == [row.to_dict() for row in expected.rows]
    counts = {k: got.judges["support"][k] for k in ("requests", "calls", "cache_hits")}
    assert counts == {k: expected.judges["support"][k] for k in counts}
    assert len(server.requests) == counts["calls"]  # each call reached the endpoint once, none more
    assert server.max_in_flight >= 2  # a round's calls overlapped
    assert len(batches) == 3 and sum(batches) == counts["calls"]  # every call in one of three rounds' batches
    assert any(row.sentence_citation_precision not in (None, 0.0, 1.0) for row in got.rows)  # follow-ups asked
