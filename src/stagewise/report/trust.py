"""A trust report (:class:`~stagewise.assess.qrels_trust.TrustReport`) as plain text or JSON. It renders; the numbers
are the library's."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from stagewise.report import FORMATS as REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.assess.qrels_trust import RankingAgreement, TrustReport

# the formats this module writes: the registry's entries that name TrustReport among their kinds
FORMATS = tuple(name for name in REGISTRY.names() if "TrustReport" in REGISTRY[name].kinds)


def render(report: TrustReport, fmt: str = "table", *, digits: int = 4) -> str:
    """The report as ``table`` (plain text: leave-one-out, bounds, ranking agreement) or ``json``."""
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    return "\n".join([*_head(report), "", *_left_out(report, digits), "", *_bounds(report, digits), "",
                      *_agreements(report, digits)]) + "\n"  # fmt: skip


def _head(report: TrustReport) -> list[str]:
    opts = report.options
    conv = report.conventions
    return [
        f"how far qrels {report.qrels_name} ({report.judgements:,} judgements) can be trusted, on {opts.metric}",
        f"pool of depth {opts.depth} from {len(report.left_out)} runs: {report.pool_pairs:,} (query, document) "
        f"pairs, {report.pool_judged:,} of them judged",
        f"conventions: relevance level {conv.relevance_level}, ties {conv.ties}, missing queries {conv.missing}"
        + ("" if conv.max_ret is None else f", first {conv.max_ret} results"),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = [header[0].ljust(widths[0]), *(h.rjust(w) for h, w in zip(header[1:], widths[1:], strict=True))]
    out = ["  ".join(line).rstrip()]
    for row in rows:
        cells = [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
        out.append("  ".join(cells).rstrip())
    return out


def _signed(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}"


def _left_out(report: TrustReport, digits: int) -> list[str]:
    unit = report.options.unit
    grouped = unit != "run"
    header = ["run", *(["group"] if grouped else []), "unique", "judged out", "relevant out", "score", "left out",
              "change", "rank", "left-out rank"]  # fmt: skip
    rows = [
        [r.run, *([r.group] if grouped else []), f"{r.unique_pairs:,}", f"{r.judged_removed:,}",
         f"{r.relevant_removed:,}", f"{r.score:.{digits}f}", f"{r.reduced_score:.{digits}f}",
         _signed(r.change, digits), str(r.rank), f"{r.reduced_rank} ({r.rank_change:+d})" if r.rank_change else
         str(r.reduced_rank)]
        for r in report.left_out
    ]  # fmt: skip
    big = report.largest_change
    what = "its group" if grouped else "it"
    return [
        f"leave one {unit} out: each run scored on the qrels without the pool pairs {what} alone contributed",
        *_table(header, rows),
        f"{report.rank_changes} of {len(report.left_out)} runs change rank; the largest score change is "
        f"{big.run}'s, {_signed(big.change, digits)} ({_relative(big.change, big.score)})",
    ]


def _relative(change: float, score: float) -> str:
    return f"{change / score:+.1%} of its score" if score else "from 0"


def _bounds(report: TrustReport, digits: int) -> list[str]:
    if not report.bounds:
        return []
    first = report.bounds[0]
    header = ["run", "unjudged", "score", "if non-relevant", f"if relevant ({first.label})"]
    rows = [
        [b.run, f"{b.unjudged:,} ({b.unjudged_share:.1%})", f"{b.score:.{digits}f}",
         f"{b.if_nonrelevant:.{digits}f}", f"{b.if_relevant:.{digits}f}"]
        for b in report.bounds
    ]  # fmt: skip
    return [
        f"score bounds: the unjudged documents in each run's first {first.depth} results labelled non-relevant "
        f"(0), then relevant ({first.label})",
        *_table(header, rows),
        "for AP, recall, nDCG, R-precision, ERR and scaled RBP more relevant documents can also lower a score: the two "
        "columns are the two fillings, not a bound over every labelling",
    ]


def _number(value: float, digits: int) -> str:
    return "undefined" if math.isnan(value) else f"{value:.{digits}f}"


def _agreement(a: RankingAgreement, digits: int) -> str:
    rbo = (
        "RBO undefined (tied scores)"
        if a.rbo is None
        else f"RBO(p={a.rbo.p:g}) {a.rbo.ext:.{digits}f} [{a.rbo.min:.{digits}f}, {a.rbo.max:.{digits}f}]"
    )
    tau_ap = "undefined (tied scores)" if math.isnan(a.tau_ap) else f"{a.tau_ap:.{digits}f}"
    return (
        f"  {a.first} vs {a.second} ({a.systems} systems): Kendall's tau {_number(a.kendall_tau, digits)}, "
        f"tau_ap {tau_ap}, Spearman {_number(a.spearman, digits)}, {rbo}"
    )


def _agreements(report: TrustReport, digits: int) -> list[str]:
    return ["ranking of the systems:", *(_agreement(a, digits) for a in report.agreements)]
