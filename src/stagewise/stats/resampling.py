"""Seeded, chunked resampling kernels: Fisher's randomization (sign flips) and the paired bootstrap.

Both work on a matrix ``D`` of paired differences, one row per comparison and one column per query, and
test every row at once: a block of random sign vectors (or bootstrap counts) ``F`` turns into all the
permuted statistics of all the rows with one matrix product ``F @ D.T``.

Reproducibility
---------------
The random numbers never depend on how the work is cut up. Permutation ``j`` lives in block
``j // BLOCK`` and every block draws from its own generator, ``PCG64(SeedSequence(seed, spawn_key=(stream,
block)))``, so the signs of permutation ``j`` are a function of ``(seed, j, n)`` only: the chunk size (which
bounds memory), the number of BLAS threads, the other rows tested in the same call and the number of
permutations asked for (the first 1,000 of 10,000 permutations are the 1,000 permutations) change nothing.
A permuted statistic counts as "at least as extreme" when it is within a relative ``1e-9`` of the observed
one, so the few last-bit differences a threaded matrix product can make never move a count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import numpy as np

#: Sign vectors per seeded block (part of the reproducibility contract: changing it changes p-values).
SIGN_BLOCK = 256
#: Bootstrap resamples per seeded block (same contract).
BOOT_BLOCK = 64
#: Largest n for which all 2**n sign vectors may be enumerated.
EXACT_LIMIT = 24
#: Relative tolerance under which a resampled statistic counts as equal to the observed one.
REL_TOL = 1e-9
#: Bytes of float64 work matrix per chunk (bounds memory whatever n and the number of permutations).
CHUNK_BYTES = 64 * 2**20

# Progress is a side channel that never touches a number: a hook set for the duration of a call (by compare)
# hears, after each chunk, how many comparisons' worth of work it finished (a chunk of r of R resamples over c
# rows is c * r / R). A context variable rather than a parameter, so no test's signature has to carry it.
_progress: ContextVar[Callable[[float], None] | None] = ContextVar("stagewise_resampling_progress", default=None)


@contextlib.contextmanager
def reporting(hook: Callable[[float], None] | None) -> Iterator[None]:
    """Within the block, the resampling kernels call ``hook(comparisons_done)`` after each chunk."""
    token = _progress.set(hook)
    try:
        yield
    finally:
        _progress.reset(token)


def _report(rows: int, part: int, whole: int) -> None:
    hook = _progress.get()
    if hook is not None and whole > 0:
        hook(rows * part / whole)


_STREAM_SIGNS = 0
_STREAM_BOOT = 1

ALTERNATIVES = ("two-sided", "greater", "less")


def _block_rng(seed: int, stream: int, block: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(stream, block))))


def sign_block(seed: int, block: int, n: int) -> np.ndarray:
    """Block ``block`` of sign flips: a ``(SIGN_BLOCK, n)`` uint8 array, 1 where a query's difference flips."""
    nbytes = (n + 7) // 8
    raw = np.frombuffer(_block_rng(seed, _STREAM_SIGNS, block).bytes(SIGN_BLOCK * nbytes), dtype=np.uint8)
    return np.unpackbits(raw.reshape(SIGN_BLOCK, nbytes), axis=1, count=n)


