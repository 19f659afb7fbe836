"""The graded judge protocol: every support judge answers graded; a judge that answers wrongly is refused."""

from __future__ import annotations

import pytest

from stagewise.errors import StagewiseError
from stagewise.rag.calibrated import CalibratedJudge
from stagewise.rag.judges import JUDGES, LexicalJudge, Passage, parse_judge
from stagewise.rag.verdicts import (
    SUPPORT_LABELS,
    Verdict,
    judge_tasks,
    relevance_verdicts,
    support_verdicts,
)

ITEMS = [
    ([Passage("p1", "Jane Austen published Emma in 1815.")], "Emma was published by Austen in 1815."),
    ([Passage("p1", "Mansfield Park appeared in 1814.")], "Emma was published by Austen."),
    ([Passage("p1", "")], "A claim with no passage text."),
]


def test_binary_judge_answers_graded_with_its_coverage_as_score() -> None:
    judge = LexicalJudge()
    verdicts = support_verdicts(judge, ITEMS)
    assert [v.label for v in verdicts] == ["supported", "not", "not"]
    assert [v.supported for v in verdicts] == [judge.supports(p, c) for p, c in ITEMS]
    assert [v.score for v in verdicts] == [judge.coverage(p, c) for p, c in ITEMS]


def test_calibrated_judge_keeps_its_partial_label_and_score() -> None:
    judge = CalibratedJudge(features="lexical")
    verdicts = support_verdicts(judge, ITEMS)
    assert [v.label for v in verdicts] == [v.label for v in judge.verdicts(ITEMS)]
    assert all(v.label in SUPPORT_LABELS for v in verdicts)
    assert [v.score for v in verdicts] == judge.scores(ITEMS)


def test_every_registered_support_judge_answers_graded() -> None:
    for name in JUDGES:
        entry = JUDGES.lookup(name)
        if entry.build is None or entry.per_sample or "support" not in entry.tasks or entry.name == "llm":
            continue  # llm needs an endpoint: tests/test_llm_judges.py asks it through a loopback server
        if entry.name == "calibrated":
            judge = parse_judge("calibrated(features=lexical)").build()
        else:
            judge = parse_judge(entry.name).build()
        assert "support" in judge_tasks(judge)
        assert len(support_verdicts(judge, ITEMS)) == len(ITEMS)


class _Miscounting:
    def support_verdicts(self, items):
        return [Verdict("supported", 1.0)]

    def relevance_verdicts(self, items):
        return [Verdict("4", 1.0) for _ in items]


def test_a_judge_that_answers_too_few_items_or_an_unknown_label_is_refused() -> None:
    with pytest.raises(StagewiseError, match="gave 1 support verdicts for 3 items"):
        support_verdicts(_Miscounting(), ITEMS)
    with pytest.raises(StagewiseError, match="relevance label '4'"):
        relevance_verdicts(_Miscounting(), [("q", Passage("d", "t"))])


def test_unjudged_is_a_row_with_its_reason_not_a_default() -> None:
    verdict = Verdict.unjudged("HTTP 500 after 3 tries", {"calls": 3})
    assert not verdict.judged and not verdict.supported and verdict.score is None
    assert verdict.as_dict() == {
        "label": "unjudged",
        "score": None,
        "reason": "HTTP 500 after 3 tries",
        "usage": {"calls": 3},
    }
    assert Verdict("2", 2 / 3).grade == 2 and verdict.grade is None
