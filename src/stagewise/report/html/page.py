"""The page's parts shared by every section: escaping, tables, figures (matplotlib to inline SVG), and the
document shell with its inline CSS and JavaScript. Nothing here reaches the network: no CDN, no font, no script
from elsewhere, so the file opens from disk, offline, and can be mailed."""

from __future__ import annotations

import contextlib
import html
import io
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

#: The lines' colours: Okabe & Ito's palette (2008, distinguishable with the common colour-vision deficiencies)
#: without its pale yellow, orange and sky blue, which a thin line on white barely shows, and three dark colours
#: in their place. Every one stands out from the white page at a contrast of at least 3:1 (WCAG's rule for
#: graphics), tests/test_report_readable.py checks it.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#000000", "#CC79A7", "#8C510A", "#332288", "#999933")
OKABE_ITO = PALETTE  # the old name
#: Line styles and markers that, with the colours, tell up to 8 x 4 runs apart without colour alone.
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

#: The figure numbers of the page being rendered. Each render opens its own numbering (:func:`numbering`), so
#: the same study gives the same page byte for byte, and two pages drawn at once (the web app's threads) never
#: share a counter: a context variable is one value per thread and task, not one for the process.
_ids: ContextVar[Iterator[int] | None] = ContextVar("stagewise_report_ids", default=None)


@contextlib.contextmanager
def numbering() -> Iterator[None]:
    """Number the figures drawn inside from 1: one page's ids, unique within it.

    >>> with numbering():
    ...     first, second = next_id(), next_id()
    >>> with numbering():
    ...     again = next_id()
    >>> first, second, again
    (1, 2, 1)
    """
    token = _ids.set(itertools.count(1))
    try:
        yield
    finally:
        _ids.reset(token)


def next_id() -> int:
    """The next figure number of the page being rendered (outside :func:`numbering`, a section drawn on its own
    numbers its figures from 1)."""
    counter = _ids.get()
    if counter is None:
        counter = itertools.count(1)
        _ids.set(counter)
    return next(counter)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def num(value: Any, digits: int = 4, signed: bool = False) -> str:
    """A number as the tables print it; None and NaN as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:+d}" if signed else str(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return esc(value)
    if math.isnan(f):
        return "–"
    if math.isinf(f):
        return "∞" if f > 0 else "−∞"
    return f"{f:+.{digits}f}" if signed else f"{f:.{digits}f}"


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    caption: str | None = None,
    sortable: bool = False,
    table_id: str | None = None,
    numeric: Iterable[int] = (),
    row_attrs: Iterable[str] | None = None,
    raw: bool = False,
) -> str:
    """An HTML table; cells are escaped unless ``raw``. A numeric cell carries ``data-v`` (its exact value) so
    sorting compares numbers, not text. ``row_attrs`` adds attributes per row (e.g. ``data-label``)."""
    numeric = set(numeric)
    attrs = f' id="{esc(table_id)}"' if table_id else ""
    cls = ' class="sortable"' if sortable else ""
    out = [f"<table{attrs}{cls}>"]
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>")
    for i, h in enumerate(header):
        kind = ' data-type="num"' if i in numeric else ""
        button = f'<button type="button" class="sort">{esc(h)}</button>' if sortable else esc(h)
        out.append(
            f'<th scope="col"{kind} aria-sort="none">{button}</th>' if sortable else f'<th scope="col">{button}</th>'
        )
    out.append("</tr></thead><tbody>")
    extra = iter(row_attrs) if row_attrs is not None else None
    for row in rows:
        tr = f"<tr {next(extra)}>" if extra is not None else "<tr>"
        cells = []
        for i, cell in enumerate(row):
            if isinstance(cell, tuple):  # (shown text, sort value)
                shown, value = cell
                cells.append(f'<td class="n" data-v="{esc(value)}">{shown if raw else esc(shown)}</td>')
            elif i in numeric:
                cells.append(f'<td class="n" data-v="{_sort_value(cell)}">{num(cell)}</td>')
            else:
                cells.append(f"<td>{cell if raw else esc(cell)}</td>")
        out.append(tr + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _sort_value(value: Any) -> str:
    if value is None:
        return ""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(f) else repr(f)


def flat(conv: dict[str, Any]) -> list[tuple[str, Any]]:
    """A conventions mapping one level deep (``evaluation.ties``), for :func:`conventions`; mappings nested
    deeper (a metric table) are left out, their summary is in the notes."""
    out: list[tuple[str, Any]] = []
    for key, value in conv.items():
        if isinstance(value, dict):
            out.extend((f"{key}.{k}", v) for k, v in value.items() if not isinstance(v, dict))
        else:
            out.append((key, value))
    return out


#: What None means for a setting, in words: no depth cut is every result, no weights are equal ones.
_NONE_MEANS = {"depth": "all", "max_ret": "all", "weights": "equal", "baseline": "none: every pair of runs"}


def term(key: str) -> str:
    """A settings key as a reader says it: ``judged_only`` is "judged only", ``evaluation.ties`` "ties
    (evaluation)"."""
    group, _, name = key.rpartition(".")
    said = name.replace("_", " ")
    return f"{said} ({group.replace('_', ' ')})" if group else said


