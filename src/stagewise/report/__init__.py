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
self-contained HTML report (see :func:`stagewise.report.html.build` for every option) and returns its text.
"""

from __future__ import annotations

import sys
import types
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


def html_report(*args: Any, output: Any = None, **options: Any) -> str:
    """The HTML report (:func:`stagewise.report.html.build`), also written atomically to ``output`` when given."""
    from stagewise.report.html import build, written

    if output is None:
        return build(*args, **options)
    return written(output, *args, **options)[1]


class _CallableModule(types.ModuleType):
    """``stagewise.report(...)`` is :func:`html_report`, while ``stagewise.report.render`` and the rest stay a package's
    names: one name for the report, as the command line has it."""

    def __call__(self, *args: Any, **options: Any) -> str:
        return html_report(*args, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["ALIASES", "FORMATS", "format_name", "formats", "html_report", "render", "rich"]
