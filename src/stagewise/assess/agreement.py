"""Agreement between assessors: Cohen's kappa, Fleiss' kappa, Krippendorff's alpha, confusion matrices,
per-assessor figures, and the agreement of two qrels on the pairs both judged.

Conventions, stated once:

- A missing label is ``None`` or ``NaN``. Cohen's kappa and the confusion matrix keep only the items both raters
  labelled; Krippendorff's alpha uses every item with at least two labels; Fleiss' kappa needs the same number
  of labels on every item and refuses a table that has not (use Krippendorff's alpha there).
- Tables are items x raters (one row per item, one column per rater); the ``krippendorff`` package takes the
  transpose (raters x units).
- Weighted kappa weights the distance between category *positions* in the sorted category list (as
  scikit-learn's ``cohen_kappa_score`` does), not between the label values.
- When every label is one category, chance agreement is 1 and kappa (and alpha) is 0/0: the functions return
  ``nan`` (agreement is undefined, not perfect), never raise.
- Empty input, vectors of different lengths and tables that are not rectangular raise
  :class:`stagewise.errors.InputError`; an unknown weighting or level raises :class:`ConventionError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagewise.assess._tables import as_labels, as_table, names_of, paired, qrels_pairs
from stagewise.errors import ConventionError, InputError

__all__ = [
    "AssessorFigures",
    "Confusion",
    "QrelsAgreement",
    "assessor_figures",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "krippendorff_alpha",
    "qrels_agreement",
]

WEIGHTS = (None, "linear", "quadratic")
LEVELS = ("nominal", "ordinal", "interval")


@dataclass(frozen=True)
class Confusion:
    """A confusion matrix: ``counts[i, j]`` items the first rater put in ``categories[i]`` and the second in
    ``categories[j]``."""

    categories: tuple[float, ...]
    counts: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def observed_agreement(self) -> float:
        """The share of items on the diagonal."""
        return float(np.trace(self.counts) / self.counts.sum())


def confusion_matrix(first: Any, second: Any, *, categories: Sequence[float] | None = None) -> Confusion:
    """Cross-tabulate two raters' labels on the items both labelled.

    Parameters
    ----------
    first, second : sequence of numbers, None or NaN
        One label per item; an item missing in either is left out.
    categories : sequence of numbers, default=None
        The rows' and columns' order; by default the sorted union of the labels seen. A label outside a given
        list raises :class:`InputError`.

    Examples
    --------
    >>> c = confusion_matrix([0, 1, 1, None], [0, 1, 0, 1])
    >>> c.categories, c.counts.tolist(), c.observed_agreement
    ((0.0, 1.0), [[1, 0], [1, 1]], 0.666...)
    """
    x, y = paired(first, second)
    return _confusion(x, y, categories)


def _confusion(x: np.ndarray, y: np.ndarray, categories: Sequence[float] | None) -> Confusion:
    cats = np.unique(np.concatenate([x, y])) if categories is None else np.asarray(categories, dtype=float)
    if len(cats) == 0:
        raise InputError("categories", "is empty", expected="the labels' categories")
    if len(np.unique(cats)) != len(cats):
        raise InputError("categories", "name a category twice", expected=f"distinct categories; got {cats.tolist()}")
    # positions in the order given (the rows' and the weights' order), found through the sorted order
    sorter = np.argsort(cats, kind="stable")
    size = len(cats)
    i = np.minimum(np.searchsorted(cats, x, sorter=sorter), size - 1)
    j = np.minimum(np.searchsorted(cats, y, sorter=sorter), size - 1)
    i, j = sorter[i], sorter[j]
    bad = (cats[i] != x) | (cats[j] != y)
    if bad.any():
        raise InputError("labels", "hold a label outside the given categories", expected=f"one of {cats.tolist()}")
    counts = np.bincount(i * size + j, minlength=size * size).reshape(size, size)
    return Confusion(tuple(float(c) for c in cats), counts)


def _weight_matrix(size: int, weights: str | None) -> np.ndarray:
    if weights not in WEIGHTS:
        raise ConventionError(
            f"The 'weights' parameter of cohen_kappa must be one of {list(WEIGHTS)}. Got {weights!r} instead."
        )
    position = np.arange(size)
    distance = np.abs(position[:, None] - position[None, :]).astype(float)
    if weights is None:
        return (distance > 0).astype(float)
    return distance if weights == "linear" else distance**2


def _kappa_of(counts: np.ndarray, weights: str | None) -> float:
    w = _weight_matrix(len(counts), weights)
    total = counts.sum()
    expected = np.outer(counts.sum(1), counts.sum(0)) / total
    chance = float((w * expected).sum())
    if chance == 0.0:  # one category only: chance agreement is perfect, kappa is 0/0
        return float("nan")
    return 1.0 - float((w * counts).sum()) / chance


def cohen_kappa(
    first: Any, second: Any, *, weights: str | None = None, categories: Sequence[float] | None = None
) -> float:
    """Cohen's kappa of two raters, unweighted or with linear or quadratic weights.

    .. math:: \\kappa = 1 - \\frac{\\sum_{ij} w_{ij} O_{ij}}{\\sum_{ij} w_{ij} E_{ij}}

    with ``O`` the confusion matrix, ``E`` its product of marginals over ``n`` and ``w_ij`` 0 on the diagonal
    and 1 off it (unweighted), ``|i - j|`` (linear) or ``(i - j)**2`` (quadratic), ``i, j`` the category
    positions. Equals scikit-learn's ``cohen_kappa_score``.

    Parameters
    ----------
    first, second : sequence of numbers, None or NaN
        One label per item; items missing in either are left out.
    weights : {None, "linear", "quadratic"}, default=None
    categories : sequence of numbers, default=None
        The categories and their order (what the weights measure); by default the sorted labels seen.

    Returns
    -------
    float
        In [-1, 1]; 1 is perfect agreement, 0 chance agreement; ``nan`` when one category is all there is.

    References
    ----------
    J. Cohen, "A coefficient of agreement for nominal scales", 1960; "Weighted kappa", Psychological Bulletin 1968.

    Examples
    --------
    >>> round(cohen_kappa([0, 1, 2, 2], [0, 1, 1, 2]), 4)
    0.6364
    >>> round(cohen_kappa([0, 1, 2, 2], [0, 1, 1, 2], weights="quadratic"), 4)
    0.8
    >>> cohen_kappa([1, 1], [1, 1])
    nan
    """
    x, y = paired(first, second)
    return _kappa_of(_confusion(x, y, categories).counts, weights)


def _counts_table(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(items x categories counts, categories)`` of an items x raters label table (NaN = no label), built
    with one bincount rather than an items x raters x categories comparison (R times less memory)."""
    present = ~np.isnan(table)
    categories = np.unique(table[present])
    item = np.nonzero(present)[0]
    code = np.searchsorted(categories, table[present])
    size = len(categories)
    counts = np.bincount(item * size + code, minlength=len(table) * size).reshape(len(table), size)
    return counts, categories


