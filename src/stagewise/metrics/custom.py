"""Custom measures: :func:`define` registers a measure of one's own as a family, by name, for every front door.

A measure is a function of one query's judgements and ranked results (``fn(qrels_for_q, run_for_q) -> float``,
ir_measures' ``define_byquery``), or, vectorised, of the evaluation context (``fn(ctx, k) -> one value per
query``, as the built-in kernels in :mod:`stagewise.metrics.kernels` are). Once defined, its name works where a
built-in's does: ``stagewise.evaluate``, ``stagewise.compare``, ``stagewise.study`` and the HTML report, every
engine that runs in this process, and its spellings ``name@10``, ``name(rel=2)``, ``name(judged_only=True)``.

On the command line (a fresh process) a metric spelt ``module:attr`` imports ``module`` and takes ``attr``: a
family that :func:`define` returned, or a plain per-query function, defined under its attribute name. Cutoffs
and options follow as for any metric: ``stagewise compare qrels a.run b.run -m mymeasures:first_hit@10``. This is
the ``module:attr`` form that ``--judge`` takes (:mod:`stagewise.rag.judges`).

What a per-query function sees (the evaluation context keeps labels by rank, not document ids):

- ``qrels_for_q``, a :class:`QueryQrels`: the query's id, the label of each of its judgements, the relevance
  level; ``num_rel`` (labels >= the level).
- ``run_for_q``, a :class:`QueryRun`: the query's id, the label of each retrieved result in rank order (NaN
  where the result has no judgement), cut to the top ``k`` when the measure is given a cutoff, and ``k``
  itself; ``relevant`` and ``judged`` masks (a label below 0 is neither, as trec_eval reads it).

>>> import stagewise
>>> def first_hit(qrels_for_q, run_for_q):
...     hits = run_for_q.relevant.nonzero()[0]
...     return 1.0 / (hits[0] + 1) if len(hits) else 0.0
>>> family = define("first_hit_doc", first_hit, description="reciprocal rank, written per query")
>>> stagewise.evaluate({"q1": {"d2": 1}}, {"q1": {"d1": 0.9, "d2": 0.8}}, ["first_hit_doc", "mrr"]).means["run"]
{'first_hit_doc': 0.5, 'mrr': 0.5}
>>> _ = FAMILIES.unregister("first_hit_doc")
"""

from __future__ import annotations

import importlib
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagewise.errors import MetricError
from stagewise.metrics.context import EvalContext
from stagewise.metrics.measures import FAMILIES, REL, Better, Family
from stagewise.spec import parse_call

__all__ = ["QueryQrels", "QueryRun", "define", "load_plugin"]

PerQuery = Callable[["QueryQrels", "QueryRun"], float]
Vectorised = Callable[[EvalContext, Any], np.ndarray]

