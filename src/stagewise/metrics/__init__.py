"""The metrics engine: measures as values, the evaluation context, vectorised kernels, :func:`evaluate`.

>>> from stagewise.metrics import Measure, evaluate
>>> str(Measure.parse("ndcg@10(gain=exp)"))
'ndcg@10(gain=exp)'

Names load lazily: the engine's modules import each other, and a kernel import should not load the readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "evaluate": "stagewise.metrics.evaluate",
    "DEFAULT_METRICS": "stagewise.metrics.defaults",
    "EvalResult": "stagewise.metrics.result",
    "RunScores": "stagewise.metrics.result",
    "Conventions": "stagewise.metrics.context",
    "Measure": "stagewise.metrics.measures",
}

__all__ = [
    "DEFAULT_METRICS",
    "Conventions",
    "EvalResult",
    "Measure",
    "RunScores",
    "evaluate",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.metrics.context import Conventions
    from stagewise.metrics.defaults import DEFAULT_METRICS
    from stagewise.metrics.evaluate import evaluate
    from stagewise.metrics.measures import Measure
    from stagewise.metrics.result import EvalResult, RunScores

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
