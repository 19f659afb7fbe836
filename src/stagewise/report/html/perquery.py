"""Where runs win and lose, query by query: sorted difference bars against the baseline with wins, ties and
losses counted, and a sortable, filterable per-query table (worst queries first)."""

from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.report.html.page import controls, esc, figure, pyplot, table

WIN, LOSS, TIE = "#0072B2", "#D55E00", "#999999"  # Okabe-Ito blue and vermillion; grey for ties


def columns(result: Any) -> list[tuple[str, Any, dict[str, np.ndarray]]]:
    """``(run, query ids, {metric: values})`` of an EvalResult, or of a Comparison's score table."""
    if hasattr(result, "runs"):
        return [(r.name, r.query_ids, r.values) for r in result.runs]
    return list(zip(result.names, result.query_ids, result.values, strict=True))


def per_query_values(result: Any, metric: str) -> tuple[list[str], list[str], np.ndarray]:
    """(query ids, run names, values[query, run]); a query a run did not score is NaN."""
    cols = columns(result)
    runs = [name for name, _, _ in cols]
    queries = sorted({str(q) for _, ids, _ in cols for q in np.asarray(ids).tolist()})
    index = {q: i for i, q in enumerate(queries)}
    values = np.full((len(queries), len(runs)), np.nan)
    for j, (_, ids, vals) in enumerate(cols):
        rows = [index[str(q)] for q in np.asarray(ids).tolist()]
        values[rows, j] = vals[metric]
    return queries, runs, values


def difference_plot(result: Any, metric: str, baseline: str, run: str, tolerance: float) -> str:
    queries, runs, values = per_query_values(result, metric)
    a, b = values[:, runs.index(baseline)], values[:, runs.index(run)]
    keep = ~(np.isnan(a) | np.isnan(b))
    q = np.array(queries, dtype=object)[keep]
    delta = b[keep] - a[keep]
    order = np.lexsort((q.astype(str), -np.round(delta, 12)))
    delta, q = delta[order], q[order]
    wins = int(np.sum(delta > tolerance))
    losses = int(np.sum(delta < -tolerance))
    ties = len(delta) - wins - losses
    colours = [WIN if d > tolerance else LOSS if d < -tolerance else TIE for d in delta]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    ax.bar(np.arange(len(delta)), delta, width=1.0, color=colours, linewidth=0)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlim(-0.5, max(len(delta), 1) - 0.5)
    ax.set_xticks([])
    ax.set_xlabel(f"queries, sorted by difference ({len(delta)} queries)")
    ax.set_ylabel(f"Δ {metric} (run − baseline)")
    name = f"{run} − {baseline}: {metric} per query"
    ax.set_title(f"{name}\nwins {wins} · ties {ties} · losses {losses}", fontsize=9)
    desc = (
        f"Per-query difference in {metric} of {run} minus {baseline}, sorted from largest gain to largest loss: "
        f"{wins} wins, {ties} ties, {losses} losses (tie when |difference| <= {tolerance:g})."
    )
    rows = [[str(qid), round(float(d), 4)] for qid, d in zip(q, delta, strict=True)]
    return figure(fig, name, desc, ["query", f"Δ {metric}"], rows)


def table_html(result: Any, metric: str, table_id: str, baseline: str | None) -> str:
    """Queries as rows, worst mean first: each run's value, the mean, the spread (best minus worst run) and
    which runs are best and worst on it."""
    queries, runs, values = per_query_values(result, metric)
    with np.errstate(all="ignore"):
        mean = np.nanmean(values, axis=1) if values.size else np.zeros(0)
        hi = np.nanmax(values, axis=1) if values.size else np.zeros(0)
        lo = np.nanmin(values, axis=1) if values.size else np.zeros(0)
    order = np.lexsort((np.array(queries, dtype=str), mean))  # worst queries first
    header = ["query", "mean", "spread (max − min)", "best run", "worst run"]
    if baseline is not None and len(runs) > 1:
        header.append(f"max |Δ| vs {baseline}")
    header += runs
    rows = []
    for i in order:
        row = values[i]
        finite = ~np.isnan(row)
        best = runs[int(np.nanargmax(row))] if finite.any() else ""
        worst = runs[int(np.nanargmin(row))] if finite.any() else ""
        cells: list[Any] = [queries[i], float(mean[i]), float(hi[i] - lo[i]), best, worst]
        if baseline is not None and len(runs) > 1:
            d = row - row[runs.index(baseline)]
            cells.append(float(np.nanmax(np.abs(d))) if finite.any() else None)
        cells += [None if np.isnan(v) else float(v) for v in row]
        rows.append(cells)
    numeric = {1, 2, *range(5, len(header))}
    body = table(header, rows, table_id=table_id, sortable=True, numeric=numeric, caption=f"{metric} per query")
    return controls(table_id, placeholder="query id or run name") + f'<div class="scroll">{body}</div>'


def section(result: Any, metrics: list[str], baseline: str | None, tolerance: float) -> str:
    runs = [name for name, _, _ in columns(result)]
    out = []
    metric = metrics[0]
    if baseline is not None and len(runs) > 1:
        out.append(
            f"<h3>Differences against the baseline, {esc(baseline)}, on {esc(metric)}</h3>"
            "<p>Each bar is one query: blue where the run beats the baseline, vermillion where it loses, grey for a "
            f"tie (|Δ| ≤ {tolerance:g}).</p>"
        )
        plots = [difference_plot(result, metric, baseline, run, tolerance) for run in runs if run != baseline]
        out.append(f'<div class="grid">{"".join(plots)}</div>')
    out.append(
        "<h3>Per-query table</h3><p>Worst queries first (lowest mean over the runs); click a column to sort "
        "(the spread finds the queries where two runs differ most), type to filter.</p>"
    )
    for i, m in enumerate(metrics):
        inner = table_html(result, m, f"per-query-table-{i}", baseline)
        out.append(f"<details{' open' if i == 0 else ''}><summary>{esc(m)}</summary>{inner}</details>")
    return "".join(out)
