"""Tables of scores as plain text, rich, markdown and LaTeX. They render; they compute nothing.

The best value of each metric is marked: ``*`` after it in plain text (which goes to pipes and files, so it
holds ASCII only), bold in rich, markdown and LaTeX. ``contenders`` names the rows that compete (by default all
of them; per-query tables pass each run's mean row, since the best single query says nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from stagewise._lazy import LazyModule

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

#: The note that explains the plain-text marker.
BEST_NOTE = "* marks the best value of each metric"


def _cells(frame: pl.DataFrame, digits: int) -> tuple[list[str], list[list[str]]]:
    header = frame.columns
    rows = []
    for row in frame.iter_rows():
        rows.append([f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row])
    return header, rows


def _best(frame: pl.DataFrame, rows: list[list[str]], contenders: Sequence[int] | None) -> dict[int, set[int]]:
    """``{column: rows holding its best value}`` for each metric column, compared as shown (a tie at the
    printed precision marks both); empty when fewer than two rows compete."""
    chosen = list(range(len(rows))) if contenders is None else list(contenders)
    if len(chosen) < 2:
        return {}
    out: dict[int, set[int]] = {}
    for i, (name, dtype) in enumerate(zip(frame.columns, frame.dtypes, strict=True)):
        if not dtype.is_numeric() or name == "query_id":
            continue
        values = {r: float(rows[r][i]) for r in chosen}
        top = max(values.values())
        out[i] = {r for r, v in values.items() if v == top}
    return out


def plain(
    frame: pl.DataFrame, digits: int, notes: list[str], title: str = "", contenders: Sequence[int] | None = None
) -> str:
    """Columns of plain ASCII (no box drawing), the best value of each metric followed by ``*``."""
    header, rows = _cells(frame, digits)
    best = _best(frame, rows, contenders)
    rows = [
        [f"{c}{'*' if r in best[i] else ' '}" if i in best else c for i, c in enumerate(row)]
        for r, row in enumerate(rows)
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out += [f"# {n}" for n in ([*notes, BEST_NOTE] if best else notes)]
    return "\n".join(out) + "\n"


def markdown(frame: pl.DataFrame, digits: int, notes: list[str], contenders: Sequence[int] | None = None) -> str:
    header, rows = _cells(frame, digits)
    best = _best(frame, rows, contenders)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    out = ["| " + " | ".join(markdown_escape(h) for h in header) + " |"]
    out.append("|" + "|".join("---:" if n else ":---" for n in numeric) + "|")
    out += [
        "| " + " | ".join(f"**{c}**" if r in best.get(i, ()) else markdown_escape(c) for i, c in enumerate(row)) + " |"
        for r, row in enumerate(rows)
    ]
    if notes:
        out.append("")
        out += [f"- {markdown_escape(n)}" for n in notes]
    return "\n".join(out) + "\n"


def markdown_escape(text: str) -> str:
    """A table cell's text with its pipes escaped (a run named ``a|b`` would split the cell)."""
    return text.replace("|", "\\|")


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "^": r"\^{}",
    "~": r"\~{}",
}


def latex_escape(text: str) -> str:
    """Text with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def latex(frame: pl.DataFrame, digits: int, notes: list[str], contenders: Sequence[int] | None = None) -> str:
    header, rows = _cells(frame, digits)
    best = _best(frame, rows, contenders)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    spec = "".join("r" if n else "l" for n in numeric)
    out = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    out += [
        " & ".join(f"\\textbf{{{c}}}" if r in best.get(i, ()) else latex_escape(c) for i, c in enumerate(row)) + " \\\\"
        for r, row in enumerate(rows)
    ]
    out += ["\\bottomrule", "\\end{tabular}"]
    out += [f"% {n}" for n in notes]
    return "\n".join(out) + "\n"


def rich_table(
    frame: pl.DataFrame,
    digits: int,
    title: str,
    notes: list[str],
    width: int = 100,
    contenders: Sequence[int] | None = None,
):
    """A rich Table and its notes; the best value of each metric in bold. Wide tables (more metrics than fit
    in ``width``) are transposed so no column is cut."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    header, rows = _cells(frame, digits)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    best = _best(frame, rows, contenders)
    styled = [
        [f"[bold]{c}[/bold]" if r in best.get(i, ()) else escape(c) for i, c in enumerate(row)]
        for r, row in enumerate(rows)
    ]
    needed = sum(max(len(h), *(len(r[i]) for r in rows)) + 3 for i, h in enumerate(header)) if rows else 0
    table = Table(title=title)
    # Notes print under the table at full width: a caption would wrap to the table's width.
    notes_text = Text("\n".join(notes), style="dim")
    if needed > width and "query_id" not in header and len(rows) < len(header):
        table.add_column("metric", no_wrap=True)
        for r in rows:
            table.add_column(escape(r[0]), justify="right", no_wrap=True)
        for i in range(1, len(header)):
            table.add_row(escape(header[i]), *(r[i] for r in styled))
        return Group(table, notes_text)
    for name, num in zip(header, numeric, strict=True):
        table.add_column(escape(name), justify="right" if num else "left", no_wrap=True, min_width=len(name))
    for r in styled:
        table.add_row(*r)
    return Group(table, notes_text)
