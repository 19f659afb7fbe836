"""A comparison (:class:`~stagewise.stats.result.Comparison`) as plain text, markdown, LaTeX, CSV, JSON and rich.
They render a Comparison; they compute nothing.

The comparison table has runs as rows and metrics as columns. Each value is followed by the letters of the
runs it is significantly better than (adjusted p < alpha), and the best value of each metric is marked:
``*`` in plain text, bold elsewhere. Plain text goes to pipes and files, so it holds ASCII only: no box
drawing, and its title parts are separated by ``;`` rather than the terminal's middle dot.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from stagewise.report.tables import latex_escape, markdown_escape

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.stats.result import Comparison

FORMATS = ("table", "json", "csv", "markdown", "latex")


def render(
    comp: Comparison,
    fmt: str = "table",
    digits: int = 4,
    show_pairs: bool | None = None,
    per_query: bool = False,
    top: int | None = None,
) -> str:
    """Text in one of ``table, json, csv, markdown, latex``.

    ``show_pairs`` adds the table of pairs (p-values, intervals, effect sizes) under the comparison
    table; by default it is shown when there are at most 10 pairs per metric. ``per_query`` adds each
    pair's per-query deltas (``top``: only the largest gains and losses).
    """
    if fmt == "json":
        return comp.to_json(per_query, top) + "\n"
    if fmt == "csv":
        return to_csv(comp)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    return render_text(comp, fmt, digits, _show_pairs(comp, show_pairs), per_query, top)


def rich(
    comp: Comparison, digits: int = 4, show_pairs: bool | None = None, per_query: bool = False, top: int | None = None
) -> Any:
    """A rich renderable: the comparison table, optionally the pairs and the per-query deltas, and notes."""
    return rich_group(comp, digits, _show_pairs(comp, show_pairs), per_query, top)


def _show_pairs(comp: Comparison, show: bool | None) -> bool:
    if show is not None:
        return show
    return len(comp.pairs) <= 10 * len(comp.metrics)


def to_csv(comp: Comparison) -> str:
    """One row per metric and pair, with every field of :class:`~stagewise.stats.result.PairResult`."""
    from stagewise.stats.result import PAIR_KEYS

    buf = io.StringIO()
    names = [*PAIR_KEYS, "n_queries", "significant"]
    writer = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for p in comp.pairs:
        row = p.to_dict()
        writer.writerow(
            {k: "" if row[k] is None else repr(row[k]) if isinstance(row[k], float) else row[k] for k in names}
        )
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------ content
def title(comp: Comparison, sep: str = " · ") -> str:
    from stagewise.stats.catalogue import CORRECTIONS, TESTS

    conv = comp.conventions
    qrels = conv.get("evaluation", {}).get("qrels")
    test, correction = conv["test"], conv["correction"]
    parts = [
        "stagewise compare",
        f"{TESTS[test].label if test in TESTS else test} ({conv['alternative']})",
        CORRECTIONS[correction].label if correction in CORRECTIONS else correction,
    ]
    if qrels:
        parts.append(f"qrels {qrels}")
    return sep.join(parts)


def notes(comp: Comparison, with_pairs: bool, best: str = "in bold") -> list[str]:
    conv = comp.conventions
    n = conv["n_queries"]
    n_text = f"n = {n} queries" if isinstance(n, int) else f"n = {n['min']} to {n['max']} queries"
    scope = "per metric" if conv["family_scope"].startswith("the pairs of one") else "over all metrics"
    out = [
        f"test: {conv['test_description']}",
        f"family: {conv['family']}, {conv['family_size']} comparison{'' if conv['family_size'] == 1 else 's'} "
        f"{scope}; correction: "
        f"{conv['correction_description']}; significant when the adjusted p < {comp.alpha:g}",
        f"letters after a value: the runs it is significantly better than; best value per metric "
        f"{best}{_best_exceptions(comp)}; {n_text} ({conv['pairing']})",
    ]
    if len(conv["test_method"]) > 1 or _may_enumerate(conv["test"]):
        out.append(f"p-values from: {'; '.join(conv['test_method'])}")
    if with_pairs:
        out.append(
            f"diff = mean(b) - mean(a); CI: {conv['confidence_interval']}; d_z: {conv['effect_size']}; "
            f"W/T/L: wins/ties/losses of b, tie when |b - a| <= {conv['tie_tolerance']:g}"
        )
    if comp.many:
        out.append(f"interval of each run: {conv['system_interval']}; ES_E2: {conv['effect_size_e2']}")
        out.append(f"group letters: {conv['letters']}")
    if "note" in conv:
        out.append(conv["note"])
    out.extend(comp.eval_notes)
    return out


def _may_enumerate(test: str) -> bool:
    """Whether ``test`` enumerates or samples as it sees fit (it takes ``exact``), so the notes say which it did."""
    from stagewise.stats.catalogue import TESTS

    return test in TESTS and "exact" in TESTS[test].params


def _aggregate(metric: str) -> str:
    """How the measure's per-query values are aggregated (``mean``, ``sum``, ...); ``mean`` for another name."""
    from stagewise.errors import StagewiseError
    from stagewise.metrics.measures import Measure

    try:
        return Measure.parse(metric).spec.aggregate
    except (StagewiseError, ValueError, KeyError):
        return "mean"


