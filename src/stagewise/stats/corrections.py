"""Multiple-comparison corrections: adjusted p-values for a family of m tests.

Each correction maps the family's raw p-values to adjusted ones, so a comparison is significant at level
alpha when its adjusted p-value is below alpha. The numbers are those of statsmodels' ``multipletests``.
The functions are registered, with their names, aliases and labels, in
:data:`stagewise.stats.catalogue.CORRECTIONS` (what ``compare(correction=...)`` and ``--correction`` accept).

=============  ===============================================================================  ==========
name           adjusted p-value, with p_(1) <= ... <= p_(m) the sorted raw p-values              controls
=============  ===============================================================================  ==========
``none``       p                                                                                 nothing
``bonferroni`` min(1, m p)                                                                       FWER
``holm``       max over j <= i of min(1, (m - j + 1) p_(j))  (Holm 1979, step-down)              FWER
``bh``         min over j >= i of min(1, m p_(j) / j)  (Benjamini & Hochberg 1995, step-up)      FDR
``holm-sidak`` max over j <= i of 1 - (1 - p_(j))^(m - j + 1)  (Holm 1979 with Sidak's bound)     FWER
``by``         min over j >= i of min(1, c_m m p_(j) / j), c_m = sum_k 1/k  (Benjamini &          FDR, any
               Yekutieli 2001, step-up)                                                          dependence
=============  ===============================================================================  ==========
"""

from __future__ import annotations

import numpy as np

from stagewise.stats.catalogue import CORRECTIONS


def none(p: np.ndarray) -> np.ndarray:
    """No correction: the raw p-values."""
    return np.asarray(p, dtype=np.float64).copy()


def bonferroni(p: np.ndarray) -> np.ndarray:
    """Bonferroni: ``min(1, m p)``.

    >>> bonferroni([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.12, 0.09]
    """
    p = np.asarray(p, dtype=np.float64)
    return np.minimum(1.0, p * len(p))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down: the i-th smallest p becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``.

    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    return _step_down(p, lambda sorted_p, left: np.minimum(1.0, left * sorted_p))


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg's step-up: the i-th smallest p becomes ``min_{j >= i} min(1, m p_(j) / j)``.

    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.02, 0.04, 0.04, 0.02]
    """
    return _step_up(p, 1.0)


def holm_sidak(p: np.ndarray) -> np.ndarray:
    """Holm-Sidak step-down: the i-th smallest p becomes ``max_{j <= i} 1 - (1 - p_(j))^(m - j + 1)``.

    Slightly more powerful than Holm when the tests are independent or positively dependent.

    >>> [round(v, 6) for v in holm_sidak([0.01, 0.04, 0.03, 0.005]).tolist()]
    [0.029701, 0.0591, 0.0591, 0.01985]
    """

    def sidak(sorted_p: np.ndarray, left: np.ndarray) -> np.ndarray:
        # -expm1(k log1p(-p)) is 1 - (1 - p)^k without the cancellation of small p; p = 1 gives log1p(-1) = -inf
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, -np.expm1(left * np.log1p(-sorted_p)))

    return _step_down(p, sidak)


def _step_down(p: np.ndarray, scale) -> np.ndarray:
    """The step-down of Holm and Holm-Sidak: ``scale(p_(j), m - j + 1)`` for the sorted p, then the running
    maximum, back in input order."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    out = np.empty(m)
    out[order] = np.maximum.accumulate(scale(p[order], m - np.arange(m)))
    return out


def benjamini_yekutieli(p: np.ndarray) -> np.ndarray:
    """Benjamini-Yekutieli: BH with ``m`` replaced by ``m * sum_{k=1}^m 1/k``; controls the FDR under any dependence.

    >>> [round(v, 6) for v in benjamini_yekutieli([0.01, 0.04, 0.03, 0.005]).tolist()]
    [0.041667, 0.083333, 0.083333, 0.041667]
    """
    m = len(np.asarray(p))
    return _step_up(p, float((1.0 / np.arange(1, m + 1)).sum()))


def _step_up(p: np.ndarray, factor: float) -> np.ndarray:
    """The step-up of BH (``factor`` 1) and BY (``factor`` the harmonic sum): the i-th smallest p becomes
    ``min_{j >= i} min(1, factor m p_(j) / j)``."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * m * factor / np.arange(1, m + 1))
    out = np.empty(m)
    out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return out


def canonical(name: str) -> str:
    """The canonical name of a correction (``holm``, ``bh``, ...), accepting the usual spellings (the aliases of
    :data:`~stagewise.stats.catalogue.CORRECTIONS`); an unknown name is an error listing the corrections."""
    return CORRECTIONS.lookup(str(name)).name


def adjust(p, method: str = "holm") -> np.ndarray:
    """Adjusted p-values of one family under ``method`` (see :data:`CORRECTIONS`).

    >>> adjust([0.01, 0.02, 0.03, 0.04], "bh").tolist()
    [0.04, 0.04, 0.04, 0.04]
    """
    return CORRECTIONS.lookup(str(method))(np.asarray(p, dtype=np.float64))
