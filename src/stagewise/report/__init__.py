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

import importlib
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from stagewise.errors import ConventionError as _ConventionError
from stagewise.spec import Registry as _Registry

# The result's class name -> the module that renders it; looked up along the class's MRO, so a subclass
# renders as its base does. Modules are imported on first use.
_RENDERERS = {
    "EvalResult": "stagewise.report.eval",
    "Comparison": "stagewise.report.compare",
    "RagReport": "stagewise.report.rag",
    "FusionReport": "stagewise.report.fusion",
    "ValidationReport": "stagewise.report.validate",
    "Pool": "stagewise.report.pool",
    "AgreementReport": "stagewise.report.assess",
    "TopicSetSize": "stagewise.report.power",
    "DiscriminativePower": "stagewise.report.power",
    "TrustReport": "stagewise.report.trust",
    "GateResult": "stagewise.report.gate",
}

Renderer = Callable[..., str]


@dataclass(frozen=True, eq=False)  # an entry is itself (its renderers are a dict): hashed by identity
class OutputFormat:
    """An output format: its ``name``, other ``aliases``, the file ``extensions`` that ask for it (``-o x.json``),
    a line of ``help``, the result kinds (class names) whose own module renders it (``kinds``), and ``renderers``
    for other kinds: a kind -> a function ``(result, **options) -> str`` or a ``"module:function"`` string
    imported on first use (how a new format renders an evaluation without touching ``report/eval.py``)."""

    name: str
    help: str
    extensions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    renderers: Mapping[str, Renderer | str] = field(default_factory=dict)

    def renders(self, kind: str) -> bool:
        """Whether this format renders a result of class ``kind``."""
        return kind in self.kinds or kind in self.renderers

    def renderer(self, kind: str) -> Renderer | None:
        """The plug-in function rendering ``kind``, or None when ``kind``'s own module does."""
        found = self.renderers.get(kind)
        if isinstance(found, str):
            module, _, name = found.partition(":")
            return getattr(importlib.import_module(module), name)
        return found


class FormatRegistry(_Registry[OutputFormat]):
    """The output formats, each usable with the results it renders: ``names(kind)`` and ``lookup(name, kind)``
    narrow the registry to one kind of result (the choices of ``stagewise eval --format``)."""

    def names(self, kind: str | None = None) -> list[str]:
        """Canonical names in registration order; with ``kind``, only the formats that render it."""
        return [name for name in super().names() if kind is None or self[name].renders(kind)]

    def lookup(self, name: str, kind: str | None = None) -> OutputFormat:
        """The format called ``name``; with ``kind``, one that renders it, else an error listing those that do."""
        if kind is None:
            return super().lookup(name)
        entry = self.get(name)
        if entry is None or not entry.renders(kind):
            raise self.error(f"unknown format {name.strip()!r}; choose one of {', '.join(self.names(kind))}")
        return entry


_ALL = tuple(_RENDERERS)
#: Every output format, one vocabulary for all results (each result offers some of them; see :func:`formats`).
#: A new format is ``FORMATS.register(OutputFormat("toy", "...", renderers={"EvalResult": render_toy}))``.
FORMATS: FormatRegistry = FormatRegistry(
    "format",
    OutputFormat("table", "aligned plain-text columns (a rich table on a terminal)", aliases=("text",), kinds=_ALL),
    OutputFormat("json", "one JSON document", ("json",), kinds=_ALL),
    OutputFormat("jsonl", "one JSON record a line", ("jsonl",), kinds=("RagReport", "Pool")),
    OutputFormat("trec", "TREC columns (a pool: qid Q0 docid order priority strategy)", kinds=("Pool",)),
    OutputFormat(
        "csv",
        "comma-separated values with a header",
        ("csv",),
        kinds=("EvalResult", "Comparison", "TopicSetSize", "DiscriminativePower"),
    ),
    OutputFormat(
        "markdown",
        "a markdown table",
        ("md", "markdown"),
        kinds=("EvalResult", "Comparison", "RagReport", "FusionReport"),
    ),
    OutputFormat("latex", "a LaTeX tabular", ("tex",), kinds=("EvalResult", "Comparison")),
    OutputFormat("junit", "JUnit XML, one testcase per check (CI test reports)", ("xml",), kinds=("GateResult",)),
    OutputFormat(
        "beir",
        "BEIR's result JSON (ndcg/map/recall/precision/mrr groups, NDCG@10 keys, 5 decimals)",
        renderers={"EvalResult": "stagewise.report.beir:render_beir"},
    ),
    OutputFormat(
        "mteb",
        "an MTEB task result JSON (ndcg_at_10 keys, main_score nDCG@10)",
        renderers={"EvalResult": "stagewise.report.beir:render_mteb"},
    ),
    OutputFormat("github", "a GitHub Actions step summary (markdown)", kinds=("GateResult",)),
    error=_ConventionError,
)
#: Older spellings still accepted: ``fuse --report-format text`` named the plain table ``text``.
ALIASES = {alias: entry.name for entry in FORMATS.values() for alias in entry.aliases}


def _kind(result: Any) -> str:
    for cls in type(result).__mro__:
        if cls.__name__ in _RENDERERS:
            return cls.__name__
    raise TypeError(f"stagewise.report cannot render a {type(result).__name__}")


def _module(result: Any) -> Any:
    return import_module(_RENDERERS[_kind(result)])


def format_name(fmt: str, offered: tuple[str, ...]) -> str:
    """``fmt`` in the shared vocabulary (an old spelling mapped to its name), checked against ``offered``."""
    name = FORMATS[fmt].name if fmt in FORMATS else fmt
    if name not in offered:
        raise _ConventionError(f"unknown format {fmt!r}; choose one of {', '.join(offered)}")
    return name


def formats(result: Any) -> tuple[str, ...]:
    """The formats ``result`` can be rendered in: its module's own, then those registered with a renderer for it."""
    kind = _kind(result)
    native = tuple(_module(result).FORMATS)
    return native + tuple(
        e.name for e in dict.fromkeys(FORMATS.values()) if kind in e.renderers and e.name not in native
    )


def offered(kind: str) -> tuple[str, ...]:
    """The formats a result of class ``kind`` (``"EvalResult"``...) renders in, read from the registry alone (no
    renderer imported): the choices a command offers."""
    return tuple(FORMATS.names(kind))


def extension_format(suffix: str) -> str | None:
    """The format a file extension (``.json``, ``md``) asks for, or None."""
    wanted = suffix.lower().lstrip(".")
    return next((e.name for e in dict.fromkeys(FORMATS.values()) if wanted in e.extensions), None)


def render(result: Any, fmt: str = "table", **options: Any) -> str:
    """``result`` as text in ``fmt`` (one of :func:`formats`); ``options`` are the renderer's own
    (``per_query``, ``digits``, ``show_pairs``, ``top``, ``per_sample``)."""
    name = format_name(fmt, formats(result))
    plugin = FORMATS[name].renderer(_kind(result)) if name in FORMATS else None
    if plugin is not None:
        return plugin(result, **options)
    return _module(result).render(result, name, **options)


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

__all__ = [
    "ALIASES",
    "FORMATS",
    "FormatRegistry",
    "OutputFormat",
    "extension_format",
    "format_name",
    "formats",
    "html_report",
    "offered",
    "render",
    "rich",
]