def metric_value(metric: str, value: float, digits: int) -> str:
    """A mean as the tables print it; a count (aggregated by sum) as the integer it is."""
    if _aggregate(metric) == "sum" and value == value and float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def best_runs(comp: Comparison, metric: str) -> set[str]:
    """The runs to mark best on ``metric`` (:meth:`Comparison.best`: the lowest where lower is better, none for a
    plain count)."""
    return set(comp.best(metric))


def _best_exceptions(comp: Comparison) -> str:
    lower = [m for m in comp.metrics if comp.direction(m) == "lower"]
    counts = [m for m in comp.metrics if comp.direction(m) is None]
    out = f" (the lowest for {', '.join(lower)})" if lower else ""
    return out + (f"; none for the counts {', '.join(counts)}" if counts else "")


def better_than(comp: Comparison, run: str, metric: str) -> list[str]:
    """The runs ``run`` is significantly better than on ``metric`` (:meth:`Comparison.better_than`)."""
    return comp.better_than(run, metric)


def run_cells(comp: Comparison, digits: int) -> list[tuple[str, str, list[tuple[str, bool, str]]]]:
    labels = comp.labels
    best = {m: best_runs(comp, m) for m in comp.metrics}
    rows = []
    for run in comp.runs:
        cells = []
        for metric in comp.metrics:
            value = metric_value(metric, comp.means[run][metric], digits)
            marks = "".join(labels[r] for r in better_than(comp, run, metric))
            cells.append((value, run in best[metric], marks))
        rows.append((labels[run], run, cells))
    return rows


def p_text(value: float, resamples: int | None = None) -> str:
    """A p-value as printed: 4 decimals, or scientific below 1e-4 (so 1e-20 does not read 0.0000). A resampled
    p of exactly 0 (none of the ``resamples`` reached the observed value) prints as ``<1/B`` in scientific form,
    the most it says."""
    if value != value:  # nan
        return "nan"
    if value == 0 and resamples:
        return f"<{1 / resamples:.0e}"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def _num(value: float, digits: int, signed: bool = False) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


PAIR_HEADER = ["metric", "a", "b", "diff", "CI", "d_z", "W/T/L", "stat", "p", "p_adj", "sig"]


def pair_rows(comp: Comparison, digits: int) -> list[list[str]]:
    resamples = comp.conventions.get("permutations") or comp.conventions.get("resamples")
    rows = []
    for p in comp.pairs:
        rows.append(
            [
                p.metric,
                p.a,
                p.b,
                _num(p.mean_diff, digits, signed=True),
                f"[{_num(p.ci_low, digits, True)}, {_num(p.ci_high, digits, True)}]",
                _num(p.effect_size, 2, signed=True),
                f"{p.wins}/{p.ties}/{p.losses}",
                _num(p.statistic, digits),
                p_text(p.p_value, resamples),
                p_text(p.p_adjusted, resamples),
                "*" if p.significant else "",
            ]
        )
    return rows


