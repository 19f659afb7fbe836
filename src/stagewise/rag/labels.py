"""The labels and reasons of RAG stage diagnosis, and the rules that pick them.

The top-level label is the seed lesson's :func:`stagewise.lesson.diagnose` of (evidence in context, answer
correct). The library does not import the teaching module (the layers contract in ``pyproject.toml`` forbids it),
so the four cells are written here once more and ``tests/test_rag_labels.py`` holds the two to agreement on every
cell and on generated records. The reason says why:

============================  ===================  =================================================================
label                         reason               when
============================  ===================  =================================================================
``ok``                        correct_answer       evidence in context, answer correct
``ok``                        correct_abstention   unanswerable question (no gold answer), the system declined
``generation_failure``        wrong_answer         evidence in context, answer wrong
``generation_failure``        partial_answer       ... wrong, but it holds >= half of some gold answer's tokens
``generation_failure``        false_abstention     evidence in context, the system declined an answerable question
``generation_failure``        hallucinated_answer  unanswerable question answered anyway
``retrieval_failure``/lucky   not_retrieved        no gold id in ``retrieved`` (nor in ``context``)
``retrieval_failure``/lucky   dropped_from_context a gold id ranked within the cut-off is missing from ``context``
``retrieval_failure``/lucky   partial_evidence     part of a needed set is in context, the rest is not
``retrieval_failure``/lucky   ranked_too_low       gold ids were retrieved, all below the context cut-off
============================  ===================  =================================================================

The retrieval reasons are tried in that order (the first that holds wins); ``lucky`` (evidence missing, answer
correct) carries the retrieval reason that explains what was missing.
"""

from __future__ import annotations

__all__ = ["LABELS", "REASONS", "RETRIEVAL_REASONS", "answer_reason", "retrieval_reason", "top_label"]

LABELS: tuple[str, ...] = ("ok", "generation_failure", "retrieval_failure", "lucky")
RETRIEVAL_REASONS: tuple[str, ...] = ("not_retrieved", "dropped_from_context", "partial_evidence", "ranked_too_low")
REASONS: dict[str, tuple[str, ...]] = {
    "ok": ("correct_answer", "correct_abstention"),
    "generation_failure": ("wrong_answer", "partial_answer", "false_abstention", "hallucinated_answer"),
    "retrieval_failure": RETRIEVAL_REASONS,
    "lucky": RETRIEVAL_REASONS,
}


def top_label(evidence_in_context: bool, answer_correct: bool) -> str:
    """The lesson's four labels, as :func:`stagewise.lesson.diagnose` gives them.

    >>> top_label(True, False), top_label(False, True)
    ('generation_failure', 'lucky')
    """
    if evidence_in_context:
        return "ok" if answer_correct else "generation_failure"
    return "lucky" if answer_correct else "retrieval_failure"


def answer_reason(answerable: bool, correct: bool, abstained: bool, partial: bool) -> str:
    """The reason of an ``ok`` or ``generation_failure`` sample.

    >>> answer_reason(True, False, False, True)
    'partial_answer'
    >>> answer_reason(False, False, False, False)
    'hallucinated_answer'
    """
    if not answerable:
        return "correct_abstention" if abstained else "hallucinated_answer"
    if correct:
        return "correct_answer"
    if abstained:
        return "false_abstention"
    return "partial_answer" if partial else "wrong_answer"


def retrieval_reason(gold_anywhere: bool, dropped_within_cutoff: bool, partial_set_in_context: bool) -> str:
    """The reason evidence is missing from the context, by the precedence of :data:`RETRIEVAL_REASONS`.

    >>> retrieval_reason(False, False, False), retrieval_reason(True, False, False)
    ('not_retrieved', 'ranked_too_low')
    """
    if not gold_anywhere:
        return "not_retrieved"
    if dropped_within_cutoff:
        return "dropped_from_context"
    if partial_set_in_context:
        return "partial_evidence"
    return "ranked_too_low"
