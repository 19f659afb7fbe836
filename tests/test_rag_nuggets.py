"""Nugget evaluation (stagewise.rag.nuggets): TREC RAG 2024's four scores, nuggetizer's files, the nugget 2x2.

Oracles: hand-worked numbers, including the assign-output example in nuggetizer's own documentation (two vital
nuggets supported, an okay one partially, an okay one not); a naive reference of the scoring rule written here;
invariants under hypothesis.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import InputError, StagewiseError
from stagewise.rag.judges import LexicalJudge, Passage
from stagewise.rag.nuggets import (
    ASSIGNMENTS,
    Nugget,
    NuggetRecord,
    assign_nuggets,
    nugget_report,
    nugget_scores,
    nugget_table,
    read_nuggets,
)
from stagewise.rag.verdicts import Verdict

DOC_EXAMPLE = {  # nuggetizer's documented assign output (answers mode)
    "query": "What is Python?",
    "qid": "q1",
    "answer_text": "Python is a high-level programming language...",
    "nuggets": [
        {"text": "Python is a high-level programming language", "importance": "vital", "assignment": "support"},
        {"text": "Python was created by Guido van Rossum", "importance": "vital", "assignment": "support"},
        {"text": "Python is used for data science", "importance": "okay", "assignment": "partial_support"},
        {"text": "Python supports multithreading", "importance": "okay", "assignment": "not_support"},
    ],
}


def test_nuggetizers_documented_example(tmp_path: Path) -> None:
    path = tmp_path / "assigned.jsonl"
    path.write_text(json.dumps(DOC_EXAMPLE) + "\n")
    (record,) = read_nuggets(path)
    assert record.qid == "q1" and record.query == "What is Python?" and record.answer.startswith("Python")
    scores = nugget_scores(record.nuggets)
    # vital: 2 of 2 supported; all: 2 supported of 4 strict, (2 + 0.5) / 4 with partial credit
    assert scores == {"strict_vital_score": 1.0, "strict_all_score": 0.5, "vital_score": 1.0, "all_score": 0.625}


def test_hand_worked_partial_credit_and_the_empty_vital_rule() -> None:
    nuggets = (
        Nugget("a", "vital", "partial_support"),
        Nugget("b", "vital", "not_support"),
        Nugget("c", "okay", "support"),
    )
    assert nugget_scores(nuggets) == pytest.approx(
        {"strict_vital_score": 0.0, "strict_all_score": 1 / 3, "vital_score": 0.25, "all_score": 0.5}
    )
    only_okay = (Nugget("c", "okay", "support"),)
    assert nugget_scores(only_okay)["vital_score"] == 0.0  # no vital nugget: 0, as nuggetizer
    assert nugget_scores(()) == dict.fromkeys(nugget_scores(only_okay), 0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["vital", "okay"]), st.sampled_from(list(ASSIGNMENTS))), max_size=12))
def test_scores_match_a_naive_reference_and_keep_their_order(pairs: list[tuple[str, str]]) -> None:
    nuggets = tuple(Nugget(f"n{i}", imp, a) for i, (imp, a) in enumerate(pairs))
    got = nugget_scores(nuggets)
    credit = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
    vital = [a for imp, a in pairs if imp == "vital"]
    every = [a for _, a in pairs]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    assert got["strict_vital_score"] == pytest.approx(mean([float(a == "support") for a in vital]))
    assert got["all_score"] == pytest.approx(mean([credit[a] for a in every]))
    assert got["strict_vital_score"] <= got["vital_score"] and got["strict_all_score"] <= got["all_score"]
    assert all(0.0 <= v <= 1.0 for v in got.values())


def test_unassigned_nuggets_are_not_scored() -> None:
    with pytest.raises(StagewiseError, match="assign the nuggets first"):
        nugget_scores((Nugget("a"),))


def test_reader_defaults_and_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "nuggets.jsonl"
    path.write_text(
        json.dumps({"qid": 7, "query": "q", "nuggets": [{"text": "x"}, {"text": "y", "importance": "okay"}]}) + "\n"
    )
    (record,) = read_nuggets(path)
    assert record.qid == "7" and record.nuggets[0].importance == "vital" and record.nuggets[0].assignment is None
    lines = [
        {"qid": "a", "nuggets": [{"text": "x"}]},
        {"qid": "b", "nuggets": [{"text": "x", "importance": "essential"}]},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InputError, match=r"nuggets\.jsonl:2: nuggets\[0\] has importance 'essential'"):
        read_nuggets(path)
    lines[1] = {"qid": "a", "nuggets": []}
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InputError, match=r"given twice \(lines 1 and 2\)"):
        read_nuggets(path)
    path.write_text(json.dumps({"qid": "a", "nuggets": [{"text": "x", "assignment": "yes"}]}) + "\n")
    with pytest.raises(InputError, match="support, partial_support, not_support"):
        read_nuggets(path)
    path.write_text('{"qid": "a", "nuggets": [}\n')
    with pytest.raises(InputError, match=r"nuggets\.jsonl:1"):
        read_nuggets(path)


class _Graded:
    """A judge answering from a table: (claim text) -> label, for the mapping of graded verdicts."""

    name = "table"
    version = None

    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels

    def support_verdicts(self, items):
        return [Verdict(self.labels[claim], 0.5) for _, claim in items]


def test_a_judge_assigns_with_three_levels_and_is_named() -> None:
    record = NuggetRecord("q", (Nugget("a"), Nugget("b", "okay"), Nugget("c")))
    judge = _Graded({"a": "supported", "b": "partial", "c": "not"})
    (out,) = assign_nuggets(judge, [record], {"q": "the answer"})
    assert [n.assignment for n in out.nuggets] == ["support", "partial_support", "not_support"]
    report = nugget_report([out], assigned_by="table")
    assert report.to_dict()["assigned_by"] == "table"
    assert report.means["vital_score"] == 0.5 and report.means["all_score"] == 0.5
    with pytest.raises(StagewiseError, match="no answer"):
        assign_nuggets(judge, [NuggetRecord("z", (Nugget("a"),))], {})


def test_the_nugget_two_by_two() -> None:
    record = NuggetRecord(
        "q",
        (
            Nugget("Austen wrote Emma", "vital", "support"),  # in context, in answer: ok
            Nugget("Emma appeared in 1815", "vital", "not_support"),  # in context, missing: generation_failure
            Nugget("Emma was adapted for film in 1996", "okay", "support"),  # not in context, answered: lucky
            Nugget("Austen died in Winchester", "okay", "partial_support"),  # neither (strict)
        ),
    )
    context = [Passage("p1", "Emma, a novel by Jane Austen, appeared in 1815.")]
    per_query = nugget_table(LexicalJudge(), [record], {"q": context})
    assert [cell for *_, cell in per_query["q"]] == ["ok", "generation_failure", "lucky", "retrieval_failure"]
    report = nugget_report([record], contexts={"q": context}, context_judge=LexicalJudge())
    table = report.to_dict()["table"]
    assert table["context_judge"] == "lexical(threshold=0.6)"
    assert table["all"] == {"ok": 1, "generation_failure": 1, "lucky": 1, "retrieval_failure": 1}
    assert table["vital"] == {"ok": 1, "generation_failure": 1, "lucky": 0, "retrieval_failure": 0}
    # with partial credit the fourth nugget is in the answer, so lucky
    partial = nugget_table(LexicalJudge(), [record], {"q": context}, partial=True)
    assert partial["q"][3][3] == "lucky"
    # a query without context has no nugget in context
    assert {cell for *_, cell in nugget_table(LexicalJudge(), [record], {})["q"]} == {"lucky", "retrieval_failure"}


def test_nuggets_in_the_diagnosis_and_on_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from stagewise.cli import app
    from stagewise.rag.diagnose import evaluate_rag

    records = tmp_path / "records.jsonl"
    record = {
        "id": "q1",
        "retrieved": ["p1", "p2"],
        "answer": "Jane Austen wrote Emma. It was filmed in 1996.",
        "gold_answers": ["Jane Austen"],
        "passages": {"p1": "Emma, a novel by Jane Austen, appeared in 1815.", "p2": "Bananas are yellow."},
    }
    records.write_text(json.dumps(record) + "\n" + json.dumps({**record, "id": "q2"}) + "\n")
    nuggets = tmp_path / "nuggets.jsonl"
    nuggets.write_text(
        json.dumps(
            {
                "qid": "q1",
                "nuggets": [
                    {"text": "Austen wrote Emma", "importance": "vital"},
                    {"text": "Emma appeared in 1815", "importance": "vital"},
                    {"text": "Emma was filmed in 1996", "importance": "okay"},
                ],
            }
        )
        + "\n"
    )
    report = evaluate_rag(str(records), nuggets=nuggets)
    assert report.rows[0].label == "lucky"  # no gold evidence ids: the passage-level label is unchanged
    summary = report.summary()["nuggets"]
    assert summary["assigned_by"] == "lexical(threshold=0.6)" and summary["queries"] == 1
    assert summary["samples_without_nuggets"] == ["q2"]
    assert summary["table"]["all"] == {"ok": 1, "generation_failure": 1, "lucky": 1, "retrieval_failure": 0}
    assert summary["means"]["strict_vital_score"] == 0.5
    result = CliRunner().invoke(app, ["rag", str(records), "--nuggets", str(nuggets)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "nuggets: in the retrieved context x in the answer" in result.stdout
    assert "ok 1 (vital 1)" in result.stdout and "generation_failure 1 (vital 1)" in result.stdout
    assert "nuggets.strict_vital_score" in result.stdout and "1 sample(s) have no nuggets" in result.stdout


class _NuggetPrompted:
    """A judge with the LLM judge's nugget_verdicts shape: (query, answer, nuggets) -> a verdict per nugget."""

    name = "nugget-llm"
    version = "v1"

    def __init__(self, labels: list[str]) -> None:
        self.labels, self.asked = labels, []

    def nugget_verdicts(self, items):
        self.asked += items
        return [[Verdict.unjudged("no JSON") if lab == "unjudged" else Verdict(lab, None) for lab in self.labels]
                for _ in items]  # fmt: skip

    def supports(self, passages, claim):  # never used for assignment when nugget_verdicts exists
        raise AssertionError("assignment must go through nugget_verdicts")


