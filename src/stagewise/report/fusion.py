"""The outcome of tuning a fusion (:class:`~stagewise.fusion.optimize.FusionReport`) as a table, markdown or
JSON (``stagewise fuse --optimize --format``). ``text``, the name ``fuse --report-format`` used for the table, is
still accepted (see :data:`stagewise.report.ALIASES`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.fusion.optimize import FusionReport

FORMATS = ("table", "markdown", "json")
HEADER = ["fold", "method", "train", "held-out", "queries"]


def render(report: FusionReport, fmt: str = "table", digits: int = 4) -> str:
    """The report as ``table``, ``markdown`` or ``json``."""
    if fmt == "json":
        return json.dumps(report.describe(), indent=2) + "\n"
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    lines = [
        f"metric: {report.metric}; search: {report.search}",
        f"chosen on all judged queries: {report.method} ({report.metric} {report.train_score:.{digits}f} in-sample)",
    ]
    if report.folds:
        rows = [
            [
                str(f.fold),
                str(f.method),
                f"{f.train_score:.{digits}f}",
                f"{f.test_score:.{digits}f}",
                f"{f.train_queries}/{f.test_queries}",
            ]
            for f in report.folds
        ]
        if fmt == "markdown":
            lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADER)]
            lines += ["", "  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
        lines += ["", f"held-out {report.metric} over all folds: {report.held_out_score:.{digits}f}"]
    return "\n".join(lines) + "\n"
