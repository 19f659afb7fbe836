"""The options of one RAG diagnosis as one value: :class:`RagOptions`.

Every front door (``evaluate_rag``, ``stagewise rag``, the HTML report) builds one and passes it down; a caller
changes a field with keyword overrides (``evaluate_rag(records, options, context_k=3)``), checked here once.

>>> opts = RagOptions(context_k=3, correct="f1:0.5")
>>> opts.correct.name, opts.with_(judge="lexical(threshold=0.5)").judge
('f1:0.5', 'lexical(threshold=0.5)')
>>> RagOptions().with_(contextk=3)
Traceback (most recent call last):
...
stagewise.errors.ConventionError: evaluate_rag has no option 'contextk'; its options: context_k, correct, judge, \
answer_judge, judge_cache, metrics, kilt_k, partial_recall, evidence, claims, claim_judge, nuggets
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagewise.errors import ConventionError, parameter_error
from stagewise.rag.answers import Criterion, parse_criterion
from stagewise.rag.judges import JUDGES, JudgeSpec, LexicalJudge, judge_name, parse_judge

__all__ = ["DEFAULT_CONTEXT_K", "DEFAULT_METRICS", "EVIDENCE_SOURCES", "RagOptions"]

DEFAULT_CONTEXT_K = 5
DEFAULT_METRICS: tuple[str, ...] = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
EVIDENCE_SOURCES: dict[str, str] = {  # where gold evidence comes from, and the sentence every output prints
    "ids": "the record's gold_evidence ids; absent gold_evidence means none",
    "answers": "the record's gold_evidence ids; when absent, each passage whose text contains a normalised gold "
    "answer on token boundaries (DPR's has_answer) is one alternative",
}


def _positive_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise parameter_error(name, "evaluate_rag", "an int >= 1 or None", value)
    return value


def _judge(value: Any, name: str) -> Any:
    """A judge option as kept: the canonical name of a registered judge, or the judge object itself."""
    if value is None:
        return None
    # only the entries that answer support (a relevance judge such as query-coverage is no citation judge)
    support = [n for n in JUDGES.names() if "support" in JUDGES[n].tasks]
    expected = f"one of {', '.join(support)} (lexical(threshold=0.5): the spec grammar) or a SupportJudge"
    if isinstance(value, str | JudgeSpec):
        try:
            spec = parse_judge(value)
        except ConventionError:
            raise parameter_error(name, "evaluate_rag", expected, value) from None
        if "support" not in spec.entry.tasks:
            raise parameter_error(name, "evaluate_rag", expected, value)
        return spec.name
    if not callable(getattr(value, "supports", None)):
        raise parameter_error(name, "evaluate_rag", expected, value)
    return value


def judge_label(judge: Any) -> str:
    """The name an output prints for a judge option: its canonical name, or the judge object's own name."""
    return "none" if judge is None else judge if isinstance(judge, str) else judge_name(judge)


