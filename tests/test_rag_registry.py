"""RAG's choices are registry entries: options as one value, answer criteria with their behaviour, judges named in
the spec grammar. Adding a criterion or a judge is one entry: the library and ``stagewise rag`` take it, and the
help lists it, with no other edit (issue 20)."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import ConventionError
from stagewise.rag import CRITERIA, JUDGES, AnswerCriterion, JudgeEntry, RagOptions, RagSample, evaluate_rag
from stagewise.rag.answers import Criterion, normalize_answer, parse_criterion
from stagewise.rag.judges import Judge, LexicalJudge, Passage, parse_judge
from stagewise.spec import Param

RECORDS = [
    {
        "id": "q1",
        "retrieved": ["p3", "p9", "p1"],
        "context": ["p3", "p9"],
        "gold_evidence": ["p9"],
        "answer": "Jane Austen wrote it [p9].",
        "gold_answers": ["Jane Austen"],
        "passages": {"p9": "Emma is a novel by Jane Austen.", "p3": "Dickens wrote Bleak House."},
    },
    {
        "id": "q2",
        "retrieved": ["p1", "p2"],
        "gold_evidence": ["p8"],
        "answer": "Austen, I believe",
        "gold_answers": ["Austen"],
    },
]
runner = CliRunner()


# ------------------------------------------------------------------------------------------------ toy entries
def _prefix(attempt, words: int = 1) -> bool:
    """Correct when the answer's first ``words`` normalised words are those of some gold answer."""
    head = normalize_answer(attempt.answer).split()[:words]
    return any(normalize_answer(gold).split()[:words] == head for gold in attempt.gold_answers)


PREFIX = AnswerCriterion(
    "prefix",
    "the first {words} normalised word(s) of the answer are those of some gold answer",
    _prefix,
    {"words": Param(int, 1, "how many leading words must match", "an int >= 1", lambda v: v >= 1)},
)


class OverlapJudge:
    """Supports a claim when some passage shares at least ``shared`` words with it."""

    version = "toy-1"

    def __init__(self, shared: int = 2) -> None:
        self.shared = shared
        self.name = f"overlap(shared={shared})"

    def supports(self, passages, claim) -> bool:
        words = set(normalize_answer(claim).split())
        return any(len(words & set(normalize_answer(p.text).split())) >= self.shared for p in passages)


OVERLAP = JudgeEntry("overlap", "a passage shares enough words with the claim", OverlapJudge,
                     {"shared": Param(int, 2, "words in common", "an int >= 1", lambda v: v >= 1)})  # fmt: skip


@pytest.fixture
def toys() -> Iterator[None]:
    CRITERIA.register(PREFIX)
    JUDGES.register(OVERLAP)
    try:
        yield
    finally:
        CRITERIA.unregister("prefix")
        JUDGES.unregister("overlap")


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


# ------------------------------------------------------------------------------------------------ options
def test_options_are_one_value_with_checked_overrides() -> None:
    base = RagOptions(context_k=2, correct="f1:0.5")
    assert base.correct == Criterion("f1", 0.5) and base.judge == "auto"
    report = evaluate_rag(RECORDS, base, judge="none")
    assert report.options == dataclasses.replace(base, judge="none")
    assert isinstance(report.options, RagOptions)
    assert evaluate_rag(RECORDS, base).to_json() == evaluate_rag(RECORDS, context_k=2, correct="f1:0.5").to_json()
    with pytest.raises(ConventionError, match="no option 'contextk'; its options: context_k, correct, judge"):
        evaluate_rag(RECORDS, contextk=2)
    with pytest.raises(ConventionError, match="'context_k' parameter"):
        RagOptions(context_k=0)
    with pytest.raises(ConventionError, match=r"'judge' parameter .* auto, gold, lexical, calibrated, llm, none"):
        base.with_(judge="nli")


def test_options_checked_before_the_records_are_read(tmp_path: Path) -> None:
    with pytest.raises(ConventionError, match="'correct' parameter"):
        evaluate_rag(tmp_path / "absent.jsonl", correct="f2")


