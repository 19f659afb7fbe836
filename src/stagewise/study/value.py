"""The :class:`Study` value: what a report shows, computed once by :func:`stagewise.study` and rendered by
:func:`stagewise.report.html.render` (which computes nothing). This module holds only the value and the names
both sides share (the curves' cutoffs and metric names); it imports nothing heavy, so the report can read the
type without the computations (pyproject.toml's ``report-renders`` contract)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stagewise.metrics.context import Conventions
    from stagewise.metrics.result import EvalResult
    from stagewise.rag.report import RagReport
    from stagewise.stats.result import Comparison

__all__ = ["CURVE_FAMILIES", "CUTOFFS", "QrelsSummary", "Study", "curve_metrics", "input_paths"]

#: The cutoffs of the metric-at-k curves: 1 to 1000, about evenly spaced on a log axis (every k would be
#: 3,000 columns).
CUTOFFS: tuple[int, ...] = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)
#: The measures drawn at each cutoff (the report also measures ``judged@k`` for its judgement health).
CURVE_FAMILIES: tuple[str, ...] = ("P", "recall", "ndcg")


def curve_metrics(cutoffs: Sequence[int] = CUTOFFS) -> list[str]:
    """The metric names of the curves and of the judgement health, in the order they are measured.

    >>> curve_metrics((1, 10))
    ['P@1', 'P@10', 'recall@1', 'recall@10', 'ndcg@1', 'ndcg@10', 'judged@1', 'judged@10']
    """
    return [f"{fam}@{k}" for fam in CURVE_FAMILIES for k in cutoffs] + [f"judged@{k}" for k in cutoffs]


def input_paths(qrels: Any = None, runs: Any = None, rag: Any = None) -> list[str | os.PathLike]:
    """The file paths among a study's inputs (a run mapping's values, a list's items): what it names, and what
    an output must not overwrite.

    >>> input_paths("qrels.txt", {"a": "a.run", "b": {"q1": {"d1": 1.0}}})
    ['qrels.txt', 'a.run']
    """
    items = [qrels, rag]
    if isinstance(runs, dict):
        items += list(runs.values())
    elif isinstance(runs, list | tuple):
        items += list(runs)
    else:
        items.append(runs)
    return [x for x in items if isinstance(x, str | os.PathLike)]


@dataclass(frozen=True)
class QrelsSummary:
    """What the judgement-health section needs of the qrels: how many judgements carry each label, and how many
    queries are judged."""

    labels: Mapping[int, int]
    n_queries: int


@dataclass(frozen=True)
class Study:
    """Everything a report shows, computed: build one with :func:`stagewise.study`, render it with
    :func:`stagewise.report.html.render`. A study of runs has ``scores``; one of RAG records has ``rag``; a
    study may have both.

    Attributes
    ----------
    metrics
        The metrics of the comparison and the per-query views (the first is the per-query plots' metric).
    conventions
        The evaluation's :class:`~stagewise.metrics.context.Conventions`.
    scores
        The per-query values of ``metrics``: the comparison's score table, or an
        :class:`~stagewise.EvalResult` for one run.
    comparison
        The :class:`~stagewise.stats.result.Comparison` of two or more runs (None for one run), with the
        options it was made with.
    cutoffs, at_k, health
        The curves' cutoffs; precision, recall, nDCG and judged@k at each (an EvalResult); judged@k measured
        on the runs as given (the same result unless ``judged_only``, where judged@k would be 1 by construction).
    qrels
        The :class:`QrelsSummary` of the judgements.
    plot_baseline, tie_tolerance
        The run the per-query difference plots are drawn against (None: no plots), and the difference within
        which a query is a tie.
    fusion
        Each fused run's fusion statement by run name (a FusedRun's own or its ``.meta.json``).
    rag, answers
        The :class:`~stagewise.rag.report.RagReport` and each sample's answer text by id.
    trust
        How far the qrels can be trusted (:class:`~stagewise.assess.qrels_trust.TrustReport`: each run left out of
        the pool, score bounds over the unjudged, ranking agreement), when asked for; None otherwise.
    judge_audits
        Audits of judges against people's labels (:class:`~stagewise.rag.audit.JudgeAudit`, from
        ``stagewise judge audit``), shown in the RAG section beside the labels those judges gave.
    title, sources
        The page's title as given (None: one is made from what the study holds) and the inputs it names.
    """

    metrics: tuple[str, ...] = ()
    conventions: Conventions | None = None
    scores: Any = None
    comparison: Comparison | None = None
    cutoffs: tuple[int, ...] = CUTOFFS
    at_k: EvalResult | None = None
    health: EvalResult | None = None
    qrels: QrelsSummary | None = None
    plot_baseline: str | None = None
    tie_tolerance: float = 1e-9
    fusion: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rag: RagReport | None = None
    answers: Mapping[str, str] = field(default_factory=dict)
    judge_audits: tuple[Any, ...] = ()
    trust: Any = None
    title: str | None = None
    sources: tuple[Any, ...] = ()

    @property
    def runs(self) -> list[str]:
        """The names of the runs studied, in order (empty for a study of RAG records alone)."""
        return [r.name for r in self.at_k.runs] if self.at_k is not None else []

    @property
    def paths(self) -> list[str | os.PathLike]:
        """The file paths among the sources (an output must not overwrite one)."""
        return [s for s in self.sources if isinstance(s, str | os.PathLike)]
