"""The result of :func:`stagewise.rag.evaluate_rag`: per-sample rows, the lesson's 2x2 table, the reasons in
each cell, retrieval, answer and citation means, and the conventions behind them. It renders; it computes only
sums and means of the rows."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from stagewise.rag.labels import LABELS, REASONS

__all__ = ["FORMATS", "RagReport"]

FORMATS = ("table", "json", "jsonl", "markdown")
_CELLS = {  # label -> (evidence in context, answer correct)
    "ok": (True, True),
    "generation_failure": (True, False),
    "lucky": (False, True),
    "retrieval_failure": (False, False),
}


def _mean(values: list[Any]) -> float | None:
    defined = [float(v) for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _dump_row(row: dict[str, Any]) -> str:
    """One row as JSON; a NaN (which JSON lacks) becomes null."""
    try:
        return json.dumps(row, default=_json_default, allow_nan=False)
    except ValueError:
        return json.dumps({k: _clean(v) for k, v in row.items()}, default=_json_default)


@dataclass
class RagReport:
    """Diagnosis of a set of RAG samples.

    ``rows`` holds one dict per sample in input order, with every field that led to its label (see
    ``docs/rag.md`` for the field list). :meth:`table` is the 2x2 of evidence in context x answer correct;
    :meth:`summary` adds reasons and means.
    """

    rows: list[dict[str, Any]]
    options: Any
    engine_conventions: dict[str, Any] | None = None
    judges: dict[str, Any] = field(default_factory=dict)

    # -- numbers ------------------------------------------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.rows)

    def counts(self) -> dict[str, int]:
        """How many samples carry each of the four labels (all four keys, zeros included)."""
        counter = Counter(row["label"] for row in self.rows)
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
        counter = Counter((row["label"], row["reason"]) for row in self.rows)
        return {
            label: {reason: counter[(label, reason)] for reason in REASONS[label] if counter[(label, reason)]}
            for label in LABELS
        }

    def retrieval_means(self) -> dict[str, Any]:
        rows = self.rows
        judged = [r for r in rows if r["gold_evidence"]]
        out: dict[str, Any] = {
            "evidence_in_context": _mean([r["evidence_in_context"] for r in rows]),
            "samples_with_gold_evidence": len(judged),
        }
        for name in self.options.metrics:
            out[name] = _mean([r[name] for r in judged])
        ranks = [r["first_gold_rank"] for r in judged]
        found = [x for x in ranks if x is not None]
        out["gold_retrieved"] = len(found) / len(judged) if judged else None
        out["mean_first_gold_rank"] = sum(found) / len(found) if found else None
        out["rprec"] = _mean([r["rprec"] for r in judged])
        out["duplicates_dropped"] = sum(r["duplicates_dropped"] for r in rows)
        return out

    def answer_means(self) -> dict[str, Any]:
        rows = self.rows
        answerable = [r for r in rows if r["answerable"]]
        unanswerable = [r for r in rows if not r["answerable"]]
        judged = [r for r in rows if r["gold_evidence"]]
        return {
            "correct": self.options.correct.name,
            "answer_correct": _mean([r["answer_correct"] for r in rows]),
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            "em": _mean([r["em"] for r in answerable]),
            "f1": _mean([r["f1"] for r in answerable]),
            "contains": _mean([r["contains"] for r in answerable]),
            "abstained": _mean([r["abstained"] for r in rows]),
            "correct_abstention": _mean([r["abstained"] for r in unanswerable]),
            "kilt_em": _mean([r["kilt_em"] for r in judged]),
            "kilt_f1": _mean([r["kilt_f1"] for r in judged]),
            "kilt_correct": _mean([r["kilt_correct"] for r in judged]),
        }

    def citation_means(self) -> dict[str, Any]:
        rows = self.rows
        answering = [r for r in rows if not r["abstained"]]
        return {
            "citation_precision": _mean([r["citation_precision"] for r in rows]),
            "citation_recall": _mean([r["citation_recall"] for r in rows]),
            "samples_citing": sum(1 for r in rows if r["citations"]),
            "no_citations": sum(1 for r in answering if r["no_citations"]),
            "cited_unseen": sum(1 for r in rows if r["cited_unseen"]),
            "sentence_citation_recall": _mean([r["sentence_citation_recall"] for r in rows]),
            "sentence_citation_precision": _mean([r["sentence_citation_precision"] for r in rows]),
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
        no_gold = sum(1 for r in rows if r["answerable"] and not r["gold_evidence"])
        if no_gold:
            notes.append(
                f"{no_gold} answerable sample(s) have no gold evidence: their evidence counts as not in context "
                "and they have no retrieval metrics"
            )
        dups = sum(r["duplicates_dropped"] for r in rows)
        if dups:
            notes.append(f"{dups} repeated retrieved id(s) dropped (first position kept)")
        empty = sum(1 for r in rows if r["retrieved_count"] == 0)
        if empty:
            notes.append(f"{empty} sample(s) retrieved nothing")
        unanswerable = sum(1 for r in rows if not r["answerable"])
        if unanswerable:
            notes.append(f"{unanswerable} unanswerable sample(s): correct means the system declined")
        return notes

    def summary(self) -> dict[str, Any]:
        return {
            "samples": self.n,
            "table": self.table(),
            "counts": self.counts(),
            "reasons": self.reasons(),
            "retrieval": self.retrieval_means(),
            "answers": self.answer_means(),
            "citations": self.citation_means(),
            "notes": self.notes(),
        }

    def to_json(self, per_sample: bool = False) -> dict[str, Any]:
        """``{"conventions", "summary", "samples"?}``."""
        out: dict[str, Any] = {"conventions": self.conventions(), "summary": self.summary()}
        if per_sample:
            out["samples"] = self.rows
        return out

    # -- rendering ----------------------------------------------------------------------------------------------

    def render(self, fmt: str = "table", per_sample: bool = False, digits: int = 4) -> str:
        """Text in one of ``table, json, jsonl, markdown``. ``jsonl`` is one sample a line, input order."""
        if fmt == "jsonl":
            return "".join(_dump_row(row) + "\n" for row in self.rows)
        if fmt == "json":
            data = self.to_json(per_sample)
            if per_sample:
                data["samples"] = list(self._safe_rows())
            return json.dumps(data, indent=2, default=_json_default) + "\n"
        if fmt == "markdown":
            return self._markdown(digits)
        if fmt == "table":
            return self._plain(digits)
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")

    def _safe_rows(self):
        for row in self.rows:
            yield {k: _clean(v) for k, v in row.items()}

    def _cell(self, label: str, digits: int) -> str:
        count = self.counts()[label]
        share = count / self.n if self.n else 0.0
        return f"{label} {count} ({share:.{max(digits - 2, 0)}%})"

    def _metric_lines(self, digits: int) -> list[tuple[str, str]]:
        def fmt(value: Any) -> str:
            if value is None:
                return "-"
            if isinstance(value, float):
                return f"{value:.{digits}f}"
            return str(value)

        out = []
        for section, values in (
            ("retrieval", self.retrieval_means()),
            ("answers", self.answer_means()),
            ("citations", self.citation_means()),
        ):
            out += [(f"{section}.{k}", fmt(v)) for k, v in values.items()]
        return out

    def _conv_lines(self) -> list[str]:
        conv = self.options.describe()
        lines = [
            f"correct = {conv['correct']}: {conv['correct_rule']}",
            f"context_k = {conv['context_k']}: {conv['context_rule']}",
            f"evidence in context: {conv['evidence_in_context']}",
            f"alternatives as qrels: {conv['alternatives_as_qrels']}",
            f"citations: {conv['citations']}",
            f"sentence citations: {conv['sentence_citations']}",
        ]
        for role, info in self.judges.items():
            counts = ", ".join(f"{k} {v}" for k, v in info.items() if k != "name")
            lines.append(f"{role} judge {info['name']}: {counts}")
        return lines + self.notes()

    def _plain(self, digits: int) -> str:
        cells = [[self._cell("ok", digits), self._cell("generation_failure", digits)]]
        cells.append([self._cell("lucky", digits), self._cell("retrieval_failure", digits)])
        head = ["", "answer correct", "answer wrong"]
        body = [["evidence in context", *cells[0]], ["evidence missing", *cells[1]]]
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
        out = [f"stagewise rag · {self.n} samples · correct = {self.options.correct.name}"]
        out.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
        out.append("")
        out.append("reasons")
        for label, reasons in self.reasons().items():
            for reason, count in reasons.items():
                out.append(f"  {label:<19} {reason:<21} {count}")
        out.append("")
        metrics = self._metric_lines(digits)
        width = max(len(k) for k, _ in metrics)
        out += [f"{k.ljust(width)}  {v}" for k, v in metrics]
        out.append("")
        out += [f"# {line}" for line in self._conv_lines()]
        return "\n".join(out) + "\n"

    def _markdown(self, digits: int) -> str:
        out = [
            f"**stagewise rag** · {self.n} samples · correct = `{self.options.correct.name}`",
            "",
            "| | answer correct | answer wrong |",
            "|:---|:---|:---|",
            f"| evidence in context | {self._cell('ok', digits)} | {self._cell('generation_failure', digits)} |",
            f"| evidence missing | {self._cell('lucky', digits)} | {self._cell('retrieval_failure', digits)} |",
            "",
            "| label | reason | count |",
            "|:---|:---|---:|",
        ]
        for label, reasons in self.reasons().items():
            out += [f"| {label} | {reason} | {count} |" for reason, count in reasons.items()]
        out += ["", "| metric | value |", "|:---|---:|"]
        out += [f"| {k} | {v} |" for k, v in self._metric_lines(digits)]
        out.append("")
        out += [f"- {line}" for line in self._conv_lines()]
        return "\n".join(out) + "\n"

    def __str__(self) -> str:
        return self.render("table")
