"""stagewise: measure every stage of a search or RAG pipeline on its own.

The public names load lazily, so ``import stagewise`` stays fast and ``stagewise --help`` instant. The layers
below this face, and what each package exports, are in ``docs/architecture.md``.

>>> import stagewise
>>> result = stagewise.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.4}}, ["P@2", "mrr"])
>>> result.means["run"]
{'P@2': 0.5, 'mrr': 1.0}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports
from stagewise._version import __version__

_EXPORTS = {
    "evaluate": "stagewise.engines",
    "define": "stagewise.metrics.custom",
    "EvalResult": "stagewise.metrics.result",
    "Conventions": "stagewise.metrics.context",
    "Measure": "stagewise.metrics.measures",
    "Qrels": "stagewise.data.qrels",
    "Run": "stagewise.data.run",
    "read_qrels": "stagewise.data.readers",
    "read_run": "stagewise.data.readers",
    "read_runs": "stagewise.data.readers",
    "write_qrels": "stagewise.data.writers",
    "write_run": "stagewise.data.writers",
    "validate": "stagewise.checks",
    "compare": "stagewise.stats",
    "fuse": "stagewise.fusion.api",
    "BM25Index": "stagewise.retrieval.index",
    "evaluate_rag": "stagewise.rag.diagnose",
    "StagewiseError": "stagewise.errors",
    "InputError": "stagewise.errors",
    "MetricError": "stagewise.errors",
    "ConventionError": "stagewise.errors",
    "ExpansionLimits": "stagewise._io",
    "set_expansion_limits": "stagewise._io",
    "Study": "stagewise.study.value",
}

__all__ = [*_EXPORTS, "__version__", "report", "study"]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise._io import ExpansionLimits, set_expansion_limits
    from stagewise.checks import validate
    from stagewise.data.qrels import Qrels
    from stagewise.data.readers import read_qrels, read_run, read_runs
    from stagewise.data.run import Run
    from stagewise.data.writers import write_qrels, write_run
    from stagewise.engines import evaluate
    from stagewise.errors import ConventionError, InputError, MetricError, StagewiseError
    from stagewise.fusion.api import fuse
    from stagewise.metrics.context import Conventions
    from stagewise.metrics.custom import define
    from stagewise.metrics.measures import Measure
    from stagewise.metrics.result import EvalResult
    from stagewise.rag.diagnose import evaluate_rag
    from stagewise.retrieval.index import BM25Index
    from stagewise.stats import compare
    from stagewise.study.value import Study

_lazy_getattr, __dir__ = lazy_exports(globals(), _EXPORTS)


def __getattr__(name: str) -> object:
    # ``stagewise.report`` is the report package, callable as the HTML report (``stagewise.report(qrels, runs)``);
    # ``stagewise.study`` likewise is the study package, callable as ``stagewise.study(qrels, runs)``; importing
    # it sets the attribute, so this runs once.
    if name in ("report", "study"):
        import importlib

        return importlib.import_module(f"stagewise.{name}")
    return _lazy_getattr(name)