def fleiss_kappa(table: Any, *, counts: bool = False) -> float:
    """Fleiss' kappa of a fixed number of raters per item.

    .. math:: \\kappa = \\frac{\\bar P - \\bar P_e}{1 - \\bar P_e},\\quad
        P_i = \\frac{\\sum_j n_{ij}^2 - m}{m(m-1)},\\quad \\bar P_e = \\sum_j p_j^2

    with ``n_ij`` the raters who put item ``i`` in category ``j``, ``m`` raters per item and ``p_j`` category
    ``j``'s share of all labels. Equals statsmodels' ``fleiss_kappa`` (with ``aggregate_raters``).

    Parameters
    ----------
    table : items x raters labels (None/NaN missing), or items x categories counts with ``counts=True``
        Every item needs the same number of labels (at least 2): raters may differ from item to item but their
        number may not. A table that breaks this raises :class:`InputError` (Krippendorff's alpha handles it).
    counts : bool, default=False

    Returns
    -------
    float
        At most 1; ``nan`` when every label is one category.

    References
    ----------
    J. L. Fleiss, "Measuring nominal scale agreement among many raters", Psychological Bulletin 1971.

    Examples
    --------
    >>> round(fleiss_kappa([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 2]]), 4)
    0.2683
    >>> round(fleiss_kappa([[3, 0], [2, 1]], counts=True), 4)
    -0.2
    """
    array = as_table(table, "fleiss table")
    n = array if counts else _counts_table(array)[0]
    if counts and ((n < 0).any() or np.isnan(n).any() or (n != np.round(n)).any()):
        raise InputError("fleiss table", "holds a count that is not a whole number >= 0", expected="counts")
    raters = n.sum(axis=1)
    if raters.min() != raters.max() or raters[0] < 2:
        raise InputError(
            "fleiss table",
            f"items carry between {int(raters.min())} and {int(raters.max())} labels",
            expected="the same number (at least 2) on every item",
            hint="Fleiss' kappa needs a fixed count; krippendorff_alpha takes missing labels",
        )
    m = float(raters[0])
    share = n.sum(axis=0) / n.sum()
    per_item = ((n * n).sum(axis=1) - m) / (m * (m - 1))
    chance = float((share * share).sum())
    if chance == 1.0:
        return float("nan")
    return (float(per_item.mean()) - chance) / (1.0 - chance)


