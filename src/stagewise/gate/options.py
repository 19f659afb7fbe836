"""What a regression gate checks, as one frozen value: the metrics held to a margin against the baseline, the
floors every run must reach and the ceilings on the RAG labels' rates.

This module imports nothing heavy (no numpy), so the command line may read it at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from stagewise.errors import ConventionError, parameter_error

__all__ = ["GATE_FIELDS", "GateOptions"]


def _pairs(value: Any, what: str) -> tuple[tuple[str, float], ...]:
    """``{"recall@100": 0.8}``, ``[("recall@100", 0.8)]`` or ``["recall@100=0.8"]`` as (name, value) pairs in
    the order given, each value a finite float and each name once."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    out: list[tuple[str, float]] = []
    for item in items:
        if isinstance(item, str):
            name, sep, number = item.rpartition("=")
            if not sep or not name.strip():
                raise ConventionError(f"{what} {item!r} is not NAME=VALUE (e.g. recall@100=0.8)")
            item = (name, number)
        try:
            name, number = item
            number = float(number)
        except (TypeError, ValueError):
            raise ConventionError(f"{what} {item!r} is not NAME=VALUE with a number for VALUE") from None
        if not math.isfinite(number):
            raise ConventionError(f"{what} {name}={number} is not a finite number")
        out.append((str(name).strip(), number))
    names = [n for n, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConventionError(f"{what} given twice for {', '.join(twice)}")
    return tuple(out)


@dataclass(frozen=True)
class GateOptions:
    """What :func:`stagewise.gate.gate` checks.

    Parameters
    ----------
    metrics : str or tuple of str, default=("ndcg@10",)
        The metrics held to the non-inferiority margin: each fails when the confidence interval of
        ``mean(run - baseline)`` reaches below ``-max_drop`` (above ``+max_drop`` for a measure where lower is
        better).
    max_drop : float, default=0.01
        The margin, in the metric's own units (0.01 is one point of nDCG), ``>= 0``.
    floors : mapping or pairs of (metric, value), default=()
        Absolute floors: the run's mean of each metric must be ``>=`` the value (``{"recall@100": 0.8}``).
    ceilings : mapping or pairs of (label, rate), default=()
        Ceilings on the share of RAG samples with each label of :data:`stagewise.rag.LABELS`
        (``{"retrieval_failure": 0.05}``), a rate in [0, 1]; they need ``rag=`` records.

    >>> GateOptions("map", max_drop=0.02, floors={"recall@100": 0.8})
    GateOptions(metrics=('map',), max_drop=0.02, floors=(('recall@100', 0.8),), ceilings=())
    """

    metrics: tuple[str, ...] = ("ndcg@10",)
    max_drop: float = 0.01
    floors: tuple[tuple[str, float], ...] = ()
    ceilings: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        metrics = (self.metrics,) if isinstance(self.metrics, str) else tuple(self.metrics)
        if not all(isinstance(m, str) and m.strip() for m in metrics):
            raise parameter_error("metrics", "gate", "metric names (strings)", self.metrics)
        object.__setattr__(self, "metrics", tuple(m.strip() for m in metrics))
        drop = self.max_drop
        if isinstance(drop, bool) or not isinstance(drop, int | float) or not math.isfinite(drop) or drop < 0:
            raise parameter_error("max_drop", "gate", "a finite number >= 0", drop)
        object.__setattr__(self, "max_drop", float(drop))
        object.__setattr__(self, "floors", _pairs(self.floors, "floor"))
        ceilings = _pairs(self.ceilings, "ceiling")
        for label, rate in ceilings:
            if not 0.0 <= rate <= 1.0:
                raise ConventionError(f"ceiling {label}={rate} is not a rate in [0, 1]")
        object.__setattr__(self, "ceilings", ceilings)

    @property
    def measured(self) -> tuple[str, ...]:
        """Every metric to evaluate: the margins' then the floors' (each once)."""
        return tuple(dict.fromkeys([*self.metrics, *(name for name, _ in self.floors)]))


#: The fields of :class:`GateOptions`, the keywords :func:`stagewise.gate.gate` takes for it.
GATE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(GateOptions))


def gate_options(options: GateOptions | None, overrides: Mapping[str, Any]) -> GateOptions:
    """``options`` (default :class:`GateOptions`'s) with the keyword ``overrides`` of its fields applied."""
    base = GateOptions() if options is None else options
    if not isinstance(base, GateOptions):
        raise ConventionError(f"options must be a GateOptions value, not {type(base).__name__}")
    if not overrides:
        return base
    values = {f: getattr(base, f) for f in GATE_FIELDS}
    values.update(overrides)
    return GateOptions(**values)


def split_gate(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keywords of :class:`GateOptions` among ``overrides``, and the rest."""
    mine = {k: v for k, v in overrides.items() if k in GATE_FIELDS}
    return mine, {k: v for k, v in overrides.items() if k not in GATE_FIELDS}
