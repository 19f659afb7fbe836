"""``stagewise ndeval``: a drop-in for ndeval, the TREC Web track's diversity evaluator (version 4.5).

It reads ndeval's inputs (subtopic qrels ``topic subtopic docno judgment``, a six-column TREC run), takes its
flags (``-alpha``, ``-beta``, ``-traditional``, ``-c``, ``-M``, ``-baseline``, ``-riskAlpha``, ``-a``) and prints
its CSV: one row per topic of the run, then ``amean``. The measures are stagewise's own
(:mod:`stagewise.metrics.diversity`); :mod:`.command` parses and formats.
"""

from __future__ import annotations

from stagewise.ndeval.command import COLUMNS, evaluate_command, main

__all__ = ["COLUMNS", "evaluate_command", "main"]
