"""A judge's audit (:class:`~stagewise.rag.audit.JudgeAudit`) as a text table, a JSON document, or the compact
HTML block the report's RAG section shows wherever that judge's labels are used. Renders only."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.audit import Figure, JudgeAudit

FORMATS = ("table", "json")
_FIGURE_NAMES = {
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "kappa": "Cohen's kappa",
    "kappa_linear": "kappa, linear weights",
    "kappa_quadratic": "kappa, quadratic weights",
}


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _interval(fig: Figure) -> str:
    return f"{_num(fig.value)} [{_num(fig.low)}, {_num(fig.high)}]"


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    return value


def as_json(audit: JudgeAudit) -> dict[str, Any]:
    """Every figure of the audit as a JSON-ready dict (NaN as null, numbers rounded to 6 decimals)."""
    return {
        "task": audit.task,
        "judge": audit.judge,
        "judge_version": audit.version,
        "data": audit.data,
        "n": audit.n,
        "unjudged": audit.unjudged,
        "left_out": audit.left_out,
        "figures": {k: v.as_list() for k, v in audit.figures.items()},
        "confusion": {
            "rows": "people",
            "columns": "judge",
            "categories": list(audit.categories),
            "counts": [list(r) for r in audit.confusion],
        },
        "calibration": {
            "bins": [
                {
                    "low": b.low,
                    "high": b.high,
                    "count": b.count,
                    "mean_score": _rounded(b.mean_score),
                    "observed": _rounded(b.observed),
                }
                for b in audit.calibration
            ],
            "ece": _rounded(audit.ece),
        },
        "gullibility": [
            {**g.as_dict(), "rate": [_rounded(x) for x in (g.rate, g.low, g.high)]} for g in audit.gullibility
        ],
        "bootstrap": {"resamples": audit.resamples, "seed": audit.seed, "interval": "95% percentile"},
        "notes": list(audit.notes),
    }


def _table(audit: JudgeAudit) -> str:
    version = f" (version {audit.version})" if audit.version else ""
    what = "claims" if audit.task == "support" else "pairs"
    lines = [f"judge audit: {audit.judge}{version}, {audit.task}, on {audit.data}"]
    lines.append(f"{what} judged {audit.n:,}; unjudged {audit.unjudged:,} (left out of every figure)")
    if audit.left_out:
        lines.append("left out of the input: " + ", ".join(f"{k} {v:,}" for k, v in audit.left_out.items()))
    lines += ["", f"  {'figure':<26} {'value [95% interval]':>24}"]
    lines += [f"  {_FIGURE_NAMES.get(k, k):<26} {_interval(v):>24}" for k, v in audit.figures.items()]
    cell = max(9, *(len(c) for c in audit.categories))
    lines += ["", "confusion (rows: people, columns: the judge)", "  " + " " * cell + "".join(
        f"{c:>{cell + 1}}" for c in audit.categories
    )]  # fmt: skip
    for cat, row in zip(audit.categories, audit.confusion, strict=True):
        lines.append(f"  {cat:>{cell}}" + "".join(f"{v:>{cell + 1},}" for v in row))
    observed = "people: supported" if audit.task == "support" else "people: grade >= 1"
    lines += ["", f"calibration by score bin (ECE {_num(audit.ece)})"]
    lines.append(f"  {'scores':<12} {'count':>7} {'mean score':>11} {observed:>19}")
    for b in audit.calibration:
        span = f"[{b.low:.2f}, {b.high:.2f}{']' if b.high >= 1 else ')'}"
        lines.append(f"  {span:<12} {b.count:>7,} {_num(b.mean_score):>11} {_num(b.observed):>19}")
    if audit.gullibility:
        lines += ["", "gullibility (claims people and the judge call not supported, attacked)"]
        lines.append(f"  {'attack':<18} {'n':>5} {'fooled':>7} {'rate [95% interval]':>24}  what")
        for g in audit.gullibility:
            rate = f"{_num(g.rate)} [{_num(g.low)}, {_num(g.high)}]"
            extra = f"; {g.unjudged} unjudged" if g.unjudged else ""
            lines.append(f"  {g.attack:<18} {g.n:>5,} {g.fooled:>7,} {rate:>24}  {g.help}{extra}")
    lines += ["", "conventions:"] + [f"  - {note}" for note in audit.notes]
    return "\n".join(lines) + "\n"


def render(audit: JudgeAudit, fmt: str = "table") -> str:
    """The audit as ``table`` (plain text) or ``json`` (one document, keys in a fixed order)."""
    if fmt == "json":
        return json.dumps(as_json(audit), indent=1, ensure_ascii=False) + "\n"
    if fmt == "table":
        return _table(audit)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _same_judge(first: Any, second: Any) -> bool:
    """Whether two names name one judge: equal once each is canonical (``lexical(threshold=0.6)`` is
    ``lexical``), or equal as written when either is no registered judge's name."""
    from stagewise.errors import StagewiseError
    from stagewise.rag.judges import parse_judge

    try:
        return parse_judge(str(first)) == parse_judge(str(second))
    except StagewiseError:
        return str(first) == str(second)


def audit_blocks(audits: Sequence[JudgeAudit], rag: Any = None) -> str:
    """The blocks of ``audits`` for the RAG section; each says which of the report's labels its judge gave
    (``rag.judges``: the support judge, the answer judge), or that it gave none of them."""
    used = {role: info for role, info in dict(getattr(rag, "judges", None) or {}).items() if isinstance(info, dict)}
    out = []
    for audit in audits:
        roles = [r for r, info in used.items() if _same_judge(info.get("name"), audit.judge)]
        if roles:
            note = "this judge gave the report's " + " and ".join(f"{r} labels" for r in roles)
        elif used:
            names = ", ".join(f"{r}: {info.get('name')}" for r, info in used.items())
            note = f"not a judge of this report (its judges: {names})"
        else:
            note = None
        out.append(html_block(audit, note))
    return "".join(out)


def html_block(audit: JudgeAudit, note: str | None = None) -> str:
    """The compact block of the report's RAG section: the judge with its version, the audit's kappa with its
    interval and n, and the data it was measured on; ``note`` says where the report used the judge."""
    esc = html.escape
    version = f" <span class='muted'>version {esc(audit.version)}</span>" if audit.version else ""
    kappa = audit.figures["kappa"]
    fooled = "".join(
        f"<li>fooled by {esc(g.attack)}: {_num(g.rate)} [{_num(g.low)}, {_num(g.high)}] of {g.n:,}</li>"
        for g in audit.gullibility
    )
    return (
        "<div class='judge-audit'><h4>Judge audit</h4><ul>"
        f"<li>judge <code>{esc(audit.judge)}</code>{version}, {esc(audit.task)}</li>"
        f"<li>Cohen's kappa with people: {_interval(kappa)} (95% bootstrap, n = {audit.n:,}; "
        f"{audit.unjudged:,} unjudged)</li>"
        f"<li>accuracy {_interval(audit.figures['accuracy'])}, macro-F1 {_interval(audit.figures['macro_f1'])}</li>"
        f"{fooled}<li>measured on <code>{esc(audit.data)}</code></li>"
        + (f"<li>{esc(note)}</li>" if note else "")
        + "</ul></div>"
    )
