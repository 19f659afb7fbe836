"""The demo's own section of the HTML report, put first: where the questions were lost, what each retrieval
stage changed, and what to fix first (the same facts as the printed summary)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagewise.demo.verdict import RULE, Verdict
from stagewise.report.html.page import esc, table


def verdict_section(verdict: Verdict, comparison: Any, *, notes: Sequence[str] = ()) -> tuple[str, str, str]:
    """``(id, title, inner HTML)`` for :func:`stagewise.report.html.render`'s ``lead``; ``notes`` are sentences
    stated under the tables (what was skipped, the gain convention)."""
    losses = table(
        ["stage", "questions lost", "what happened", "reasons"],
        verdict.loss_rows(),
        caption=f"Where the {verdict.samples} questions were lost (ok {verdict.ok}, lucky {verdict.lucky})",
        table_id="demo-losses",
    )
    family = comparison.conventions.get("family_size")
    changes = table(
        ["stage", "against", "before", "after", "change", "adjusted p", "significant"],
        [
            [
                c.stage,
                c.against,
                c.before,
                c.after,
                (f"{c.diff:+.4f}", repr(c.diff)),
                c.p_adjusted,
                "yes" if c.significant else "no",
            ]
            for c in verdict.changes
        ],
        caption=f"What each retrieval stage changed against the run it is compared with "
        f"({verdict.changes[0].metric if verdict.changes else ''}; paired {comparison.conventions.get('test', '')} "
        f"test, Holm-corrected over the {family} pairs of the metric)",
        table_id="demo-changes",
        numeric=(2, 3, 5),
    )
    lead = f"<p><strong>{esc(verdict.headline())}</strong> {esc(verdict.why())}</p>"
    stated = [f"Verdict by {RULE}.", *notes]
    listed = '<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in stated) + "</ul>"
    return ("verdict", "What to fix first", lead + losses + changes + listed)
