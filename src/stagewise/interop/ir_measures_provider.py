"""stagewise as an ir_measures provider, so ``ir_measures.calc_aggregate`` and PyTerrier's ``pt.Experiment`` can
compute through it.

ir_measures has no plug-in entry point: a provider is an object in ``ir_measures.providers.registry`` and the
default pipeline (``ir_measures.DefaultPipeline``) asks its providers in order. So:

- :data:`provider` (``ir_measures.providers.registry["stagewise"]`` once this module is imported) is used
  directly: ``provider.calc_aggregate([nDCG@10, AP], qrels, run)``, ``provider.evaluator(measures, qrels)``.
- :func:`install` puts it first in ``ir_measures.DefaultPipeline``, so every ir_measures call, and PyTerrier's
  experiments, compute each measure stagewise knows through stagewise (the others fall through to the providers
  behind it, as before); :func:`uninstall` takes it out again.

A measure is supported when its ir_measures spelling (``str(measure)``: ``nDCG@10``, ``AP(rel=2)``,
``RBP(p=0.8)``, ``alpha_nDCG@20``, ``INST(T=2)``) parses in stagewise, where every ir_measures spelling means
ir_measures' number (``tests/test_peer_names.py``). The numbers are computed under :class:`Conventions`
(trec_eval's: scores compared in single precision, ties by doc id descending; judged queries absent from the run
score 0, as ir_measures reports them), or those given to :class:`StagewiseProvider`. One difference is stated:
ir_measures' own cwl_eval provider breaks score ties in the run's input order (``Conventions(ties="input")``
gives its numbers on tied runs).

>>> import ir_measures
>>> from ir_measures import AP, nDCG
>>> from stagewise.interop.ir_measures_provider import provider
>>> qrels = {"q1": {"d1": 1, "d2": 0}}
>>> run = {"q1": {"d1": 1.0, "d2": 2.0}}
>>> {str(m): round(v, 4) for m, v in provider.calc_aggregate([AP, nDCG@10], qrels, run).items()}
{'AP': 0.5, 'nDCG@10': 0.6309}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import ir_measures
from ir_measures import Metric
from ir_measures.util import QrelsConverter, RunConverter

from stagewise.engines.front import evaluate
from stagewise.errors import StagewiseError
from stagewise.metrics.context import Conventions
from stagewise.metrics.measures import Measure

__all__ = ["StagewiseProvider", "install", "provider", "uninstall"]


def _spelling(measure: Any) -> Measure | None:
    """The stagewise measure an ir_measures measure is, or None when stagewise has no such number."""
    try:
        return Measure.parse(str(measure))
    except StagewiseError:
        return None


class StagewiseEvaluator(ir_measures.providers.Evaluator):
    """Scores runs against one set of qrels through :func:`stagewise.evaluate`."""

    def __init__(self, measures: Iterable[Any], qrels: dict[str, dict[str, int]], conventions: Conventions) -> None:
        measures = list(measures)
        super().__init__(measures, set(qrels))
        self.qrels = qrels
        self.conventions = conventions
        self.names = {measure: str(_spelling(measure)) for measure in measures}

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        run = RunConverter(run).as_dict_of_dict()
        if not run or not self.qrels:
            return
        result = evaluate(self.qrels, run, sorted(set(self.names.values())), conventions=self.conventions)
        values = result.per_query("run")
        for measure, name in self.names.items():
            for query_id, value in values[name].items():
                yield Metric(query_id=str(query_id), measure=measure, value=float(value))


class StagewiseProvider(ir_measures.providers.Provider):
    """The ir_measures provider that computes through stagewise (see the module docstring)."""

    NAME = "stagewise"

    def __init__(self, conventions: Conventions | None = None) -> None:
        super().__init__()
        self.conventions = conventions or Conventions()

    def supports(self, measure: Any) -> bool:
        measure.validate_params()
        return _spelling(measure) is not None

    def _evaluator(self, measures: Iterable[Any], qrels: Any) -> StagewiseEvaluator:
        measures = list(measures)
        unsupported = [str(m) for m in measures if _spelling(m) is None]
        if unsupported:
            raise ValueError(f"stagewise does not compute {', '.join(unsupported)}")
        return StagewiseEvaluator(measures, QrelsConverter(qrels).as_dict_of_dict(), self.conventions)

    def install_instructions(self) -> str:
        return "pip install stagewise"


#: The provider, registered in ``ir_measures.providers.registry`` as ``"stagewise"``.
provider: StagewiseProvider = ir_measures.providers.register(StagewiseProvider())


def install() -> None:
    """Put stagewise first in ``ir_measures.DefaultPipeline``: ``ir_measures.calc_aggregate``, ``iter_calc``,
    ``evaluator`` and PyTerrier's experiments then compute every measure stagewise knows through it."""
    chain = ir_measures.DefaultPipeline.providers
    if provider not in chain:
        chain.insert(0, provider)


def uninstall() -> None:
    """Take stagewise out of ``ir_measures.DefaultPipeline`` again."""
    chain = ir_measures.DefaultPipeline.providers
    while provider in chain:
        chain.remove(provider)
