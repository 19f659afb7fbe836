"""Labels and reasons: every rule, with several evidence sets, no evidence, duplicates, unanswerable questions,
empty retrieval and malformed records; agreement with the lesson's ``diagnose``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError, InputError
from stagewise.lesson import diagnose
from stagewise.rag import LABELS, REASONS, evaluate_rag, read_records


def one(record: dict, **kwargs) -> dict:
    """The row of a single record."""
    return evaluate_rag([record], judge="none", **kwargs).rows[0]


def rec(**fields) -> dict:
    base = {"id": "q", "retrieved": [], "answer": "", "gold_answers": ["Jane Austen"]}
    base.update(fields)
    return base


# -- the issue's example -----------------------------------------------------------------------------------------


def test_issue_example() -> None:
    row = one(
        {
            "id": "q1",
            "question": "who wrote Emma?",
            "retrieved": ["p3", "p9", "p1"],
            "context": ["p3", "p9"],
            "gold_evidence": ["p9", ["p4", "p5"]],
            "answer": "Jane Austen wrote it [p9].",
            "gold_answers": ["Jane Austen"],
            "citations": ["p9"],
            "passages": {"p9": "Emma is a novel by Jane Austen."},
        }
    )
    assert (row.label, row.reason) == ("ok", "correct_answer")
    assert row.evidence_in_context is True and row.answer_correct is True
    assert row.first_gold_rank == 2
    assert row.citation_precision == 1.0 and row.citation_recall == 1.0
    assert row.context == ["p3", "p9"] and row.context_cutoff == 2
    assert row.correct_by == "contains"


# -- one test per reason -----------------------------------------------------------------------------------------

CASES = {
    "correct_answer": (rec(retrieved=["p1"], gold_evidence=["p1"], answer="Jane Austen"), "ok"),
    "correct_abstention": (rec(retrieved=["p1"], gold_answers=[], answer="I don't know."), "ok"),
    "wrong_answer": (rec(retrieved=["p1"], gold_evidence=["p1"], answer="Charles Dickens"), "generation_failure"),
    "partial_answer": (rec(retrieved=["p1"], gold_evidence=["p1"], answer="Austen"), "generation_failure"),
    "false_abstention": (rec(retrieved=["p1"], gold_evidence=["p1"], answer="I cannot answer."), "generation_failure"),
    "hallucinated_answer": (rec(retrieved=["p1"], gold_answers=[], answer="Paris"), "generation_failure"),
    "not_retrieved": (rec(retrieved=["p1", "p2"], gold_evidence=["p9"], answer="Dickens"), "retrieval_failure"),
    "ranked_too_low": (
        rec(retrieved=["a", "b", "c", "d", "e", "p9"], gold_evidence=["p9"], answer="Dickens"),
        "retrieval_failure",
    ),
    "dropped_from_context": (
        rec(retrieved=["p9", "a", "b"], context=["a", "b"], gold_evidence=["p9"], answer="Dickens"),
        "retrieval_failure",
    ),
    "partial_evidence": (
        rec(retrieved=["p4", "a", "b", "c", "d", "e", "p5"], gold_evidence=[["p4", "p5"]], answer="Dickens"),
        "retrieval_failure",
    ),
}


@pytest.mark.parametrize("reason", list(CASES))
def test_each_reason(reason: str) -> None:
    record, label = CASES[reason]
    row = one(record)
    assert (row.label, row.reason) == (label, reason)
    assert reason in REASONS[label]
    assert row.detail


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (rec(retrieved=["p1", "p2"], gold_evidence=["p9"], answer="Jane Austen"), "not_retrieved"),
        (rec(retrieved=["a", "b", "c", "d", "e", "p9"], gold_evidence=["p9"], answer="Jane Austen"), "ranked_too_low"),
        (rec(retrieved=["p9", "a"], context=["a"], gold_evidence=["p9"], answer="Jane Austen"), "dropped_from_context"),
        (rec(retrieved=["p4"], gold_evidence=[["p4", "p5"]], answer="Jane Austen"), "partial_evidence"),
    ],
)
def test_lucky_carries_the_retrieval_reason(record: dict, reason: str) -> None:
    row = one(record)
    assert (row.label, row.reason) == ("lucky", reason)


def test_abstaining_without_evidence_is_a_retrieval_failure() -> None:
    row = one(rec(retrieved=["x"], gold_evidence=["p9"], answer="I don't know."))
    assert (row.label, row.reason) == ("retrieval_failure", "not_retrieved")
    assert row.abstained is True


# -- evidence alternatives ---------------------------------------------------------------------------------------


def test_one_complete_alternative_suffices() -> None:
    row = one(rec(retrieved=["p4", "p5"], gold_evidence=["p9", ["p4", "p5"]], answer="Jane Austen"))
    assert row.evidence_in_context is True
    assert row.evidence_rank == 2  # the set is complete at rank 2


def test_ids_from_different_alternatives_do_not_combine() -> None:
    row = one(rec(retrieved=["a", "c"], gold_evidence=[["a", "b"], ["c", "d"]], answer="Dickens"))
    assert row.evidence_in_context is False
    assert row.reason == "partial_evidence"
    assert row.first_gold_rank == 1


def test_needed_together_with_part_below_cutoff() -> None:
    row = one(rec(retrieved=["p4", "x", "p5"], gold_evidence=[["p4", "p5"]], answer="Dickens"), context_k=2)
    assert (row.reason, row.evidence_in_context) == ("partial_evidence", False)
    assert row.gold_ranks == {"p4": 1, "p5": 3}


def test_dropped_takes_precedence_over_partial() -> None:
    record = rec(retrieved=["p9", "p4", "x"], context=["p4", "x"], gold_evidence=["p9", ["p4", "p5"]], answer="no")
    assert one(record).reason == "dropped_from_context"


def test_gold_in_context_but_not_retrieved_counts() -> None:
    row = one(rec(retrieved=[], context=["p9"], gold_evidence=["p9"], answer="Jane Austen"))
    assert (row.label, row.first_gold_rank) == ("ok", None)


# -- no evidence, unanswerable, empty retrieval --------------------------------------------------------------------


def test_answerable_without_evidence_is_never_in_context() -> None:
    for evidence in ([], None):
        fields = {"retrieved": ["p1"], "answer": "Jane Austen"}
        if evidence is not None:
            fields["gold_evidence"] = evidence
        row = one(rec(**fields))
        assert (row.label, row.reason) == ("lucky", "not_retrieved")
        assert row.gold_evidence_given is (evidence is not None)
        assert row.metrics["recall@5"] is None and row.citation_recall is None


def test_unanswerable_needs_no_evidence() -> None:
    declined = one(rec(retrieved=[], gold_answers=[], answer="The documents do not say."))
    answered = one(rec(retrieved=["p1"], gold_answers=[], gold_evidence=[], answer="Paris [p1]"))
    assert (declined.label, declined.reason, declined.evidence_in_context) == (
        "ok",
        "correct_abstention",
        True,
    )
    assert (answered.label, answered.reason) == ("generation_failure", "hallucinated_answer")
    assert answered.citation_precision == 0.0  # it cited a passage that is no evidence


def test_unanswerable_with_evidence_uses_the_rule() -> None:
    row = one(rec(retrieved=["x"], gold_answers=[], gold_evidence=["p9"], answer="I don't know"))
    assert (row.label, row.reason) == ("lucky", "not_retrieved")


def test_empty_retrieval() -> None:
    report = evaluate_rag(
        [rec(id="a", retrieved=[], gold_evidence=["p9"], answer="x"), rec(id="b", retrieved=[], answer="y")],
        judge="none",
    )
    a, b = report.rows
    assert (a.reason, a.first_gold_rank, a.metrics["recall@5"], a.metrics["mrr"]) == ("not_retrieved", None, 0.0, 0.0)
    assert b.metrics["recall@5"] is None
    assert any("retrieved nothing" in note for note in report.notes())


# -- duplicates ----------------------------------------------------------------------------------------------------


def test_duplicate_retrieved_ids_keep_first_position() -> None:
    row = one(rec(retrieved=["a", "a", "b", "a", "p9"], gold_evidence=["p9"], answer="Jane Austen"), context_k=3)
    assert row.duplicates_dropped == 2
    assert row.first_gold_rank == 3  # ranks count the list without copies
    assert row.context == ["a", "b", "p9"]
    assert row.label == "ok"


def test_duplicates_in_context_citations_and_evidence_count_once() -> None:
    row = one(
        rec(
            retrieved=["p9"],
            context=["p9", "p9"],
            gold_evidence=["p9", "p9", ["p4", "p4"]],
            citations=["p9", "p9"],
            answer="Jane Austen",
        )
    )
    assert row.context == ["p9"] and row.citations == ["p9"]
    assert row.gold_evidence == [["p9"], ["p4"]]
    assert row.citation_precision == 1.0


def test_duplicate_sample_ids_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec(id="q1")) + "\n\n" + json.dumps(rec(id="q1")) + "\n")
    with pytest.raises(InputError, match=r"r\.jsonl:3: duplicate id 'q1' \(first on line 1\)"):
        read_records(path)


# -- context and criteria ------------------------------------------------------------------------------------------


def test_context_k_sets_default_context_and_cutoff() -> None:
    record = rec(retrieved=["a", "b", "p9"], gold_evidence=["p9"], answer="Jane Austen")
    assert one(record, context_k=2).reason == "ranked_too_low"
    assert one(record, context_k=3).label == "ok"
    assert one(record).context_cutoff == 5


def test_explicit_context_with_context_k() -> None:
    record = rec(retrieved=["a", "p9", "b"], context=["a", "b"], gold_evidence=["p9"], answer="x")
    assert one(record).reason == "dropped_from_context"  # cut-off len(context) = 2, p9 at rank 2
    assert one(record, context_k=1).reason == "ranked_too_low"


@pytest.mark.parametrize(
    ("correct", "expected"), [("contains", True), ("em", False), ("f1:0.5", True), ("f1:0.9", False), ("judge", True)]
)
def test_criterion_decides(correct: str, expected: bool) -> None:
    row = one(rec(retrieved=["p1"], gold_evidence=["p1"], answer="Jane Austen wrote Emma"), correct=correct)
    assert row.answer_correct is expected
    assert row.correct_by == correct


def test_abstention_is_never_correct() -> None:
    row = one(rec(retrieved=["p1"], gold_evidence=["p1"], answer="I don't know, maybe Jane Austen"))
    assert row.abstained and not row.answer_correct
    assert row.reason == "false_abstention"


def test_abstained_field_overrides_detection() -> None:
    row = one(rec(retrieved=["p1"], gold_evidence=["p1"], answer="Jane Austen", abstained=True))
    assert row.reason == "false_abstention"


def test_citation_markers_do_not_change_answer_metrics() -> None:
    row = one(rec(retrieved=["p1"], gold_evidence=["p1"], answer="Jane Austen [p1]"), correct="em")
    assert row.em == 1.0


# -- the lesson's diagnose ---------------------------------------------------------------------------------------

IDS = st.sampled_from(["p1", "p2", "p3", "p4", "p5", "p6", "p7"])
ANSWERS = st.sampled_from(["Jane Austen", "Austen", "Charles Dickens", "I don't know.", "", "Jane Austen [p1]"])


@st.composite
def records(draw) -> dict:
    record = {
        "id": "s",
        "retrieved": draw(st.lists(IDS, max_size=7)),
        "answer": draw(ANSWERS),
        "gold_answers": draw(st.sampled_from([[], ["Jane Austen"], ["Jane Austen", "Austen"]])),
    }
    if draw(st.booleans()):
        record["context"] = draw(st.lists(IDS, max_size=4))
    if draw(st.booleans()):
        record["gold_evidence"] = draw(st.lists(st.one_of(IDS, st.lists(IDS, min_size=1, max_size=3)), max_size=3))
    return record


def naive_evidence_in_context(record: dict, context_k: int) -> bool:
    retrieved = list(dict.fromkeys(record["retrieved"]))
    context = set(record["context"]) if "context" in record else set(retrieved[:context_k])
    alternatives = [{a} if isinstance(a, str) else set(a) for a in record.get("gold_evidence") or []]
    if not alternatives and not record["gold_answers"]:
        return True
    return any(alt <= context for alt in alternatives)


@settings(max_examples=300, deadline=None)
@given(records(), st.sampled_from([1, 2, 5]), st.sampled_from(["contains", "em", "f1:0.5"]))
def test_label_agrees_with_lesson_diagnose(record: dict, context_k: int, correct: str) -> None:
    row = one(record, context_k=context_k, correct=correct)
    assert row.label == diagnose(row.evidence_in_context, row.answer_correct)
    assert row.evidence_in_context is naive_evidence_in_context(record, context_k)
    assert row.reason in REASONS[row.label]
    if not record["gold_answers"]:
        assert row.answer_correct is row.abstained


def test_all_four_cells_match_diagnose() -> None:
    for evidence in (True, False):
        for correct in (True, False):
            record = rec(
                retrieved=["p1"] if evidence else ["x"],
                gold_evidence=["p1"],
                answer="Jane Austen" if correct else "Dickens",
            )
            assert one(record).label == diagnose(evidence, correct)
    assert set(LABELS) == {"ok", "generation_failure", "retrieval_failure", "lucky"}


def test_top_label_is_the_lesson_diagnose_cell_by_cell() -> None:
    # rag.labels writes the lesson's table again (the library may not import the teaching module): hold them equal.
    from stagewise.rag.labels import top_label

    for evidence in (True, False):
        for correct in (True, False):
            assert top_label(evidence, correct) == diagnose(evidence, correct)


# -- malformed records ---------------------------------------------------------------------------------------------

GOOD = rec(retrieved=["p1"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"invalid JSON"),
        ("[1, 2]", r"must be a JSON object"),
        ('"text"', r"must be a JSON object"),
        (json.dumps({"id": "x", "answer": ""}), r"missing field gold_answers"),
        (json.dumps({"answer": "", "gold_answers": []}), r"missing field id"),
        (json.dumps({**GOOD, "answer": None}), r'"answer" must be a string'),
        (json.dumps({**GOOD, "gold_answers": [1]}), r'"gold_answers" must be a list of strings'),
        (json.dumps({**GOOD, "retrieved": "p1"}), r'"retrieved" must be a list of ids'),
        (json.dumps({**GOOD, "retrieved": [1.5]}), r"not an id"),
        (json.dumps({**GOOD, "gold_evidence": [[]]}), r"empty alternative"),
        (json.dumps({**GOOD, "gold_evidence": "p1"}), r"list of alternatives"),
        (json.dumps({**GOOD, "context": [None]}), r"not an id"),
        (json.dumps({**GOOD, "passages": {"p1": 3}}), r"not a string"),
        (json.dumps({**GOOD, "abstained": "yes"}), r'"abstained" must be true, false or null'),
        (json.dumps({**GOOD, "id": True}), r"not an id"),
    ],
)
def test_malformed_record_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    with pytest.raises(InputError, match=r"records\.jsonl:2: .*" + message):
        read_records(path)


def test_empty_file_and_bad_utf8(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="holds no records"):
        read_records(empty)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: is not valid UTF-8"):
        read_records(bad)


def test_json_list_and_gzip(tmp_path: Path) -> None:
    import gzip

    listed = tmp_path / "r.json"
    listed.write_text(json.dumps([GOOD, {**GOOD, "id": "q2"}]))
    assert [r.id for r in read_records(listed)] == ["q", "q2"]
    zipped = tmp_path / "r.jsonl.gz"
    zipped.write_bytes(gzip.compress((json.dumps(GOOD) + "\n").encode()))
    assert read_records(zipped)[0].retrieved == ("p1",)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"context_k": 0}, "'context_k' parameter"),
        ({"kilt_k": -1}, "'kilt_k' parameter"),
        ({"partial_recall": 2}, "'partial_recall' parameter"),
        ({"evidence": "text"}, "'evidence' parameter"),
        ({"judge": "nli"}, "'judge' parameter"),
    ],
)
def test_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises(ConventionError, match=match):
        evaluate_rag([GOOD], **kwargs)


@pytest.mark.parametrize("judge", ["none", "gold"])
def test_answer_metrics_do_not_depend_on_the_judge(judge: str) -> None:
    record = rec(retrieved=["p1"], gold_evidence=["p1"], answer="Jane Austen.\nI don't know the year [p1].")
    row = evaluate_rag([record], judge=judge).rows[0]
    assert (row.abstained, row.answer_correct, row.em) == (False, True, 0.0)
