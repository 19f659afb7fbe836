"""Judges' audits for the web app's RAG pages (``stagewise serve --rag R --judge-audit AUDIT.json``).

An audit is the JSON that ``stagewise judge audit --format json`` writes (read by
:func:`stagewise.rag.audit.read_audit`, the reader the HTML report uses). Each label a page shows that came from a
judge names that judge and, beside it, the audit of that judge (:func:`stagewise.report.judge_audit.html_block`,
the report's own block), or says plainly that no audit was given, so its agreement with people is unknown. Each
audit also has a page of its own (``/audits/{n}``, numbered from 1 in the order given): every figure with its
interval, the confusion matrix and the calibration bins.

Which audit is a judge's: the two names are equal once each is read by the judge grammar
(``lexical(threshold=0.6)`` is ``lexical``), or equal as written when either names no registered judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AUDITED_FIELDS", "JudgeAudits", "no_audit_sentence", "same_judge"]

#: the labels of a RAG sample each judge role gives (the roles of ``RagReport.judges``), with their names
AUDITED_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "support": (
        ("sentence_citation_recall", "sentence-level citation recall (ALCE)"),
        ("sentence_citation_precision", "sentence-level citation precision (ALCE)"),
    ),
    "answer": (("answer_correct", "answer correct (and so the stage label)"),),
}
_NEEDED_FIGURES = ("accuracy", "macro_f1", "kappa")


def same_judge(first: str, second: str) -> bool:
    """Whether two judge names name one judge (see the module's docstring).

    >>> same_judge("lexical", "lexical(threshold=0.6)"), same_judge("lexical", "gold"), same_judge("x", "x")
    (True, False, True)
    """
    from stagewise.errors import StagewiseError
    from stagewise.rag.judges import parse_judge

    try:
        return parse_judge(first) == parse_judge(second)
    except StagewiseError:
        return first == second


def no_audit_sentence(judge: str) -> str:
    """What a page says beside a judge's labels when no audit of that judge was given."""
    return f"no audit given for judge {judge}: its agreement with people is unknown"


@dataclass(frozen=True)
class _Given:
    number: int  # 1-based, the order of --judge-audit
    path: str
    audit: Any  # a stagewise.rag.audit.JudgeAudit


class JudgeAudits:
    """The audits given to the server, in the order given; empty when none were."""

    def __init__(self, given: Sequence[tuple[str, Any]] = ()) -> None:
        self.given = [_Given(i, str(path), audit) for i, (path, audit) in enumerate(given, start=1)]

    @classmethod
    def read(cls, paths: Iterable[str | Path]) -> JudgeAudits:
        """Each file read as an audit; one that cannot be read, or is no audit, is an
        :class:`~stagewise.errors.InputError` naming it."""
        from stagewise.errors import InputError
        from stagewise.rag.audit import read_audit

        out = []
        for path in paths:
            audit = read_audit(path)
            missing = [k for k in _NEEDED_FIGURES if k not in audit.figures]
            if missing:
                raise InputError(
                    path,
                    f"is a judge audit without the figure(s) {', '.join(missing)}",
                    expected="the JSON of stagewise judge audit --format json",
                )
            out.append((str(path), audit))
        return cls(out)

    def __len__(self) -> int:
        return len(self.given)

    def __bool__(self) -> bool:
        return bool(self.given)

    def get(self, number: int) -> tuple[str, Any] | None:
        """The ``number``-th audit (from 1) as ``(path, audit)``, or None."""
        return (self.given[number - 1].path, self.given[number - 1].audit) if 1 <= number <= len(self.given) else None

    def of(self, judge: str) -> list[tuple[int, Any]]:
        """The audits of ``judge`` as ``(number, audit)``, in the order given."""
        return [(g.number, g.audit) for g in self.given if same_judge(judge, g.audit.judge)]

    def all(self) -> list[tuple[int, str, Any]]:
        """Every audit as ``(number, path, audit)``."""
        return [(g.number, g.path, g.audit) for g in self.given]
