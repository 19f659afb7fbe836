"""A regression gate for CI: a run against its baseline (a non-inferiority margin judged by the interval of the
mean difference), absolute floors, and ceilings on the RAG labels' rates; pass or fail, deterministic.

>>> from stagewise.gate import gate
>>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
>>> run = {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}}
>>> gate(qrels, run, dict(run), metrics="mrr", floors={"mrr": 0.9}).passed
True

The names load lazily; ``stagewise gate`` on the command line is the same call (``docs/gate.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import functions_over_submodules, lazy_exports

_EXPORTS = {
    "GateOptions": "stagewise.gate.options",
    "Check": "stagewise.gate.result",
    "GateResult": "stagewise.gate.result",
    "gate": "stagewise.gate.api",
}

__all__ = ["Check", "GateOptions", "GateResult", "gate"]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


functions_over_submodules(__name__, "gate")  # no submodule of that name exists; kept so it stays so

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.gate.api import gate
    from stagewise.gate.options import GateOptions
    from stagewise.gate.result import Check, GateResult
