"""Tuning fusion on training judgements: weights by an exact grid or coordinate ascent, supervised methods by
their estimators, and k-fold cross-validation that reports every fold's choice and its held-out score.

The grid is exact: weights are integer compositions ``(n_1, ..., n_m) / N`` with ``sum n_i = N`` and
``N = 1 / step``, enumerated with integers, so no combination is lost to floating-point equality (ranx's
float grid keeps 62 of the 66 points for 3 runs at step 0.1, and 256 of 286 for 4). Ties in the objective go
to the weights closest to uniform, then to the first point in the grid's order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion.api import FusedRun, apply, describe, load_runs, resolve_missing, resolve_norm
from stagewise.fusion.methods import METHODS, FusionMethod
from stagewise.fusion.options import SEARCHES, FusionOptions, resolve_options
from stagewise.fusion.table import FusionTable, build_table
from stagewise.metrics.context import Conventions, conventions_from

GRID_LIMIT = 1001  # auto: the grid up to this many points (5 runs at step 0.1), coordinate ascent beyond
# Each grid point, and each value of a weight in coordinate ascent, is one fusion and one evaluation: past these
# a search would run for days (--step 1e-9 made a list of a billion weights), so it is refused up front.
MAX_DIVISIONS = 10_000  # step >= 0.0001
MAX_GRID_POINTS = 100_000
Progress = Callable[[int, int], None]


def grid_weights(n_runs: int, step: float = 0.1) -> np.ndarray:
    """Every weight vector on the simplex with coordinates in multiples of ``step``, exactly.

    >>> grid_weights(3, 0.1).shape
    (66, 3)
    >>> grid_weights(4, 0.1).shape
    (286, 4)
    >>> grid_weights(2, 0.5).tolist()
    [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]
    """
    total = _divisions(step)
    if n_runs < 1:
        raise ConventionError("give at least one run to weigh")
    points = math.comb(total + n_runs - 1, n_runs - 1)
    if points > MAX_GRID_POINTS:
        raise ConventionError(
            f"the weight grid of {n_runs} runs at step {step:g} has {points:,} points, each a fusion and an "
            f"evaluation (at most {MAX_GRID_POINTS:,}); give a coarser step, or search by coordinate ascent"
        )
    rows = []
    # Stars and bars: choose where the n_runs - 1 bars go among total + n_runs - 1 slots.
    for bars in itertools.combinations(range(total + n_runs - 1), n_runs - 1):
        edges = (-1, *bars, total + n_runs - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(n_runs)])
    counts = np.array(rows, dtype=np.int64)[::-1]  # first run's weight descending
    return counts / total


def _divisions(step: float) -> int:
    if isinstance(step, bool) or not isinstance(step, int | float) or not 0 < step <= 1:
        raise ConventionError(
            f"The 'step' parameter of the weight grid must be a number in (0, 1]. Got {step!r} instead."
        )
    total = round(1 / step)
    if total > MAX_DIVISIONS:
        raise ConventionError(
            f"The 'step' parameter of the weight grid must be at least {1 / MAX_DIVISIONS:g} (each multiple of it "
            f"is a weight to evaluate). Got {step!r} instead."
        )
    if abs(total * step - 1) > 1e-9:
        raise ConventionError(
            f"The 'step' parameter of the weight grid must divide 1 (0.1, 0.05, 0.25, ...). Got {step!r} instead."
        )
    return total


@dataclass
class FoldResult:
    """One fold of cross-validation: what was chosen on the other folds and how it scored on this one."""

    fold: int
    method: FusionMethod
    train_queries: int
    test_queries: int
    train_score: float
    test_score: float

    def describe(self) -> dict[str, Any]:
        return {
            "fold": self.fold,
            "method": str(self.method),
            "weights": _weights_of(self.method),
            "train_queries": self.train_queries,
            "test_queries": self.test_queries,
            "train_score": self.train_score,
            "test_score": self.test_score,
        }


def _weights_of(method: FusionMethod) -> list[float] | None:
    if "weights" not in method.info.params:
        return None
    value = method.param("weights")
    return list(value) if value is not None else None


@dataclass
class FusionReport:
    """The outcome of :func:`optimize`.

    Attributes
    ----------
    method : FusionMethod
        The choice made on all judged queries (the one to deploy); its score there is ``train_score``.
    run : FusedRun
        With ``folds``: the cross-validated run, each query fused by parameters chosen without it; without
        folds: every query fused by ``method`` (scores on the same qrels are then in-sample).
    folds : list of FoldResult
        Per fold: the choice, its training score and its held-out score.
    held_out_score : float or None
        The metric's mean over all judged queries of the cross-validated run.
    trials : list of (weights, score)
        Every point the in-sample search evaluated.
    ties : str
        The tie convention every score was measured under (see :func:`stagewise.evaluate`).
    """

    metric: str
    search: str
    method: FusionMethod
    train_score: float
    run: FusedRun
    folds: list[FoldResult] = field(default_factory=list)
    held_out_score: float | None = None
    trials: list[tuple[tuple[float, ...], float]] = field(default_factory=list)
    seed: int | None = None
    ties: str = "docid"

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "metric": self.metric,
            "ties": self.ties,
            "search": self.search,
            "method": str(self.method),
            "weights": _weights_of(self.method),
            "train_score": self.train_score,
            "folds": [fold.describe() for fold in self.folds],
            "held_out_score": self.held_out_score,
            "seed": self.seed,
            "trials": len(self.trials),
        }


class _Objective:
    """The metric of a fusion of some of the table's queries, measured with :func:`stagewise.evaluate`."""

    def __init__(self, table: FusionTable, qrels: Qrels, metric: str, missing: str, conventions: Conventions) -> None:
        self.table, self.qrels, self.metric = table, qrels, metric
        # every judged query the fusion has is measured; one the runs lack is not the fusion's to score
        self.missing, self.conventions = missing, conventions.with_(missing="skip")
        self.relevance_level = conventions.relevance_level
        self._tables: dict[bytes, FusionTable] = {}

    def subtable(self, selected: np.ndarray) -> FusionTable:
        key = np.packbits(selected).tobytes()
        if key not in self._tables:
            self._tables[key] = self.table.take(self.table.rows_of_queries(selected))
        return self._tables[key]

    def scores(self, method: FusionMethod, selected: np.ndarray, trained: dict | None = None) -> np.ndarray:
        return apply(method, self.subtable(selected), self.missing, trained)

    def measure(self, method: FusionMethod, selected: np.ndarray, trained: dict | None = None) -> float:
        table = self.subtable(selected)
        run = table.to_run(self.scores(method, selected, trained), name="trial")
        return self.evaluate(run)

    def evaluate(self, run: Any) -> float:
        from stagewise.engines import evaluate

        result = evaluate(self.qrels, run, [self.metric], conventions=self.conventions)
        return float(result.runs[0].means[self.metric])


