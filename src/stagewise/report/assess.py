"""Agreement between qrels (:class:`~stagewise.assess.summary.AgreementReport`) as plain text or JSON."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from stagewise.report import FORMATS as REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.assess.summary import AgreementReport

FORMATS = tuple(name for name in REGISTRY.names() if "AgreementReport" in REGISTRY[name].kinds)


def _num(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _label(value: float) -> str:
    return f"{value:g}"


def _json_number(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _pair_lines(report: AgreementReport) -> list[str]:
    width = max(len(n) for n in report.assessors)
    lines = [
        "Cohen's kappa per pair (on the pairs both judged):",
        f"  {'first':<{width}}  {'second':<{width}}  {'both':>7}  {'only 1st':>8}  {'only 2nd':>8}  "
        f"{'kappa':>7}  {'linear':>7}  {'quadr.':>7}",
    ]
    for p in report.pairs:
        lines.append(
            f"  {p.first:<{width}}  {p.second:<{width}}  {p.both:>7,}  {p.only_first:>8,}  {p.only_second:>8,}  "
            f"{_num(p.kappa):>7}  {_num(p.kappa_linear):>7}  {_num(p.kappa_quadratic):>7}"
        )
    for p in report.pairs:
        if p.confusion is None:
            continue
        cats = [_label(c) for c in p.confusion.categories]
        cell = max(6, *(len(c) for c in cats), len(str(p.confusion.counts.max())))
        lines.append(f"confusion: {p.first} (rows) x {p.second} (columns)")
        lines.append("  " + " " * cell + "".join(f"{c:>{cell + 1}}" for c in cats))
        for cat, row in zip(cats, p.confusion.counts.tolist(), strict=True):
            lines.append(f"  {cat:>{cell}}" + "".join(f"{v:>{cell + 1}}" for v in row))
    return lines


def _figure_lines(report: AgreementReport) -> list[str]:
    width = max(len("assessor"), *(len(n) for n in report.assessors))
    lines = [
        "per assessor:",
        f"  {'assessor':<{width}}  {'labelled':>8}  {'share':>6}  {'kappa vs others':>15}  labels",
    ]
    for f in report.figures:
        counts = ", ".join(f"{_label(k)}: {v}" for k, v in f.label_counts.items())
        lines.append(
            f"  {f.name:<{width}}  {f.labelled:>8,}  {f.share_labelled:>6.3f}  "
            f"{_num(f.kappa_with_others):>15}  {counts}"
        )
    return lines


def _diff_lines(report: AgreementReport) -> list[str]:
    d = report.diff
    if d is None:
        return []
    first, second = report.assessors
    moves = ", ".join(f"{a}->{b}: {n}" for (a, b), n in sorted(d.transitions.items())) or "none"
    return [
        f"qrels diff {first} -> {second}: {d.added:,} added, {d.removed:,} removed, {d.relabelled:,} relabelled, "
        f"{d.unchanged:,} unchanged; relabellings {moves}"
    ]


def text(report: AgreementReport) -> str:
    """The report as plain text: the overall figures, each pair, per assessor, and the diff of two."""
    labels = "graded labels" if report.relevance_level is None else f"binary at level {report.relevance_level}"
    lines = [
        f"agreement of {len(report.assessors)} qrels: {', '.join(report.assessors)} ({labels})",
        f"  (query, document) pairs judged by at least one: {report.items:,}; by all: {report.fleiss_items:,}",
        f"  Fleiss' kappa (pairs all judged): {_num(report.fleiss_kappa)}",
        f"  Krippendorff's alpha (pairs judged twice or more): nominal {_num(report.alpha_nominal)}, "
        f"ordinal {_num(report.alpha_ordinal)}",
        *_pair_lines(report),
        *_figure_lines(report),
        *_diff_lines(report),
    ]
    return "\n".join(lines) + "\n"


def to_dict(report: AgreementReport) -> dict[str, Any]:
    """The report as JSON-ready data (``nan`` as ``null``)."""
    pairs = [
        {
            "first": p.first,
            "second": p.second,
            "both": p.both,
            "only_first": p.only_first,
            "only_second": p.only_second,
            "kappa": _json_number(p.kappa),
            "kappa_linear": _json_number(p.kappa_linear),
            "kappa_quadratic": _json_number(p.kappa_quadratic),
            "confusion": None
            if p.confusion is None
            else {"categories": list(p.confusion.categories), "counts": p.confusion.counts.tolist()},
        }
        for p in report.pairs
    ]
    figures = [
        {
            "name": f.name,
            "labelled": f.labelled,
            "share_labelled": f.share_labelled,
            "label_counts": {_label(k): v for k, v in f.label_counts.items()},
            "kappa_with_others": _json_number(f.kappa_with_others),
        }
        for f in report.figures
    ]
    d = report.diff
    diff = None
    if d is not None:
        diff = {
            "added": d.added,
            "removed": d.removed,
            "relabelled": d.relabelled,
            "unchanged": d.unchanged,
            "transitions": [{"old": a, "new": b, "count": n} for (a, b), n in sorted(d.transitions.items())],
            "per_query": [vars(q) for q in d.per_query],
        }
    return {
        "assessors": list(report.assessors),
        "relevance_level": report.relevance_level,
        "items": report.items,
        "fleiss_kappa": _json_number(report.fleiss_kappa),
        "fleiss_items": report.fleiss_items,
        "alpha_nominal": _json_number(report.alpha_nominal),
        "alpha_ordinal": _json_number(report.alpha_ordinal),
        "pairs": pairs,
        "assessors_figures": figures,
        "diff": diff,
    }


def render(report: AgreementReport, fmt: str = "table") -> str:
    """The report as ``table`` (plain text) or ``json``."""
    if fmt == "json":
        return json.dumps(to_dict(report), indent=2) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    return text(report)
