"""``stagewise ndeval``: a drop-in for ndeval, the TREC Web track's diversity evaluator (version 4.5).

It reads ndeval's inputs (subtopic qrels ``topic subtopic docno judgment``, a six-column TREC run), takes its
flags (``-alpha``, ``-beta``, ``-traditional``, ``-c``, ``-M``, ``-baseline``, ``-riskAlpha``, ``-a``) and prints
its CSV: one row per topic of the run, then ``amean``. The measures are stagewise's own
(:mod:`stagewise.metrics.diversity`); :mod:`.command` parses and formats, :mod:`.usage` holds the help (light).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "COLUMNS": "stagewise.ndeval.command",
    "evaluate_command": "stagewise.ndeval.command",
    "main": "stagewise.ndeval.command",
    "USAGE": "stagewise.ndeval.usage",
}

__all__ = ["COLUMNS", "USAGE", "evaluate_command", "main"]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.ndeval.command import COLUMNS, evaluate_command, main
    from stagewise.ndeval.usage import USAGE

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
