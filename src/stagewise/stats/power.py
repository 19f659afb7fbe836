"""Topic-set-size design: how many topics a test collection needs (Sakai, Information Retrieval Journal 19(3), 2016).

Given a significance level ``alpha``, a type II error rate ``beta`` (power ``1 - beta``), a minimum
difference worth detecting and a variance estimate, each design returns the smallest number of topics ``n``
whose power (or expected interval width) meets the target. The power functions are exact, from the
noncentral t and F distributions (``scipy.stats.nct``, ``ncf``); Sakai's Excel tools iterate ``n`` upward
from a normal approximation with an approximate power, so they can differ from these by a topic or so.
Power grows with ``n``, so the smallest ``n`` is found by doubling then bisection, which gives the same
``n`` as the upward iteration.

Designs (``sigma2`` is the variance of one system's score, ``V_E`` of the two-way ANOVA):

- paired t-test (:func:`topics_for_t_test`): ``Delta = minD / sigma_t`` with ``sigma_t^2`` the variance of
  the score *differences* (estimate ``2 V_E``); two-sided power at ``n`` is ``P(|T'| >= t(n-1; alpha/2))``
  with ``T' ~ nct(n - 1, sqrt(n) Delta)``.
- one-way ANOVA over ``m`` systems (:func:`topics_for_anova`): the worst case where two systems differ by
  ``minD`` and the others sit at their midpoint, ``lambda = n minD^2 / (2 sigma^2)``; power is
  ``P(F' >= F(m-1, m(n-1); alpha))`` with ``F' ~ ncf(m-1, m(n-1), lambda)``.
- confidence-interval width (:func:`topics_for_ci_width`): the smallest ``n`` whose *expected* width
  ``2 t(n-1; alpha/2) E[s] / sqrt(n)`` is at most ``delta``, with ``E[s] = sigma sqrt(2/(n-1))
  Gamma(n/2) / Gamma((n-1)/2)``.

The front door is :func:`topic_set_size` (a design of :data:`DESIGNS` by name, the within-system variance
``V`` stated or a :class:`VarianceEstimate` from :func:`estimate_variance`), which returns a
:class:`TopicSetSize` holding the answer and every input; ``stagewise power topics`` prints it. This module
imports no numpy until a number is computed (the command line reads :data:`DESIGNS` for its help).

The tests check every n against statsmodels' independent ``TTestPower`` and ``FTestAnovaPower`` (power at
``n`` reaches the target and at ``n - 1`` does not); Sakai's published table values were not available to
this implementation, so they are not what it was checked against.

>>> r = topic_set_size("ci", 0.1, 0.05)
>>> r.topics, r.label, r.design_variance
(156, 'confidence interval width', 0.1)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise._lazy import LazyModule
from stagewise.errors import ConventionError, InputError
from stagewise.spec import Registry

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:
    # numpy on first use: DESIGNS below is read by ``stagewise power topics --help``, which should not pay for it
    np = LazyModule(globals(), "np", "numpy")

_MAX_TOPICS = 10_000_000


def _number(value: Any, what: str, expected: str) -> float:
    """``value`` as a float, or an :class:`InputError` naming ``what`` (a string or None is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError("power", f"{what} {value!r} is not a number", expected=expected)
    return float(value)


def _check(alpha: float, beta: float, diff: float, variance: float) -> None:
    import math

    alpha = _number(alpha, "alpha", "e.g. 0.05")
    beta = _number(beta, "beta", "e.g. 0.20")
    diff = _number(diff, "the minimum difference", "e.g. 0.05")
    variance = _number(variance, "the variance", "e.g. 0.01")
    if not 0.0 < alpha < 1.0:
        raise InputError("power", f"alpha {alpha!r} is outside (0, 1)", expected="e.g. 0.05")
    if not 0.0 < beta < 1.0:
        raise InputError("power", f"beta {beta!r} is outside (0, 1)", expected="e.g. 0.20")
    if not (math.isfinite(diff) and diff > 0):
        raise InputError(
            "power", f"the minimum difference {diff!r} is not a positive finite number", expected="e.g. 0.05"
        )
    if not (math.isfinite(variance) and variance > 0):
        raise InputError(
            "power", f"the variance {variance!r} is not a positive finite number", hint="estimate it from runs"
        )


def _smallest_n(meets: Callable[[int], bool], low: int = 2) -> int:
    """The smallest ``n >= low`` with ``meets(n)``, for a ``meets`` that stays true once true."""
    if meets(low):
        return low
    hi = low
    while not meets(hi):
        lo, hi = hi, hi * 2
        if hi > _MAX_TOPICS:
            raise InputError("power", f"more than {_MAX_TOPICS:,} topics would be needed", hint="raise minD")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def t_test_power(n: int, effect: float, alpha: float = 0.05) -> float:
    """Exact two-sided power of the paired t-test with ``n`` topics and ``effect = minD / sigma_t``.

    >>> round(t_test_power(50, 0.4), 4)
    0.7918
    """
    from scipy import stats

    df = n - 1
    tc = stats.t.isf(alpha / 2.0, df)
    lam = np.sqrt(n) * effect
    return float(stats.nct.sf(tc, df, lam) + stats.nct.cdf(-tc, df, lam))


def topics_for_t_test(min_diff: float, variance: float, alpha: float = 0.05, beta: float = 0.20) -> int:
    """Topics for a two-sided paired t-test to detect ``min_diff`` with power ``1 - beta``.

    ``variance`` is that of the per-topic score differences (``2 V_E`` from :func:`variance_from_runs`).

    >>> topics_for_t_test(0.1, 0.1)
    81
    """
    _check(alpha, beta, min_diff, variance)
    effect = min_diff / np.sqrt(variance)
    return _smallest_n(lambda n: t_test_power(n, effect, alpha) >= 1.0 - beta)


def anova_power(n: int, systems: int, min_diff: float, variance: float, alpha: float = 0.05) -> float:
    """Exact power of the one-way ANOVA over ``systems`` systems and ``n`` topics (the worst case above).

    >>> round(anova_power(100, 5, 0.1, 0.05), 4)
    0.7113
    """
    from scipy import stats

    df1, df2 = systems - 1, systems * (n - 1)
    lam = n * min_diff**2 / (2.0 * variance)
    return float(stats.ncf.sf(stats.f.isf(alpha, df1, df2), df1, df2, lam))


def topics_for_anova(systems: int, min_diff: float, variance: float, alpha: float = 0.05, beta: float = 0.20) -> int:
    """Topics for a one-way ANOVA over ``systems`` systems to detect a best-worst gap ``min_diff``.

    ``variance`` is one system's score variance (``V_E`` from :func:`variance_from_runs`).

    >>> topics_for_anova(5, 0.1, 0.05)
    121
    """
    _check(alpha, beta, min_diff, variance)
    if isinstance(systems, bool) or not isinstance(systems, (int, np.integer)) or systems < 2:
        raise InputError("power", f"{systems!r} systems", expected="an int >= 2")
    return _smallest_n(lambda n: anova_power(n, int(systems), min_diff, variance, alpha) >= 1.0 - beta)


def expected_ci_width(n: int, variance: float, alpha: float = 0.05) -> float:
    """Expected width ``2 t(n-1; alpha/2) E[s] / sqrt(n)`` of the t interval of a mean over ``n`` topics.

    >>> round(expected_ci_width(100, 0.1), 4)
    0.1252
    """
    from scipy import special, stats

    c4 = np.sqrt(2.0 / (n - 1)) * np.exp(special.gammaln(n / 2.0) - special.gammaln((n - 1) / 2.0))
    return float(2.0 * stats.t.isf(alpha / 2.0, n - 1) * c4 * np.sqrt(variance / n))


def topics_for_ci_width(width: float, variance: float, alpha: float = 0.05) -> int:
    """Topics for the expected width of the ``1 - alpha`` interval to be at most ``width``.

    ``variance`` is that of the quantity the interval is on (``2 V_E`` for a difference between systems).

    >>> topics_for_ci_width(0.1, 0.1)
    156
    """
    _check(alpha, 0.5, width, variance)
    return _smallest_n(lambda n: expected_ci_width(n, variance, alpha) <= width)


def variance_from_runs(matrices: Sequence) -> float:
    """Pooled residual variance ``sum_C (n_C - 1) V_E,C / sum_C (n_C - 1)`` of one or more score matrices.

    Each matrix is ``(topics, systems)`` from one test collection (Sakai 2016, section 4). Use it as
    ``variance`` for :func:`topics_for_anova` and twice it for :func:`topics_for_t_test` and a difference's
    :func:`topics_for_ci_width`.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5]]
    >>> round(variance_from_runs([x]), 5)
    0.00639
    """
    from stagewise.stats.anova import two_way_anova

    if len(matrices) == 0:
        raise InputError("power", "no score matrices were given", expected="at least one topics x systems matrix")
    tables = [two_way_anova(x, f"matrix {i}") for i, x in enumerate(matrices)]
    weights = np.array([t.n_topics - 1 for t in tables], dtype=np.float64)
    return float((weights * np.array([t.residual_variance for t in tables])).sum() / weights.sum())


# ------------------------------------------------------------------------------------------------ the designs
def _t_topics(min_diff: float, variance: float, alpha: float, beta: float, systems: int | None) -> int:
    return topics_for_t_test(min_diff, variance, alpha, beta)


def _t_achieved(n: int, min_diff: float, variance: float, alpha: float, systems: int | None) -> float:
    return t_test_power(n, min_diff / float(np.sqrt(variance)), alpha)


def _anova_topics(min_diff: float, variance: float, alpha: float, beta: float, systems: int | None) -> int:
    return topics_for_anova(systems, min_diff, variance, alpha, beta)  # type: ignore[arg-type]


def _anova_achieved(n: int, min_diff: float, variance: float, alpha: float, systems: int | None) -> float:
    return anova_power(n, int(systems), min_diff, variance, alpha)  # type: ignore[arg-type]


def _ci_topics(min_diff: float, variance: float, alpha: float, beta: float, systems: int | None) -> int:
    return topics_for_ci_width(min_diff, variance, alpha)


def _ci_achieved(n: int, min_diff: float, variance: float, alpha: float, systems: int | None) -> float:
    return expected_ci_width(n, variance, alpha)


@dataclass(frozen=True)
class Design:
    """A topic-set-size design, as :data:`DESIGNS` holds it.

    ``label`` names it in outputs and ``help`` says what it guarantees. The within-system variance ``V`` (one
    system's score variance, estimated by the two-way ANOVA's ``V_E``) times ``variance_factor`` is the variance
    the design reads: 2 for a difference between two systems (``sigma_t^2 = 2 V``, Sakai 2016), 1 for one
    system. ``topics(min_diff, variance, alpha, beta, systems)`` is the smallest number of topics;
    ``achieved(n, min_diff, variance, alpha, systems)`` what ``n`` topics give, named by ``achieved_label``
    (the power, or the expected width). ``uses_beta`` and ``uses_systems`` say which inputs it reads.
    """

    name: str
    label: str
    help: str
    variance_factor: float
    topics: Callable[..., int]
    achieved: Callable[..., float]
    achieved_label: str
    uses_beta: bool = True
    uses_systems: bool = False
    aliases: tuple[str, ...] = ()


#: The topic-set-size designs (``topic_set_size(design, ...)``, ``stagewise power topics --test``).
DESIGNS: Registry[Design] = Registry(
    "design",
    Design(
        "t",
        "paired t-test (two-sided)",
        "power 1 - beta for a two-sided paired t-test to detect a difference of minD",
        2.0,
        _t_topics,
        _t_achieved,
        "power",
        aliases=("t-test", "ttest", "paired-t"),
    ),
    Design(
        "anova",
        "one-way ANOVA",
        "power 1 - beta for a one-way ANOVA over M systems to detect a best-worst gap of minD",
        1.0,
        _anova_topics,
        _anova_achieved,
        "power",
        uses_systems=True,
        aliases=("one-way-anova", "f"),
    ),
    Design(
        "ci",
        "confidence interval width",
        "an expected 1 - alpha interval of a difference no wider than minD",
        2.0,
        _ci_topics,
        _ci_achieved,
        "expected width",
        uses_beta=False,
        aliases=("ci-width", "interval"),
    ),
    error=ConventionError,
)


# ------------------------------------------------------------------------------------------------ front door
@dataclass(frozen=True)
class VarianceEstimate:
    """The within-system variance ``V`` a design starts from, and where it came from.

    ``value`` is ``V``; ``source`` says how it was had (``"stated"``, or the two-way ANOVA of which runs on
    which topics and measure); ``metric``, ``topics``, ``systems``, ``runs`` and ``conventions`` (the
    evaluation's) are set when it was estimated from runs (:func:`estimate_variance`).
    """

    value: float
    source: str = "stated"
    metric: str | None = None
    topics: int | None = None
    systems: int | None = None
    runs: tuple[str, ...] = ()
    conventions: dict[str, Any] | None = field(default=None, compare=False)


def estimate_variance(
    qrels: Any,
    runs: Any,
    metric: str,
    *,
    conventions: Any = None,
    engine: Any = None,
    duplicates: str = "error",
    **overrides: Any,
) -> VarianceEstimate:
    """``V_E``, the residual variance of the two-way ANOVA (topics x systems) of ``runs`` on ``metric``.

    This is Sakai's estimate of the within-system variance (IRJ 2016, section 4): the topic effect and the
    system effect taken out, what is left is one system's variance around its mean. ``qrels``, ``runs``,
    ``conventions``, ``engine``, ``duplicates`` and ``overrides`` are as :func:`stagewise.evaluate` (files are
    read after the metric is checked); at least two runs. A query some run lacks is left out of every run.

    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    >>> runs = {"x": {"q1": {"a": 2, "z": 1}, "q2": {"z": 2, "b": 1}, "q3": {"c": 1}},
    ...         "y": {"q1": {"z": 2, "a": 1}, "q2": {"b": 2}, "q3": {"z": 2, "c": 1}}}
    >>> v = estimate_variance(qrels, runs, "mrr")
    >>> round(v.value, 4), v.topics, v.systems
    (0.1667, 3, 2)
    """
    from stagewise.engines import evaluate
    from stagewise.stats.anova import two_way_anova
    from stagewise.stats.discriminative import score_matrices

    if not isinstance(metric, str):
        raise InputError("power", f"one metric is estimated at a time; got {metric!r}", expected="a metric name")
    result = evaluate(
        qrels, runs, [metric], conventions=conventions, engine=engine or "local", duplicates=duplicates, **overrides
    )
    names, _, matrices = score_matrices(result)
    x = matrices[metric]
    try:
        v = two_way_anova(x, f"{metric} scores").residual_variance
    except ZeroDivisionError:  # stats.anova divides by V_E as a Python float: V_E = 0 (no variance to estimate)
        v = 0.0
    if not v > 0:
        raise InputError(
            "power",
            f"the runs' {metric} scores have no residual variance (V_E = 0 on {x.shape[0]} topics)",
            hint="every score is a topic effect plus a system effect; choose another metric, runs or --variance",
        )
    source = (
        f"residual variance V_E of the two-way ANOVA (topics x systems) of {x.shape[1]} runs on {x.shape[0]} "
        f"topics, {metric}"
    )
    return VarianceEstimate(float(v), source, metric, x.shape[0], x.shape[1], tuple(names), result.conventions_report())


@dataclass(frozen=True)
class TopicSetSize:
    """How many topics a design needs (:func:`topic_set_size`), with every input it was computed from.

    ``topics`` is the answer; ``variance`` the within-system :class:`VarianceEstimate`, ``design_variance`` what
    the design read (``variance_factor`` times it); ``achieved`` is the power (t, anova) or the expected
    interval width (ci) at ``topics``, ``achieved_before`` the same at ``topics - 1`` (None at the least, 2).
    """

    design: str
    label: str
    statement: str
    topics: int
    min_diff: float
    alpha: float
    beta: float | None
    systems: int | None
    variance: VarianceEstimate
    variance_factor: float
    design_variance: float
    achieved_label: str
    achieved: float
    achieved_before: float | None

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON values (``variance`` a nested dict)."""
        out = asdict(self)
        out["variance"] = {k: v for k, v in asdict(self.variance).items() if v not in (None, ())}
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise power topics --format json`` writes)."""
        return json.dumps(self.to_dict(), indent=indent)


def check_design(
    design: str, min_diff: float, *, alpha: float = 0.05, beta: float = 0.20, systems: int | None = None
) -> Design:
    """The design called ``design``, once its inputs are checked (before any run is read for the variance).

    >>> check_design("T-test", 0.05).name
    't'
    """
    entry = DESIGNS.lookup(design)
    _check(alpha, beta if entry.uses_beta else 0.5, min_diff, 1.0)
    bad = isinstance(systems, bool) or not isinstance(systems, (int, np.integer)) or systems < 2
    if entry.uses_systems and systems is not None and bad:
        raise InputError("power", f"{systems!r} systems", expected="an int >= 2")
    return entry


def topic_set_size(
    design: str,
    min_diff: float,
    variance: float | VarianceEstimate,
    *,
    alpha: float = 0.05,
    beta: float = 0.20,
    systems: int | None = None,
) -> TopicSetSize:
    """The smallest number of topics for ``design`` (a name of :data:`DESIGNS`: ``t``, ``anova``, ``ci``).

    Parameters
    ----------
    design : str
        ``t``: a two-sided paired t-test detects a difference ``min_diff`` with power ``1 - beta``; ``anova``: a
        one-way ANOVA over ``systems`` systems detects a best-worst gap ``min_diff`` with power ``1 - beta``;
        ``ci``: the expected ``1 - alpha`` interval of a difference is at most ``min_diff`` wide (``beta``
        unused).
    min_diff : float
        The difference to detect (t, anova) or the widest interval allowed (ci), on the measure's scale.
    variance : float or VarianceEstimate
        The within-system variance ``V`` (one system's score variance): stated, or from
        :func:`estimate_variance`. The t and ci designs read ``2 V``, the variance of a difference.
    alpha, beta : float
        Significance level and type II error rate (power ``1 - beta``).
    systems : int, optional
        The anova design's number of systems; by default the estimate's number of runs.

    Examples
    --------
    >>> r = topic_set_size("t", 0.1, 0.05)
    >>> r.topics, r.design_variance, round(r.achieved, 3)
    (81, 0.1, 0.803)
    >>> topic_set_size("anova", 0.1, 0.05, systems=5).topics
    121
    """
    entry = check_design(design, min_diff, alpha=alpha, beta=beta, systems=systems)
    estimate = (
        variance
        if isinstance(variance, VarianceEstimate)
        else VarianceEstimate(_number(variance, "the variance", "e.g. 0.01"))
    )
    if entry.uses_systems:
        systems = estimate.systems if systems is None else systems
        if systems is None:
            raise InputError(
                "power", f"the {entry.label} design needs the number of systems", hint="give systems (--systems M)"
            )
    else:
        systems = None
    # V as given first, so that an error quotes the user's number, not the design's 2 V
    _check(alpha, beta if entry.uses_beta else 0.5, min_diff, estimate.value)
    design_variance = estimate.value * entry.variance_factor
    if not np.isfinite(design_variance):
        raise InputError(
            "power",
            f"the variance {estimate.value!r} is too large: the {entry.label} design reads "
            f"{entry.variance_factor:g} V, which is no finite number",
            expected="e.g. 0.01",
        )
    n = entry.topics(min_diff, design_variance, alpha, beta, systems)
    at = lambda k: float(entry.achieved(k, min_diff, design_variance, alpha, systems))  # noqa: E731
    return TopicSetSize(
        entry.name,
        entry.label,
        entry.help.replace("minD", f"{min_diff:g}").replace("M systems", f"{systems} systems"),
        n,
        float(min_diff),
        float(alpha),
        float(beta) if entry.uses_beta else None,
        systems,
        estimate,
        entry.variance_factor,
        design_variance,
        entry.achieved_label,
        at(n),
        at(n - 1) if n > 2 else None,
    )
