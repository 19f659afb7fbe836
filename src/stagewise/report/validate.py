"""A validation report (:class:`~stagewise.checks.ValidationReport`) as plain text or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise.report import FORMATS as REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.checks import RunReport, ValidationReport

# the formats this module writes: the registry's entries that name ValidationReport among their kinds
FORMATS = tuple(name for name in REGISTRY.names() if "ValidationReport" in REGISTRY[name].kinds)


def render(report: ValidationReport, fmt: str = "table") -> str:
    """The report as ``table`` (plain text, one block per run) or ``json``."""
    if fmt == "json":
        return report.to_json() + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    lines = [
        f"qrels {report.qrels_name}: {report.qrels_queries} queries, {report.judgements} judgements",
        "  labels: "
        + ", ".join(f"{k}: {v}" for k, v in report.label_histogram.items())
        + "  (labels below 0: judged but neither relevant nor non-relevant, as trec_eval)",
    ]
    if report.queries_without_relevant:
        lines.append(
            f"  {len(report.queries_without_relevant)} queries have no relevant document: "
            + _few(report.queries_without_relevant)
        )
    for r in report.runs:
        lines += _run_lines(r)
    return "\n".join(lines) + "\n"


def _run_lines(r: RunReport) -> list[str]:
    per = r.results_per_query
    return [
        f"run {r.name}: {r.queries} queries, {r.results} results "
        f"(per query min {per['min']:.0f}, median {per['median']:.0f}, max {per['max']:.0f})",
        f"  judged queries absent from the run: {len(r.queries_only_in_qrels)}"
        + (f" ({_few(r.queries_only_in_qrels)}; scored 0 by default)" if r.queries_only_in_qrels else ""),
        f"  run queries without judgements: {len(r.queries_only_in_run)}"
        + (f" ({_few(r.queries_only_in_run)}; ignored)" if r.queries_only_in_run else ""),
        f"  duplicate documents within a query: {r.duplicate_documents}"
        + (
            " (an error for eval; fix the run, or keep one listing with --duplicates first)"
            if r.duplicate_documents
            else ""
        ),
        "  unjudged share: "
        + ", ".join(f"@{k} {v:.3f}" for k, v in r.unjudged_at_k.items())
        + " (unj@k, trec_eval's: unjudged results in the top k over k)",
        *_short_note(r),
        f"  adjacent results with tied scores: {r.tied_score_share:.1%} (scores compared in single precision, "
        "as trec_eval 9 and pytrec_eval do; ordered by doc id descending)",
        *(
            [
                f"  of which equal only in single precision: {r.single_precision_ties} (they differ as "
                "doubles; trec_eval 10.0 orders them by score: --ties docid-double)"
            ]
            if r.single_precision_ties
            else []
        ),
        *(f"  warning: {w}" for w in r.warnings),
    ]


def _short_note(r: RunReport) -> list[str]:
    """A note where some answered query has fewer than k results: there unj@k counts the missing ranks as
    judged and unjudged@k (1 - judged@k, the report's plot) as unjudged, so the two differ."""
    short = [k for k, n in r.shorter_than_k.items() if n]
    if not short:
        return []
    counts = ", ".join(f"@{k} {r.shorter_than_k[k]}" for k in short)
    other = ", ".join(f"@{k} {r.unjudged[f'unjudged@{k}']:.3f}" for k in short)
    return [
        f"  note: queries with fewer than k results: {counts}; unj@k counts their missing ranks as judged, "
        f"unjudged@k = 1 - judged@k (the report's plot) as unjudged: {other}"
    ]


def _few(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f", ... ({len(items) - n} more)" if len(items) > n else "")