def test_rows_are_typed_samples() -> None:
    report = evaluate_rag(RECORDS, judge="none", metrics=["mrr"])
    first = report.rows[0]
    assert isinstance(first, RagSample) and (first.label, first.metrics["mrr"]) == ("ok", 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.label = "lucky"  # type: ignore[misc]
    assert first.to_dict()["mrr"] == 0.5 and list(first.to_dict())[:3] == ["id", "label", "reason"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert first["label"] == "ok" and first.get("mrr") == 0.5  # the old dict access, deprecated
    assert [w.category for w in caught] == [DeprecationWarning, DeprecationWarning]


# ------------------------------------------------------------------------------------------------ criteria
def test_each_builtin_criterion_decides_by_its_entry() -> None:
    """The behaviour is on the entry: em, f1 and contains read the scores; no name is tested in diagnose."""
    assert CRITERIA.names()[:4] == ["em", "f1", "contains", "judge"]
    correct = {c: [r.answer_correct for r in evaluate_rag(RECORDS, judge="none", correct=c).rows]
               for c in ("em", "f1:0.5", "contains")}  # fmt: skip
    assert correct == {"em": [False, False], "f1:0.5": [True, True], "contains": [True, True]}


def test_a_registered_criterion_works_in_the_library(toys: None) -> None:
    assert parse_criterion("prefix(words=2)").name == "prefix(words=2)"
    report = evaluate_rag(RECORDS, judge="none", correct="prefix")
    assert [r.answer_correct for r in report.rows] == [True, True]
    assert report.options.describe()["correct_rule"].startswith("the first 1 normalised word(s) of the answer")
    assert [r.correct_by for r in evaluate_rag(RECORDS, judge="none", correct="prefix(words=2)").rows] == [
        "prefix(words=2)"
    ] * 2
    assert [r.answer_correct for r in evaluate_rag(RECORDS, judge="none", correct="prefix(words=2)").rows] == [
        True,
        False,
    ]
    with pytest.raises(ConventionError, match="one of em, f1:T, contains, judge, prefix"):
        parse_criterion("prefix(letters=2)")


def test_a_registered_criterion_works_on_the_command_line(toys: None, records: Path) -> None:
    result = invoke("rag", str(records), "--correct", "prefix(words=2)", "--judge", "none", "-f", "jsonl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["correct_by"], r["answer_correct"]) for r in rows] == [("prefix(words=2)", ok) for ok in (True, False)]
    shown = " ".join(invoke("rag", "--help").stdout.replace("│", " ").split())
    assert "some gold answer), prefix (the first words normalised word(s) of the answer are" in shown
    bad = invoke("rag", str(records), "--correct", "suffix")
    assert bad.exit_code == 2 and "one of em, f1:T, contains, judge, prefix" in bad.stderr


# ------------------------------------------------------------------------------------------------ judges
def test_judges_are_named_canonically() -> None:
    assert JUDGES.names() == ["auto", "gold", "lexical", "calibrated", "query-coverage", "llm", "none"]
    assert parse_judge("Lexical(threshold=0.50)").name == "lexical(threshold=0.5)"
    assert parse_judge("lexical(threshold=0.6)").name == "lexical"  # a default is left out
    assert isinstance(LexicalJudge(), Judge) and LexicalJudge(0.5).name == "lexical(threshold=0.5)"
    with pytest.raises(ConventionError, match="judge 'lexical' has no parameter 'cutoff'; its parameters: threshold"):
        parse_judge("lexical(cutoff=1)")
    strict = evaluate_rag(RECORDS, judge="lexical(threshold=0.9)")
    assert strict.judges["support"]["name"] == "lexical(threshold=0.9)"
    assert strict.conventions()["sentence_citations"].endswith("with the lexical(threshold=0.9) judge")
    assert evaluate_rag(RECORDS).judges["support"]["name"] == "lexical"  # auto: the records carry passage texts


def test_a_registered_judge_works_in_the_library(toys: None) -> None:
    report = evaluate_rag(RECORDS, judge="overlap(shared=3)")
    assert report.options.judge == "overlap(shared=3)"
    assert report.judges["support"] == {"name": "overlap(shared=3)", "version": "toy-1", "requests": 1, "calls": 1,
                                        "cache_hits": 0}  # fmt: skip
    assert report.rows[0].sentence_citation_recall == 0.0  # "Jane Austen wrote it" shares 2 words with p9
    assert evaluate_rag(RECORDS, judge="overlap").rows[0].sentence_citation_recall == 1.0
    answer = evaluate_rag(RECORDS, judge="none", correct="judge", answer_judge="overlap(shared=1)")
    assert answer.judges["answer"]["name"] == "overlap(shared=1)"
    assert answer.conventions()["answer_judge"] == "overlap(shared=1)"
    assert OverlapJudge(1).supports([Passage("a", "Jane Austen")], "Austen")


def test_a_registered_judge_works_on_the_command_line(toys: None, records: Path) -> None:
    result = invoke("rag", str(records), "--judge", "overlap(shared=3)", "-f", "json")
    assert result.exit_code == 0, result.output
    support = json.loads(result.stdout)["conventions"]["judges"]["support"]
    assert (support["name"], support["version"]) == ("overlap(shared=3)", "toy-1")
    shown = " ".join(invoke("rag", "--help").stdout.replace("│", " ").split())
    assert "not computed), overlap (a passage shares enough words with the claim)" in shown
    bad = invoke("rag", str(records), "--judge", "overlap(shared=0)")
    assert bad.exit_code == 2 and bad.stderr.startswith("stagewise: error: The 'shared' parameter of overlap")


def test_a_judge_version_keys_the_cache(tmp_path: Path) -> None:
    """A judge that states a version asks afresh when the version changes (a new model revision)."""
    cache = tmp_path / "cache.jsonl"
    judge = OverlapJudge()
    evaluate_rag(RECORDS, judge=judge, judge_cache=cache)
    again = evaluate_rag(RECORDS, judge=judge, judge_cache=cache)
    assert again.judges["support"]["cache_hits"] == 1
    judge.version = "toy-2"
    fresh = evaluate_rag(RECORDS, judge=judge, judge_cache=cache)
    assert (fresh.judges["support"]["calls"], fresh.judges["support"]["version"]) == (1, "toy-2")
