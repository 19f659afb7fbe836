"""The comparison table: each run's means, the letters of the runs it is significantly better than, the best
value marked, every pair's difference, interval, effect size and p-values, and the conventions under it."""

from __future__ import annotations

from typing import Any

from stagewise.report.compare import notes, title
from stagewise.report.html.page import conventions, esc, num, table


def section(comp: Any, digits: int = 4) -> str:
    labels = comp.labels
    best = {m: set(comp.best(m)) for m in comp.metrics}
    header = ["", "run", *comp.metrics]
    rows = []
    for run in comp.runs:
        cells: list[Any] = [labels[run], esc(run)]
        for metric in comp.metrics:
            value = num(comp.means[run][metric], digits)
            marks = "".join(labels[r] for r in comp.better_than(run, metric))
            shown = f'<span class="best">{value}</span>' if run in best[metric] and len(comp.runs) > 1 else value
            if marks:
                shown += f' <sup class="sig" title="significantly better than runs {marks}">{marks}</sup>'
            cells.append((shown, repr(float(comp.means[run][metric]))))
        rows.append(cells)
    main = table(header, rows, caption=title(comp), table_id="comparison-table", sortable=True, raw=True)
    pair_header = ["metric", "a", "b", "diff (b−a)", "CI low", "CI high", "d_z", "W", "T", "L", "p", "p adj.", "sig."]
    pair_rows = [
        [
            p.metric,
            p.a,
            p.b,
            p.mean_diff,
            p.ci_low,
            p.ci_high,
            p.effect_size,
            p.wins,
            p.ties,
            p.losses,
            p.p_value,
            p.p_adjusted,
            "yes" if p.significant else "no",
        ]
        for p in comp.pairs
    ]
    pairs = table(
        pair_header, pair_rows, table_id="pairs-table", sortable=True, numeric=range(3, 12), caption="Every tested pair"
    )
    return (
        main
        + conventions(
            [
                ("baseline", comp.baseline or "none: every pair of runs"),
                ("alpha", comp.alpha),
                *_flat(comp.conventions),
            ],
            notes(comp, with_pairs=True),
        )
        + f"<details><summary>Every pair: difference, interval, effect size, wins/ties/losses, p-values "
        f"({len(comp.pairs)} rows)</summary>"
        f'<div class="scroll">{pairs}</div></details>'
    )


def _flat(conv: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for key, value in conv.items():
        if isinstance(value, dict):
            out.extend((f"{key}.{k}", v) for k, v in value.items() if not isinstance(v, dict | list))
        else:
            out.append((key, value))
    return out