def plain(key: str, value: Any) -> str:
    """A setting's value in words, never a Python repr: yes/no, what None means for it (``depth: all``), a
    whole float without its ``.0``, a mapping as ``name: value, ...``."""
    if value is None:
        return _NONE_MEANS.get(key.rpartition(".")[2], "none")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dict):
        return ", ".join(f"{term(str(k))}: {plain(str(k), v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(plain(key, v) for v in value) or "none"
    return str(value)


def conventions(items: dict[str, Any] | Iterable[tuple[str, Any]], notes: Iterable[str] = ()) -> str:
    """The conventions behind a section's numbers, as a definition list, and its notes. Each fact is said once:
    a setting whose long text a note already holds word for word (a test's description) is left to the note."""
    pairs = items.items() if isinstance(items, dict) else items
    notes = list(notes)
    out = ['<dl class="conventions">']
    for key, value in pairs:
        text = plain(key, value)
        if len(text) >= 20 and any(text in n for n in notes):
            continue
        out.append(f"<dt>{esc(term(key))}</dt><dd>{esc(text)}</dd>")
    out.append("</dl>")
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    return "".join(out)


# ------------------------------------------------------------------------------------------------- figures
class Figures:
    """What the sections draw with: ``subplots(figsize=...)`` as pyplot's, but each figure a plain
    ``matplotlib.figure.Figure`` that pyplot's global registry never holds, so pages drawn at once in two threads
    share nothing (no figure numbers, no current figure); ``close`` is kept for pyplot's callers."""

    def subplots(self, *args: Any, figsize: tuple[float, float] | None = None, **kwargs: Any) -> tuple[Any, Any]:
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize)
        return fig, fig.subplots(*args, **kwargs)

    def close(self, fig: Any) -> None:
        """Nothing to release: the figure is garbage once its SVG is written."""


def pyplot() -> Figures:
    """The figure maker (:class:`Figures`), with matplotlib set as the report draws: SVG text kept as text, a
    fixed hash salt so the same report gives the same bytes, the palette (set again on each call, to the same
    values, so whatever else changed them the report looks the same); imported here, on first use, with an
    install hint when absent."""
    try:
        import matplotlib
    except ImportError as exc:
        from stagewise.errors import StagewiseError

        raise StagewiseError(
            "the HTML report draws its plots with matplotlib, which is not installed: pip install 'stagewise[report]'"
        ) from exc
    _configure(matplotlib)
    return _FIGURES


def _configure(matplotlib: Any) -> None:
    matplotlib.rcParams.update(
        {
            "svg.fonttype": "none",  # text stays <text>: smaller, searchable, read by screen readers
            "svg.hashsalt": "stagewise",
            "font.size": 9,
            "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
            "axes.spines.top": False,
            "axes.spines.right": False,
            "figure.dpi": 72,
        }
    )


_FIGURES = Figures()


