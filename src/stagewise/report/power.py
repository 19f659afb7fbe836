"""Power and topic-set size as plain text, JSON and CSV: a :class:`~stagewise.stats.power.TopicSetSize` (how many
topics a design needs) and a :class:`~stagewise.stats.discriminative.DiscriminativePower` (how many run pairs each
measure tells apart). They render; they compute nothing.

Plain text goes to pipes and files: ASCII only, one line per fact, so ``grep`` finds the number.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.stats.discriminative import DiscriminativePower
    from stagewise.stats.power import TopicSetSize

FORMATS = ("table", "json", "csv")
#: The shares of the pairs at which the table reads each ASL curve (JSON keeps the whole curve).
CURVE_POINTS = (0.10, 0.25, 0.50, 0.75, 0.90)


def render(result: Any, fmt: str = "table", digits: int = 4) -> str:
    """``result`` (a TopicSetSize or a DiscriminativePower) as ``table``, ``json`` or ``csv``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    if fmt == "json":
        return result.to_json() + "\n"
    topics = type(result).__name__ == "TopicSetSize"
    if fmt == "csv":
        return topics_csv(result) if topics else discriminative_csv(result)
    return topics_text(result, digits) if topics else discriminative_text(result, digits)


# ------------------------------------------------------------------------------------------- topic-set size
def _variance_lines(r: TopicSetSize, digits: int) -> list[str]:
    v = r.variance
    lines = [f"variance V: {v.value:.{digits + 2}g} ({v.source})"]
    if r.variance_factor != 1.0:
        lines.append(
            f"the design reads the variance of a difference between two systems: {r.variance_factor:g} V = "
            f"{r.design_variance:.{digits + 2}g}"
        )
    conv = v.conventions
    if conv:
        lines.append(
            f"evaluated: qrels {conv.get('qrels')}; relevance level {conv.get('relevance_level')}; "
            f"ties: {conv.get('ties')}; missing queries: {conv.get('missing_queries')}"
        )
    return lines


def _achieved(r: TopicSetSize, n: int, value: float, digits: int) -> str:
    return f"{r.achieved_label} at {n} topics: {value:.{digits}f}"


def topics_text(r: TopicSetSize, digits: int = 4) -> str:
    """The answer first, then every input and where the variance came from."""
    inputs = [f"alpha {r.alpha:g}"]
    if r.beta is not None:
        inputs.append(f"beta {r.beta:g} (power {1 - r.beta:g})")
    inputs.append(("widest interval " if r.design == "ci" else "minD ") + f"{r.min_diff:g}")
    if r.systems is not None:
        inputs.append(f"{r.systems} systems")
    lines = [
        f"topics needed: {r.topics}",
        f"design: {r.label} ({r.design}): {r.statement}",
        "inputs: " + ", ".join(inputs),
        *_variance_lines(r, digits),
        _achieved(r, r.topics, r.achieved, digits),
    ]
    if r.achieved_before is not None:
        lines.append(_achieved(r, r.topics - 1, r.achieved_before, digits))
    lines.append("method: Sakai, Topic set size design, IRJ 19(3) 2016; exact noncentral t and F (scipy)")
    return "\n".join(lines) + "\n"


_TOPICS_FIELDS = (
    "design",
    "topics",
    "alpha",
    "beta",
    "min_diff",
    "systems",
    "variance",
    "variance_factor",
    "design_variance",
    "achieved_label",
    "achieved",
    "achieved_before",
    "variance_source",
)


def topics_csv(r: TopicSetSize) -> str:
    """One header line and one row: the answer and its inputs."""
    row = {k: v for k, v in r.to_dict().items() if k in _TOPICS_FIELDS}
    row["variance"], row["variance_source"] = r.variance.value, r.variance.source
    return _csv(list(_TOPICS_FIELDS), [row])


# ------------------------------------------------------------------------------------- discriminative power
def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [line(header).rstrip(), *(line(r).rstrip() for r in rows)]


def discriminative_text(d: DiscriminativePower, digits: int = 4) -> str:
    """One row per measure: pairs significant, the share (the discriminative power), and the ASL curve read at
    a few shares of the pairs; the most discriminative measure marked ``*``; the method and conventions after."""
    best = d.ranking()[0] if d.measures else None
    header = ["measure", "significant", "share", *(f"ASL@{p:.0%}" for p in CURVE_POINTS)]
    rows = [
        [
            m.metric + (" *" if m.metric == best else ""),
            f"{m.significant}/{m.pairs}",
            f"{m.share:.1%}",
            *(f"{m.curve_at(p):.{digits}f}" for p in CURVE_POINTS),
        ]
        for m in d.measures
    ]
    pairs = d.measures[0].pairs if d.measures else 0
    lines = [
        f"discriminative power; {len(d.runs)} runs; {pairs} pairs; {d.topics} topics; B = {d.resamples:,}; "
        f"seed {d.seed}; alpha {d.alpha:g}",
        *_grid(header, rows),
        "",
        f"ranking: {' > '.join(d.ranking())} (* most discriminative: the largest share of pairs with ASL < alpha)",
        "ASL@x%: the ASL curve (every pair's ASL, smallest first) read at x% of the pairs",
        f"method: {d.method}",
        *d.notes,
    ]
    return "\n".join(lines) + "\n"


_PAIR_FIELDS = ("metric", "a", "b", "mean_a", "mean_b", "diff", "asl", "significant")


def discriminative_csv(d: DiscriminativePower) -> str:
    """One row per measure and run pair: the means, the difference ``mean_b - mean_a``, the ASL, significant."""
    rows = []
    for m in d.measures:
        for pair in m.to_dict()["pair_asl"]:
            rows.append({"metric": m.metric, **pair, "significant": pair["asl"] < d.alpha})
    return _csv(list(_PAIR_FIELDS), rows)


def _csv(names: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: "" if row.get(k) is None else repr(row[k]) if isinstance(row[k], float) else row[k] for k in names}
        )
    return buf.getvalue()