ANOVA_HEADER = ["source", "SS", "df", "MS", "F", "p"]
SYSTEM_HEADER = ["", "run", "mean", "CI low", "CI high", "group"]


def many_blocks(comp: Comparison, digits: int) -> list[tuple[str, list[list[str]], str, list[list[str]]]]:
    """For a test of many runs at once, per metric: the ANOVA table's title and rows, then the per-run table's
    title and rows (best mean first: label, run, mean, interval, letters); empty for a paired test."""
    labels = comp.labels
    out = []
    for metric, many in comp.many.items():
        anova = [
            [r.source, _num(r.ss, digits), str(r.df), _num(r.ms, digits)]
            + (["", ""] if r.source == "residual" else [_num(r.f, 2), p_text(r.p)])
            for r in many.anova.rows
        ]
        order = many.best_first()
        systems = [
            [
                labels[many.runs[j]],
                many.runs[j],
                _num(float(many.means[j]), digits),
                _num(float(many.lower[j]), digits),
                _num(float(many.upper[j]), digits),
                many.letters[j],
            ]
            for j in order
        ]
        head = (
            f"{metric}: two-way ANOVA (topic x system), {many.n_topics} topics x {len(many.runs)} runs; "
            f"V_E = {_num(many.residual_variance, 6)} on {many.anova.residual_df} df"
        )
        sys_head = (
            f"{metric}: each run's {many.confidence:.0%} interval (mean +- {_num(many.margin, digits)}, from V_E) "
            f"and group letters ({comp.conventions['test']}, alpha {many.alpha:g}: runs sharing a letter do not differ)"
        )
        out.append((head, anova, sys_head, systems))
    return out


def delta_blocks(comp: Comparison, digits: int, top: int | None) -> list[tuple[str, list[list[str]]]]:
    from stagewise.stats.result import top_and_bottom

    blocks = []
    tol = comp.conventions["tie_tolerance"]
    for p in comp.pairs:
        deltas = comp.per_query_deltas(p.metric, p.a, p.b)
        up = sum(d["delta"] > tol for d in deltas)
        down = sum(d["delta"] < -tol for d in deltas)
        head = (
            f"{p.metric}: {p.b} - {p.a} per query (n = {len(deltas)}: {up} up, {down} down, "
            f"{len(deltas) - up - down} tied)"
        )
        shown = top_and_bottom(deltas, top)
        rows = [
            [d["query_id"], _num(d["a"], digits), _num(d["b"], digits), _num(d["delta"], digits, True)] for d in shown
        ]
        if len(shown) < len(deltas):
            rows.insert(top or 0, ["...", "", "", ""])
        blocks.append((head, rows))
    return blocks


