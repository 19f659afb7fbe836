"""RAG stage diagnosis: score retrieval and answer generation separately, label every sample with the stage that
failed, and check that citations point at passages that support the answer.

Offline and deterministic by default; pluggable support judges (``supports(passages, claim) -> bool``) for
those who have an NLI model or an LLM.

>>> from stagewise.rag import evaluate_rag
>>> report = evaluate_rag([{"id": "q1", "retrieved": ["p3", "p9"], "gold_evidence": ["p9"],
...                         "answer": "Jane Austen [p9]", "gold_answers": ["Jane Austen"]}])
>>> report.counts()
{'ok': 1, 'generation_failure': 0, 'retrieval_failure': 0, 'lucky': 0}

This package names the stage's front door: the diagnosis, its options (:class:`RagOptions`), its report and
typed samples, the records, the record readers and adapters, the labels, the answer criteria (:data:`CRITERIA`)
and the judges (:data:`JUDGES`, the :class:`Judge` protocol and the judges that ship): a criterion or a judge
registered there is taken by ``evaluate_rag`` and ``stagewise rag`` with no other edit. The parts have their own
modules: answer scoring (:mod:`stagewise.rag.answers`: ``token_f1``, ``parse_criterion``...), citation metrics
(:mod:`stagewise.rag.citations`), the other adapters (:mod:`stagewise.rag.adapters`). Names load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "evaluate_rag": "stagewise.rag.diagnose",
    "RagSample": "stagewise.rag.diagnose",
    "RagOptions": "stagewise.rag.options",
    "DEFAULT_CONTEXT_K": "stagewise.rag.options",
    "DEFAULT_METRICS": "stagewise.rag.options",
    "CRITERIA": "stagewise.rag.answers",
    "AnswerCriterion": "stagewise.rag.answers",
    "RagReport": "stagewise.rag.report",
    "RagRecord": "stagewise.rag.records",
    "read_records": "stagewise.rag.records",
    "record_from_dict": "stagewise.rag.records",
    "records_from_run": "stagewise.rag.records",
    "ADAPTERS": "stagewise.rag.adapters",
    "load_records": "stagewise.rag.adapters",
    "LABELS": "stagewise.rag.labels",
    "REASONS": "stagewise.rag.labels",
    "SupportJudge": "stagewise.rag.judges",
    "Judge": "stagewise.rag.judges",
    "JUDGES": "stagewise.rag.judges",
    "JudgeEntry": "stagewise.rag.judges",
    "Passage": "stagewise.rag.judges",
    "LexicalJudge": "stagewise.rag.judges",
    "GoldEvidenceJudge": "stagewise.rag.judges",
    "CachedJudge": "stagewise.rag.judges",
    "CalibratedJudge": "stagewise.rag.calibrated",
}

__all__ = [
    "ADAPTERS",
    "CRITERIA",
    "DEFAULT_CONTEXT_K",
    "DEFAULT_METRICS",
    "JUDGES",
    "LABELS",
    "REASONS",
    "AnswerCriterion",
    "CachedJudge",
    "CalibratedJudge",
    "GoldEvidenceJudge",
    "Judge",
    "JudgeEntry",
    "LexicalJudge",
    "Passage",
    "RagOptions",
    "RagRecord",
    "RagReport",
    "RagSample",
    "SupportJudge",
    "evaluate_rag",
    "load_records",
    "read_records",
    "record_from_dict",
    "records_from_run",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.adapters import ADAPTERS, load_records
    from stagewise.rag.answers import CRITERIA, AnswerCriterion
    from stagewise.rag.calibrated import CalibratedJudge
    from stagewise.rag.diagnose import RagSample, evaluate_rag
    from stagewise.rag.judges import (
        JUDGES,
        CachedJudge,
        GoldEvidenceJudge,
        Judge,
        JudgeEntry,
        LexicalJudge,
        Passage,
        SupportJudge,
    )
    from stagewise.rag.labels import LABELS, REASONS
    from stagewise.rag.options import DEFAULT_CONTEXT_K, DEFAULT_METRICS, RagOptions
    from stagewise.rag.records import RagRecord, read_records, record_from_dict, records_from_run
    from stagewise.rag.report import RagReport

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