def _distance(values: np.ndarray, marginals: np.ndarray, level: str) -> np.ndarray:
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    # ordinal: the marginals from c to k inclusive, less half of c's and k's own (Krippendorff 2011, eq. for ordinal)
    cumulative = np.concatenate([[0.0], np.cumsum(marginals)])
    low = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
    high = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
    between = cumulative[high + 1] - cumulative[low]
    return (between - (marginals[:, None] + marginals[None, :]) / 2.0) ** 2


def krippendorff_alpha(table: Any, *, level: str = "nominal") -> float:
    """Krippendorff's alpha of an items x raters table with missing labels (None or NaN).

    .. math:: \\alpha = 1 - (n - 1)\\frac{\\sum_{ck} o_{ck}\\,\\delta_{ck}}{\\sum_{ck} n_c n_k\\,\\delta_{ck}}

    with ``o`` the coincidence matrix (``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over items ``u``
    with ``m_u >= 2`` labels), ``n_c`` its marginals, ``n`` their sum and ``delta`` the level's distance:
    nominal ``[c != k]``; interval ``(c - k)**2``; ordinal ``(sum_{g=c..k} n_g - (n_c + n_k)/2)**2``. Items with
    fewer than two labels do not count. Equals the ``krippendorff`` package's ``alpha`` on the transpose.

    Parameters
    ----------
    table : items x raters numbers, None or NaN
    level : {"nominal", "ordinal", "interval"}, default="nominal"

    Returns
    -------
    float
        At most 1 (1 perfect, 0 chance, below 0 systematic disagreement); ``nan`` when one value is all there is.

    Raises
    ------
    InputError
        When no item has two labels.

    References
    ----------
    K. Krippendorff, "Computing Krippendorff's alpha-reliability", 2011.

    Examples
    --------
    >>> round(krippendorff_alpha([[1, 1, None], [2, 2, 2], [3, 3, 1], [None, 2, 2]]), 4)
    0.7097
    >>> round(krippendorff_alpha([[1, 1, None], [2, 2, 2], [3, 3, 1], [None, 2, 2]], level="interval"), 4)
    0.2653
    """
    if level not in LEVELS:
        raise ConventionError(
            f"The 'level' parameter of krippendorff_alpha must be one of {list(LEVELS)}. Got {level!r} instead."
        )
    array = as_table(table, "krippendorff table")
    n_uc, values = _counts_table(array)
    n_uc = n_uc.astype(float)
    m_u = n_uc.sum(axis=1)
    pairable = m_u >= 2
    if not pairable.any():
        raise InputError("krippendorff table", "has no item with two labels", expected="some item labelled twice")
    n_uc, m_u = n_uc[pairable], m_u[pairable]
    scaled = n_uc / (m_u - 1)[:, None]
    coincidence = scaled.T @ n_uc - np.diag(scaled.sum(axis=0))
    marginals = coincidence.sum(axis=1)
    delta = _distance(values, marginals, level)
    expected = float((np.outer(marginals, marginals) * delta).sum())
    if expected == 0.0:
        return float("nan")
    return 1.0 - (float(marginals.sum()) - 1.0) * float((coincidence * delta).sum()) / expected


@dataclass(frozen=True)
class AssessorFigures:
    """One assessor's figures in a table: how much they labelled and how they agree.

    ``kappa_with_others`` is the mean Cohen's kappa against each other assessor over the items both labelled
    (pairs sharing no item, or with an undefined kappa, left out of the mean; ``nan`` when none is left);
    ``kappa_with_reference`` is against the reference labels, ``None`` without a reference.
    """

    name: str
    labelled: int
    share_labelled: float
    label_counts: dict[float, int]
    kappa_with_others: float
    kappa_with_reference: float | None


def _kappa_or_nan(x: np.ndarray, y: np.ndarray, weights: str | None) -> float:
    both = ~(np.isnan(x) | np.isnan(y))
    if not both.any():
        return float("nan")
    return _kappa_of(_confusion(x[both], y[both], None).counts, weights)