def test_a_nugget_prompted_judge_assigns_with_the_query_and_unjudged_are_counted() -> None:
    record = NuggetRecord("q", (Nugget("a"), Nugget("b", "okay"), Nugget("c")), query="who wrote Emma?")
    judge = _NuggetPrompted(["support", "partial_support", "unjudged"])
    (out,) = assign_nuggets(judge, [record], {"q": "Austen"})
    assert judge.asked == [("who wrote Emma?", "Austen", ["a", "b", "c"])]
    assert [(n.assignment, n.unjudged) for n in out.nuggets] == [
        ("support", False), ("partial_support", False), ("not_support", True)]  # fmt: skip
    report = nugget_report([out], assigned_by="nugget-llm v1")
    assert report.to_dict()["unjudged_nuggets"] == 1
    assert report.means["strict_vital_score"] == 0.5  # the unjudged vital nugget scores as not_support
    with pytest.raises(StagewiseError, match="do not match the nuggets asked"):
        assign_nuggets(_NuggetPrompted(["support"]), [record], {"q": "Austen"})


def test_a_support_judges_unjudged_verdict_is_marked() -> None:
    judge = _Graded({"a": "supported", "b": "unjudged"})
    (out,) = assign_nuggets(judge, [NuggetRecord("q", (Nugget("a"), Nugget("b")))], {"q": "x"})
    assert [(n.assignment, n.unjudged) for n in out.nuggets] == [("support", False), ("not_support", True)]
