"""The metrics layer: measures as values, the conventions, the evaluation context, vectorised kernels.

>>> from stagewise.metrics import Conventions, Measure
>>> str(Measure.parse("ndcg@10(gain=exp)")), Measure.parse("unj@10").better
('ndcg@10(gain=exp)', 'lower')
>>> Conventions().with_(missing="skip").missing
'skip'

The front door that measures runs is :func:`stagewise.evaluate` (:func:`stagewise.engines.evaluate`, in the
layer above, which chooses the engine). ``evaluate`` here is the former front door, kept for old imports: it is
the local engine's path and warns that it is deprecated.

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
