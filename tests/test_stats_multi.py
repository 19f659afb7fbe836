"""Randomised Tukey HSD, compact letters, Westfall-Young MaxT and the Holm-Sidak / BY corrections."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import StagewiseError
from stagewise.stats import adjust
from stagewise.stats import multi as M

ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"
B = 2000


def _matrix(seed: int = 11, n: int = 15, m: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 0.6, (n, 1)) + np.linspace(0, 0.12, m)[None, :] + rng.normal(0, 0.08, (n, m))


def _within_mc(p: np.ndarray, ref: np.ndarray) -> None:
    bound = 4 * np.sqrt(ref * (1 - ref) / B) + 1 / B
    assert np.all(np.abs(p - ref) <= bound), (p, ref, bound)


# ------------------------------------------------------------------------------------------ Tukey HSD
def slow_tukey(x: np.ndarray, permutations: int, seed: int) -> dict[tuple[int, int], float]:
    """Carterette's algorithm with plain loops and an unrelated generator."""
    rng = np.random.default_rng(seed)
    n, m = x.shape
    ranges = []
    for _ in range(permutations):
        shuffled = np.array([rng.permutation(x[i]) for i in range(n)])
        means = [sum(shuffled[i, j] for i in range(n)) / n for j in range(m)]
        ranges.append(max(means) - min(means))
    out = {}
    for j in range(m):
        for k in range(j + 1, m):
            d = abs(x[:, j].mean() - x[:, k].mean())
            out[(j, k)] = sum(r >= d - 1e-12 for r in ranges) / permutations
    return out


def test_tukey_hsd_agrees_with_a_slow_implementation() -> None:
    x = _matrix()
    res = M.tukey_hsd(x, permutations=B, seed=3)
    ref = slow_tukey(x, B, seed=99)
    _within_mc(res.p_values, np.array([ref[(int(a), int(b))] for a, b in zip(res.a, res.b, strict=True)]))
    assert res.p_values.min() < 0.05 and 0.05 < np.median(res.p_values) < 0.95  # a spread of p-values was tested
    np.testing.assert_allclose(res.statistic, x.mean(axis=0)[res.b] - x.mean(axis=0)[res.a])


def test_tukey_hsd_is_reproducible_and_independent_of_the_block_cut() -> None:
    x = _matrix()
    first, second = M.tukey_hsd(x, permutations=B, seed=7), M.tukey_hsd(x, permutations=B, seed=7)
    assert first.p_values.tobytes() == second.p_values.tobytes()
    assert M.tukey_hsd(x, permutations=B, seed=8).p_values.tobytes() != first.p_values.tobytes()
    # permutation b depends on (seed, b) only: the first 300 of 2,000 are the 300
    np.testing.assert_array_equal(M.tukey_ranges(x, 300, seed=7), M.tukey_ranges(x, B, seed=7)[:300])


def test_tukey_blocks_bound_memory_on_large_matrices() -> None:
    assert M.tukey_block_size(100, 17) == M.TUKEY_BLOCK
    size = M.tukey_block_size(20_000, 50)
    assert 1 <= size < M.TUKEY_BLOCK and size * 24 * 20_000 * 50 <= 64 * 2**20
    x = _matrix(n=3000, m=40)
    small = M.tukey_block_size(*x.shape)
    assert small < M.TUKEY_BLOCK
    ranges = M.tukey_ranges(x, small + 5, seed=1)
    np.testing.assert_array_equal(M.tukey_ranges(x, 3, seed=1), ranges[:3])


def test_tukey_hsd_p_values_shrink_with_the_gap() -> None:
    x = _matrix()
    res = M.tukey_hsd(x, permutations=B, seed=1)
    order = np.argsort(np.abs(res.statistic))
    assert np.all(np.diff(res.p_values[order]) <= 0)
    assert M.tukey_hsd(np.tile(x[:, :1], (1, 3)), permutations=50).p_values.tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------------------------------ letters
@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 7).flatmap(lambda m: st.tuples(st.just(m), st.lists(st.booleans(), min_size=m * m, max_size=m * m)))
)
def test_letters_share_a_letter_exactly_when_not_significant(case) -> None:
    m, flags = case
    sig = np.array(flags).reshape(m, m)
    sig = np.triu(sig, 1) | np.triu(sig, 1).T
    means = np.arange(m, 0, -1, dtype=float)
    labels = M.letters(means, sig)
    for j in range(m):
        assert labels[j]
        for k in range(j + 1, m):
            assert bool(set(labels[j]) & set(labels[k])) == (not sig[j, k]), (labels, sig)


