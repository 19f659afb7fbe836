"""Where an assessment campaign stands (:class:`~stagewise.assess.campaign_build.CampaignStatus`) as plain text or
JSON: settings, each assessor's progress and time per label, and the agreement so far (through
:mod:`stagewise.report.assess`, as ``stagewise agreement`` prints it)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from stagewise.report import assess

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.assess.campaign_build import CampaignStatus

FORMATS = ("table", "json")


def _settings_line(status: CampaignStatus) -> str:
    s = status.settings
    shown = "shown" if s.get("show_prelabels") else "hidden"
    rule = f"; {s['prelabel_rule']}" if s.get("prelabel_rule") else ""
    judge = "none" if not s.get("prelabels") else f"{s['prelabels']} ({shown}{rule})"
    per = "every assessor" if s.get("per_overlap") is None else f"{s['per_overlap']} assessors"
    return (
        f"campaign {status.name}: {status.items:,} items, {status.overlap_items:,} judged by {per} "
        f"(overlap {s.get('overlap')}, seed {s.get('seed')}); {'blind' if s.get('blind', True) else 'not blind'}; "
        f"judge pre-labels: {judge}"
    )


def text(status: CampaignStatus) -> str:
    """The status as plain lines: settings, a progress table, then the agreement report (or why there is none)."""
    lines = [_settings_line(status), ""]
    width = max([len("assessor"), *(len(a) for a in status.progress)])
    head = f"  {'assessor':<{width}}  {'queue':>6}  {'labelled':>8}  {'skipped':>7}  {'left':>6}  {'median s':>8}"
    lines.append(head)
    for name, p in status.progress.items():
        spent = status.median_spent.get(name)
        shown = "n/a" if spent is None else f"{spent:.1f}"
        lines.append(
            f"  {name:<{width}}  {p['total']:>6,}  {p['labelled']:>8,}  {p['skipped']:>7,}  {p['left']:>6,}  {shown:>8}"
        )
    lines.append("  (median s: the median seconds spent per label, as each assessor's page measured it)")
    lines.append("")
    if status.agreement is None:
        lines.append("agreement: none yet (it needs labels from two assessors)")
        return "\n".join(lines) + "\n"
    return "\n".join(lines) + "\n" + assess.text(status.agreement)


def to_dict(status: CampaignStatus) -> dict[str, Any]:
    return {
        "campaign": status.name,
        "settings": status.settings,
        "items": status.items,
        "overlap_items": status.overlap_items,
        "progress": status.progress,
        "median_spent_seconds": status.median_spent,
        "agreement": None if status.agreement is None else assess.to_dict(status.agreement),
    }


def render(status: CampaignStatus, fmt: str = "table") -> str:
    """``table`` (plain lines) or ``json``."""
    if fmt == "json":
        return json.dumps(to_dict(status), indent=2) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    return text(status)
