"""Rank correlations against scipy (Kendall's tau-b, Spearman), tau_ap against a slow reference written from
Yilmaz et al.'s definition and a hand-worked example, and RBO against hand-computed values and slow references
that sum Webber et al.'s series over explicit continuations of the lists."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr

from stagewise.assess.correlation import kendall_tau, rbo, spearman_rho, tau_ap
from stagewise.errors import ConventionError, InputError

TOL = 1e-9

score_pairs = st.integers(2, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 6), min_size=n, max_size=n), st.lists(st.integers(0, 6), min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(score_pairs)
def test_kendall_and_spearman_equal_scipy(pair) -> None:
    a, b = pair
    constant = len(set(a)) == 1 or len(set(b)) == 1
    rho = float("nan") if constant else spearmanr(a, b)[0]  # scipy warns, then gives nan
    for ours, theirs in ((kendall_tau(a, b), kendalltau(a, b).statistic), (spearman_rho(a, b), rho)):
        assert (math.isnan(ours) and math.isnan(theirs)) or abs(ours - theirs) <= TOL


def test_dicts_align_on_system_names() -> None:
    first = {"bm25": 0.3, "dense": 0.5, "hybrid": 0.4}
    second = {"hybrid": 0.45, "bm25": 0.2, "dense": 0.41}
    assert kendall_tau(first, second) == pytest.approx(1 / 3)
    with pytest.raises(InputError, match="systems differ"):
        kendall_tau(first, {"bm25": 1, "dense": 2, "x": 3})
    with pytest.raises(InputError, match="differ in length"):
        spearman_rho([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="at least 2 systems"):
        kendall_tau([1], [1])


def slow_tau_ap(truth: list[float], estimate: list[float]) -> float:
    """Yilmaz, Aslam and Robertson (SIGIR 2008), eq. 3, loop by loop."""
    systems = sorted(range(len(estimate)), key=lambda s: -estimate[s])
    n = len(systems)
    total = 0.0
    for i in range(1, n):
        current = systems[i]
        correct = sum(1 for above in systems[:i] if truth[above] > truth[current])
        total += correct / i
    return 2.0 / (n - 1) * total - 1.0


distinct_pairs = st.integers(2, 30).flatmap(
    lambda n: st.tuples(st.permutations(list(range(n))), st.permutations(list(range(n))))
)


@settings(max_examples=200, deadline=None)
@given(distinct_pairs)
def test_tau_ap_equals_the_slow_reference(pair) -> None:
    a, b = pair
    assert abs(tau_ap(a, b) - slow_tau_ap(a, b)) <= TOL
    both = (slow_tau_ap(a, b) + slow_tau_ap(b, a)) / 2
    assert abs(tau_ap(a, b, symmetric=True) - both) <= TOL
    if a == b:
        assert tau_ap(a, b) == 1.0


def test_tau_ap_worked_by_hand() -> None:
    # truth A > B > C > D > E. Estimate B A C D E: rank 2 (A) has 0 of 1 above it correct, ranks 3..5 all correct:
    # 2/4 * (0 + 1 + 1 + 1) - 1 = 0.5. Estimate A B C E D: only rank 5 (D) has 3 of 4 right:
    # 2/4 * (1 + 1 + 1 + 3/4) - 1 = 0.875. Kendall's tau is 0.8 for both (one discordant pair of 10).
    truth = {"A": 5, "B": 4, "C": 3, "D": 2, "E": 1}
    top = {"B": 5, "A": 4, "C": 3, "D": 2, "E": 1}
    bottom = {"A": 5, "B": 4, "C": 3, "E": 2, "D": 1}
    assert tau_ap(truth, top) == pytest.approx(0.5, abs=TOL)
    assert tau_ap(truth, bottom) == pytest.approx(0.875, abs=TOL)
    assert kendall_tau(truth, top) == pytest.approx(0.8) == kendall_tau(truth, bottom)
    with pytest.raises(ConventionError, match="without ties"):
        tau_ap([1, 2, 2], [1, 2, 3])


def _agreement_series(s_ext: list, l_ext: list, p: float) -> float:
    """sum_d (1 - p) p^(d-1) |S[:d] & L[:d]| / d over explicit lists long enough that p^depth is below 1e-15."""
    seen_s, seen_l, common, total = set(), set(), 0, 0.0
    for d, (x, y) in enumerate(zip(s_ext, l_ext, strict=True), 1):
        common += (x in seen_l) + (y in seen_s) + (x == y)
        seen_s.add(x)
        seen_l.add(y)
        total += (1 - p) * p ** (d - 1) * common / d
    return total


def slow_rbo(short: list, long: list, p: float) -> tuple[float, float, float]:
    """(min, max, ext) from their definitions: min continues both lists with items never seen; max continues the
    short list with the long list's unmatched items and the long one with the short's (both then reach depth
    s + l - X_l together) and then both with the same fresh items; ext extrapolates each depth's agreement
    (Webber et al. section 4.1) and sums the infinite tail exactly."""
    depth = len(long) + len(short) + int(math.log(1e-17) / math.log(p)) + 1
    low = _agreement_series(
        (short + [("s", i) for i in range(depth)])[:depth], (long + [("l", i) for i in range(depth)])[:depth], p
    )
    same = [("c", i) for i in range(depth)]
    s_full = short + [x for x in long if x not in short] + same
    l_full = long + [x for x in short if x not in long] + same
    high = _agreement_series(s_full[:depth], l_full[:depth], p)
    s, n = len(short), len(long)
    x_s = len(set(short) & set(long[:s]))
    total, a = 0.0, 0.0
    for d in range(1, n + 1):
        x_d = len(set(short[: min(d, s)]) & set(long[:d]))
        a = (x_d + (x_s * (d - s) / s if d > s else 0.0)) / d
        total += (1 - p) * p ** (d - 1) * a
    return low, high, total + a * p**n


def test_rbo_worked_by_hand_at_p_09() -> None:
    # S = a b c, L = b a d: X_1 = 0, X_2 = 2, X_3 = 2. ext = (0.1/0.9)(0.81 * 2/2 + 0.729 * 2/3) + 0.729 * 2/3 = 0.63
    # min = (0.1/0.9)((0 - 2) * 0.9 - 2 ln 0.1) = 0.311672...
    r = rbo(["a", "b", "c"], ["b", "a", "d"], p=0.9)
    assert r.ext == pytest.approx(0.63, abs=TOL)
    assert r.min == pytest.approx((0.1 / 0.9) * (-1.8 - 2 * math.log(0.1)), abs=TOL)
    assert rbo(list("abcdef"), list("abcdef"), p=0.9).ext == pytest.approx(1.0, abs=TOL)
    assert rbo(list("abcdef"), list("abcdef"), p=0.9).max == pytest.approx(1.0, abs=TOL)
    assert rbo(list("abc"), list("xyz"), p=0.9).ext == 0.0
    assert rbo(list("abc"), list("xyz"), p=0.9).min == 0.0


rankings = st.tuples(
    st.lists(st.integers(0, 15), min_size=1, max_size=10, unique=True),
    st.lists(st.integers(0, 15), min_size=1, max_size=14, unique=True),
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
)


@settings(max_examples=120, deadline=None)
@given(rankings)
def test_rbo_equals_slow_references_on_uneven_lists(case) -> None:
    a, b, p = case
    ours = rbo(a, b, p=p)
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    low, high, ext = slow_rbo(short, long, p)
    assert abs(ours.min - low) <= TOL
    assert abs(ours.ext - ext) <= TOL
    assert abs(ours.max - high) <= 1e-9
    assert ours.min - TOL <= ours.ext <= ours.max + TOL
    assert rbo(b, a, p=p) == ours


def test_rbo_refuses_ties_bad_p_and_empty_rankings() -> None:
    with pytest.raises(ConventionError, match="tied scores"):
        rbo({"a": 1.0, "b": 1.0}, ["a", "b"])
    assert rbo({"a": 2.0, "b": 1.0}, ["a", "b"]).ext == pytest.approx(1.0)
    with pytest.raises(ConventionError, match="'p' parameter of rbo"):
        rbo(["a"], ["a"], p=1.0)
    with pytest.raises(InputError, match="empty ranking"):
        rbo([], ["a"])
    with pytest.raises(InputError, match="twice"):
        rbo(["a", "a"], ["a"])


def test_numpy_scores_are_accepted() -> None:
    assert tau_ap(np.array([3.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0])) == pytest.approx(
        slow_tau_ap([3, 2, 1], [3, 1, 2])
    )