def test_letters_on_the_robust_runs_follow_the_tukey_p_values() -> None:
    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    from stagewise import evaluate

    runs = sorted((ROBUST / "runs").glob("input.*.gz"))
    result = evaluate(ROBUST / "robust03_qrels.txt", [str(r) for r in runs], ["ap"])
    x = np.column_stack([r.values["ap"] for r in result.runs])
    names = [r.name for r in result.runs]
    res = M.tukey_hsd(x, permutations=B, seed=0)
    p = res.matrix(x.shape[1])
    best, worst = names.index("input.pircRBa1.gz"), names.index("input.rutcor03100.gz")
    assert p[best, worst] < 0.001  # MAP 0.3101 against 0.0737
    labels = M.letters(x.mean(axis=0), p < 0.05)
    assert labels[best].startswith("a") and not set(labels[best]) & set(labels[worst])


# ------------------------------------------------------------------------------------------ MaxT
def slow_maxt(x: np.ndarray, permutations: int, seed: int, step_down: bool) -> list[float]:
    rng = np.random.default_rng(seed)
    n, m = x.shape
    pairs = [(j, k) for j in range(m) for k in range(j + 1, m)]

    def t_of(d: np.ndarray) -> float:
        return abs(d.mean() / (d.std(ddof=1) / np.sqrt(n)))

    observed = [t_of(x[:, k] - x[:, j]) for j, k in pairs]
    order = sorted(range(len(pairs)), key=lambda i: -observed[i])
    counts = [0] * len(pairs)
    for _ in range(permutations):
        signs = rng.choice([-1.0, 1.0], size=n)
        perm = [t_of(signs * (x[:, k] - x[:, j])) for j, k in pairs]
        for rank, i in enumerate(order):
            pool = [perm[h] for h in order[rank:]] if step_down else perm
            counts[i] += max(pool) >= observed[i] - 1e-9
    p = [c / permutations for c in counts]
    if step_down:
        running = 0.0
        for i in order:
            running = max(running, p[i])
            p[i] = running
    return p


@pytest.mark.parametrize("step_down", [False, True])
def test_maxt_agrees_with_a_slow_implementation(step_down: bool) -> None:
    x = _matrix(seed=4, n=12, m=4)
    res = M.maxt(x, permutations=B, seed=5, step_down=step_down)
    _within_mc(res.p_values, np.array(slow_maxt(x, B, seed=123, step_down=step_down)))
    assert res.p_values.min() < 0.3 and res.p_values.max() > 0.3


def test_maxt_is_reproducible_and_step_down_is_never_larger() -> None:
    x = _matrix(seed=4, n=12, m=4)
    one, two = M.maxt(x, permutations=B, seed=2), M.maxt(x, permutations=B, seed=2)
    assert one.p_values.tobytes() == two.p_values.tobytes()
    assert np.all(M.maxt(x, permutations=B, seed=2, step_down=True).p_values <= one.p_values)
    mean = M.maxt(x, permutations=B, seed=2, statistic="mean")
    assert "max |mean|" in mean.method and mean.p_values.shape == one.p_values.shape


def test_bad_parameters_are_clear_errors() -> None:
    with pytest.raises(StagewiseError, match="'permutations' parameter of tukey_hsd must be an int >= 1"):
        M.tukey_hsd(_matrix(), permutations=0)
    with pytest.raises(StagewiseError, match="'statistic' parameter of maxt"):
        M.maxt(_matrix(), statistic="median")


# ------------------------------------------------------------------------------------------ corrections
@pytest.mark.filterwarnings("ignore:divide by zero encountered in log1p:RuntimeWarning")  # statsmodels at p = 1
@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_holm_sidak_and_by_equal_statsmodels(p: list[float]) -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    for ours, theirs in (("holm-sidak", "holm-sidak"), ("by", "fdr_by")):
        expected = multipletests(p, alpha=0.05, method=theirs)[1]
        np.testing.assert_allclose(adjust(p, ours), expected, rtol=1e-12, atol=1e-15)


def test_new_correction_spellings() -> None:
    assert adjust([0.01, 0.02], "fdr_by").tolist() == adjust([0.01, 0.02], "by").tolist()
    assert adjust([0.01, 0.02], "Holm_Sidak").tolist() == adjust([0.01, 0.02], "holm-sidak").tolist()


@pytest.mark.parametrize(("name", "label"), [("holm-sidak", "Holm-Sidak"), ("by", "Benjamini-Yekutieli")])
def test_a_comparison_under_the_new_corrections_renders(name: str, label: str) -> None:
    from stagewise.report import render
    from stagewise.stats import compare_scores

    scores = {"a": {"m": [0.1, 0.2, 0.3, 0.4, 0.5]}, "b": {"m": [0.2, 0.1, 0.5, 0.6, 0.7]}}
    result = compare_scores(scores, correction=name)
    assert result.conventions["correction"] == name
    assert label in render(result, "markdown")
