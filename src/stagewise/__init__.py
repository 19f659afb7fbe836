"""stagewise: measure every stage of a search or RAG pipeline on its own.

The public names load lazily, so ``import stagewise`` stays fast and ``stagewise --help`` instant.

>>> import stagewise
>>> result = stagewise.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.4}}, ["P@2", "mrr"])
>>> result.means["run"]
{'P@2': 0.5, 'mrr': 1.0}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "evaluate": "stagewise.metrics.evaluate",
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
    "evaluate_rag": "stagewise.rag.diagnose",
    "compare": "stagewise.stats",
    "fuse": "stagewise.fusion.api",
    "StagewiseError": "stagewise.errors",
    "InputError": "stagewise.errors",
}

__all__ = [*_EXPORTS, "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.checks import validate
    from stagewise.data.qrels import Qrels
    from stagewise.data.readers import read_qrels, read_run, read_runs
    from stagewise.data.run import Run
    from stagewise.data.writers import write_qrels, write_run
    from stagewise.errors import InputError, StagewiseError
    from stagewise.fusion.api import fuse
    from stagewise.metrics.context import Conventions
    from stagewise.metrics.evaluate import evaluate
    from stagewise.metrics.measures import Measure
    from stagewise.metrics.result import EvalResult
    from stagewise.rag.diagnose import evaluate_rag
    from stagewise.stats import compare


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stagewise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
