"""``stagewise demo``: a whole search and RAG pipeline on bundled data (CLAP NQ dev), every stage measured on
its own, ending in what to fix first. See :func:`run_demo` and ``docs/demo.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "run_demo": "stagewise.demo.pipeline",
    "DemoResult": "stagewise.demo.pipeline",
    "Step": "stagewise.demo.pipeline",
    "Verdict": "stagewise.demo.verdict",
    "load": "stagewise.demo.data",
}

__all__ = ["DemoResult", "Step", "Verdict", "load", "run_demo"]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from stagewise.demo.data import load
    from stagewise.demo.pipeline import DemoResult, Step, run_demo
    from stagewise.demo.verdict import Verdict