def _closeness(weights: np.ndarray) -> float:
    """Distance of a weight vector (as proportions) from uniform."""
    share = weights / weights.sum()
    return float(np.abs(share - 1.0 / len(weights)).sum())


def _search_grid(
    objective: _Objective, base: FusionMethod, selected: np.ndarray, step: float, progress: Progress | None
) -> tuple[FusionMethod, float, list[tuple[tuple[float, ...], float]]]:
    grid = grid_weights(objective.table.n_runs, step)
    trials: list[tuple[tuple[float, ...], float]] = []
    best: tuple[float, float, int] | None = None
    for i, weights in enumerate(grid):
        score = objective.measure(base.with_params(weights=tuple(weights.tolist())), selected)
        trials.append((tuple(weights.tolist()), score))
        rank_key = (-score, _closeness(weights), i)
        if best is None or rank_key < best:
            best = rank_key
        if progress:
            progress(i + 1, len(grid))
    assert best is not None
    chosen = tuple(grid[best[2]].tolist())
    return base.with_params(weights=chosen), -best[0], trials


def _search_coordinate(
    objective: _Objective,
    base: FusionMethod,
    selected: np.ndarray,
    step: float,
    max_rounds: int,
    progress: Progress | None,
) -> tuple[FusionMethod, float, list[tuple[tuple[float, ...], float]]]:
    """Coordinate ascent (Metzler and Croft 2007) on the lattice of multiples of ``step`` in [0, 1]: each run's
    weight in turn takes every value with the others fixed; the best strict improvement is kept; rounds repeat
    until one changes nothing. Only ratios of weights matter, so they are not renormalised."""
    total = _divisions(step)
    m = objective.table.n_runs
    values = [i / total for i in range(total + 1)]
    start = max(1, round(total / m)) / total
    current = [start] * m
    cache: dict[tuple[float, ...], float] = {}
    trials: list[tuple[tuple[float, ...], float]] = []
    done = 0
    budget = max_rounds * m * len(values)

    def score_of(weights: list[float]) -> float:
        nonlocal done
        key = tuple(weights)
        if key not in cache:
            cache[key] = objective.measure(base.with_params(weights=key), selected)
            trials.append((key, cache[key]))
        done += 1
        if progress:
            progress(min(done, budget), budget)
        return cache[key]

    best = score_of(current)
    for _ in range(max_rounds):
        changed = False
        for i in range(m):
            for value in values:
                if value == current[i]:
                    continue
                trial = [*current[:i], value, *current[i + 1 :]]
                if not any(trial):
                    continue
                score = score_of(trial)
                if score > best + 1e-12:
                    best, current, changed = score, trial, True
        if not changed:
            break
    if progress:
        progress(budget, budget)
    return base.with_params(weights=tuple(current)), best, trials