@dataclass(frozen=True)
class RagOptions:
    """The conventions of one diagnosis; every output prints them.

    Parameters
    ----------
    context_k : int, optional
        The context a record without ``context`` gets: ``retrieved[:context_k]`` (default 5). Also the cut-off
        below which a retrieved gold id is ``ranked_too_low``; when None, a record that gives ``context`` uses
        ``len(context)``.
    correct : str or Criterion, default="contains"
        What decides "answer correct": an entry of :data:`stagewise.rag.answers.CRITERIA` (``em``, ``f1:T``,
        ``contains``, ``judge``, or one registered), read by :func:`~stagewise.rag.answers.parse_criterion`.
    judge : str or SupportJudge, default="auto"
        The support judge for ALCE sentence-level citation scores: an entry of
        :data:`stagewise.rag.judges.JUDGES` in the spec grammar (``auto``, ``gold``, ``lexical``,
        ``lexical(threshold=0.5)``, ``none``, or one registered), or any object with ``supports(passages,
        claim)``. Kept as its canonical name.
    answer_judge : str or SupportJudge, optional
        For a criterion that needs a judge (``correct="judge"``): the answer is correct when the judge finds it
        supports some gold answer (default ``lexical``).
    judge_cache : path, optional
        A JSONL file where a judge's answers are kept between runs.
    metrics : iterable of str, default=("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
        Ranking metrics computed by the metrics engine with gold evidence as qrels.
    kilt_k : int, optional
        KILT-style scores count an answer only when the evidence is in the top ``kilt_k``; default KILT's rule
        (R-precision of some alternative equals 1).
    partial_recall : float, default=0.5
        A wrong answer holding at least this share of some gold answer's tokens is ``partial_answer``.
    evidence : {"ids", "answers"}, default="ids"
        Where gold evidence comes from when a record gives none: nowhere, or DPR's has_answer over the record's
        passage texts.
    claims : path, optional
        RAGChecker's output JSON: its claims and entailment checks, matched to the records by ``query_id``, give
        RAGChecker's eleven claim-level metrics (:mod:`stagewise.rag.claims`).
    claim_judge : str or SupportJudge, optional
        Compute the claim-level metrics with this judge instead (sentences of the answer and of the gold answers
        as claims, the context passages as chunks); also the judge of nugget assignment and of the nugget 2x2
        (default ``lexical`` there).
    nuggets : path, optional
        Nuggets in nuggetizer's JSONL, matched by ``qid``: TREC RAG 2024's nugget scores and the nugget 2x2
        (:mod:`stagewise.rag.nuggets`).
    """

    context_k: int | None = None
    correct: Criterion | str = "contains"
    judge: Any = "auto"
    answer_judge: Any = None
    judge_cache: str | Path | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    kilt_k: int | None = None
    partial_recall: float = 0.5
    evidence: str = "ids"
    claims: str | Path | None = None
    claim_judge: Any = None
    nuggets: str | Path | None = None

    def __post_init__(self) -> None:
        # the cheap checks, all before any record is read; values kept in their one normal form
        _positive_int(self.context_k, "context_k")
        _positive_int(self.kilt_k, "kilt_k")
        pr = self.partial_recall
        if isinstance(pr, bool) or not (isinstance(pr, int | float) and 0.0 <= pr <= 1.0):
            raise parameter_error("partial_recall", "evaluate_rag", "a number in [0, 1]", pr)
        if self.evidence not in EVIDENCE_SOURCES:
            raise parameter_error("evidence", "evaluate_rag", f"one of {', '.join(EVIDENCE_SOURCES)}", self.evidence)
        metrics = (self.metrics,) if isinstance(self.metrics, str) else tuple(self.metrics)
        for field, value in (
            ("correct", parse_criterion(self.correct)),
            ("judge", _judge(self.judge, "judge") if self.judge is not None else "none"),
            ("answer_judge", _judge(self.answer_judge, "answer_judge")),
            ("claim_judge", _judge(self.claim_judge, "claim_judge")),
            ("metrics", metrics),
            ("partial_recall", float(pr)),
        ):
            object.__setattr__(self, field, value)

    def with_(self, **overrides: Any) -> RagOptions:
        """A copy with ``overrides`` (option names); an unknown name is a
        :class:`~stagewise.errors.ConventionError` that lists the options there are."""
        return options_from(self, **overrides)

    def describe(self) -> dict[str, Any]:
        """Every convention in words, as the outputs print them."""
        k = self.context_k
        correct: Criterion = self.correct  # type: ignore[assignment]  # parsed in __post_init__
        judge = judge_label(self.judge)
        out = {
            "correct": correct.name,
            "correct_rule": correct.describe()
            + "; an abstention is never a correct answer; for an unanswerable question (gold_answers []) the "
            "correct answer is an abstention",
            "normalisation": "SQuAD v1.1: lowercase, remove string.punctuation, remove the words a/an/the, "
            "collapse whitespace; citation markers are removed from the answer first",
            "context_k": k if k is not None else DEFAULT_CONTEXT_K,
            "context_rule": (
                f"context = the record's 'context', else retrieved[:{k if k is not None else DEFAULT_CONTEXT_K}]; "
                "the cut-off for ranked_too_low/dropped_from_context is "
                + (f"{k}" if k is not None else f"len(context) when the record gives one, else {DEFAULT_CONTEXT_K}")
            ),
            "evidence_in_context": "at least one alternative (an id, or a list of ids needed together) is wholly "
            "in the context; an unanswerable question without gold evidence needs none (in context)",
            "evidence_source": EVIDENCE_SOURCES[self.evidence],
            "alternatives_as_qrels": "every id of every alternative is a relevant document (label 1) for the "
            "metrics engine, and the retrieved list is a run scored -rank; recall@k is the share of those ids in "
            "the top k; samples without gold evidence have no retrieval metrics",
            "duplicates": "a repeated retrieved id keeps its first position; ranks count the list without copies",
            "partial_answer": f"a wrong, non-abstaining answer holding >= {self.partial_recall:g} of some gold "
            "answer's normalised tokens",
            "abstention": "empty, 'unknown'/'none'/'n/a'/'no answer', or a decline phrase in the first sentence "
            "(stagewise.rag.answers.ABSTENTION_PATTERNS); a record's 'abstained' field overrides",
            "kilt": "KILT-style scores count an answer only when R-precision of some alternative is 1 (KILT)"
            if self.kilt_k is None
            else f"KILT-style scores count an answer only when some alternative is wholly in the top {self.kilt_k}",
            "citations": "the record's 'citations', else [id] markers in the answer; a marker [n] that is no known "
            "id is the n-th context passage (ALCE); precision = cited gold ids / cited ids (null when nothing is "
            "cited); recall = the best alternative's share of cited ids (null without gold evidence)",
            "sentence_citations": f"ALCE sentence-level citation recall/precision with the {judge} judge"
            if judge != "none"
            else "not computed (judge none)",
            "answer_judge": judge_label(self.answer_judge if self.answer_judge is not None else LexicalJudge())
            if correct.needs_judge
            else None,
        }
        rule = _claims_rule(self)
        if rule is not None:  # only when asked for, so the outputs of a diagnosis without them stay as they were
            out["claims"] = rule
        return out