# ---------------------------------------------------------------------------------------------- plain text
def _grid(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def plain(comp: Comparison, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> str:
    rows = run_cells(comp, digits)
    width = {m: max(len(c[k][2]) for _, _, c in rows) for k, m in enumerate(comp.metrics)}
    body = [
        [
            label,
            run,
            *(
                f"{v}{'*' if b else ' '} {marks.ljust(width[m])}".rstrip()
                for (v, b, marks), m in zip(cells, comp.metrics, strict=True)
            ),
        ]
        for label, run, cells in rows
    ]
    out = [title(comp, sep="; "), *_grid(["", "run", *comp.metrics], body, set())]
    for head, anova, sys_head, systems in many_blocks(comp, digits):
        out += ["", head, *_grid(ANOVA_HEADER, anova, {1, 2, 3, 4, 5})]
        out += ["", sys_head, *_grid(SYSTEM_HEADER, systems, {2, 3, 4})]
    if with_pairs:
        out += ["", *_grid(PAIR_HEADER, pair_rows(comp, digits), {3, 5, 7, 8, 9})]
    if per_query:
        for head, drows in delta_blocks(comp, digits, top):
            out += ["", head, *_grid(["query", "a", "b", "delta"], drows, {1, 2, 3})]
    out += [f"# {n}" for n in notes(comp, with_pairs, best="followed by *")]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------ markdown
def markdown(comp: Comparison, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> str:
    head = ["", "run", *comp.metrics]
    out = [f"**{markdown_escape(title(comp))}**", "", "| " + " | ".join(markdown_escape(h) for h in head) + " |"]
    out.append("|:---|:---|" + "---:|" * len(comp.metrics))
    for label, run, cells in run_cells(comp, digits):
        shown = [f"**{v}**" if b else v for v, b, _ in cells]
        shown = [f"{s}<sup>{m}</sup>" if m else s for s, (_, _, m) in zip(shown, cells, strict=True)]
        out.append("| " + " | ".join([label, markdown_escape(run), *shown]) + " |")
    for head_line, anova, sys_head, systems in many_blocks(comp, digits):
        for caption, header, rows in ((head_line, ANOVA_HEADER, anova), (sys_head, SYSTEM_HEADER, systems)):
            out += ["", f"*{markdown_escape(caption)}*", "", "| " + " | ".join(header) + " |"]
            numeric = range(1, 6) if header is ANOVA_HEADER else range(2, 5)
            out.append("|" + "".join("---:|" if i in numeric else ":---|" for i in range(len(header))))
            out += ["| " + " | ".join(markdown_escape(c) for c in r) + " |" for r in rows]
    if with_pairs:
        out += ["", "| " + " | ".join(PAIR_HEADER) + " |", "|:---|:---|:---|" + "---:|" * (len(PAIR_HEADER) - 3)]
        out += ["| " + " | ".join(markdown_escape(c) for c in r) + " |" for r in pair_rows(comp, digits)]
    if per_query:
        for head_line, drows in delta_blocks(comp, digits, top):
            out += ["", f"*{markdown_escape(head_line)}*", "", "| query | a | b | delta |", "|:---|---:|---:|---:|"]
            out += ["| " + " | ".join(markdown_escape(c) for c in r) + " |" for r in drows]
    out.append("")
    out += [f"- {markdown_escape(n)}" for n in notes(comp, with_pairs)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------- LaTeX
def latex(comp: Comparison, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> str:
    out = [
        f"% {title(comp)}",
        "% needs \\usepackage{booktabs}",
        f"\\begin{{tabular}}{{ll{'r' * len(comp.metrics)}}}",
        "\\toprule",
        " & run & " + " & ".join(latex_escape(m) for m in comp.metrics) + " \\\\",
        "\\midrule",
    ]
    for label, run, cells in run_cells(comp, digits):
        shown = [f"\\textbf{{{v}}}" if b else v for v, b, _ in cells]
        shown = [f"{s}\\textsuperscript{{{m}}}" if m else s for s, (_, _, m) in zip(shown, cells, strict=True)]
        out.append(" & ".join([label, latex_escape(run), *shown]) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    for head_line, anova, sys_head, systems in many_blocks(comp, digits):
        for caption, header, rows in ((head_line, ANOVA_HEADER, anova), (sys_head, SYSTEM_HEADER, systems)):
            out += ["", f"% {caption}", f"\\begin{{tabular}}{{l{'r' * (len(header) - 1)}}}", "\\toprule"]
            out += [" & ".join(latex_escape(h) for h in header) + " \\\\", "\\midrule"]
            out += [" & ".join(latex_escape(c) for c in r) + " \\\\" for r in rows]
            out += ["\\bottomrule", "\\end{tabular}"]
    if with_pairs:
        out += [
            "",
            "\\begin{tabular}{lll" + "r" * (len(PAIR_HEADER) - 3) + "}",
            "\\toprule",
            " & ".join(latex_escape(h) for h in PAIR_HEADER) + " \\\\",
            "\\midrule",
        ]
        out += [" & ".join(latex_escape(c) for c in r) + " \\\\" for r in pair_rows(comp, digits)]
        out += ["\\bottomrule", "\\end{tabular}"]
    if per_query:
        for head_line, drows in delta_blocks(comp, digits, top):
            out += ["", f"% {head_line}", "\\begin{tabular}{lrrr}", "\\toprule", "query & a & b & delta \\\\"]
            out += ["\\midrule", *(" & ".join(latex_escape(c) for c in r) + " \\\\" for r in drows)]
            out += ["\\bottomrule", "\\end{tabular}"]
    out += [f"% {n}" for n in notes(comp, with_pairs)]
    return "\n".join(out) + "\n"


def render_text(comp: Comparison, fmt: str, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> str:
    return {"table": plain, "markdown": markdown, "latex": latex}[fmt](comp, digits, with_pairs, per_query, top)


# ---------------------------------------------------------------------------------------------------- rich
def rich_group(comp: Comparison, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> Any:
    """A rich renderable: the comparison table (best in bold, letters in cyan), then the optional parts, then
    notes. It is laid out when printed, for the console's width."""
    return _RichComparison(comp, digits, with_pairs, per_query, top)


class _RichComparison:
    def __init__(self, comp: Comparison, digits: int, with_pairs: bool, per_query: bool, top: int | None) -> None:
        self.comp, self.digits, self.with_pairs, self.per_query, self.top = comp, digits, with_pairs, per_query, top

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from self.parts(console, options)

    def parts(self, console: Any, options: Any) -> list[Any]:
        from rich.measure import Measurement
        from rich.table import Table
        from rich.text import Text

        comp, digits = self.comp, self.digits
        main = Table()
        main.add_column("", no_wrap=True, style="dim")
        main.add_column("run", no_wrap=True)
        for metric in comp.metrics:
            main.add_column(metric, no_wrap=True)
        for label, run, cells in run_cells(comp, digits):
            shown = []
            for value, best, marks in cells:
                text = Text(value, style="bold" if best else "")
                if marks:
                    text.append(" " + marks, style="cyan")
                shown.append(text)
            main.add_row(label, run, *shown)
        parts: list[Any] = [Text(title(comp), style="bold"), main]
        for head_line, anova, sys_head, systems in many_blocks(comp, digits):
            parts += [Text(head_line), _rich_simple(ANOVA_HEADER, anova, 1)]
            parts += [Text(sys_head), _rich_simple(SYSTEM_HEADER, systems, 2, letters=5)]
        notes_below = notes(comp, self.with_pairs)
        if self.with_pairs:
            pairs = _rich_pairs(comp, digits, narrow=False)
            natural = Measurement.get(console, options.update_width(10**6), pairs).maximum
            if natural > options.max_width:  # too wide: leave out two columns rather than squeeze them all
                pairs = _rich_pairs(comp, digits, narrow=True)
                notes_below.append(
                    "the test statistic and the unadjusted p are left out at this width "
                    "(--format markdown or a wider terminal shows them)"
                )
            parts.append(pairs)
        if self.per_query:
            for head_line, drows in delta_blocks(comp, digits, self.top):
                parts.append(Text(head_line))
                dt = Table()
                dt.add_column("query", no_wrap=True)
                for h in ("a", "b", "delta"):
                    dt.add_column(h, justify="right", no_wrap=True)
                for r in drows:
                    dt.add_row(*r)
                parts.append(dt)
        parts.append(Text("\n".join(notes_below), style="dim"))
        return parts


def _rich_simple(header: list[str], rows: list[list[str]], first_number: int, letters: int | None = None) -> Any:
    """A light table: text columns left, numbers from ``first_number`` on right, the letters column in cyan."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False, show_edge=False)
    for i, h in enumerate(header):
        right = first_number <= i and i != letters
        table.add_column(h, justify="right" if right else "left", no_wrap=True, style="cyan" if i == letters else "")
    for r in rows:
        table.add_row(*r)
    return table


def _rich_pairs(comp: Comparison, digits: int, narrow: bool) -> Any:
    """The pairs table for a terminal: runs by their letters from the table above ("b - a": the difference
    is b's mean minus a's), in a light frame."""
    from rich import box
    from rich.table import Table

    labels = comp.labels
    header = ["metric", "b - a", *PAIR_HEADER[3:]]
    hidden = {"stat", "p"} if narrow else set()
    shown = [i for i, h in enumerate(header) if h not in hidden]
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False, show_edge=False)
    for i in shown:
        table.add_column(header[i], justify="right" if i >= 2 else "left", no_wrap=True)
    for pair, row in zip(comp.pairs, pair_rows(comp, digits), strict=True):
        cells = [row[0], f"{labels[pair.b]} - {labels[pair.a]}", *row[3:]]
        table.add_row(*(cells[i] for i in shown), style="bold" if row[-1] else "")
    return table