def style(i: int) -> dict[str, Any]:
    """The i-th series' colour, line style and marker: colour cycles fastest, so neighbours differ in colour."""
    return {
        "color": PALETTE[i % len(PALETTE)],
        "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)],
        "marker": MARKERS[(i // len(PALETTE) + i) % len(MARKERS)],
    }


#: The legend's text size: the plots' own (rcParams font.size), since a smaller one is unreadable once the
#: browser scales the SVG down to the page.
LEGEND_SIZE = 9


def legend(ax: Any, count: int) -> None:
    """The legend of ``count`` lines, outside the axes so it hides no line: on the right in one column for a few,
    under the plot in columns for many (17 names in one column would be taller than the plot)."""
    if count <= 8:
        ax.legend(fontsize=LEGEND_SIZE, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        return
    ax.legend(
        fontsize=LEGEND_SIZE,
        ncol=min(4, math.ceil(count / 6)) if count > 12 else 2,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        frameon=False,
    )


_ID = re.compile(r'id="([^"]+)"')


def svg(fig: Any, title: str, desc: str) -> str:
    """``fig`` as an inline ``<svg>`` with ``role="img"``, a ``<title>`` and a ``<desc>``; its ids get a prefix
    of their own, since several matplotlib SVGs on one page would otherwise share clip-path ids."""
    plt = pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    prefix = f"f{next_id()}-"
    ids = set(_ID.findall(text))
    for old in sorted(ids, key=len, reverse=True):
        text = text.replace(f'id="{old}"', f'id="{prefix}{old}"').replace(f"#{old})", f"#{prefix}{old})")
        text = text.replace(f'href="#{old}"', f'href="#{prefix}{old}"')
    text = re.sub(r"<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    head_end = text.index(">") + 1
    head = text[:head_end]
    head = re.sub(r'\s(width|height)="[^"]*"', "", head, count=2)
    tid, did = f"{prefix}title", f"{prefix}desc"
    head = head.replace("<svg", f'<svg role="img" aria-labelledby="{tid} {did}" class="plot"', 1)
    return f'{head}<title id="{tid}">{esc(title)}</title><desc id="{did}">{esc(desc)}</desc>{text[head_end:]}'


def figure(fig: Any, title: str, desc: str, data_header: Sequence[str], data_rows: Iterable[Sequence[Any]]) -> str:
    """A plot with its text alternative: the SVG (title and description inside it) and the numbers behind it
    in a table under ``<details>``."""
    rows = list(data_rows)
    numeric = (
        {i for i, v in enumerate(rows[0]) if isinstance(v, int | float) and not isinstance(v, bool)} if rows else set()
    )
    return (
        f'<figure class="plot">{svg(fig, title, desc)}<figcaption>{esc(title)}</figcaption>'
        f"<details><summary>The numbers behind this plot</summary>"
        f"{table(data_header, rows, numeric=numeric, caption=title)}</details></figure>"
    )


# ------------------------------------------------------------------------------------------------ document
CSS = """
:root{color-scheme:light;--fg:#1a1a1a;--muted:#555;--line:#d0d0d0;--accent:#0072B2;--bg:#fff;--alt:#f6f6f6}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
 margin:0 auto;max-width:1200px;padding:1rem 1.5rem 4rem}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2.2rem;border-bottom:2px solid var(--line)}
h3{font-size:1.05rem;margin-top:1.4rem}
nav ul{display:flex;flex-wrap:wrap;gap:.3rem 1rem;padding:0;list-style:none}
nav a{color:var(--accent)}
table{border-collapse:collapse;margin:.5rem 0;font-size:13px;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:.2rem 0;color:var(--muted)}
th,td{border-bottom:1px solid var(--line);padding:.2rem .5rem;text-align:left;vertical-align:top}
td.n{text-align:right}
tbody tr:nth-child(even){background:var(--alt)}
th button.sort{all:unset;cursor:pointer;font-weight:600}
th button.sort:focus-visible{outline:2px solid var(--accent)}
th[aria-sort=ascending] button::after{content:" ▲"}th[aria-sort=descending] button::after{content:" ▼"}
.scroll{max-height:32rem;overflow:auto;border:1px solid var(--line)}
.scroll thead th{position:sticky;top:0;background:var(--bg)}
figure.plot{margin:1rem 0;max-width:900px}
svg.plot{max-width:100%;height:auto}
figcaption{color:var(--muted);font-size:12px}
dl.conventions{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;font-size:12px;color:var(--muted)}
dl.conventions dt{font-weight:600}dl.conventions dd{margin:0}
ul.notes{font-size:12px;color:var(--muted)}
.controls{display:flex;gap:1rem;align-items:center;margin:.5rem 0}
.count{color:var(--muted);font-size:12px}
.sig{color:var(--accent);font-weight:600}.best{font-weight:700}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:1rem}
"""

JS = """
(function(){
function val(td,num){if(!td)return num?NaN:'';
 if(num){var v=td.getAttribute('data-v');return v===''||v===null?NaN:parseFloat(v);}
 return td.textContent.trim().toLowerCase();}
function sortTable(table,col,dir){var tb=table.tBodies[0],rows=Array.prototype.slice.call(tb.rows);
 var th=table.tHead.rows[0].cells[col],num=th.getAttribute('data-type')==='num';
 rows.sort(function(a,b){var x=val(a.cells[col],num),y=val(b.cells[col],num);
  if(num){var xn=isNaN(x),yn=isNaN(y);if(xn||yn)return xn===yn?0:(xn?1:-1);return dir*(x-y);}
  return dir*(x<y?-1:x>y?1:0);});
 rows.forEach(function(r){tb.appendChild(r);});
 Array.prototype.forEach.call(table.tHead.rows[0].cells,function(c){c.setAttribute('aria-sort','none');});
 th.setAttribute('aria-sort',dir>0?'ascending':'descending');}
document.querySelectorAll('table.sortable').forEach(function(table){
 Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,col){var b=th.querySelector('button');if(!b)return;
  b.addEventListener('click',function(){sortTable(table,col,th.getAttribute('aria-sort')==='ascending'?-1:1);});});});
function applyFilter(box){var table=document.getElementById(box.getAttribute('data-table'));if(!table)return;
 var text=(box.querySelector('input[type=search]')||{value:''}).value.trim().toLowerCase();
 var sel=box.querySelector('select'),label=sel?sel.value:'';var shown=0,rows=table.tBodies[0].rows;
 for(var i=0;i<rows.length;i++){var r=rows[i];var ok=(!text||r.textContent.toLowerCase().indexOf(text)>=0)&&
  (!label||r.getAttribute('data-label')===label);r.hidden=!ok;if(ok)shown++;}
 var c=box.querySelector('.count');if(c)c.textContent=shown+' of '+rows.length+' rows shown';}
document.querySelectorAll('.controls[data-table]').forEach(function(box){
 box.querySelectorAll('input,select').forEach(function(el){el.addEventListener('input',function(){applyFilter(box);});
  el.addEventListener('change',function(){applyFilter(box);});});applyFilter(box);});
})();
"""


def controls(table_id: str, labels: Sequence[str] = (), placeholder: str = "filter rows") -> str:
    """A text filter (and a label choice) for the table ``table_id``; the script above wires them."""
    out = [f'<div class="controls" data-table="{esc(table_id)}">']
    out.append(
        f'<label>Filter <input type="search" placeholder="{esc(placeholder)}" aria-controls="{esc(table_id)}"></label>'
    )
    if labels:
        options = '<option value="">all labels</option>' + "".join(
            f'<option value="{esc(x)}">{esc(x)}</option>' for x in labels
        )
        out.append(f'<label>Label <select aria-controls="{esc(table_id)}">{options}</select></label>')
    out.append('<span class="count" aria-live="polite"></span></div>')
    return "".join(out)


def document(title: str, sections: Sequence[tuple[str, str, str]], intro: str = "") -> str:
    """The whole page: ``sections`` are ``(anchor, heading, body html)``."""
    nav = "".join(f'<li><a href="#{esc(a)}">{esc(h)}</a></li>' for a, h, _ in sections)
    body = "".join(f'<section id="{esc(a)}"><h2>{esc(h)}</h2>{b}</section>' for a, h, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # No request may leave the file: the policy forbids every source but the page's own inline parts.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1>{intro}<nav aria-label="Sections"><ul>{nav}</ul></nav></header>'
        f"<main>{body}</main><script>{JS}</script></body></html>\n"
    )
