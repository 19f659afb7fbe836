"""Every agreement figure of two or more qrels files at once: what ``stagewise agreement A B [C ...]`` prints.

The qrels are aligned on their (query, document) pairs into an items x assessors table (a pair one file did
not judge is missing there). Cohen's kappa (unweighted, linear, quadratic) and the confusion matrix are per pair
of files, on the pairs both judged; Fleiss' kappa on the pairs every file judged; Krippendorff's alpha (nominal,
ordinal) on every pair judged at least twice; per-assessor figures; and, for two files, the qrels diff.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagewise.assess._tables import labels_table
from stagewise.assess.agreement import (
    AssessorFigures,
    Confusion,
    _confusion,
    _kappa_of,
    assessor_figures,
    fleiss_kappa,
    krippendorff_alpha,
)
from stagewise.assess.qrels_diff import QrelsDiff, qrels_diff
from stagewise.errors import ConventionError, InputError

__all__ = ["AgreementReport", "PairAgreement", "agreement_report"]


@dataclass(frozen=True)
class PairAgreement:
    """Two assessors on the pairs both judged: how many, Cohen's kappa in each weighting, the confusion."""

    first: str
    second: str
    both: int
    only_first: int
    only_second: int
    kappa: float
    kappa_linear: float
    kappa_quadratic: float
    confusion: Confusion | None


@dataclass(frozen=True)
class AgreementReport:
    """Agreement of several qrels (assessors). ``fleiss_items`` pairs were judged by every assessor (Fleiss'
    kappa is ``nan`` when none was); ``items`` pairs by at least one. ``diff`` is the qrels diff of the first
    file to the second when there are exactly two."""

    assessors: tuple[str, ...]
    items: int
    relevance_level: int | None
    pairs: tuple[PairAgreement, ...]
    fleiss_kappa: float
    fleiss_items: int
    alpha_nominal: float
    alpha_ordinal: float
    figures: tuple[AssessorFigures, ...]
    diff: QrelsDiff | None


def _pair(names: list[str], matrix: np.ndarray, i: int, j: int) -> PairAgreement:
    x, y = matrix[:, i], matrix[:, j]
    both = ~(np.isnan(x) | np.isnan(y))
    only_first = int((~np.isnan(x) & np.isnan(y)).sum())
    only_second = int((np.isnan(x) & ~np.isnan(y)).sum())
    if not both.any():
        nan = float("nan")
        return PairAgreement(names[i], names[j], 0, only_first, only_second, nan, nan, nan, None)
    confusion = _confusion(x[both], y[both], None)
    kappas = [_kappa_of(confusion.counts, w) for w in (None, "linear", "quadratic")]
    return PairAgreement(names[i], names[j], int(both.sum()), only_first, only_second, *kappas, confusion)


def _alpha(matrix: np.ndarray, level: str) -> float:
    if ((~np.isnan(matrix)).sum(axis=1) >= 2).sum() == 0:
        return float("nan")
    return krippendorff_alpha(matrix, level=level)


def agreement_report(qrels: Mapping[str, Any], *, relevance_level: int | None = None) -> AgreementReport:
    """All agreement figures of ``{assessor name: qrels}`` (two or more; a ``Qrels``, a path or a dict each).

    Parameters
    ----------
    qrels : mapping of name to Qrels or anything ``read_qrels`` takes
    relevance_level : int, default=None
        Binary agreement: a label ``>= relevance_level`` is relevant (1), else 0; graded by default.

    Examples
    --------
    >>> r = agreement_report({"ann": {"q": {"a": 1, "b": 0, "c": 2}}, "bob": {"q": {"a": 1, "b": 1, "c": 2}}})
    >>> r.items, r.pairs[0].both, round(r.pairs[0].kappa, 4), r.diff.relabelled
    (3, 3, 0.5, 1)
    """
    if not isinstance(qrels, Mapping) or len(qrels) < 2:
        raise InputError("qrels", "are fewer than two", expected="two qrels files or more to compare")
    if relevance_level is not None and (isinstance(relevance_level, bool) or not isinstance(relevance_level, int)):
        raise ConventionError(
            f"The 'relevance_level' parameter of agreement_report must be an int. Got {relevance_level!r} instead."
        )
    _, matrix, names = labels_table(qrels)
    if relevance_level is not None:
        matrix = np.where(np.isnan(matrix), np.nan, (matrix >= relevance_level).astype(float))
    pairs = tuple(_pair(names, matrix, i, j) for i in range(len(names)) for j in range(i + 1, len(names)))
    complete = matrix[~np.isnan(matrix).any(axis=1)]
    sources = list(qrels.values())
    return AgreementReport(
        assessors=tuple(names),
        items=len(matrix),
        relevance_level=relevance_level,
        pairs=pairs,
        fleiss_kappa=fleiss_kappa(complete) if len(complete) else float("nan"),
        fleiss_items=len(complete),
        alpha_nominal=_alpha(matrix, "nominal"),
        alpha_ordinal=_alpha(matrix, "ordinal"),
        figures=assessor_figures(matrix, names=names),
        diff=qrels_diff(sources[0], sources[1]) if len(names) == 2 else None,
    )
