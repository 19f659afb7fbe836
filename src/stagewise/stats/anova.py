"""Analysis of variance for many systems on one topic set: two-way ANOVA without replication, and one-way.

Every function takes a score matrix ``X`` of shape ``(n, m)``: one row per topic, one column per system, so
``X[i, j]`` is system ``j``'s score on topic ``i``. Every system ran on every topic, which is why the
two-way model is the right one (Sakai, *Statistical Reformation of IR Evaluation*, ch. 4):

    x_ij = mu + a_j (system effect) + b_i (topic effect) + e_ij,   one observation per cell.

With ``xbar`` the grand mean, ``xbar_.j`` the system means and ``xbar_i.`` the topic means:

=========  =================================================  ===============
source     sum of squares                                     df
=========  =================================================  ===============
systems    S_A = n * sum_j (xbar_.j - xbar)^2                 phi_A = m - 1
topics     S_B = m * sum_i (xbar_i. - xbar)^2                 phi_B = n - 1
residual   S_E = sum_ij (x_ij - xbar_i. - xbar_.j + xbar)^2   phi_E = (m-1)(n-1)
=========  =================================================  ===============

``V = S / phi`` are the mean squares, ``F_A = V_A / V_E`` with p from F(phi_A, phi_E) (likewise for
topics). The residual variance ``V_E`` gives every system a confidence interval, ``xbar_.j +- t(phi_E;
alpha/2) sqrt(V_E / n)``, and every pair an effect size, ``ES_E2 = (xbar_.j - xbar_.k) / sqrt(V_E)``
(Sakai's book, sections 4.4 and 5.2). The table equals statsmodels' ``anova_lm(ols('score ~ C(topic) +
C(system)'))`` (checked to 1e-9 in tests/test_stats_anova.py).

scipy is imported when a p-value or a t quantile is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.errors import InputError


def as_matrix(scores, source: str = "scores", min_topics: int = 2, min_systems: int = 2) -> np.ndarray:
    """``scores`` as a finite float64 ``(topics, systems)`` matrix, or an :class:`InputError` saying why not.

    >>> as_matrix([[0.1, 0.2], [0.3, 0.4]]).shape
    (2, 2)
    """
    try:
        x = np.array(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(source, f"the scores are not a numeric matrix ({exc})", expected="topics x systems") from None
    if x.ndim != 2:
        raise InputError(source, f"the scores have {x.ndim} dimension(s)", expected="a topics x systems matrix")
    n, m = x.shape
    if n < min_topics or m < min_systems:
        raise InputError(
            source,
            f"the score matrix is {n} topics x {m} systems",
            expected=f"at least {min_topics} topics and {min_systems} systems",
        )
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        i, j = bad[0]
        raise InputError(
            source,
            f"score of system {j} on topic {i} is {x[i, j]!r}",
            expected="finite numbers",
            hint="evaluate every system on every topic",
        )
    return x


@dataclass(frozen=True)
class AnovaRow:
    """One line of an ANOVA table; ``f`` and ``p`` are nan on the residual line."""

    source: str
    ss: float
    df: int
    ms: float
    f: float
    p: float


@dataclass(frozen=True)
class Anova:
    """An ANOVA table with the numbers the intervals and effect sizes need."""

    rows: tuple[AnovaRow, ...]
    means: np.ndarray  # per system
    n_topics: int
    n_systems: int

    def row(self, source: str) -> AnovaRow:
        """The line for ``source`` (``systems``, ``topics`` or ``residual``)."""
        for r in self.rows:
            if r.source == source:
                return r
        raise KeyError(source)

    @property
    def residual_variance(self) -> float:
        """``V_E``, the residual mean square."""
        return self.row("residual").ms

    @property
    def residual_df(self) -> int:
        """``phi_E``, the residual degrees of freedom."""
        return self.row("residual").df


def _f_row(source: str, ss: float, df: int, ms_e: float, df_e: int) -> AnovaRow:
    from scipy import stats

    ms = ss / df
    with np.errstate(divide="ignore", invalid="ignore"):
        f = ms / ms_e
    p = float(stats.f.sf(f, df, df_e)) if np.isfinite(f) else (0.0 if f > 0 else float("nan"))
    return AnovaRow(source, float(ss), df, float(ms), float(f), p)


def two_way_anova(scores, source: str = "scores") -> Anova:
    """Two-way ANOVA without replication (systems x topics) of a ``(topics, systems)`` score matrix.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> t = two_way_anova(x)
    >>> [(r.source, round(r.ss, 4), r.df) for r in t.rows]
    [('systems', 0.1017, 2), ('topics', 0.2067, 3), ('residual', 0.0383, 6)]
    >>> round(t.row("systems").f, 2), round(t.row("systems").p, 4)
    (7.96, 0.0205)
    """
    x = as_matrix(scores, source)
    n, m = x.shape
    grand = x.mean()
    sys_means = x.mean(axis=0)
    topic_means = x.mean(axis=1)
    ss_a = n * float(((sys_means - grand) ** 2).sum())
    ss_b = m * float(((topic_means - grand) ** 2).sum())
    # The residual is summed directly, not as S_T - S_A - S_B, so it keeps its precision when it is tiny.
    ss_e = float(((x - topic_means[:, None] - sys_means[None, :] + grand) ** 2).sum())
    df_e = (m - 1) * (n - 1)
    ms_e = ss_e / df_e
    rows = (
        _f_row("systems", ss_a, m - 1, ms_e, df_e),
        _f_row("topics", ss_b, n - 1, ms_e, df_e),
        AnovaRow("residual", ss_e, df_e, ms_e, float("nan"), float("nan")),
    )
    return Anova(rows, sys_means, n, m)


def one_way_anova(scores, source: str = "scores") -> Anova:
    """One-way ANOVA treating the topics as independent replicates (it ignores the topic effect).

    Shown for comparison: it is what ``scipy.stats.f_oneway`` (and tools built on it) compute, and its
    residual absorbs the topic variance, so it is far less sensitive than :func:`two_way_anova` on IR data.
    ``S_A`` as above, ``S_W = sum_ij (x_ij - xbar_.j)^2`` with ``phi_W = m (n - 1)``.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> t = one_way_anova(x)
    >>> [(r.source, round(r.ss, 4), r.df) for r in t.rows]
    [('systems', 0.1017, 2), ('residual', 0.245, 9)]
    """
    x = as_matrix(scores, source)
    n, m = x.shape
    sys_means = x.mean(axis=0)
    ss_a = n * float(((sys_means - x.mean()) ** 2).sum())
    ss_w = float(((x - sys_means[None, :]) ** 2).sum())
    df_w = m * (n - 1)
    ms_w = ss_w / df_w
    rows = (
        _f_row("systems", ss_a, m - 1, ms_w, df_w),
        AnovaRow("residual", ss_w, df_w, ms_w, float("nan"), float("nan")),
    )
    return Anova(rows, sys_means, n, m)


@dataclass(frozen=True)
class Intervals:
    """Per-system means with their confidence intervals from the ANOVA residual variance."""

    means: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    margin: float
    confidence: float


def system_intervals(scores, confidence: float = 0.95, source: str = "scores") -> Intervals:
    """Each system's mean +- ``t(phi_E; (1 - confidence)/2) * sqrt(V_E / n)`` (Sakai's book, section 4.4).

    All systems share one margin: the residual variance pools the whole matrix, which makes the intervals
    narrower and more stable than per-system ``sd / sqrt(n)`` intervals.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> ci = system_intervals(x)
    >>> round(ci.margin, 4), [round(float(v), 4) for v in ci.lower]
    (0.0978, [0.1522, 0.2772, 0.3772])
    """
    from scipy import stats

    if not 0.0 < float(confidence) < 1.0:
        raise InputError(source, f"confidence {confidence!r} is outside (0, 1)", expected="e.g. 0.95")
    table = two_way_anova(scores, source)
    t = float(stats.t.isf((1.0 - confidence) / 2.0, table.residual_df))
    margin = t * float(np.sqrt(table.residual_variance / table.n_topics))
    return Intervals(table.means, table.means - margin, table.means + margin, margin, float(confidence))


def effect_sizes(scores, source: str = "scores") -> np.ndarray:
    """The ``(m, m)`` matrix of ``ES_E2[j, k] = (xbar_.j - xbar_.k) / sqrt(V_E)`` (Sakai's book, section 5.2).

    A standardised mean difference whose unit is the residual standard deviation of the two-way ANOVA,
    comparable across pairs; infinite where ``V_E`` is 0 and the means differ.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> round(float(effect_sizes(x)[2, 0]), 3)
    2.815
    """
    table = two_way_anova(scores, source)
    diff = table.means[:, None] - table.means[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        es = diff / np.sqrt(table.residual_variance)
    return np.where(diff == 0, 0.0, es)
