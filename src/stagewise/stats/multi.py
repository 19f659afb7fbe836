"""Tests over all systems at once: the randomised Tukey HSD test, its letter display, and Westfall-Young MaxT.

Input is a ``(topics, systems)`` score matrix ``X`` (see :mod:`stagewise.stats.anova`). Both tests control
the family-wise error rate over all ``m (m - 1) / 2`` pairs by comparing each pair's observed statistic with
the permutation distribution of the *largest* statistic over the whole family.

Randomised Tukey HSD (Carterette, TOIS 30(1) 2012; Sakai's book, section 4.5)
    Under the null hypothesis that no system differs, the scores of one topic are exchangeable across the
    systems. Each of ``B`` permutations shuffles every topic's row independently, recomputes the system
    means and records their range ``max_j xbar*_.j - min_j xbar*_.j``. The p-value of pair ``(j, k)`` is the
    share of permutations whose range is at least ``|xbar_.j - xbar_.k|``.

Westfall-Young MaxT (Westfall and Young 1993; Boytsov, Belova and Westfall, SIGIR 2013)
    Each pair's statistic is the paired t of its differences ``d = x_.k - x_.j`` (or, with
    ``statistic="mean"``, the mean difference). Each of ``B`` sign-flip vectors is applied to *every* pair's
    differences at once (the same topics flip, which keeps the dependence between pairs), and the largest
    ``|t*|`` over pairs is recorded. Single-step adjusted p of a pair: the share of permutations whose max is
    at least its ``|t|``; ``step_down=True`` gives the step-down version (Westfall and Young's Algorithm 2.8,
    as in R's ``multtest::mt.maxT``), never larger.

Reproducibility: both are seeded and batched by the scheme of :mod:`stagewise.stats.resampling`; permutation
``b`` depends only on ``(seed, b)`` and the matrix shape, never on the block size that bounds memory. MaxT
reuses the sign-flip blocks of the randomization test. A statistic counts as "at least as large" when it is
within a relative ``1e-9`` of the observed one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.errors import parameter_error
from stagewise.stats import resampling as R
from stagewise.stats.anova import as_matrix

#: Row permutations per seeded block at most (part of the reproducibility contract of the Tukey HSD p-values).
TUKEY_BLOCK = 128
_STREAM_TUKEY = 2


def _check_b(permutations: int, owner: str) -> int:
    if isinstance(permutations, bool) or not isinstance(permutations, (int, np.integer)) or permutations < 1:
        raise parameter_error("permutations", owner, "an int >= 1", permutations)
    return int(permutations)


def pairs_of(m: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(j, k)`` index arrays of all pairs ``j < k`` of ``m`` systems, in row-major order."""
    return np.triu_indices(m, k=1)


