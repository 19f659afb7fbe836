"""The result of :func:`stagewise.rag.evaluate_rag`: per-sample rows, the lesson's 2x2 table, the reasons in
each cell, retrieval, answer and citation means, and the conventions behind them. It computes only sums and
means of the rows, and never renders itself: :mod:`stagewise.report.rag` does."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise.rag.labels import LABELS, REASONS

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.diagnose import RagSample
    from stagewise.rag.options import RagOptions

__all__ = ["RagReport"]

_CELLS = {  # label -> (evidence in context, answer correct)
    "ok": (True, True),
    "generation_failure": (True, False),
    "lucky": (False, True),
    "retrieval_failure": (False, False),
}


def _mean(values: list[Any]) -> float | None:
    defined = [float(v) for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


@dataclass
class RagReport:
    """Diagnosis of a set of RAG samples.

    ``rows`` holds one :class:`~stagewise.rag.diagnose.RagSample` per sample in input order, with every field
    that led to its label (see ``docs/rag.md`` for the field list; ``sample.to_dict()`` is its output row);
    ``options`` are the :class:`~stagewise.rag.options.RagOptions` the diagnosis used. :meth:`table` is the 2x2 of
    evidence in context x answer correct; :meth:`summary` adds reasons and means.
    """

    rows: list[RagSample]
    options: RagOptions
    engine_conventions: dict[str, Any] | None = None
    judges: dict[str, Any] = field(default_factory=dict)
    #: RAGChecker's claim-level metrics (a :class:`stagewise.rag.claims.ClaimReport`), when asked for
    claims: Any = None
    #: TREC RAG nugget scores and the nugget 2x2 (a :class:`stagewise.rag.nuggets.NuggetReport`), when asked for
    nuggets: Any = None

    # -- numbers ------------------------------------------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.rows)

    def counts(self) -> dict[str, int]:
        """How many samples carry each of the four labels (all four keys, zeros included)."""
        counter = Counter(row.label for row in self.rows)
        return {label: counter.get(label, 0) for label in LABELS}

    def table(self) -> dict[str, dict[str, dict[str, float | int | str]]]:
        """The 2x2: ``{"evidence_in_context"|"evidence_missing": {"answer_correct"|"answer_wrong": cell}}`` where a
        cell is ``{"label", "count", "share"}``."""
        counts = self.counts()
        out: dict[str, dict[str, dict[str, float | int | str]]] = {"evidence_in_context": {}, "evidence_missing": {}}
        for label, (evidence, correct) in _CELLS.items():
            row = "evidence_in_context" if evidence else "evidence_missing"
            col = "answer_correct" if correct else "answer_wrong"
            out[row][col] = {"label": label, "count": counts[label], "share": counts[label] / self.n if self.n else 0.0}
        return out

    def reasons(self) -> dict[str, dict[str, int]]:
        """``{label: {reason: count}}`` in the fixed order of :data:`stagewise.rag.labels.REASONS` (zeros left
        out)."""
        counter = Counter((row.label, row.reason) for row in self.rows)
        return {
            label: {reason: counter[(label, reason)] for reason in REASONS[label] if counter[(label, reason)]}
            for label in LABELS
        }

    def retrieval_means(self) -> dict[str, Any]:
        rows = self.rows
        judged = [r for r in rows if r.gold_evidence]
        out: dict[str, Any] = {
            "evidence_in_context": _mean([r.evidence_in_context for r in rows]),
            "samples_with_gold_evidence": len(judged),
        }
        for name in self.options.metrics:
            out[name] = _mean([r.metrics[name] for r in judged])
        ranks = [r.first_gold_rank for r in judged]
        found = [x for x in ranks if x is not None]
        out["gold_retrieved"] = len(found) / len(judged) if judged else None
        out["mean_first_gold_rank"] = sum(found) / len(found) if found else None
        out["rprec"] = _mean([r.rprec for r in judged])
        out["duplicates_dropped"] = sum(r.duplicates_dropped for r in rows)
        return out

    def answer_means(self) -> dict[str, Any]:
        rows = self.rows
        answerable = [r for r in rows if r.answerable]
        unanswerable = [r for r in rows if not r.answerable]
        judged = [r for r in rows if r.gold_evidence]
        return {
            "correct": self.options.correct.name,
            "answer_correct": _mean([r.answer_correct for r in rows]),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            "em": _mean([r.em for r in answerable]),
            "f1": _mean([r.f1 for r in answerable]),
            "contains": _mean([r.contains for r in answerable]),
            "abstained": _mean([r.abstained for r in rows]),
            "correct_abstention": _mean([r.abstained for r in unanswerable]),
            "kilt_em": _mean([r.kilt_em for r in judged]),
            "kilt_f1": _mean([r.kilt_f1 for r in judged]),
            "kilt_correct": _mean([r.kilt_correct for r in judged]),
        }

    def citation_means(self) -> dict[str, Any]:
        rows = self.rows
        answering = [r for r in rows if not r.abstained]
        return {
            "citation_precision": _mean([r.citation_precision for r in rows]),
            "citation_recall": _mean([r.citation_recall for r in rows]),
            "samples_citing": sum(1 for r in rows if r.citations),
            "no_citations": sum(1 for r in answering if r.no_citations),
            "cited_unseen": sum(1 for r in rows if r.cited_unseen),
            "sentence_citation_recall": _mean([r.sentence_citation_recall for r in rows]),
            "sentence_citation_precision": _mean([r.sentence_citation_precision for r in rows]),
        }

    def conventions(self) -> dict[str, Any]:
        out = dict(self.options.describe())
        out["judges"] = self.judges
        if self.engine_conventions is not None:
            engine = dict(self.engine_conventions)
            for key in ("queries_missing_from_run", "queries_only_in_run", "num_queries", "qrels"):
                engine.pop(key, None)
            out["metrics_engine"] = engine
        return out

    def notes(self) -> list[str]:
        """Plain sentences on what a reader of the numbers must know."""
        rows = self.rows
        notes = []
        no_gold = sum(1 for r in rows if r.answerable and not r.gold_evidence)
        if no_gold:
            notes.append(
                f"{no_gold} answerable sample(s) have no gold evidence: their evidence counts as not in context "
                "and they have no retrieval metrics"
            )
        dups = sum(r.duplicates_dropped for r in rows)
        if dups:
            notes.append(f"{dups} repeated retrieved id(s) dropped (first position kept)")
        empty = sum(1 for r in rows if r.retrieved_count == 0)
        if empty:
            notes.append(f"{empty} sample(s) retrieved nothing")
        unanswerable = sum(1 for r in rows if not r.answerable)
        if unanswerable:
            notes.append(f"{unanswerable} unanswerable sample(s): correct means the system declined")
        return notes

    def summary(self) -> dict[str, Any]:
        out = {
            "samples": self.n,
            "table": self.table(),
            "counts": self.counts(),
            "reasons": self.reasons(),
            "retrieval": self.retrieval_means(),
            "answers": self.answer_means(),
            "citations": self.citation_means(),
            "notes": self.notes(),
        }
        if self.claims is not None:
            out["claims"] = self.claims.to_dict()
        if self.nuggets is not None:
            out["nuggets"] = self.nuggets.to_dict()
        return out

    def to_dict(self, per_sample: bool = False) -> dict[str, Any]:
        """``{"conventions", "summary", "samples"?}``; a sample's NaN (a metric with no value) is None."""
        out: dict[str, Any] = {"conventions": self.conventions(), "summary": self.summary()}
        if per_sample:
            out["samples"] = [{k: none_for_nan(v) for k, v in row.to_dict().items()} for row in self.rows]
            if self.claims is not None:
                out["claim_samples"] = self.claims.rows
            if self.nuggets is not None:
                out["nugget_samples"] = {
                    qid: {"scores": scores, "nuggets": self.nuggets.cells.get(qid, [])}
                    for qid, scores in self.nuggets.scores.items()
                }
        return out

    def to_json(self, per_sample: bool = False, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise rag --format json`` writes)."""
        import json

        return json.dumps(self.to_dict(per_sample), indent=indent, default=plain_scalar)


def none_for_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def plain_scalar(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