def assessor_figures(
    table: Any,
    *,
    names: Sequence[str] | None = None,
    reference: Any = None,
    weights: str | None = None,
) -> tuple[AssessorFigures, ...]:
    """Per-assessor figures of an items x raters table: labels given, their share of the items, the count of
    each label, the mean Cohen's kappa against the other assessors and the kappa against a reference.

    Parameters
    ----------
    table : items x raters numbers, None or NaN
    names : sequence of str, default=None
        One per column; ``rater0, rater1, ...`` by default.
    reference : sequence of numbers, None or NaN, default=None
        One label per item (a gold standard or a judge).
    weights : {None, "linear", "quadratic"}, default=None

    Examples
    --------
    >>> a, b = assessor_figures([[0, 0], [1, 1], [1, None], [2, 1]], names=["ann", "bob"])
    >>> a.labelled, a.share_labelled, a.label_counts, round(a.kappa_with_others, 4)
    (4, 1.0, {0.0: 1, 1.0: 2, 2.0: 1}, 0.5)
    """
    array = as_table(table, "assessor table")
    labels = names_of(names, array.shape[1])
    _weight_matrix(1, weights)
    ref = None if reference is None else as_labels(reference, "reference")
    if ref is not None and len(ref) != len(array):
        raise InputError("reference", f"has {len(ref)} labels for {len(array)} items", expected="one per item")
    out = []
    for column, name in enumerate(labels):
        mine = array[:, column]
        given = mine[~np.isnan(mine)]
        values, counts = np.unique(given, return_counts=True)
        others = [_kappa_or_nan(mine, array[:, j], weights) for j in range(array.shape[1]) if j != column]
        others = [k for k in others if not np.isnan(k)]
        out.append(
            AssessorFigures(
                name=name,
                labelled=len(given),
                share_labelled=len(given) / len(array),
                label_counts={float(v): int(c) for v, c in zip(values, counts, strict=True)},
                kappa_with_others=float(np.mean(others)) if others else float("nan"),
                kappa_with_reference=None if ref is None else _kappa_or_nan(mine, ref, weights),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class QrelsAgreement:
    """The agreement of two qrels on the (query, document) pairs both judged.

    ``relevance_level`` is ``None`` for graded agreement; with a level, labels were made binary first
    (relevant when ``label >= relevance_level``).
    """

    both: int
    only_first: int
    only_second: int
    kappa: float
    weights: str | None
    relevance_level: int | None
    confusion: Confusion


def qrels_agreement(
    first: Any, second: Any, *, weights: str | None = None, relevance_level: int | None = None
) -> QrelsAgreement:
    """Align two qrels on the pairs judged by both and give Cohen's kappa and the confusion matrix, with how
    many pairs only one of them judged.

    Parameters
    ----------
    first, second : Qrels or anything ``read_qrels`` takes (a path, a ``{query: {doc: label}}`` dict, ...)
    weights : {None, "linear", "quadratic"}, default=None
    relevance_level : int, default=None
        Binary agreement: a label ``>= relevance_level`` is relevant (1), else 0.

    Raises
    ------
    InputError
        When no pair is judged by both.

    Examples
    --------
    >>> a = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 1}}
    >>> b = {"q1": {"d1": 1, "d2": 0, "d4": 1}, "q2": {"d1": 1}}
    >>> r = qrels_agreement(a, b)
    >>> r.both, r.only_first, r.only_second, r.confusion.counts.tolist()
    (3, 1, 1, [[1, 0, 0], [0, 1, 0], [0, 1, 0]])
    >>> qrels_agreement(a, b, relevance_level=1).kappa
    1.0
    """
    if relevance_level is not None and not isinstance(relevance_level, int | np.integer):
        raise ConventionError(
            f"The 'relevance_level' parameter of qrels_agreement must be an int. Got {relevance_level!r} instead."
        )
    keys_a, labels_a = qrels_pairs(first, "first qrels")
    keys_b, labels_b = qrels_pairs(second, "second qrels")
    _, ia, ib = np.intersect1d(keys_a, keys_b, assume_unique=True, return_indices=True)
    if len(ia) == 0:
        raise InputError("qrels", "the two qrels judge no (query, document) pair in common", expected="some overlap")
    x, y = labels_a[ia].astype(float), labels_b[ib].astype(float)
    if relevance_level is not None:
        x, y = (x >= relevance_level).astype(float), (y >= relevance_level).astype(float)
    confusion = _confusion(x, y, (0.0, 1.0) if relevance_level is not None else None)
    return QrelsAgreement(
        both=len(ia),
        only_first=len(keys_a) - len(ia),
        only_second=len(keys_b) - len(ib),
        kappa=_kappa_of(confusion.counts, weights),
        weights=weights,
        relevance_level=relevance_level,
        confusion=confusion,
    )
