"""An evaluation (:class:`~stagewise.metrics.result.EvalResult`) as a table, markdown, LaTeX, CSV or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise import report
from stagewise._lazy import LazyModule
from stagewise.metrics.result import STD_NOTE
from stagewise.report import tables

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.metrics.result import EvalResult

# the formats this module writes: the registry's entries that name EvalResult among their kinds
FORMATS = tuple(name for name in report.FORMATS.names() if "EvalResult" in report.FORMATS[name].kinds)
TITLE = "stagewise eval"


def render(result: EvalResult, fmt: str = "table", per_query: bool = False, digits: int = 4, std: bool = False) -> str:
    """Text in one of ``table, json, csv, markdown, latex``.

    With ``per_query``, the tables (table, markdown, latex) and CSV give each run's rows followed by its mean
    as query ``all``, as ``trec_eval -q`` does (CSV held only the query rows, so the file said less than the
    table; filter ``query_id != "all"`` for the queries alone); JSON keeps the means under ``runs``. With
    ``std``, each run's mean row is followed by a row ``RUN std`` of the per-query standard deviations (ranx's
    ``return_std``), and JSON adds ``std``.
    """
    if fmt == "json":
        return result.to_json(per_query, std=std) + "\n"
    frame, contenders = table_frame(result, per_query, std)
    if fmt == "csv":
        return frame.write_csv()
    notes = result.notes() + ([STD_NOTE] if std else [])
    if fmt == "markdown":
        return tables.markdown(frame, digits, notes, contenders)
    if fmt == "latex":
        return tables.latex(frame, digits, notes, contenders)
    if fmt == "table":
        return tables.plain(frame, digits, notes, title=TITLE, contenders=contenders)
    raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")


def rich(result: EvalResult, per_query: bool = False, digits: int = 4, width: int = 100, std: bool = False) -> Any:
    """A rich Table (rich is imported lazily); transposed when too wide for ``width`` columns."""
    frame, contenders = table_frame(result, per_query, std)
    return tables.rich_table(frame, digits, TITLE, result.notes() + ([STD_NOTE] if std else []), width, contenders)


def table_frame(result: EvalResult, per_query: bool, std: bool = False) -> tuple[pl.DataFrame, list[int] | None]:
    """The frame a table shows, and the rows that compete for "best" (None: all of them). Per query, each
    run's rows end with its mean as query ``all`` (trec_eval -q's summary line), and only those compete; with
    ``std`` a row ``RUN std`` follows each mean and never competes."""
    if not per_query and not std:
        return result.to_polars(), None
    schema = {"run": pl.String, **({"query_id": pl.String} if per_query else {})}
    schema.update(dict.fromkeys(result.metric_names, pl.Float64))
    stds = result.stds() if std else {}
    frames, contenders, offset = [], [], 0
    for r in result.runs:
        if per_query:
            rows = pl.DataFrame(
                {
                    "run": [r.name] * len(r.query_ids),
                    "query_id": [str(q) for q in r.query_ids.tolist()],
                    **{m: np.asarray(r.values[m], dtype=np.float64) for m in result.metric_names},
                },
                schema=schema,
            )
            frames.append(rows)
            offset += len(rows)
        where = {"query_id": "all"} if per_query else {}
        frames.append(pl.DataFrame([{"run": r.name, **where, **r.means}], schema=schema))
        contenders.append(offset)
        offset += 1
        if std:
            frames.append(pl.DataFrame([{"run": f"{r.name} std", **where, **stds[r.name]}], schema=schema))
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
