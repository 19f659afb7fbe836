"""The comparison table: each run's means, the letters of the runs it is significantly better than, the best
value marked, every pair's difference, interval, effect size and p-values, and the conventions under it."""

from __future__ import annotations

from typing import Any

from stagewise.report.compare import notes, p_text, run_cells, title
from stagewise.report.html.page import conventions, esc, flat, num, table


def section(comp: Any, digits: int = 4) -> str:
    header = ["", "run", *comp.metrics]
    rows = []
    for (label, run, values), means in zip(run_cells(comp, digits), (comp.means[r] for r in comp.runs), strict=True):
        row: list[Any] = [label, esc(run)]
        for (value, best, marks), metric in zip(values, comp.metrics, strict=True):
            shown = f'<span class="best">{value}</span>' if best else value
            if marks:
                shown += f' <sup class="sig" title="significantly better than runs {marks}">{marks}</sup>'
            row.append((shown, repr(float(means[metric]))))
        rows.append(row)
    main = table(header, rows, caption=title(comp), table_id="comparison-table", sortable=True, raw=True)
    pair_header = ["metric", "a", "b", "diff (b−a)", "CI low", "CI high", "d_z", "W", "T", "L", "p", "p adj.", "sig."]

    def number(value: float, text: str) -> tuple[str, str]:  # shown as the text tables show it, sorted by value
        return (esc(text), repr(float(value)))

    pair_rows = [
        [
            esc(p.metric),
            esc(p.a),
            esc(p.b),
            number(p.mean_diff, num(p.mean_diff, digits)),
            number(p.ci_low, num(p.ci_low, digits)),
            number(p.ci_high, num(p.ci_high, digits)),
            number(p.effect_size, num(p.effect_size, digits)),
            number(p.wins, str(p.wins)),
            number(p.ties, str(p.ties)),
            number(p.losses, str(p.losses)),
            number(p.p_value, p_text(p.p_value)),
            number(p.p_adjusted, p_text(p.p_adjusted)),
            "yes" if p.significant else "no",
        ]
        for p in comp.pairs
    ]
    pairs = table(
        pair_header,
        pair_rows,
        table_id="pairs-table",
        sortable=True,
        raw=True,
        numeric=range(3, 12),
        caption="Every tested pair",
    )
    return (
        main
        + conventions(
            [
                ("baseline", comp.baseline or "none: every pair of runs"),
                *flat(comp.conventions),
            ],
            notes(comp, with_pairs=True),
        )
        + f"<details><summary>Every pair: difference, interval, effect size, wins/ties/losses, p-values "
        f"({len(comp.pairs)} rows)</summary>"
        f'<div class="scroll">{pairs}</div></details>'
    )
