"""The result of :func:`stagewise.gate.gate`: one :class:`Check` per margin, floor and ceiling, the verdict, and
every convention behind them. It holds data and never renders itself: :mod:`stagewise.report.gate` writes it as
a table, JSON, JUnit XML or a GitHub Actions summary. It imports nothing heavy."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Check", "GateResult"]

#: What each kind of check holds the run to.
KINDS = ("margin", "floor", "ceiling")


@dataclass(frozen=True)
class Check:
    """One check of the gate.

    ``kind`` is ``margin`` (the interval of ``mean(run - baseline)`` on a metric against ``-max_drop``),
    ``floor`` (the run's mean of a metric against a floor) or ``ceiling`` (the share of RAG samples with a label
    against a ceiling); ``name`` the metric or label. ``observed`` is what was held to ``threshold``: the
    interval's bound on the side that matters (margin), the mean (floor) or the rate (ceiling). ``statement``
    says it in one sentence. The other fields are the margin's numbers (None elsewhere) and ``n``, the queries
    or samples it counts.
    """

    kind: str
    name: str
    observed: float
    threshold: float
    passed: bool
    statement: str
    n: int
    run_mean: float | None = None
    baseline_mean: float | None = None
    mean_diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None

    @property
    def id(self) -> str:
        """``"margin ndcg@10"``, ``"floor recall@100"``, ``"ceiling retrieval_failure"``: unique in a gate."""
        return f"{self.kind} {self.name}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (a non-finite float becomes None), with ``id`` first."""
        out = {"id": self.id}
        for key, value in asdict(self).items():
            out[key] = None if isinstance(value, float) and not math.isfinite(value) else value
        return out


@dataclass(frozen=True)
class GateResult:
    """Every check of a run against its baseline, floors and ceilings: :attr:`passed` when all pass.

    ``conventions`` states how each kind of check decides (the interval's method and level, the test, the
    seed and resamples, the evaluation's conventions, the RAG options); ``comparison`` is the
    :class:`~stagewise.stats.Comparison` of the run against the baseline the margins read, ``rag`` the
    :class:`~stagewise.rag.RagReport` the ceilings read (or None).
    """

    run: str
    baseline: str
    checks: tuple[Check, ...]
    conventions: dict[str, Any]
    comparison: Any = field(default=None, repr=False, compare=False)
    rag: Any = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        """Whether every check passed (the command exits 0, else 1)."""
        return all(check.passed for check in self.checks)

    @property
    def failures(self) -> tuple[Check, ...]:
        """The checks that failed, in order."""
        return tuple(check for check in self.checks if not check.passed)

    def verdict(self) -> str:
        """One line: ``pass: ...`` or ``FAIL: ...`` naming each failed check and what it found."""
        total = len(self.checks)
        if self.passed:
            return f"pass: {total} of {total} checks passed ({self.run} against baseline {self.baseline})"
        failed = self.failures
        said = "; ".join(f"{c.id}: {c.statement}" for c in failed)
        return f"FAIL: {len(failed)} of {total} checks failed ({self.run} against baseline {self.baseline}): {said}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract: ``passed``, ``verdict``, ``run``, ``baseline``, ``checks`` (each
        :meth:`Check.to_dict`) and ``conventions``."""
        return {
            "passed": self.passed,
            "verdict": self.verdict(),
            "run": self.run,
            "baseline": self.baseline,
            "checks": [check.to_dict() for check in self.checks],
            "conventions": self.conventions,
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise gate --format json`` writes)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=_plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # a numpy scalar in the conventions
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
