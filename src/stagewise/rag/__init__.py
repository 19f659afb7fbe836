"""RAG stage diagnosis: score retrieval and answer generation separately, label every sample with the stage that
failed, and check that citations point at passages that support the answer.

Offline and deterministic by default; pluggable support judges (``supports(passages, claim) -> bool``) for
those who have an NLI model or an LLM.

>>> from stagewise.rag import evaluate_rag
>>> report = evaluate_rag([{"id": "q1", "retrieved": ["p3", "p9"], "gold_evidence": ["p9"],
...                         "answer": "Jane Austen [p9]", "gold_answers": ["Jane Austen"]}])
>>> report.counts()
{'ok': 1, 'generation_failure': 0, 'retrieval_failure': 0, 'lucky': 0}
"""

from __future__ import annotations

from stagewise.rag.adapters import ADAPTERS, from_bergen, from_kilt, from_ragas, from_ragchecker, load_records
from stagewise.rag.answers import (
    Criterion,
    contains,
    exact_match,
    is_abstention,
    normalize_answer,
    parse_criterion,
    score_answer,
    token_f1,
)
from stagewise.rag.citations import (
    CitedSentence,
    alce_scores,
    citation_precision,
    citation_recall,
    split_cited_sentences,
)
from stagewise.rag.diagnose import DEFAULT_CONTEXT_K, DEFAULT_METRICS, evaluate_rag
from stagewise.rag.judges import (
    CachedJudge,
    GoldEvidenceJudge,
    JudgeStats,
    LexicalJudge,
    Passage,
    SupportJudge,
    agreement,
)
from stagewise.rag.labels import LABELS, REASONS
from stagewise.rag.records import RagRecord, read_records, record_from_dict, records_from_run
from stagewise.rag.report import RagReport

__all__ = [
    "ADAPTERS",
    "DEFAULT_CONTEXT_K",
    "DEFAULT_METRICS",
    "LABELS",
    "REASONS",
    "CachedJudge",
    "CitedSentence",
    "Criterion",
    "GoldEvidenceJudge",
    "JudgeStats",
    "LexicalJudge",
    "Passage",
    "RagRecord",
    "RagReport",
    "SupportJudge",
    "agreement",
    "alce_scores",
    "citation_precision",
    "citation_recall",
    "contains",
    "evaluate_rag",
    "exact_match",
    "from_bergen",
    "from_kilt",
    "from_ragas",
    "from_ragchecker",
    "is_abstention",
    "load_records",
    "normalize_answer",
    "parse_criterion",
    "read_records",
    "record_from_dict",
    "records_from_run",
    "score_answer",
    "split_cited_sentences",
    "token_f1",
]