def _choose(
    objective: _Objective,
    base: FusionMethod,
    selected: np.ndarray,
    *,
    search: str,
    step: float,
    max_rounds: int,
    progress: Progress | None,
) -> tuple[FusionMethod, float, dict | None, list]:
    """(method, training score, trained parameters, trials) chosen on the queries ``selected``."""
    info = base.info
    if info.supervised:
        from stagewise.fusion.train import fit

        trained = fit(
            base, objective.table, objective.qrels, relevance_level=objective.relevance_level, queries=selected
        )
        score = objective.measure(base, selected, trained)
        if progress:
            progress(1, 1)
        return base, score, trained, []
    if search == "grid":
        method, score, trials = _search_grid(objective, base, selected, step, progress)
    else:
        method, score, trials = _search_coordinate(objective, base, selected, step, max_rounds, progress)
    return method, score, None, trials


def optimize(
    runs: Any,
    qrels: Any,
    method: str | FusionMethod | None = None,
    *,
    options: FusionOptions | None = None,
    metric: str = "ndcg@10",
    step: float = 0.1,
    search: str = "auto",
    folds: int | None = None,
    seed: int = 0,
    max_rounds: int = 10,
    conventions: Conventions | None = None,
    relevance_level: int | None = None,
    ties: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> FusionReport:
    """Tune a fusion on training judgements and report how well the choice holds up.

    Weighted methods (wsum, rrf, wmnz, mixed, weighted_bordafuse, weighted_condorcet) get their weights from
    an exact grid over the simplex (``search="grid"``) or coordinate ascent (``"coordinate"``; ``"auto"``
    takes the grid up to 1001 points); supervised methods (posfuse, probfuse, segfuse, slidefuse, mapfuse,
    bayesfuse) are trained. ``metric`` is any measure :func:`stagewise.evaluate` knows (``ndcg@10``, ``map``...),
    averaged over the judged queries the runs contain, under the evaluation's ``conventions``
    (:class:`~stagewise.metrics.context.Conventions`, see :func:`stagewise.evaluate`; the default tie order
    compares scores in single precision, as trec_eval 9 does). ``relevance_level`` and ``ties`` override those
    fields; the relevance level is also the one the supervised methods train with.

    With ``folds=k`` the judged queries are split into k folds (seeded, ``seed``); each fold is fused with what
    was chosen on the others, and the report gives every fold's choice, its training score and its held-out
    score, and the held-out mean over all queries.

    How to fuse is ``options`` (:class:`~stagewise.fusion.options.FusionOptions`: method, normalisation, depth,
    query and missing-document policies, method parameters), ``method`` and the keyword ``overrides`` applied
    over it (``norm=``, ``depth=``, ``rrf_k=``...), as for :func:`stagewise.fusion.fuse`; the method defaults to
    ``wsum``.

    Examples
    --------
    >>> runs = [{"q1": {"a": 3.0, "b": 2.0, "c": 1.0}}, {"q1": {"c": 3.0, "a": 2.0, "b": 1.0}}]
    >>> report = optimize(runs, {"q1": {"c": 1}}, "wsum", metric="mrr", step=0.5)
    >>> str(report.method), report.train_score, [score for _, score in report.trials]
    ('wsum(weights=(0,1))', 1.0, [0.3333333333333333, 0.5, 1.0])
    """
    chosen_options = resolve_options(options, method, default_method="wsum", **overrides)
    given = {"relevance_level": relevance_level, "ties": ties}
    conv = conventions_from(conventions, **{k: v for k, v in given.items() if v is not None})
    setup = _prepare(runs, qrels, chosen_options, metric, step, search, max_rounds)
    table, info = setup.table, setup.base.info
    objective = _Objective(table, setup.judgements, metric, setup.missing, conv)
    choose = dict(search=setup.search, step=step, max_rounds=max_rounds)
    chosen, train_score, trained, trials = _choose(objective, setup.base, setup.judged, progress=progress, **choose)
    fold_results: list[FoldResult] = []
    if folds is not None:
        scores, fold_results = _cross_validate(objective, setup, folds, seed, choose)
    else:
        scores = apply(chosen, table, setup.missing, trained)
    run = table.to_run(scores, name=name or info.name, cls=FusedRun)
    report = FusionReport(
        metric=metric,
        search=setup.described_search,
        method=chosen,
        train_score=train_score,
        run=run,
        folds=fold_results,
        held_out_score=objective.evaluate(run) if folds is not None else None,
        trials=trials,
        seed=seed if folds is not None else None,
        ties=conv.ties,
    )
    run.fusion = _metadata(setup, report, trained, relevance_level=conv.relevance_level)
    return report


@dataclass(frozen=True)
class _Setup:
    """What :func:`optimize` checked and built before any search: the method, its normalisation and
    missing-document policy, the table of runs, the judgements and which table queries they cover, and the
    search resolved from ``auto`` (with its description for the report)."""

    options: FusionOptions
    base: FusionMethod
    normalization: Any
    missing: str
    table: FusionTable
    judgements: Qrels
    judged: np.ndarray
    search: str
    described_search: str


def _prepare(
    runs: Any, qrels: Any, options: FusionOptions, metric: str, step: float, search: str, max_rounds: int
) -> _Setup:
    if search not in SEARCHES:  # the cheap checks first, before the runs and qrels are read
        raise ConventionError(f"unknown search {search!r}; choose one of {', '.join(SEARCHES)}")
    from stagewise.metrics.measures import Measure

    Measure.parse(metric)  # an unknown metric fails before any work
    base = options.fusion_method
    info = base.info
    if not (info.weighted or info.supervised):
        weighted = ", ".join(name for name in METHODS.names() if METHODS[name].weighted)
        supervised = ", ".join(name for name in METHODS.names() if METHODS[name].supervised)
        raise StagewiseError(
            f"{info.name} has no weights to tune and learns nothing from judgements; optimise a weighted method "
            f"({weighted}) or a supervised one ({supervised})"
        )
    loaded = load_runs(runs)
    judgements = read_qrels(qrels)
    normalization = resolve_norm(info, options.norm)
    policy = resolve_missing(info, normalization, options.missing)
    table = build_table(loaded, norm=normalization, depth=options.depth, queries=options.queries, ties=options.ties)
    if info.weighted and search == "auto":
        points = math.comb(_divisions(step) + table.n_runs - 1, table.n_runs - 1)
        search = "grid" if points <= GRID_LIMIT else "coordinate"
    if info.supervised:
        described = "trained"
    elif search == "grid":
        described = f"grid (step {step}, {math.comb(_divisions(step) + table.n_runs - 1, table.n_runs - 1)} points)"
    else:
        described = f"coordinate ascent (step {step}, at most {max_rounds} rounds)"
    judged = np.isin(table.query_ids, judgements.query_ids)
    if not judged.any():
        raise StagewiseError("no fused query has judgements; check that the qrels and the runs use the same query ids")
    return _Setup(options, base, normalization, policy, table, judgements, judged, search, described)


def _cross_validate(
    objective: _Objective, setup: _Setup, folds: int, seed: int, choose: dict[str, Any]
) -> tuple[np.ndarray, list[FoldResult]]:
    """Every query's fused scores by the choice made on the folds that do not hold it, and each fold's result."""
    table, judged = setup.table, setup.judged
    fold_of = _assign_folds(judged, folds, seed)
    scores = np.empty(len(table), dtype=np.float64)
    results = []
    for fold in range(folds):
        train = judged & (fold_of != fold)
        test = fold_of == fold
        fold_method, fold_train, fold_trained, _ = _choose(objective, setup.base, train, progress=None, **choose)
        rows = table.rows_of_queries(test)
        scores[rows] = objective.scores(fold_method, test, fold_trained)
        test_run = objective.subtable(test).to_run(scores[rows], name="held-out")
        results.append(
            FoldResult(
                fold=fold + 1,
                method=fold_method,
                train_queries=int(train.sum()),
                test_queries=int((test & judged).sum()),
                train_score=fold_train,
                test_score=objective.evaluate(test_run) if (test & judged).any() else float("nan"),
            )
        )
    return scores, results


def _metadata(setup: _Setup, report: FusionReport, trained: dict | None, *, relevance_level: int) -> dict[str, Any]:
    """The fused run's statement: how it was fused (:func:`describe`), how the choice was made, on what."""
    info = setup.base.info
    judged = int(setup.judged.sum())
    out = describe(
        report.method,
        setup.normalization,
        depth=setup.options.depth,
        queries=setup.options.queries,
        missing=setup.missing,
        table=setup.table,
        trained=trained,
        training={"qrels": setup.judgements.name, "relevance_level": relevance_level, "queries": judged},
        ties=setup.options.ties,
    )
    out["optimization"] = {
        **report.describe(),
        "note": "the run is cross-validated: each query was fused with the choice of the fold that held it out"
        if report.folds
        else "the run uses the choice made on all judged queries (in-sample)",
    }
    if not info.supervised:
        out.pop("trained", None)
        out["training"] = {"qrels": setup.judgements.name, "queries": judged}
    return out


def _assign_folds(judged: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Fold of every table query: judged queries dealt round-robin after a seeded shuffle, then the rest."""
    n_judged = int(judged.sum())
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ConventionError(f"The 'folds' parameter of optimize must be an int >= 2. Got {folds!r} instead.")
    if folds > n_judged:
        raise ConventionError(
            f"The 'folds' parameter of optimize must be at most the {n_judged} judged queries. Got {folds!r} instead."
        )
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(judged), dtype=np.int64)
    for mask in (judged, ~judged):
        where = np.flatnonzero(mask)
        fold_of[where[rng.permutation(len(where))]] = np.arange(len(where)) % folds
    return fold_of


__all__: Sequence[str] = ("FoldResult", "FusionReport", "grid_weights", "optimize")
