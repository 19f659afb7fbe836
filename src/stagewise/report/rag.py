"""A RAG diagnosis (:class:`~stagewise.rag.report.RagReport`) as a table, markdown, JSON or JSONL (one sample a
line, input order)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from stagewise.rag.report import none_for_nan, plain_scalar

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.report import RagReport

FORMATS = ("table", "json", "jsonl", "markdown")


def render(report: RagReport, fmt: str = "table", per_sample: bool = False, digits: int = 4) -> str:
    """Text in one of ``table, json, jsonl, markdown``. ``jsonl`` is one sample a line, input order."""
    if fmt == "jsonl":
        return "".join(_dump_row(_jsonl_row(report, sample)) + "\n" for sample in report.rows)
    if fmt == "json":
        return report.to_json(per_sample) + "\n"
    if fmt == "markdown":
        return _markdown(report, digits)
    if fmt == "table":
        return _plain(report, digits)
    raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")


def _jsonl_row(report: RagReport, sample: Any) -> dict[str, Any]:
    """A sample's row, with its claim metrics and nugget scores (each naming its judge) when they were computed."""
    row = sample.to_dict()
    claims, nuggets = report.claims, report.nuggets
    if claims is not None and sample.id in claims.rows:
        row["claims"] = {"judge": claims.judge, **claims.rows[sample.id]}
    if nuggets is not None and sample.id in nuggets.scores:
        row["nuggets"] = {"assigned_by": nuggets.assigned_by, **nuggets.scores[sample.id]}
        if nuggets.context_judge is not None:
            row["nuggets"]["context_judge"] = nuggets.context_judge
            row["nuggets"]["cells"] = [cell["cell"] for cell in nuggets.cells.get(sample.id, [])]
    return row


def _dump_row(row: dict[str, Any]) -> str:
    """One row as JSON; a NaN (which JSON lacks) becomes null."""
    try:
        return json.dumps(row, default=plain_scalar, allow_nan=False)
    except ValueError:
        return json.dumps({k: none_for_nan(v) for k, v in row.items()}, default=plain_scalar)


def _cell(report: RagReport, label: str, digits: int) -> str:
    count = report.counts()[label]
    share = count / report.n if report.n else 0.0
    return f"{label} {count} ({share:.{max(digits - 2, 0)}%})"


def _metric_lines(report: RagReport, digits: int) -> list[tuple[str, str]]:
    def fmt(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.{digits}f}"
        return str(value)

    out = []
    for section, values in (
        ("retrieval", report.retrieval_means()),
        ("answers", report.answer_means()),
        ("citations", report.citation_means()),
    ):
        out += [(f"{section}.{k}", fmt(v)) for k, v in values.items()]
    if report.claims is not None:
        out += [(f"claims.{k}", fmt(v)) for k, v in report.claims.means.items()]
    if report.nuggets is not None:
        out += [(f"nuggets.{k}", fmt(v)) for k, v in report.nuggets.means.items()]
    return out


def _nugget_lines(report: RagReport) -> list[str]:
    """The nugget 2x2 (all nuggets, and vital ones in brackets), as plain lines; [] when not computed."""
    nuggets = report.nuggets
    if nuggets is None or not nuggets.table:
        return []
    every, vital = nuggets.table["all"], nuggets.table["vital"]
    rows = [
        ("nugget in context", "ok", "generation_failure"),
        ("nugget not in context", "lucky", "retrieval_failure"),
    ]
    cells = [[name, f"{a} {every[a]} (vital {vital[a]})", f"{b} {every[b]} (vital {vital[b]})"] for name, a, b in rows]
    head = ["", "in answer", "not in answer"]
    widths = [max(len(r[i]) for r in [head, *cells]) for i in range(3)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *cells]]


