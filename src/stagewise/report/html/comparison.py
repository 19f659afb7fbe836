"""The comparison table: each run's means, the letters of the runs it is significantly better than, the best
value marked, every pair's difference, interval, effect size and p-values, and the conventions under it. After a
test of many runs at once (anova, tukey-hsd, maxt) each mean also carries its group letters, and each metric gets
its two-way ANOVA table and each run's interval from the residual variance, drawn as error bars."""

from __future__ import annotations

from typing import Any

from stagewise.report.compare import ANOVA_HEADER, many_blocks, notes, p_text, run_cells, title
from stagewise.report.html.page import conventions, esc, figure, flat, num, pyplot, table


def section(comp: Any, digits: int = 4) -> str:
    header = ["", "run", *comp.metrics]
    rows = []
    for (label, run, values), means in zip(run_cells(comp, digits), (comp.means[r] for r in comp.runs), strict=True):
        row: list[Any] = [label, esc(run)]
        for (value, best, marks), metric in zip(values, comp.metrics, strict=True):
            shown = f'<span class="best">{value}</span>' if best else value
            if marks:
                shown += f' <sup class="sig" title="significantly better than runs {marks}">{marks}</sup>'
            if metric in comp.many:
                group = comp.many[metric].letters[comp.runs.index(run)]
                shown += (
                    f' <span class="groups" title="group letters: runs sharing a letter do not differ">({group})</span>'
                )
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
        + many_section(comp, digits)
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


def many_section(comp: Any, digits: int = 4) -> str:
    """Each metric's two-way ANOVA table, each run's interval and group letters, and the intervals drawn as error
    bars; empty for a comparison by a paired test."""
    out = []
    for (metric, many), (head, anova, sys_head, _) in zip(comp.many.items(), many_blocks(comp, digits), strict=True):
        out.append(table(ANOVA_HEADER, anova, caption=head, numeric=()))
        order = many.best_first()
        rows = [
            [
                esc(many.runs[j]),
                (num(many.means[j], digits), repr(float(many.means[j]))),
                (num(many.lower[j], digits), repr(float(many.lower[j]))),
                (num(many.upper[j], digits), repr(float(many.upper[j]))),
                esc(many.letters[j]),
            ]
            for j in order
        ]
        out.append(table(["run", "mean", "CI low", "CI high", "group"], rows, caption=sys_head, raw=True))
        out.append(_error_bars(metric, many, order))
    return "".join(out)


def _error_bars(metric: str, many: Any, order: list[int]) -> str:
    """Each run's mean with its interval as a horizontal error bar, best at the top, its group letters beside it."""
    plt = pyplot()
    count = len(order)
    fig, ax = plt.subplots(figsize=(8.5, 0.9 + 0.32 * count))
    ys = list(range(count))[::-1]
    means = [float(many.means[j]) for j in order]
    ax.errorbar(means, ys, xerr=many.margin, fmt="o", color="#0072B2", ecolor="#555", capsize=3, markersize=4)
    ax.set_yticks(ys, [f"{many.runs[j]}  ({many.letters[j]})" for j in order])
    ax.set_xlabel(f"{metric}: mean over {many.n_topics} topics, {many.confidence:.0%} interval from V_E")
    name = f"{metric}: each run's mean and interval"
    ax.set_title(name)
    ax.grid(True, axis="x", alpha=0.3)
    desc = (
        f"{metric}: each of {count} runs' mean with its {many.confidence:.0%} interval (+-{many.margin:.4f}, from the "
        "two-way ANOVA residual variance), best first; group letters in brackets."
    )
    rows = [
        [many.runs[j], round(float(many.means[j]), 4), round(float(many.lower[j]), 4), round(float(many.upper[j]), 4),
         many.letters[j]]
        for j in order
    ]  # fmt: skip
    return figure(fig, name, desc, ["run", "mean", "CI low", "CI high", "group"], rows)
