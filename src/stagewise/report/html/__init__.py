"""``stagewise report``: one self-contained HTML file with the comparison table, metric-at-k curves, per-query
differences, judgement health, the RAG diagnosis and the fusion statements, with every convention stated.

The library computes what the page shows, in one call (:func:`stagewise.study`, a :class:`~stagewise.Study`);
this package only renders it: :func:`render` returns the page, :func:`write` writes it atomically. Nothing here
evaluates, compares, fuses or diagnoses (pyproject.toml's ``report-renders`` contract).

Plots are drawn by matplotlib and embedded as inline SVG (about 10 KB a plot, no script needed to draw them);
tables sort and filter with a few lines of inline JavaScript. Nothing is fetched: no CDN, no font, no network,
so the file opens from disk, offline, and can be mailed or attached to a paper's artefact (docs/report.md says
why matplotlib rather than Vega, Bokeh or Plotly).

>>> import stagewise
>>> from stagewise.report.html import render
>>> study = stagewise.study({"q1": {"d1": 1}, "q2": {"d2": 1}},
...                         {"A": {"q1": {"d1": 2, "x": 1}, "q2": {"x": 2, "d2": 1}},
...                          "B": {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}}}, ["mrr"], cutoffs=(1, 10))
>>> page = render(study)
>>> page.startswith("<!DOCTYPE html>"), "http://" in page.replace("http://www.w3.org", "")
(True, False)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stagewise.study.value import CUTOFFS

if TYPE_CHECKING:
    from stagewise.study.value import Study

__all__ = ["CUTOFFS", "render", "write", "written"]

Section = tuple[str, str, str]  # (anchor, heading, inner HTML)


def render(study: Study, *, title: str | None = None, digits: int = 4, lead: Sequence[Section] = ()) -> str:
    """The report of ``study`` as one HTML page (a string); it computes nothing.

    Parameters
    ----------
    study : Study
        What the page shows (:func:`stagewise.study`).
    title
        The page's title (default: the study's, else one naming what it holds).
    digits
        Decimals of the means in the tables.
    lead
        Sections to put first, each ``(id, title, inner HTML)`` (the caller escapes its text): a pipeline's
        verdict, say (``stagewise demo`` puts its own there).
    """
    from stagewise.report.html import page

    page.pyplot()  # matplotlib missing: the install hint
    with page.numbering():
        sections = [*lead, *_run_sections(study, digits)]
        if study.rag is not None:
            from stagewise.report.html import rag as rag_section
            from stagewise.report.judge_audit import audit_blocks

            inner = rag_section.section(study.rag, digits, dict(study.answers))
            sections.append(("rag", "RAG diagnosis", audit_blocks(study.judge_audits, study.rag) + inner))
        return page.document(title or study.title or _heading(study), sections, _intro(study))


def _run_sections(study: Study, digits: int) -> list[Section]:
    """The sections of a study of runs: comparison, fusion statements, curves, per query, judgement health."""
    if study.at_k is None:
        return []
    from stagewise.report.html import comparison, curves, fusion, judgements, perquery

    conv = study.conventions
    out: list[Section] = []
    if study.comparison is not None:
        out.append(("comparison", "Comparison", comparison.section(study.comparison, digits)))
    if study.fusion:
        out.append(("fusion", "Fused runs", fusion.section({k: dict(v) for k, v in study.fusion.items()})))
    out.append(("curves", "Metrics at k", curves.section(study.at_k, study.cutoffs)))
    per_query = perquery.section(study.scores, list(study.metrics), study.plot_baseline, study.tie_tolerance)
    out.append(("per-query", "Per query", per_query))
    health = judgements.section(
        study.qrels, study.health, study.cutoffs, conv.relevance_level if conv else 1, conv.missing if conv else "zero"
    )
    out.append(("judgements", "Judgement health", health))
    if study.trust is not None:
        from stagewise.report.html import trust

        out.append(("trust", "How far the qrels can be trusted", trust.section(study.trust, digits)))
    return out


def _heading(study: Study) -> str:
    if study.at_k is not None:
        n = len(study.runs)
        return f"stagewise report: {n} run{'s' if n != 1 else ''}"
    if study.rag is not None:
        return f"stagewise report: {study.rag.n} RAG samples"
    return "stagewise report"


def _intro(study: Study) -> str:
    from stagewise import __version__
    from stagewise.report.html.page import esc

    sources = list(study.sources)
    named = ", ".join(esc(_name(s)) for s in sources[:25]) + (" …" if len(sources) > 25 else "")
    return (
        f'<p class="count">Made by stagewise {esc(__version__)}'
        + (f" from {named}" if named else "")
        + ". Every plot has its numbers in a table under it; every table states the conventions that produced it."
        "</p>"
    )


def _name(source: Any) -> str:
    return os.path.basename(os.fspath(source)) if isinstance(source, str | os.PathLike) else type(source).__name__


def build(*args: Any, **options: Any) -> str:
    """Deprecated: ``stagewise.study(...)`` then :func:`render` (``stagewise.report(...)`` does both). Kept so old
    callers still get their page, with a DeprecationWarning; it computes nothing itself, the study is the
    library's (:func:`stagewise.report.html_report`)."""
    import warnings

    from stagewise.report import html_report

    warnings.warn(
        "stagewise.report.html.build is deprecated; use stagewise.study(...) then stagewise.report.html.render "
        "(or stagewise.report(...))",
        DeprecationWarning,
        stacklevel=2,
    )
    return html_report(*args, **options)


def write(output: str | os.PathLike, study: Study, **options: Any) -> Path:
    """:func:`render` ``study`` (``options`` as its own) and write the page to ``output`` atomically (a reader
    never sees half a file); the path is checked first (not a folder, not one of the study's inputs, writable)."""
    return written(output, study, **options)[0]


def written(output: str | os.PathLike, study: Study, **options: Any) -> tuple[Path, str]:
    """:func:`write`, returning the path written and the page too (so a caller that wants it need not read the
    file back)."""
    from stagewise._io import atomic_write, check_output

    target = check_output(output, inputs=study.paths)
    text = render(study, **options)
    with atomic_write(output) as fh:
        fh.write(text)
    return target, text