def _claim_conv_lines(report: RagReport) -> list[str]:
    lines = []
    if report.claims is not None:
        claims = report.claims
        lines.append(
            f"claims judge {claims.judge}: {len(claims.rows)} samples, {claims.claims.get('response', 0)} answer "
            f"claims, {claims.claims.get('ground_truth', 0)} gold claims, {claims.unjudged} unjudged checks; "
            "RAGChecker's metrics (only an entailment counts; a metric missing its claims or chunks is 0)"
        )
        if claims.without_checks:
            lines.append(f"{len(claims.without_checks)} sample(s) have no claim checks in {claims.source}")
    if report.nuggets is not None:
        nuggets = report.nuggets
        lines.append(
            f"nuggets assigned by {nuggets.assigned_by} ({nuggets.unjudged} unjudged, scored not_support), context "
            f"judge {nuggets.context_judge}: TREC RAG 2024 scores (strict: support earns 1; otherwise "
            "partial_support 0.5; vital: vital nuggets only)"
        )
        if nuggets.without_nuggets:
            lines.append(f"{len(nuggets.without_nuggets)} sample(s) have no nuggets in {nuggets.source}")
    return lines


def _conv_lines(report: RagReport) -> list[str]:
    conv = report.options.describe()
    lines = [
        f"correct = {conv['correct']}: {conv['correct_rule']}",
        f"context_k = {conv['context_k']}: {conv['context_rule']}",
        f"evidence in context: {conv['evidence_in_context']}",
        f"alternatives as qrels: {conv['alternatives_as_qrels']}",
        f"citations: {conv['citations']}",
        f"sentence citations: {conv['sentence_citations']}",
    ]
    for role, info in report.judges.items():
        counts = ", ".join(f"{k} {v}" for k, v in info.items() if k != "name")
        lines.append(f"{role} judge {info['name']}: {counts}")
    return lines + _claim_conv_lines(report) + report.notes()


def _plain(report: RagReport, digits: int) -> str:
    cells = [[_cell(report, "ok", digits), _cell(report, "generation_failure", digits)]]
    cells.append([_cell(report, "lucky", digits), _cell(report, "retrieval_failure", digits)])
    head = ["", "answer correct", "answer wrong"]
    body = [["evidence in context", *cells[0]], ["evidence missing", *cells[1]]]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
    out = [f"stagewise rag · {report.n} samples · correct = {report.options.correct.name}"]
    out.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    out.append("")
    out.append("reasons")
    for label, reasons in report.reasons().items():
        for reason, count in reasons.items():
            out.append(f"  {label:<19} {reason:<21} {count}")
    out.append("")
    metrics = _metric_lines(report, digits)
    width = max(len(k) for k, _ in metrics)
    out += [f"{k.ljust(width)}  {v}" for k, v in metrics]
    out.append("")
    nugget_table = _nugget_lines(report)
    if nugget_table:
        out += ["nuggets: in the retrieved context x in the answer", *nugget_table, ""]
    out += [f"# {line}" for line in _conv_lines(report)]
    return "\n".join(out) + "\n"


def _markdown(report: RagReport, digits: int) -> str:
    out = [
        f"**stagewise rag** · {report.n} samples · correct = `{report.options.correct.name}`",
        "",
        "| | answer correct | answer wrong |",
        "|:---|:---|:---|",
        f"| evidence in context | {_cell(report, 'ok', digits)} | {_cell(report, 'generation_failure', digits)} |",
        f"| evidence missing | {_cell(report, 'lucky', digits)} | {_cell(report, 'retrieval_failure', digits)} |",
        "",
        "| label | reason | count |",
        "|:---|:---|---:|",
    ]
    for label, reasons in report.reasons().items():
        out += [f"| {label} | {reason} | {count} |" for reason, count in reasons.items()]
    out += ["", "| metric | value |", "|:---|---:|"]
    out += [f"| {k} | {v} |" for k, v in _metric_lines(report, digits)]
    out.append("")
    nuggets = report.nuggets
    if nuggets is not None and nuggets.table:
        every, vital = nuggets.table["all"], nuggets.table["vital"]
        out += ["| nuggets (vital) | in answer | not in answer |", "|:---|:---|:---|"]
        for name, a, b in (
            ("in context", "ok", "generation_failure"),
            ("not in context", "lucky", "retrieval_failure"),
        ):
            out.append(f"| {name} | {a} {every[a]} ({vital[a]}) | {b} {every[b]} ({vital[b]}) |")
        out.append("")
    out += [f"- {line}" for line in _conv_lines(report)]
    return "\n".join(out) + "\n"