def _rows_per_chunk(n: int, comparisons: int) -> int:
    """Resamples per chunk so that neither the flip matrix nor the statistics exceed CHUNK_BYTES."""
    return max(1, CHUNK_BYTES // (8 * max(n, comparisons, 1)))


def _stream(make_block, block_size: int, total: int, step: int):
    """The first ``total`` rows of a stream of seeded blocks, in chunks of about ``step`` rows.

    Several blocks make one chunk when ``step`` allows (one large matrix product is faster than many
    small ones), and a block is cut into pieces when it does not; the rows are the same either way.
    """
    blocks = -(-total // block_size)
    if step >= block_size:
        per = step // block_size
        for b0 in range(0, blocks, per):
            rows = np.concatenate([make_block(b) for b in range(b0, min(b0 + per, blocks))])
            yield rows[: total - b0 * block_size]
    else:
        for b in range(blocks):
            block = make_block(b)[: total - b * block_size]
            for r0 in range(0, len(block), step):
                yield block[r0 : r0 + step]


def _extreme(t: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str) -> np.ndarray:
    """Per row of ``t`` (resamples x comparisons), whether it is at least as extreme as ``observed``."""
    if alternative == "two-sided":
        return np.abs(t) >= np.abs(observed) - tol
    if alternative == "greater":
        return t >= observed - tol
    return t <= observed + tol


def randomization_counts(diffs: np.ndarray, permutations: int, seed: int, alternative: str = "two-sided") -> np.ndarray:
    """How many of ``permutations`` random sign flips give a sum at least as extreme as the observed sum.

    ``diffs`` is ``(comparisons, n)``. With ``S = sum(d)`` and ``M = sum of the flipped d``, the flipped sum
    is ``S - 2M``, so one product of the 0/1 flip matrix with ``diffs.T`` gives every permuted sum.
    """
    diffs = np.ascontiguousarray(diffs, dtype=np.float64)
    n = diffs.shape[1]
    observed = diffs.sum(axis=1)
    tol = REL_TOL * np.abs(diffs).sum(axis=1)
    counts = np.zeros(diffs.shape[0], dtype=np.int64)
    dt = diffs.T.copy()
    step = _rows_per_chunk(n, diffs.shape[0])
    for bits in _stream(lambda b: sign_block(seed, b, n), SIGN_BLOCK, permutations, step):
        t = observed - 2.0 * (bits.astype(np.float64) @ dt)
        counts += _extreme(t, observed, tol, alternative).sum(axis=0)
        _report(len(counts), len(bits), permutations)
    return counts


def randomization_exact_counts(diffs: np.ndarray, alternative: str = "two-sided") -> np.ndarray:
    """Over all ``2**n`` sign assignments, how many give a sum at least as extreme as the observed one."""
    diffs = np.ascontiguousarray(diffs, dtype=np.float64)
    n = diffs.shape[1]
    if n > EXACT_LIMIT:
        raise ValueError(f"exact enumeration is limited to n <= {EXACT_LIMIT} queries (2**{EXACT_LIMIT} sign sets)")
    observed = diffs.sum(axis=1)
    tol = REL_TOL * np.abs(diffs).sum(axis=1)
    counts = np.zeros(diffs.shape[0], dtype=np.int64)
    dt = diffs.T.copy()
    total = 1 << n
    shifts = np.arange(n, dtype=np.int64)
    step = max(1, min(1 << 16, _rows_per_chunk(n, diffs.shape[0])))
    for start in range(0, total, step):
        codes = np.arange(start, min(start + step, total), dtype=np.int64)
        flips = ((codes[:, None] >> shifts) & 1).astype(np.float64)
        t = observed - 2.0 * (flips @ dt)
        counts += _extreme(t, observed, tol, alternative).sum(axis=0)
        _report(len(counts), len(codes), total)
    return counts


def bootstrap_block(seed: int, block: int, n: int) -> np.ndarray:
    """Block ``block`` of bootstrap resamples as counts: ``(BOOT_BLOCK, n)``, each row sums to ``n``."""
    idx = _block_rng(seed, _STREAM_BOOT, block).integers(0, n, size=(BOOT_BLOCK, n), dtype=np.int64)
    idx += (np.arange(BOOT_BLOCK, dtype=np.int64) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=BOOT_BLOCK * n).reshape(BOOT_BLOCK, n)


def bootstrap(
    diffs: np.ndarray, resamples: int, seed: int, alternative: str = "two-sided", keep_means: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """The studentized paired bootstrap over every row of ``diffs`` at once.

    Returns the counts of resamples whose ``t* = (mean(d*) - mean(d)) / (sd(d*) / sqrt(n))`` is at least
    as extreme as the observed ``t = mean(d) / (sd(d) / sqrt(n))``, and, with ``keep_means``, every
    resample's mean ``(resamples, comparisons)`` for a percentile interval. A resample whose ``d*`` are all
    equal has ``sd(d*) = 0``: its ``t*`` is infinite when ``mean(d*) != mean(d)`` and 0 when they are equal.
    """
    diffs = np.ascontiguousarray(diffs, dtype=np.float64)
    rows, n = diffs.shape
    mean = diffs.mean(axis=1)
    centred = diffs - mean[:, None]
    sd = np.sqrt((centred**2).sum(axis=1) / (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.where(sd > 0, mean / (sd / np.sqrt(n)), np.copysign(np.inf, mean))
    observed = np.where((sd == 0) & (mean == 0), 0.0, observed)
    tol = REL_TOL * np.where(np.isfinite(observed), np.abs(observed), 0.0)
    c1 = centred.T.copy()
    c2 = (centred**2).T.copy()
    counts = np.zeros(rows, dtype=np.int64)
    means = np.empty((resamples, rows)) if keep_means else None
    step = _rows_per_chunk(n, diffs.shape[0])
    done = 0
    for weights in _stream(lambda b: bootstrap_block(seed, b, n), BOOT_BLOCK, resamples, step):
        w = weights.astype(np.float64)
        shift = (w @ c1) / n  # mean(d*) - mean(d)
        var = np.maximum((w @ c2 - n * shift**2) / (n - 1), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = shift / np.sqrt(var / n)
        t = np.where(var > 0, t, np.where(shift == 0, 0.0, np.copysign(np.inf, shift)))
        counts += _extreme(t, observed, tol, alternative).sum(axis=0)
        if means is not None:
            means[done : done + len(w)] = mean + shift
        done += len(w)
        _report(rows, len(w), resamples)
    return counts, means
