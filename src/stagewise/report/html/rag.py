"""The RAG section: the 2x2 of evidence in context x answer correct, the reasons behind each failure as a bar
chart, answer and citation metrics, and a per-sample table filtered by label."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stagewise.report.html.page import controls, conventions, esc, figure, flat, num, pyplot, table

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.report import RagReport

_ROW_NAMES = {"evidence_in_context": "evidence in context", "evidence_missing": "evidence missing"}
_COL_NAMES = {"answer_correct": "answer correct", "answer_wrong": "answer wrong"}
_LABEL_COLOURS = {"ok": "#009E73", "generation_failure": "#E69F00", "retrieval_failure": "#D55E00", "lucky": "#56B4E9"}


def section(report: RagReport, digits: int = 4, answers: dict[str, str] | None = None) -> str:
    """The section; ``answers`` are the samples' answer texts by id (a report's rows hold no texts)."""
    from stagewise.rag.labels import LABELS

    texts = dict(answers or {})
    grid = report.table()
    rows = []
    for key, cells in grid.items():
        row: list[Any] = [_ROW_NAMES[key]]
        for col in ("answer_correct", "answer_wrong"):
            cell = cells[col]
            row.append(f"{cell['label']}: {cell['count']} ({100 * float(cell['share']):.1f}%)")
        rows.append(row)
    out = [
        table(["", *_COL_NAMES.values()], rows, caption=f"{report.n} samples: stage that failed", table_id="rag-2x2")
    ]
    reasons = report.reasons()
    bars = [(label, reason, count) for label in LABELS for reason, count in reasons[label].items()]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * max(len(bars), 2) + 1.0))
    names = [f"{label}: {reason}" for label, reason, _ in bars]
    ax.barh(range(len(bars)), [c for *_, c in bars], color=[_LABEL_COLOURS.get(lab, "#000000") for lab, *_ in bars])
    ax.set_yticks(range(len(bars)), names)
    ax.invert_yaxis()
    ax.set_xlabel("samples (count)")
    ax.set_title("Why each sample got its label")
    for i, (*_, count) in enumerate(bars):
        ax.text(count, i, f" {count}", va="center", fontsize=8)
    desc = "; ".join(f"{n}: {c}" for n, (*_, c) in zip(names, bars, strict=True)) or "no samples"
    out.append(
        figure(fig, "Why each sample got its label", desc, ["label", "reason", "samples"], [list(b) for b in bars])
    )
    answers = report.answer_means()
    citations = report.citation_means()
    retrieval = report.retrieval_means()
    metrics = [
        *(("retrieval", k, v) for k, v in retrieval.items()),
        *(("answer", k, v) for k, v in answers.items()),
        *(("citation", k, v) for k, v in citations.items()),
    ]
    out.append(
        table(
            ["part", "metric", "value"],
            [[part, k, num(v, digits) if not isinstance(v, str) else v] for part, k, v in metrics],
            caption="Retrieval, answer and citation metrics (means over the samples each applies to)",
            table_id="rag-metrics",
        )
    )
    sample_header = ["id", "label", "reason", "first gold rank", "evidence in context", "answer correct",
                     "citation precision", "citation recall", "answer"]  # fmt: skip
    sample_rows = [
        [
            sample.id,
            sample.label,
            sample.reason,
            sample.first_gold_rank,
            "yes" if sample.evidence_in_context else "no",
            "yes" if sample.answer_correct else "no",
            sample.citation_precision,
            sample.citation_recall,
            _short(texts.get(sample.id)),
        ]
        for sample in report.rows
    ]
    body = table(
        sample_header,
        sample_rows,
        table_id="rag-samples",
        sortable=True,
        numeric={3, 6, 7},
        caption="Every sample",
        row_attrs=[f'data-label="{esc(sample.label)}"' for sample in report.rows],
    )
    out.append("<h3>Samples</h3>" + controls("rag-samples", LABELS, "id, reason or answer text"))
    out.append(f'<div class="scroll">{body}</div>')
    return (
        f'<div class="grid"><div>{out[0]}{out[2]}</div>{out[1]}</div>'
        + conventions(flat(report.conventions()), report.notes())
        + "".join(out[3:])
    )


def _short(text: Any, limit: int = 160) -> str:
    if text is None:
        return ""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
