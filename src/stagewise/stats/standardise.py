"""Score standardisation per topic (Webber, Moffat and Zobel, SIGIR 2008; Sakai, ICTIR 2016).

Topics differ in difficulty far more than systems do, so a raw mean over topics is dominated by the easy
ones. Standardisation rescales each topic by how a *reference* set of runs did on it:

    z_ij = (x_ij - mu_i) / s_i,   mu_i, s_i the mean and standard deviation of topic i over the reference runs

(``ddof=1``, the sample standard deviation, by default). A system's standardised score on a topic says how
many reference standard deviations it is above the reference mean. Two maps back to [0, 1]:

- :func:`std_cdf`: ``Phi(z)``, the standard normal CDF, as Webber et al. propose;
- :func:`std_ab`: ``A + B z`` clipped to [0, 1], Sakai's linear std-AB (ICTIR 2016; ``A = 0.5``,
  ``B = 0.15`` there), which keeps score differences proportional.

The reference runs should be fixed and stated (for example, the runs of a shared task); a new system is
standardised against them, not against itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from stagewise.errors import ConventionError, InputError
from stagewise.stats.anova import as_matrix

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.metrics.result import EvalResult

__all__ = ["Reference", "reference", "standardise_result", "std_ab", "std_cdf", "z_scores"]


@dataclass(frozen=True)
class Reference:
    """Per-topic mean and standard deviation of a reference set of runs."""

    mean: np.ndarray
    sd: np.ndarray
    systems: int


def reference(scores, ddof: int = 1, source: str = "reference runs") -> Reference:
    """The per-topic ``mu_i`` and ``s_i`` of a ``(topics, systems)`` reference matrix.

    A topic on which every reference run scored the same has ``s_i = 0`` and cannot standardise anything,
    so it is refused with its index rather than turned into infinities.

    >>> ref = reference([[0.2, 0.4], [0.1, 0.5]])
    >>> [round(v, 4) for v in ref.mean.tolist()], [round(v, 4) for v in ref.sd.tolist()]
    ([0.3, 0.3], [0.1414, 0.2828])
    """
    x = as_matrix(scores, source, min_topics=1, min_systems=ddof + 1)
    sd = x.std(axis=1, ddof=ddof)
    flat = np.flatnonzero(sd <= 1e-12 * np.maximum(np.abs(x).max(axis=1), 1e-300))
    if len(flat):
        raise InputError(
            source,
            f"every reference run has the same score on topic {int(flat[0])} ({len(flat)} such topic(s))",
            expected="topics on which the reference runs differ",
            hint="drop those topics or add reference runs",
        )
    return Reference(x.mean(axis=1), sd, x.shape[1])


def z_scores(scores, ref: Reference | None = None, source: str = "scores") -> np.ndarray:
    """``(x_ij - mu_i) / s_i`` for a ``(topics, systems)`` matrix; ``ref`` defaults to the matrix itself.

    >>> z_scores([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[-0.7071, 0.7071], [-0.7071, 0.7071]]
    """
    x = as_matrix(scores, source, min_topics=1, min_systems=1)
    ref = reference(x) if ref is None else ref
    if len(ref.mean) != x.shape[0]:
        problem = f"{x.shape[0]} topics but the reference has {len(ref.mean)}"
        raise InputError(source, problem, expected="the same topics, in the same order")
    return (x - ref.mean[:, None]) / ref.sd[:, None]


def std_cdf(scores, ref: Reference | None = None, source: str = "scores") -> np.ndarray:
    """Webber et al.'s standardised scores ``Phi(z)`` in (0, 1).

    >>> std_cdf([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[0.2398, 0.7602], [0.2398, 0.7602]]
    """
    from scipy import special

    return special.ndtr(z_scores(scores, ref, source))


def std_ab(scores, ref: Reference | None = None, a: float = 0.5, b: float = 0.15, source: str = "scores") -> np.ndarray:
    """Sakai's std-AB: ``A + B z`` clipped to [0, 1].

    >>> std_ab([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[0.3939, 0.6061], [0.3939, 0.6061]]
    """
    return np.clip(a + b * z_scores(scores, ref, source), 0.0, 1.0)


def standardise_result(
    result: EvalResult, method: str = "zscore", reference: str | Sequence[str] | None = None
) -> EvalResult:
    """``result`` with every run's per-query values standardised per topic, and its means recomputed.

    ``method`` names an entry of :data:`stagewise.stats.catalogue.STANDARDISATIONS` (``zscore``, ``std-cdf``,
    ``std-ab``, or ``none``, which returns ``result`` itself). Each topic's mean and standard deviation (n - 1)
    come from the ``reference`` runs (names of runs of the result, at least two; default: every run), over the
    queries every run has (the other queries are dropped from the per-query values). The means are the
    arithmetic means of the standardised values, as :func:`stagewise.stats.compare` takes them with
    ``standardise=``; the result's ``standardised`` field, its notes and its JSON conventions state the method and
    the reference runs. A query on which every reference run scored the same is refused, named with its metric
    (its sd is 0: nothing can be standardised by it).

    Parameters
    ----------
    result : EvalResult
        What :func:`stagewise.evaluate` returned, with at least two runs (or two reference runs).
    method : str
        The standardisation, by name or alias (case-insensitive).
    reference : str or sequence of str, optional
        The reference runs; a new system should be standardised against fixed, stated runs, not itself.

    Returns
    -------
    EvalResult
        A new result; ``result`` is unchanged.

    Examples
    --------
    >>> import stagewise
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    >>> runs = {"a": {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d1": 2.0, "d2": 1.0}},
    ...         "b": {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d2": 2.0, "d1": 1.0}}}
    >>> z = standardise_result(stagewise.evaluate(qrels, runs, "P@1"), "zscore")
    >>> {run: round(means["P@1"], 4) for run, means in z.means.items()}
    {'a': 0.0, 'b': 0.0}
    >>> z.notes()[-1].split(" (")[0]
    'standardised: zscore from reference runs [a, b]'
    >>> z.conventions_report()["standardised"]["reference_runs"]
    ['a', 'b']
    """
    from stagewise.stats.catalogue import STANDARDISATIONS

    entry = STANDARDISATIONS.lookup(str(method))
    if entry.apply is None:
        return result
    names = [r.name for r in result.runs]
    ref_names = _reference_names(names, reference)
    common = _common_queries([np.asarray(r.query_ids) for r in result.runs])
    if len(common) == 0:
        raise ConventionError("standardisation needs queries that every run has; the runs share none")
    cols = [names.index(n) for n in ref_names]
    runs = [replace(r, query_ids=common, values={}, means={}) for r in result.runs]
    for metric in result.metric_names:
        x = np.column_stack([_on(r.query_ids, r.values[metric], common) for r in result.runs])
        _check_spread(x[:, cols], common, metric)
        z = np.asarray(entry(x, x[:, cols]), dtype=np.float64)
        for j, run in enumerate(runs):
            run.values[metric] = z[:, j].copy()
            run.means[metric] = float(z[:, j].mean())
    statement = {
        "method": entry.name,
        "description": entry.description,
        "reference_runs": ref_names,
        "queries": len(common),
        "mean": "arithmetic mean of the standardised values",
    }
    return replace(result, runs=runs, standardised=statement)


def _reference_names(names: list[str], reference: str | Sequence[str] | None) -> list[str]:
    """The reference runs, checked: every one a run of the result, at least two distinct."""
    wanted = names if reference is None else [reference] if isinstance(reference, str) else list(reference)
    unknown = [r for r in wanted if r not in names]
    if unknown:
        raise ConventionError(
            f"reference run(s) {', '.join(map(repr, unknown))} are not among the runs evaluated: {', '.join(names)}"
        )
    distinct = list(dict.fromkeys(wanted))
    if len(distinct) < 2:
        raise ConventionError(
            f"standardisation needs at least 2 reference runs (a per-topic sd of one run is undefined); "
            f"got {len(distinct)}: {', '.join(distinct) or 'none'}"
        )
    return distinct


def _check_spread(ref: np.ndarray, queries: np.ndarray, metric: str) -> None:
    """Refuse, naming the query and the metric, a topic on which every reference run has the same score."""
    flat = np.flatnonzero(np.ptp(ref, axis=1) <= 1e-12 * np.maximum(np.abs(ref).max(axis=1), 1e-300))
    if len(flat):
        raise ConventionError(
            f"cannot standardise {metric}: every reference run scores {ref[flat[0], 0]:g} on query "
            f"{queries[flat[0]]} ({len(flat)} such quer{'y' if len(flat) == 1 else 'ies'}), so its sd is 0; "
            "add reference runs that differ there, or evaluate without those queries"
        )


def _common_queries(ids: list[np.ndarray]) -> np.ndarray:
    common = ids[0]
    for other in ids[1:]:
        if len(other) != len(common) or not np.array_equal(other, common):
            common = np.intersect1d(common, other)
    return common


def _on(ids: np.ndarray, values: np.ndarray, common: np.ndarray) -> np.ndarray:
    """``values`` (one per query of ``ids``) on the queries ``common``, in that order."""
    if len(ids) == len(common) and np.array_equal(ids, common):
        return np.asarray(values, dtype=np.float64)
    order = np.argsort(ids, kind="stable")
    return np.asarray(values, dtype=np.float64)[order[np.searchsorted(ids, common, sorter=order)]]
