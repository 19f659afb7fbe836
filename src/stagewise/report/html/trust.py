"""How far the qrels can be trusted (:class:`~stagewise.assess.qrels_trust.TrustReport`): each run scored
without the pool documents only it contributed (its score and rank change), its score bounds over the unjudged
documents, and how alike the rankings are. The page only renders; :func:`stagewise.study` computed it."""

from __future__ import annotations

import math
from typing import Any

from stagewise.report.html.page import conventions, esc, figure, pyplot, table


def _figure(report: Any) -> str:
    """Each run's score with its bounds as an error bar and its left-out score as a marker."""
    plt = pyplot()
    bounds = {b.run: b for b in report.bounds}
    rows = sorted(report.left_out, key=lambda r: r.rank)
    names = [r.run for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(rows) + 1.4))
    y = list(range(len(rows)))
    score = [r.score for r in rows]
    low = [r.score - bounds[r.run].low if r.run in bounds else 0.0 for r in rows]
    high = [bounds[r.run].high - r.score if r.run in bounds else 0.0 for r in rows]
    ax.errorbar(score, y, xerr=[low, high], fmt="o", color="#0072B2", capsize=3, label="score, bounds")
    ax.plot([r.reduced_score for r in rows], y, "x", color="#D55E00", label="left out")
    ax.set_yticks(y, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(report.options.metric)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Scores, their bounds over unjudged documents, and left out")
    desc = (
        f"{report.options.metric} of {len(rows)} runs; {report.rank_changes} change rank when the documents only "
        "they pooled are removed"
    )
    data = [
        [r.run, r.score, r.reduced_score, bounds[r.run].low if r.run in bounds else math.nan,
         bounds[r.run].high if r.run in bounds else math.nan]
        for r in rows
    ]  # fmt: skip
    return figure(fig, "Scores, bounds and left-out scores", desc, ["run", "score", "left out", "low", "high"], data)


def section(report: Any, digits: int = 4) -> str:
    """The section's body for a :class:`~stagewise.assess.qrels_trust.TrustReport`."""
    metric, depth, unit = report.options.metric, report.options.depth, report.options.unit
    bounds = {b.run: b for b in report.bounds}
    big = report.largest_change
    lead = (
        f"<p>With each {esc(unit)}'s unique documents of the depth-{depth} pool removed from the qrels, "
        f"<strong>{report.rank_changes} of {len(report.left_out)}</strong> runs change rank on {esc(metric)}; "
        f"the largest score change is {big.change:+.{digits}f} ({esc(big.run)}). A new system that was not "
        "pooled is judged like a left-out run: its number is worth about as much as these changes are small.</p>"
    )
    header = ["run", "score", "left out", "change", "rank", "left-out rank", "unique pairs", "relevant removed",
              "unjudged share", "if unjudged non-relevant", "if unjudged relevant"]  # fmt: skip
    rows = []
    for r in sorted(report.left_out, key=lambda r: r.rank):
        b = bounds.get(r.run)
        rows.append([
            r.run, r.score, r.reduced_score, r.change, r.rank, r.reduced_rank, r.unique_pairs, r.relevant_removed,
            b.unjudged_share if b else math.nan, b.if_nonrelevant if b else math.nan, b.if_relevant if b else math.nan,
        ])  # fmt: skip
    agreements = [
        [a.first, a.second, a.systems, a.kendall_tau, a.tau_ap, a.spearman, a.rbo.ext if a.rbo else math.nan]
        for a in report.agreements
    ]
    out = [
        lead,
        _figure(report),
        table(header, rows, sortable=True, table_id="trust-runs", numeric=range(1, len(header))),
    ]
    if agreements:
        out.append(
            table(
                ["reference", "compared", "systems", "Kendall tau", "tau_ap", "Spearman", "RBO (ext)"],
                agreements,
                caption="How alike the rankings are",
                numeric=range(2, 7),
            )
        )
    stated = {
        "metric": metric,
        "pool depth": depth,
        "left out": unit,
        "bounds label": report.options.bound_label,
        "judgements": report.judgements,
        "pool pairs judged": f"{report.pool_judged} of {report.pool_pairs}",
    }
    out.append(conventions(stated, report.notes() if hasattr(report, "notes") else ()))
    return "".join(out)