def _claims_rule(opts: RagOptions) -> str | None:
    """How claim- and nugget-level metrics were got, in words (None when neither was asked for)."""
    parts = []
    if opts.claims is not None:
        parts.append(f"claim checks read from RAGChecker's output {opts.claims}")
    elif opts.claim_judge is not None:
        parts.append(
            f"claim checks by the {judge_label(opts.claim_judge)} judge: sentences of the answer and of the gold "
            "answers (each a line) as claims, each context passage with text a chunk"
        )
    if opts.nuggets is not None:
        judge = judge_label(opts.claim_judge) if opts.claim_judge is not None else "lexical"
        parts.append(f"nuggets from {opts.nuggets}; unassigned nuggets and the 2x2's context checked by {judge}")
    return "; ".join(parts) or None


_FIELDS = tuple(f.name for f in dataclasses.fields(RagOptions))


def options_from(options: RagOptions | None = None, **overrides: Any) -> RagOptions:
    """``options`` (default :class:`RagOptions`'s) with ``overrides`` applied, each checked; an unknown option
    name is a :class:`~stagewise.errors.ConventionError` listing the options there are.

    >>> options_from(None, context_k=3).context_k
    3
    """
    if options is not None and not isinstance(options, RagOptions):
        raise ConventionError(f"options must be a RagOptions; got {type(options).__name__}")
    unknown = [key for key in overrides if key not in _FIELDS]
    if unknown:
        raise ConventionError(f"evaluate_rag has no option {unknown[0]!r}; its options: {', '.join(_FIELDS)}")
    if options is None:
        return RagOptions(**overrides)
    return dataclasses.replace(options, **overrides) if overrides else options