#: ``module:attr`` at the start of a metric's name (what follows is its cutoff and options).
PLUGIN = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_]\w*)(?P<rest>[@(].*)?$", re.DOTALL)
_CUTOFFS = ("none", "optional", "required")
_AGGREGATES = ("mean", "sum", "geometric")


@dataclass(frozen=True)
class QueryQrels:
    """One query's judgements, as a per-query custom measure sees them (``qrels_for_q``)."""

    query_id: str
    labels: np.ndarray  #: the label of each judgement of the query (int64), in no particular order
    relevance_level: int

    @property
    def num_rel(self) -> int:
        """Judgements with a label >= the relevance level (a label below 0 never counts)."""
        return int(((self.labels >= self.relevance_level) & (self.labels >= 0)).sum())


@dataclass(frozen=True)
class QueryRun:
    """One query's ranked results, as a per-query custom measure sees them (``run_for_q``)."""

    query_id: str
    labels: np.ndarray  #: the label of the result at each rank (float64), NaN where it has no judgement
    relevance_level: int
    k: int | float | None  #: the measure's cutoff (``labels`` is cut to the top k), None without one

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def relevant(self) -> np.ndarray:
        """Per rank, whether the result's label is >= the relevance level (and >= 0)."""
        with np.errstate(invalid="ignore"):
            return (self.labels >= self.relevance_level) & (self.labels >= 0)

    @property
    def judged(self) -> np.ndarray:
        """Per rank, whether the result has a judgement with a label >= 0 (trec_eval's judged)."""
        with np.errstate(invalid="ignore"):
            return self.labels >= 0


def define(
    name: str,
    fn: PerQuery | Vectorised,
    *,
    better: Better = "higher",
    description: str = "",
    cutoff: str = "optional",
    vectorised: bool = False,
    aggregate: str = "mean",
    replace: bool = False,
) -> Family:
    """Register ``fn`` as the measure family ``name`` and return the family.

    Parameters
    ----------
    name : str
        The measure's name, as a metric list spells it (letters, digits, ``_``; case-insensitive).
    fn : callable
        ``fn(qrels_for_q, run_for_q) -> float`` (a :class:`QueryQrels` and a :class:`QueryRun`), or with
        ``vectorised=True`` ``fn(ctx, k) -> np.ndarray``, one value per query of the
        :class:`~stagewise.metrics.context.EvalContext` (``k`` the cutoff or None).
    better : {"higher", "lower", None}, default="higher"
        Which way is better: reports mark the best run and significant wins by it.
    description : str
        A sentence that says what the measure is; listed with the other measures.
    cutoff : {"optional", "required", "none"}, default="optional"
        Whether ``name@k`` is allowed, needed or refused.
    vectorised : bool, default=False
        ``fn`` takes the whole context at once.
    aggregate : {"mean", "sum", "geometric"}, default="mean"
        How per-query values become the run's value.
    replace : bool, default=False
        Replace a measure already registered under ``name`` (a built-in included); otherwise that is an error.

    Every defined measure takes ``rel=N`` (the relevance level its views and context use) and
    ``judged_only=True`` (unjudged results removed first), as the built-in ones do.
    """
    _check_definition(name, fn, better, cutoff, aggregate)
    compute = _vectorised(name, fn) if vectorised else _per_query(name, fn)
    family = Family(
        name,
        description or f"custom measure {name} ({'vectorised' if vectorised else 'per query'})",
        compute,
        cutoff=cutoff,
        options={"rel": REL},
        aggregate=aggregate,
        better=better,
    )
    return FAMILIES.register(family, replace=replace)


def _check_definition(name: str, fn: Any, better: Any, cutoff: str, aggregate: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise MetricError(
            f"a custom measure's name must be letters, digits and '_', starting with a letter, as in myrr. Got "
            f"{name!r} instead."
        )
    if parse_call(name, "metric", name, error=MetricError).name != name:  # pragma: no cover - the regex above
        raise MetricError(f"cannot use {name!r} as a measure's name")
    if not callable(fn):
        raise MetricError(f"the function of custom measure {name!r} must be callable. Got {fn!r} instead.")
    for param, value, allowed in (
        ("better", better, ("higher", "lower", None)),
        ("cutoff", cutoff, _CUTOFFS),
        ("aggregate", aggregate, _AGGREGATES),
    ):
        if value not in allowed:
            shown = ", ".join(repr(a) for a in allowed)
            raise MetricError(f"The {param!r} parameter of define must be one of {shown}. Got {value!r} instead.")


def _vectorised(name: str, fn: Vectorised) -> Callable[[EvalContext, Any, dict[str, Any]], np.ndarray]:
    def compute(ctx: EvalContext, k: Any, opts: dict[str, Any]) -> np.ndarray:
        values = np.asarray(fn(ctx, k), dtype=np.float64)
        if values.shape != (ctx.n_queries,):
            raise MetricError(
                f"custom measure {name!r} returned an array of shape {values.shape}; it must return one value per "
                f"query, shape ({ctx.n_queries},)"
            )
        return values

    return compute


def _per_query(name: str, fn: PerQuery) -> Callable[[EvalContext, Any, dict[str, Any]], np.ndarray]:
    def compute(ctx: EvalContext, k: Any, opts: dict[str, Any]) -> np.ndarray:
        out = np.zeros(ctx.n_queries, dtype=np.float64)
        for q, (qrels_for_q, run_for_q) in enumerate(query_views(ctx, k)):
            value = fn(qrels_for_q, run_for_q)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise MetricError(
                    f"custom measure {name!r} returned {value!r} for query {qrels_for_q.query_id!r}; it must "
                    "return a number"
                )
            out[q] = float(value)
        return out

    return compute


def query_views(ctx: EvalContext, k: Any = None) -> list[tuple[QueryQrels, QueryRun]]:
    """Per evaluated query, its :class:`QueryQrels` and :class:`QueryRun` (cut to the top ``k`` if given)."""
    judgement_order = np.argsort(ctx.judgement_query, kind="stable")
    judged_by_query = np.split(
        ctx.judgement_label[judgement_order],
        np.searchsorted(ctx.judgement_query[judgement_order], np.arange(1, ctx.n_queries)),
    )
    row_bounds = np.searchsorted(ctx.row_query, np.arange(ctx.n_queries + 1))  # rows: by query, then rank
    views = []
    for q in range(ctx.n_queries):
        depth = int(ctx.num_ret[q]) if k is None else min(int(ctx.num_ret[q]), math.floor(k))
        labels = np.full(depth, np.nan)
        ranks, found = ctx.row_rank[row_bounds[q] : row_bounds[q + 1]], ctx.row_label[row_bounds[q] : row_bounds[q + 1]]
        inside = ranks <= depth
        labels[ranks[inside] - 1] = found[inside]
        query_id = str(ctx.query_ids[q])
        views.append((QueryQrels(query_id, judged_by_query[q], ctx.level), QueryRun(query_id, labels, ctx.level, k)))
    return views


def load_plugin(text: str) -> str:
    """A metric spelt ``module:attr`` (then its cutoff and options) as the name of the family it names: ``attr``
    is a family (registered here if it is not yet) or a per-query function (defined under its attribute name).
    Any other text is given back as it is.

    >>> load_plugin("ndcg@10")
    'ndcg@10'
    """
    match = PLUGIN.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        return text
    module, attr = match.group("module"), match.group("attr")
    try:
        target = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise MetricError(f"cannot load metric {module}:{attr}: no module {module!r} ({exc})") from None
    except AttributeError:
        raise MetricError(f"cannot load metric {module}:{attr}: module {module!r} has no {attr!r}") from None
    if isinstance(target, Family):
        if FAMILIES.get(target.name) is not target:
            FAMILIES.register(target)  # a name taken by another measure is the registry's error
        family = target
    elif callable(target):
        known = FAMILIES.get(attr)
        family = known if known is not None and _defined_from(known, target) else define(attr, target)
    else:
        raise MetricError(
            f"cannot load metric {module}:{attr}: it is a {type(target).__name__}, not a measure; name a family "
            "that stagewise.define returned or a function (qrels_for_q, run_for_q) -> float"
        )
    return family.name + (match.group("rest") or "")


def _defined_from(family: Family, fn: Any) -> bool:
    """Whether ``family`` is the one :func:`define` made of ``fn`` (a second load of the same module:attr)."""
    cells = getattr(family.compute, "__closure__", None) or ()
    return any(cell.cell_contents is fn for cell in cells)
