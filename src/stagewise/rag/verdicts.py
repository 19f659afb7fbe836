"""The graded judge protocol: one shape of answer for every judge and every task.

A judge answers three kinds of question, each with a :class:`Verdict` (a label, a score in [0, 1] and, where
the judge gives one, a rationale):

- **support**: do these passages support this claim? Labels :data:`SUPPORT_LABELS` (``supported``,
  ``partial``, ``not``), as TREC RAG's three-level support.
- **relevance**: how relevant is this passage to this query? Labels ``"0"`` to ``"3"`` (:data:`RELEVANCE_LABELS`,
  UMBRELA's and TREC's 0-3 grades), the score the grade divided by 3 unless the judge has a finer one.
- **correctness**: does this answer say what one of the gold answers says? Labels :data:`CORRECTNESS_LABELS`.

A judge that could not answer (an endpoint that failed after its retries, an answer that did not parse, a call
budget spent) gives :meth:`Verdict.unjudged` with the reason: an ``unjudged`` row in every output, never a crash
and never a silent default. Outputs count unjudged rows apart from the judged ones.

A judge implements the task methods it can (``support_verdicts``, ``relevance_verdicts``,
``correctness_verdicts``), each taking a batch so a model judge can batch or run calls concurrently. The
functions :func:`support_verdicts`, :func:`relevance_verdicts` and :func:`correctness_verdicts` are the one way
to ask any judge: they also accept the older shapes (a binary ``supports(passages, claim)``, the calibrated
judge's ``verdicts(items)``), so every support judge in :data:`stagewise.rag.judges.JUDGES` answers graded.

>>> from stagewise.rag.judges import LexicalJudge, Passage
>>> [v.label for v in support_verdicts(LexicalJudge(), [([Passage("p1", "Emma appeared in 1815.")], "Emma 1815")])]
['supported']
>>> Verdict.unjudged("the endpoint answered 500 three times").as_dict()["label"]
'unjudged'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stagewise.errors import StagewiseError

__all__ = [
    "CORRECTNESS_LABELS",
    "RELEVANCE_LABELS",
    "SUPPORT_LABELS",
    "TASKS",
    "UNJUDGED",
    "CorrectnessJudge",
    "RelevanceJudge",
    "SupportVerdictJudge",
    "Verdict",
    "correctness_verdicts",
    "judge_tasks",
    "relevance_verdicts",
    "support_verdicts",
]

#: Support labels, strongest first (TREC RAG's full / partial / no support).
SUPPORT_LABELS: tuple[str, ...] = ("supported", "partial", "not")
#: Relevance grades as labels, lowest first: 0 irrelevant, 1 related, 2 highly relevant, 3 perfectly relevant.
RELEVANCE_LABELS: tuple[str, ...] = ("0", "1", "2", "3")
#: Answer correctness labels.
CORRECTNESS_LABELS: tuple[str, ...] = ("correct", "partial", "incorrect")
#: The label of a question the judge could not answer; the reason says why.
UNJUDGED = "unjudged"
#: The tasks a judge can answer, each with its labels.
TASKS: dict[str, tuple[str, ...]] = {
    "support": SUPPORT_LABELS,
    "relevance": RELEVANCE_LABELS,
    "correctness": CORRECTNESS_LABELS,
}


@dataclass(frozen=True)
class Verdict:
    """One judgement: ``label`` (one of the task's labels, or ``unjudged``), ``score`` in [0, 1] (None when
    unjudged), the judge's ``rationale`` when it gives one, ``reason`` why it is unjudged, and ``usage`` (token
    counts, calls, cache hits) when a model made it."""

    label: str
    score: float | None
    rationale: str | None = None
    reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.label != UNJUDGED

    @property
    def supported(self) -> bool:
        """Binary support as the binary outputs read it: only ``supported`` counts (``partial`` does not)."""
        return self.label == SUPPORT_LABELS[0]

    @property
    def grade(self) -> int | None:
        """The relevance grade 0-3 of a relevance verdict (None when unjudged or not a relevance label)."""
        return int(self.label) if self.label in RELEVANCE_LABELS else None

    @classmethod
    def unjudged(cls, reason: str, usage: dict[str, int] | None = None) -> Verdict:
        return cls(UNJUDGED, None, reason=reason, usage=dict(usage or {}))

    def as_dict(self) -> dict[str, Any]:
        """The verdict as a JSON object (keys with no value left out, so outputs stay small and stable)."""
        out: dict[str, Any] = {"label": self.label, "score": self.score}
        if self.rationale is not None:
            out["rationale"] = self.rationale
        if self.reason is not None:
            out["reason"] = self.reason
        if self.usage:
            out["usage"] = dict(sorted(self.usage.items()))
        return out


Items = Sequence[tuple[Any, Any]]


@runtime_checkable
class SupportVerdictJudge(Protocol):
    """Graded support: ``support_verdicts([(passages, claim), ...])`` gives one :class:`Verdict` per item."""

    def support_verdicts(self, items: Items) -> list[Verdict]: ...


@runtime_checkable
class RelevanceJudge(Protocol):
    """Graded relevance: ``relevance_verdicts([(query, passage), ...])`` gives one 0-3 :class:`Verdict` per item
    (``passage`` a :class:`~stagewise.rag.judges.Passage`)."""

    def relevance_verdicts(self, items: Items) -> list[Verdict]: ...


@runtime_checkable
class CorrectnessJudge(Protocol):
    """Answer correctness: ``correctness_verdicts([(answer, gold_answers), ...])``."""

    def correctness_verdicts(self, items: Items) -> list[Verdict]: ...


def judge_tasks(judge: object) -> tuple[str, ...]:
    """The tasks ``judge`` can answer, in :data:`TASKS` order."""
    out = []
    if any(callable(getattr(judge, m, None)) for m in ("support_verdicts", "verdicts", "supports")):
        out.append("support")
    if callable(getattr(judge, "relevance_verdicts", None)):
        out.append("relevance")
    if callable(getattr(judge, "correctness_verdicts", None)):
        out.append("correctness")
    return tuple(out)


def _checked(verdicts: Sequence[Verdict], n: int, judge: object, task: str) -> list[Verdict]:
    out = list(verdicts)
    if len(out) != n:
        raise StagewiseError(
            f"judge {type(judge).__name__} gave {len(out)} {task} verdicts for {n} items; a judge must answer each "
            "item once, in order (an item it cannot answer is Verdict.unjudged(reason))"
        )
    labels = TASKS[task]
    for verdict in out:
        if verdict.label != UNJUDGED and verdict.label not in labels:
            raise StagewiseError(
                f"judge {type(judge).__name__} gave the {task} label {verdict.label!r}; expected one of "
                f"{', '.join(labels)} or {UNJUDGED}"
            )
    return out


def support_verdicts(judge: object, items: Items) -> list[Verdict]:
    """Graded support verdicts from any support judge, one per ``(passages, claim)``.

    A judge with ``support_verdicts`` answers itself; the calibrated judge's ``verdicts`` (label and score) is
    read as it is; a binary judge's ``supports`` gives ``supported`` (score 1) or ``not`` (score 0), and a
    ``coverage(passages, claim)`` method, where it has one, gives the score."""
    items = list(items)
    if callable(getattr(judge, "support_verdicts", None)):
        return _checked(judge.support_verdicts(items), len(items), judge, "support")  # type: ignore[attr-defined]
    if callable(getattr(judge, "verdicts", None)):
        graded = judge.verdicts(items)  # type: ignore[attr-defined]
        return _checked([Verdict(v.label, float(v.score)) for v in graded], len(items), judge, "support")
    if not callable(getattr(judge, "supports", None)):
        raise StagewiseError(f"{type(judge).__name__} cannot judge support: it has no supports or support_verdicts")
    coverage = getattr(judge, "coverage", None)
    out = []
    for passages, claim in items:
        ok = bool(judge.supports(passages, claim))  # type: ignore[attr-defined]
        score = float(coverage(passages, claim)) if callable(coverage) else float(ok)
        out.append(Verdict(SUPPORT_LABELS[0] if ok else SUPPORT_LABELS[2], score))
    return out


def relevance_verdicts(judge: object, items: Items) -> list[Verdict]:
    """0-3 relevance verdicts from a relevance judge, one per ``(query, passage)``."""
    items = list(items)
    if not callable(getattr(judge, "relevance_verdicts", None)):
        raise StagewiseError(f"{type(judge).__name__} cannot judge relevance: it has no relevance_verdicts method")
    return _checked(judge.relevance_verdicts(items), len(items), judge, "relevance")  # type: ignore[attr-defined]


def correctness_verdicts(judge: object, items: Items) -> list[Verdict]:
    """Correctness verdicts, one per ``(answer, gold_answers)``."""
    items = list(items)
    if not callable(getattr(judge, "correctness_verdicts", None)):
        raise StagewiseError(f"{type(judge).__name__} cannot judge correctness: it has no correctness_verdicts method")
    return _checked(judge.correctness_verdicts(items), len(items), judge, "correctness")  # type: ignore[attr-defined]
