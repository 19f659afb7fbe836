"""An evaluation (:class:`~stagewise.metrics.result.EvalResult`) as a table, markdown, LaTeX, CSV or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from stagewise import report
from stagewise.report import tables

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.metrics.result import EvalResult

# the formats this module writes: the registry's entries that name EvalResult among their kinds
FORMATS = tuple(name for name in report.FORMATS.names() if "EvalResult" in report.FORMATS[name].kinds)
TITLE = "stagewise eval"


def render(result: EvalResult, fmt: str = "table", per_query: bool = False, digits: int = 4) -> str:
    """Text in one of ``table, json, csv, markdown, latex``.

    With ``per_query``, the tables (table, markdown, latex) and CSV give each run's rows followed by its mean
    as query ``all``, as ``trec_eval -q`` does (CSV held only the query rows, so the file said less than the
    table; filter ``query_id != "all"`` for the queries alone); JSON keeps the means under ``runs``.
    """
    if fmt == "json":
        return result.to_json(per_query) + "\n"
    if fmt == "csv":
        return table_frame(result, per_query)[0].write_csv()
    frame, contenders = table_frame(result, per_query)
    notes = result.notes()
    if fmt == "markdown":
        return tables.markdown(frame, digits, notes, contenders)
    if fmt == "latex":
        return tables.latex(frame, digits, notes, contenders)
    if fmt == "table":
        return tables.plain(frame, digits, notes, title=TITLE, contenders=contenders)
    raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")


def rich(result: EvalResult, per_query: bool = False, digits: int = 4, width: int = 100) -> Any:
    """A rich Table (rich is imported lazily); transposed when too wide for ``width`` columns."""
    frame, contenders = table_frame(result, per_query)
    return tables.rich_table(frame, digits, TITLE, result.notes(), width, contenders)


def table_frame(result: EvalResult, per_query: bool) -> tuple[pl.DataFrame, list[int] | None]:
    """The frame a table shows, and the rows that compete for "best" (None: all of them). Per query, each
    run's rows end with its mean as query ``all`` (trec_eval -q's summary line), and only those compete."""
    if not per_query:
        return result.to_polars(), None
    schema = {"run": pl.String, "query_id": pl.String, **dict.fromkeys(result.metric_names, pl.Float64)}
    frames, contenders, offset = [], [], 0
    for r in result.runs:
        rows = pl.DataFrame(
            {
                "run": [r.name] * len(r.query_ids),
                "query_id": [str(q) for q in r.query_ids.tolist()],
                **{m: np.asarray(r.values[m], dtype=np.float64) for m in result.metric_names},
            },
            schema=schema,
        )
        mean = pl.DataFrame([{"run": r.name, "query_id": "all", **r.means}], schema=schema)
        frames += [rows, mean]
        offset += len(rows)
        contenders.append(offset)
        offset += 1
    return pl.concat(frames), contenders


def summary(result: EvalResult, fmt: str, per_query: bool = False) -> str:
    """What a written file holds, for the line naming it: its format, runs, metrics and (per query) rows."""
    runs, metrics = len(result.runs), len(result.metric_names)
    text = f"{fmt}, {runs} run{'s' * (runs != 1)} x {metrics} metric{'s' * (metrics != 1)}"
    if per_query:
        queries = sum(len(r.query_ids) for r in result.runs)
        text += f", {queries:,} per-query rows and each run's mean as query 'all'"
    return text