def tukey_block_size(n: int, m: int) -> int:
    """Permutations per block for an ``(n, m)`` matrix: ``TUKEY_BLOCK``, fewer when a block would pass CHUNK_BYTES.

    A block holds three ``(size, n, m)`` arrays of 8-byte values (the uniforms, their argsort, the gathered
    scores). The size depends on the shape only, so p-values stay a function of ``(seed, B, X)``.
    """
    return max(1, min(TUKEY_BLOCK, R.CHUNK_BYTES // (24 * n * m)))


def tukey_block(seed: int, block: int, n: int, m: int) -> np.ndarray:
    """Block ``block`` of within-topic permutations: ``(tukey_block_size(n, m), n, m)`` column indices."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(_STREAM_TUKEY, block))))
    return np.argsort(rng.random((tukey_block_size(n, m), n, m)), axis=2, kind="stable")


def tukey_ranges(scores, permutations: int = 10_000, seed: int = 0) -> np.ndarray:
    """The range of the system means under each of ``permutations`` within-topic shuffles (length ``B``)."""
    x = as_matrix(scores)
    b_total = _check_b(permutations, "tukey_hsd")
    n, m = x.shape
    out = np.empty(b_total)
    rows = np.arange(n)[None, :, None]
    size = tukey_block_size(n, m)
    for block in range(-(-b_total // size)):
        start = block * size
        idx = tukey_block(seed, block, n, m)[: b_total - start]
        means = x[rows, idx].mean(axis=1)  # (b, m): the shuffled system means
        out[start : start + len(idx)] = means.max(axis=1) - means.min(axis=1)
    return out


@dataclass(frozen=True)
class MultiResult:
    """Adjusted p-values of all pairs ``(a[i], b[i])``, with the statistic each was judged on."""

    a: np.ndarray
    b: np.ndarray
    statistic: np.ndarray
    p_values: np.ndarray
    permutations: int
    seed: int
    method: str

    def matrix(self, m: int) -> np.ndarray:
        """The p-values as a symmetric ``(m, m)`` matrix with 1 on the diagonal."""
        out = np.ones((m, m))
        out[self.a, self.b] = self.p_values
        out[self.b, self.a] = self.p_values
        return out


def tukey_hsd(scores, permutations: int = 10_000, seed: int = 0) -> MultiResult:
    """The randomised Tukey HSD test of every pair of systems (see the module docstring).

    ``statistic`` is the mean difference ``xbar_.b - xbar_.a``; p is the share of the ``B`` permuted ranges
    that reach ``|statistic|``. Memory is one block (at most ``CHUNK_BYTES``, 64 MiB), whatever ``B``.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5], [0.2, 0.4, 0.4]]
    >>> r = tukey_hsd(x, permutations=2000, seed=1)
    >>> [(int(a), int(b), round(float(p), 3)) for a, b, p in zip(r.a, r.b, r.p_values)]
    [(0, 1, 0.254), (0, 2, 0.018), (1, 2, 0.654)]
    """
    x = as_matrix(scores)
    ranges = tukey_ranges(x, permutations, seed)
    a, b = pairs_of(x.shape[1])
    means = x.mean(axis=0)
    diff = means[b] - means[a]
    tol = R.REL_TOL * np.maximum(np.abs(diff), np.abs(means).max())
    ranges.sort()
    # count of ranges >= |diff| - tol, by binary search on the sorted ranges
    counts = len(ranges) - np.searchsorted(ranges, np.abs(diff) - tol, side="left")
    return MultiResult(a, b, diff, counts / len(ranges), len(ranges), int(seed), "randomised Tukey HSD")


def letters(means, significant) -> list[str]:
    """A compact letter display: systems that share a letter are not significantly different.

    ``significant`` is an ``(m, m)`` boolean matrix (symmetric). The insert-absorb algorithm (Piepho,
    J. Comp. Graph. Stat. 13(2) 2004) starts from one group of all systems, splits every group that holds a
    significant pair into two (one without each member of the pair) and drops groups contained in another;
    the groups are then lettered a, b, ... in the order of their best system's mean (highest first).

    >>> letters([0.5, 0.4, 0.1], [[False, False, True], [False, False, True], [True, True, False]])
    ['a', 'a', 'b']
    """
    means = np.asarray(means, dtype=np.float64)
    sig = np.asarray(significant, dtype=bool)
    m = len(means)
    groups: list[frozenset[int]] = [frozenset(range(m))]
    for i, j in zip(*np.nonzero(np.triu(sig | sig.T, k=1)), strict=True):
        new: list[frozenset[int]] = []
        for g in groups:
            if i in g and j in g:
                new.extend([g - {int(i)}, g - {int(j)}])
            else:
                new.append(g)
        # absorb: a group inside another adds no information
        uniq = list(dict.fromkeys(new))
        groups = [g for g in uniq if not any(g < h for h in uniq)]
    order = np.argsort(-means, kind="stable")
    rank = {int(s): r for r, s in enumerate(order)}
    groups.sort(key=lambda g: sorted(rank[s] for s in g))
    names = [_letter(k) for k in range(len(groups))]
    return ["".join(names[k] for k, g in enumerate(groups) if s in g) for s in range(m)]


def _letter(k: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    return alphabet[k] if k < 26 else alphabet[k // 26 - 1] + alphabet[k % 26]


def _t_from_sums(sums: np.ndarray, sq: np.ndarray, n: int) -> np.ndarray:
    """Paired t from the sum and the (flip-invariant) sum of squares of each pair's differences."""
    mean = sums / n
    var = np.maximum((sq - n * mean**2) / (n - 1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    # all differences equal: t is 0 when they are all 0 and infinite otherwise
    return np.where(var > 1e-15 * np.maximum(sq, 1e-300), t, np.where(sums == 0, 0.0, np.copysign(np.inf, sums)))


def maxt(
    scores, permutations: int = 10_000, seed: int = 0, statistic: str = "t", step_down: bool = False
) -> MultiResult:
    """Westfall-Young MaxT adjusted p-values of every pair (see the module docstring).

    ``statistic`` is ``"t"`` (paired t, the default, as Boytsov et al.) or ``"mean"`` (mean difference).
    Signs come from :func:`stagewise.stats.resampling.sign_block`, the blocks of the randomization test.

    >>> x = [[0.2, 0.3, 0.5], [0.1, 0.3, 0.2], [0.4, 0.6, 0.7], [0.3, 0.3, 0.5], [0.2, 0.4, 0.4]]
    >>> r = maxt(x, permutations=2000, seed=1)
    >>> [round(float(p), 3) for p in r.p_values]
    [0.119, 0.06, 0.495]
    """
    if statistic not in ("t", "mean"):
        raise parameter_error("statistic", "maxt", "'t' or 'mean'", statistic)
    x = as_matrix(scores)
    b_total = _check_b(permutations, "maxt")
    n, _ = x.shape
    a, b = pairs_of(x.shape[1])
    d = x[:, b] - x[:, a]  # (n, pairs)
    sums, sq = d.sum(axis=0), (d**2).sum(axis=0)
    observed = np.abs(_t_from_sums(sums, sq, n) if statistic == "t" else sums / n)
    tol = R.REL_TOL * np.where(np.isfinite(observed), observed, 0.0)
    order = np.argsort(-observed, kind="stable")
    counts = np.zeros(len(a), dtype=np.int64)
    step = R._rows_per_chunk(n, len(a))
    for bits in R._stream(lambda blk: R.sign_block(seed, blk, n), R.SIGN_BLOCK, b_total, step):
        flipped = sums - 2.0 * (bits.astype(np.float64) @ d)  # (chunk, pairs)
        stat = np.abs(_t_from_sums(flipped, sq, n) if statistic == "t" else flipped / n)
        if step_down:
            # successive maxima over the hypotheses ranked at and below each one
            tail = np.maximum.accumulate(stat[:, order][:, ::-1], axis=1)[:, ::-1]
            counts[order] += (tail >= observed[order] - tol[order]).sum(axis=0)
        else:
            counts += (stat.max(axis=1)[:, None] >= observed - tol).sum(axis=0)
    p = counts / b_total
    if step_down:
        p[order] = np.maximum.accumulate(p[order])
    label = f"Westfall-Young MaxT ({'step-down' if step_down else 'single-step'}, max |{statistic}|)"
    return MultiResult(a, b, sums / n, p, b_total, int(seed), label)
