"""Score standardisation per topic (Webber, Moffat and Zobel, SIGIR 2008; Sakai, ICTIR 2016).

Topics differ in difficulty far more than systems do, so a raw mean over topics is dominated by the easy
ones. Standardisation rescales each topic by how a *reference* set of runs did on it:

    z_ij = (x_ij - mu_i) / s_i,   mu_i, s_i the mean and standard deviation of topic i over the reference runs

(``ddof=1``, the sample standard deviation, by default). A system's standardised score on a topic says how
many reference standard deviations it is above the reference mean. Two maps back to [0, 1]:

- :func:`std_cdf`: ``Phi(z)``, the standard normal CDF, as Webber et al. propose;
- :func:`std_ab`: ``A + B z`` clipped to [0, 1], Sakai's linear std-AB (ICTIR 2016; ``A = 0.5``,
  ``B = 0.15`` there), which keeps score differences proportional.

The reference runs should be fixed and stated (for example, the runs of a shared task); a new system is
standardised against them, not against itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagewise.errors import InputError
from stagewise.stats.anova import as_matrix


@dataclass(frozen=True)
class Reference:
    """Per-topic mean and standard deviation of a reference set of runs."""

    mean: np.ndarray
    sd: np.ndarray
    systems: int


def reference(scores, ddof: int = 1, source: str = "reference runs") -> Reference:
    """The per-topic ``mu_i`` and ``s_i`` of a ``(topics, systems)`` reference matrix.

    A topic on which every reference run scored the same has ``s_i = 0`` and cannot standardise anything,
    so it is refused with its index rather than turned into infinities.

    >>> ref = reference([[0.2, 0.4], [0.1, 0.5]])
    >>> [round(v, 4) for v in ref.mean.tolist()], [round(v, 4) for v in ref.sd.tolist()]
    ([0.3, 0.3], [0.1414, 0.2828])
    """
    x = as_matrix(scores, source, min_topics=1, min_systems=ddof + 1)
    sd = x.std(axis=1, ddof=ddof)
    flat = np.flatnonzero(sd <= 1e-12 * np.maximum(np.abs(x).max(axis=1), 1e-300))
    if len(flat):
        raise InputError(
            source,
            f"every reference run has the same score on topic {int(flat[0])} ({len(flat)} such topic(s))",
            expected="topics on which the reference runs differ",
            hint="drop those topics or add reference runs",
        )
    return Reference(x.mean(axis=1), sd, x.shape[1])


def z_scores(scores, ref: Reference | None = None, source: str = "scores") -> np.ndarray:
    """``(x_ij - mu_i) / s_i`` for a ``(topics, systems)`` matrix; ``ref`` defaults to the matrix itself.

    >>> z_scores([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[-0.7071, 0.7071], [-0.7071, 0.7071]]
    """
    x = as_matrix(scores, source, min_topics=1, min_systems=1)
    ref = reference(x) if ref is None else ref
    if len(ref.mean) != x.shape[0]:
        problem = f"{x.shape[0]} topics but the reference has {len(ref.mean)}"
        raise InputError(source, problem, expected="the same topics, in the same order")
    return (x - ref.mean[:, None]) / ref.sd[:, None]


def std_cdf(scores, ref: Reference | None = None, source: str = "scores") -> np.ndarray:
    """Webber et al.'s standardised scores ``Phi(z)`` in (0, 1).

    >>> std_cdf([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[0.2398, 0.7602], [0.2398, 0.7602]]
    """
    from scipy import special

    return special.ndtr(z_scores(scores, ref, source))


def std_ab(scores, ref: Reference | None = None, a: float = 0.5, b: float = 0.15, source: str = "scores") -> np.ndarray:
    """Sakai's std-AB: ``A + B z`` clipped to [0, 1].

    >>> std_ab([[0.2, 0.4], [0.1, 0.5]]).round(4).tolist()
    [[0.3939, 0.6061], [0.3939, 0.6061]]
    """
    return np.clip(a + b * z_scores(scores, ref, source), 0.0, 1.0)
