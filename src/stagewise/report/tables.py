"""Tables of scores as plain text, rich, markdown and LaTeX. They render; they compute nothing."""

from __future__ import annotations

import polars as pl


def _cells(frame: pl.DataFrame, digits: int) -> tuple[list[str], list[list[str]]]:
    header = frame.columns
    rows = []
    for row in frame.iter_rows():
        rows.append([f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row])
    return header, rows


def plain(frame: pl.DataFrame, digits: int, notes: list[str], title: str = "") -> str:
    header, rows = _cells(frame, digits)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True))

    out = [title] if title else []
    out += [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out += [f"# {n}" for n in notes]
    return "\n".join(out) + "\n"


def markdown(frame: pl.DataFrame, digits: int, notes: list[str]) -> str:
    header, rows = _cells(frame, digits)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    out = ["| " + " | ".join(markdown_escape(h) for h in header) + " |"]
    out.append("|" + "|".join("---:" if n else ":---" for n in numeric) + "|")
    out += ["| " + " | ".join(markdown_escape(c) for c in r) + " |" for r in rows]
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


def latex(frame: pl.DataFrame, digits: int, notes: list[str]) -> str:
    header, rows = _cells(frame, digits)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    spec = "".join("r" if n else "l" for n in numeric)
    out = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in header) + " \\\\",
        "\\midrule",
    ]
    out += [" & ".join(latex_escape(c) for c in r) + " \\\\" for r in rows]
    out += ["\\bottomrule", "\\end{tabular}"]
    out += [f"% {n}" for n in notes]
    return "\n".join(out) + "\n"


def rich_table(frame: pl.DataFrame, digits: int, title: str, notes: list[str], width: int = 100):
    """A rich Table and its notes; the best value of each metric in bold. Wide tables (more metrics than fit
    in ``width``) are transposed so no column is cut."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    header, rows = _cells(frame, digits)
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    best: dict[int, float] = {}
    if len(rows) > 1:
        for i, (name, num) in enumerate(zip(header, numeric, strict=True)):
            if num and name != "query_id":
                best[i] = max(float(r[i]) for r in rows)
    styled = [[f"[bold]{c}[/bold]" if i in best and float(c) == best[i] else c for i, c in enumerate(r)] for r in rows]
    needed = sum(max(len(h), *(len(r[i]) for r in rows)) + 3 for i, h in enumerate(header)) if rows else 0
    table = Table(title=title)
    # Notes print under the table at full width: a caption would wrap to the table's width.
    notes_text = Text("\n".join(notes), style="dim")
    if needed > width and "query_id" not in header and len(rows) < len(header):
        table.add_column("metric", no_wrap=True)
        for r in rows:
            table.add_column(r[0], justify="right", no_wrap=True)
        for i in range(1, len(header)):
            table.add_row(header[i], *(r[i] for r in styled))
        return Group(table, notes_text)
    for name, num in zip(header, numeric, strict=True):
        table.add_column(name, justify="right" if num else "left", no_wrap=True, min_width=len(name))
    for r in styled:
        table.add_row(*r)
    return Group(table, notes_text)
