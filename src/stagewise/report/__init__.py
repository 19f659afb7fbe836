"""Every rendering of a result: terminal tables, plain text, markdown, LaTeX, CSV, JSON and JSONL.

The results themselves (:class:`~stagewise.metrics.result.EvalResult`, :class:`~stagewise.stats.result.Comparison`,
:class:`~stagewise.rag.report.RagReport`, :class:`~stagewise.fusion.optimize.FusionReport`,
:class:`~stagewise.validate.ValidationReport`) expose data, notes and conventions and never render themselves;
this package turns them into text, one module per kind of result, :mod:`stagewise.report.tables` shared.

>>> from stagewise import evaluate
>>> from stagewise.report import render
>>> result = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 2.0, "d2": 1.0}}, ["P@1"])
>>> print(render(result, "csv"), end="")
run,P@1
run,1.0

Nothing heavy is imported until a result is rendered, so the CLI's ``--help`` stays instant.

The package is also callable: ``stagewise.report(qrels, runs, metrics, output="report.html")`` writes the
self-contained HTML report and returns its text. It is a convenience for ``stagewise.study(...)`` (the library
computes what the page shows; see :func:`stagewise.study.build.study` for every option) then
:func:`stagewise.report.html.render`: this package renders and computes nothing, so the call is forwarded, by
name, to :func:`stagewise.study.html_report`.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from importlib import import_module
from typing import Any

#: Every format name, one vocabulary for all results (each result offers some of them; see ``formats``).
FORMATS = ("table", "json", "jsonl", "csv", "markdown", "latex")
#: Older spellings still accepted: ``fuse --report-format text`` named the plain table ``text``.
ALIASES = {"text": "table"}

# The result's class name -> the module that renders it; looked up along the class's MRO, so a subclass
# renders as its base does. Modules are imported on first use.
_RENDERERS = {
    "EvalResult": "stagewise.report.eval",
    "Comparison": "stagewise.report.compare",
    "RagReport": "stagewise.report.rag",
    "FusionReport": "stagewise.report.fusion",
    "ValidationReport": "stagewise.report.validate",
}


def _module(result: Any) -> Any:
    for cls in type(result).__mro__:
        if cls.__name__ in _RENDERERS:
            return import_module(_RENDERERS[cls.__name__])
    raise TypeError(f"stagewise.report cannot render a {type(result).__name__}")


def format_name(fmt: str, offered: tuple[str, ...]) -> str:
    """``fmt`` in the shared vocabulary (an old spelling mapped to its name), checked against ``offered``."""
    name = ALIASES.get(fmt, fmt)
    if name not in offered:
        raise ValueError(f"unknown format {fmt!r}; choose one of {offered}")
    return name


def formats(result: Any) -> tuple[str, ...]:
    """The formats ``result`` can be rendered in."""
    return _module(result).FORMATS


def render(result: Any, fmt: str = "table", **options: Any) -> str:
    """``result`` as text in ``fmt`` (one of :func:`formats`); ``options`` are the renderer's own
    (``per_query``, ``digits``, ``show_pairs``, ``top``, ``per_sample``)."""
    module = _module(result)
    return module.render(result, format_name(fmt, module.FORMATS), **options)


def rich(result: Any, **options: Any) -> Any:
    """A rich renderable of ``result`` for a terminal (rich is imported lazily); ``options`` as for
    :func:`render`, and ``width`` for an evaluation's table."""
    module = _module(result)
    if not hasattr(module, "rich"):
        raise TypeError(f"stagewise.report has no terminal table for a {type(result).__name__}")
    return module.rich(result, **options)


def html_report(
    *args: Any,
    output: Any = None,
    title: str | None = None,
    digits: int = 4,
    lead: Sequence[tuple[str, str, str]] = (),
    **options: Any,
) -> str:
    """The HTML report of ``stagewise.study(*args, **options)`` (:func:`stagewise.report.html.render` with
    ``title``, ``digits`` and ``lead``), also written atomically to ``output`` when given (the path checked
    before any work).

    The study is the library's, found by name when called: this package renders results and never imports the
    computations that make them (pyproject.toml's ``report-renders`` contract)."""
    from stagewise.report.html import render, written
    from stagewise.report.html.page import pyplot
    from stagewise.study.value import input_paths

    pyplot()  # matplotlib missing fails before any file is read
    if output is not None:
        from stagewise._io import check_output

        given = {**dict(zip(("qrels", "runs"), args, strict=False)), **options}
        paths = input_paths(given.get("qrels"), given.get("runs"), given.get("rag")) + list(given.get("sources") or [])
        check_output(output, inputs=[p for p in paths if isinstance(p, str | os.PathLike)])
    study = import_module("stagewise.study").study(*args, title=title, **options)  # by name: computed below report
    if output is None:
        return render(study, digits=digits, lead=lead)
    return written(output, study, digits=digits, lead=lead)[1]


class _CallableModule(types.ModuleType):
    """``stagewise.report(...)`` is :func:`html_report`, while ``stagewise.report.render`` and the rest stay a package's
    names: one name for the report, as the command line has it."""

    def __call__(self, *args: Any, **options: Any) -> str:
        return html_report(*args, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["ALIASES", "FORMATS", "format_name", "formats", "html_report", "render", "rich"]
