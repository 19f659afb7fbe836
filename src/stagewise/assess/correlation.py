"""Rank correlations between two orderings of systems (Kendall's tau-b, tau_ap, Spearman's rho) and rank-biased
overlap between two rankings.

Scores come as ``{system: score}`` dicts (aligned on the system names, which must be the same on both sides) or
as two score sequences of one length (aligned by position). A higher score ranks first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagewise.errors import ConventionError, InputError

__all__ = ["RBO", "kendall_tau", "rbo", "spearman_rho", "tau_ap"]


def _scores(first: Any, second: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(first, Mapping) != isinstance(second, Mapping):
        raise InputError("scores", "one side is a {system: score} mapping and the other is not", expected="both alike")
    if isinstance(first, Mapping):
        if set(first) != set(second):
            only = sorted(set(first) ^ set(second), key=str)
            raise InputError("scores", f"the systems differ: {only[:5]} are on one side only", expected="the same")
        names = sorted(first, key=str)
        x, y = [first[n] for n in names], [second[n] for n in names]
    else:
        x, y = list(first), list(second)
    try:
        a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise InputError("scores", "hold a value that is not a number", expected="one number per system") from None
    if a.ndim != 1 or len(a) != len(b):
        raise InputError("scores", f"the two sides differ in length ({len(a)} and {len(b)})", expected="one each")
    if len(a) < 2:
        raise InputError("scores", f"rank {len(a)} system(s)", expected="at least 2 systems")
    if np.isnan(a).any() or np.isnan(b).any():
        raise InputError("scores", "hold NaN", expected="a score for every system")
    return a, b


def kendall_tau(first: Any, second: Any) -> float:
    """Kendall's tau-b of two orderings (as ``scipy.stats.kendalltau`` gives).

    .. math:: \\tau_b = \\frac{P - Q}{\\sqrt{(P + Q + T_x)(P + Q + T_y)}}

    ``P`` concordant pairs, ``Q`` discordant, ``T_x``/``T_y`` pairs tied in one ordering only. In [-1, 1];
    ``nan`` when one side has every score equal.

    Examples
    --------
    >>> round(kendall_tau({"a": 3, "b": 2, "c": 1, "d": 0}, {"a": 2, "b": 3, "c": 1, "d": 0}), 4)
    0.6667
    """
    from scipy.stats import kendalltau  # scipy is slow to import

    a, b = _scores(first, second)
    return float(kendalltau(a, b).statistic)


def spearman_rho(first: Any, second: Any) -> float:
    """Spearman's rho: Pearson's correlation of the ranks (ties given their mean rank), as
    ``scipy.stats.spearmanr``. In [-1, 1]; ``nan`` when one side has every score equal.

    Examples
    --------
    >>> round(spearman_rho([4, 3, 2, 1], [3, 4, 2, 1]), 4)
    0.8
    """
    from scipy.stats import spearmanr

    a, b = _scores(first, second)
    if len(np.unique(a)) == 1 or len(np.unique(b)) == 1:  # undefined: scipy warns and gives nan; we only give nan
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _tau_ap_one_way(truth: np.ndarray, estimate: np.ndarray) -> float:
    order = np.argsort(-estimate, kind="stable")
    ranked_truth = truth[order]
    # above[i, j]: the system at estimated rank j sits above rank i and the truth agrees (ranks it higher)
    above = np.tril(ranked_truth[None, :] > ranked_truth[:, None], k=-1)
    correct = above.sum(axis=1)[1:]
    n = len(truth)
    return float(2.0 / (n - 1) * (correct / np.arange(1, n)).sum() - 1.0)


def tau_ap(truth: Any, estimate: Any, *, symmetric: bool = False) -> float:
    """AP rank correlation (tau_ap) of Yilmaz, Aslam and Robertson: Kendall's tau with errors near the top
    weighing more.

    .. math:: \\tau_{AP} = \\frac{2}{N - 1} \\sum_{i=2}^{N} \\frac{C(i)}{i - 1} - 1

    with the systems ordered by ``estimate`` and ``C(i)`` the systems above rank ``i`` that ``truth`` also ranks
    above the system at rank ``i``. The measure is asymmetric: ``estimate`` is the ordering judged against
    ``truth``. With ``symmetric=True`` it is the mean of both directions (the paper's symmetric form).

    Parameters
    ----------
    truth, estimate : {system: score} mappings or score sequences
    symmetric : bool, default=False

    Returns
    -------
    float
        In [-1, 1]; 1 when the orderings agree.

    Raises
    ------
    ConventionError
        When either side has tied scores: the paper defines tau_ap for orderings without ties, and its
        tie-aware variants (tau_ap_a, tau_ap_b of Urbano and Marrero, 2017) are not implemented.

    References
    ----------
    E. Yilmaz, J. A. Aslam and S. Robertson, "A new rank correlation coefficient for information retrieval",
    SIGIR 2008.

    Examples
    --------
    A swap at the top costs more than the same swap at the bottom (Kendall's tau gives 2/3 for both):

    >>> truth = [4, 3, 2, 1]
    >>> round(tau_ap(truth, [3, 4, 2, 1]), 4), round(tau_ap(truth, [4, 3, 1, 2]), 4)
    (0.3333, 0.7778)
    """
    a, b = _scores(truth, estimate)
    for side, values in (("truth", a), ("estimate", b)):
        if len(np.unique(values)) != len(values):
            raise ConventionError(f"tau_ap needs an ordering without ties; the {side} scores tie (see tau_ap's docs)")
    if symmetric:
        return (_tau_ap_one_way(a, b) + _tau_ap_one_way(b, a)) / 2.0
    return _tau_ap_one_way(a, b)


@dataclass(frozen=True)
class RBO:
    """Rank-biased overlap of two prefixes: ``min`` (no further overlap below them), ``res`` (the residual,
    ``max - min``), ``ext`` (the point estimate extrapolated from the seen agreement), at persistence ``p``."""

    min: float
    res: float
    ext: float
    p: float

    @property
    def max(self) -> float:
        return self.min + self.res


def _ranking(items: Any, name: str) -> list:
    if isinstance(items, Mapping):
        scores = np.asarray(list(items.values()), dtype=float)
        if len(np.unique(scores)) != len(scores):
            raise ConventionError(
                f"rbo got tied scores in the {name} ranking; ties (Webber et al. section 4.3) are not handled: "
                "order the items yourself"
            )
        keys = list(items)
        return [keys[i] for i in np.argsort(-scores, kind="stable")]
    ranking = list(items)
    if len(set(ranking)) != len(ranking):
        raise InputError(name, "lists an item twice", expected="each item once, best first")
    return ranking


def _overlaps(short: Sequence, long: Sequence) -> np.ndarray:
    """``X_d`` for d = 1..len(long): items common to ``short[:d]`` and ``long[:d]``."""
    rank_long = {item: r for r, item in enumerate(long, 1)}
    depth = np.array([max(r, rank_long[i]) for r, i in enumerate(short, 1) if i in rank_long], dtype=np.int64)
    return np.cumsum(np.bincount(depth, minlength=len(long) + 1)[1:]).astype(float)


def rbo(first: Any, second: Any, *, p: float = 0.9) -> RBO:
    """Rank-biased overlap (Webber, Moffat and Zobel) of two rankings, possibly of different lengths.

    With ``s <= l`` the two lengths, ``X_d`` the overlap of the prefixes at depth ``d`` (the shorter list
    counted whole past ``s``) and ``w = (1 - p) / p``:

    .. math::
        RBO_{min} = w \\left(\\sum_{d=1}^{l} \\frac{(X_d - X_l)\\,p^d}{d} - X_l \\ln(1-p)\\right)

        RBO_{ext} = w \\left(\\sum_{d=1}^{l} \\frac{X_d}{d} p^d + \\sum_{d=s+1}^{l} \\frac{X_s (d-s)}{s d}
        p^d\\right) + \\left(\\frac{X_l - X_s}{l} + \\frac{X_s}{s}\\right) p^l

    and ``RBO_res = RBO_max - RBO_min`` by the paper's closed form, with ``f = l + s - X_l`` the depth at
    which every seen item could be matched (equations 11, 30 and 32 of the paper; ``RBO_min`` is equation 11
    with ``k = l``, the least the unseen continuation can give).

    Parameters
    ----------
    first, second : sequence of item ids (best first, each once) or {item: score} mapping
        Tied scores raise :class:`ConventionError`: the paper's section 4.3 tie handling is not implemented.
    p : float in (0, 1), default=0.9
        Persistence: the weight of the top ``d`` ranks is ``1 - p**d``.

    Returns
    -------
    RBO
        Each in [0, 1]; ``min <= ext <= max``. Identical lists give ``ext == 1``, disjoint ones ``ext == 0``.

    References
    ----------
    W. Webber, A. Moffat and J. Zobel, "A similarity measure for indefinite rankings", ACM TOIS 28(4), 2010.

    Examples
    --------
    >>> r = rbo(["a", "b", "c"], ["b", "a", "d"], p=0.9)
    >>> round(r.ext, 4), round(r.min, 4), round(r.max, 4)
    (0.63, 0.3117, 0.873)
    >>> rbo(["a", "b"], ["a", "b"]).ext, rbo(["a"], ["z", "y"]).ext
    (1.0, 0.0)
    """
    if not (isinstance(p, int | float) and 0.0 < p < 1.0):
        raise ConventionError(f"The 'p' parameter of rbo must be a float in (0, 1). Got {p!r} instead.")
    a, b = _ranking(first, "first"), _ranking(second, "second")
    if not a or not b:
        raise InputError("rbo", "got an empty ranking", expected="at least one item on each side")
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, n_long = len(short), len(long)
    x = _overlaps(short, long)
    d = np.arange(1, n_long + 1, dtype=float)
    weights = p**d / d
    x_s, x_l = x[s - 1], x[n_long - 1]
    w = (1.0 - p) / p
    low = w * (float(((x - x_l) * weights).sum()) - x_l * math.log(1.0 - p))
    tail = d > s
    extra = float((x_s * (d[tail] - s) / (s * d[tail]) * p ** d[tail]).sum())
    ext = w * (float((x * weights).sum()) + extra) + ((x_l - x_s) / n_long + x_s / s) * p**n_long
    return RBO(min=float(low), res=float(_residual(s, n_long, float(x_l), p)), ext=float(ext), p=float(p))


def _residual(s: int, n_long: int, x_l: float, p: float) -> float:
    """Equation 30 of Webber et al.: the most the unseen continuation can add."""
    f = math.ceil(n_long + s - x_l)
    depth = np.arange(1, f + 1, dtype=float)
    terms = p**depth / depth
    term_s = s * float(terms[s:].sum())
    term_l = n_long * float(terms[n_long:].sum())
    term_x = x_l * (math.log(1.0 / (1.0 - p)) - float(terms.sum()))
    return p**s + p**n_long - p**f - (1.0 - p) / p * (term_s + term_l + term_x)
