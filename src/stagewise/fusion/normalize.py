"""Score normalisations: each maps one run's result list for one query to comparable numbers.

Every normalisation is a small pure function over all the lists of one run at once (rows grouped by
query, in the run's order: score descending, doc id descending), vectorised with segment reductions.
They are chosen from :data:`NORMALIZATIONS` by name; :class:`Normalization` is the value that names one.

Degenerate lists are stated, not silent: a list whose scores are all equal (zero range, zero spread, zero
sum) maps to 0 everywhere, as ranx does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stagewise._lazy import LazyModule
from stagewise.spec import Registry

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
else:
    # numpy on first use: the registry below is read by ``stagewise fuse --help``, which should not pay for numpy
    np = LazyModule(globals(), "np", "numpy")


@dataclass(frozen=True)
class Lists:
    """One run's result lists after the depth cut: rows grouped by query, each list in the run's order.

    Attributes
    ----------
    scores : numpy.ndarray of float64
        Each row's score as read.
    starts, lengths : numpy.ndarray of int64
        First row and length of each list (every list has at least one row).
    candidates : numpy.ndarray of int64
        For each list, the number of distinct documents the fused runs return for that query (Borda's n).
    """

    scores: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    candidates: np.ndarray

    def per_row(self, per_list: np.ndarray) -> np.ndarray:
        """A per-list value repeated on each row of its list."""
        return np.repeat(per_list, self.lengths)

    def position(self) -> np.ndarray:
        """0-based position of each row within its list."""
        return np.arange(len(self.scores), dtype=np.int64) - self.per_row(self.starts)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` where the denominator is positive, else 0."""
    out = np.zeros(len(numerator), dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def none(lists: Lists) -> np.ndarray:
    """The scores as read."""
    return lists.scores


def minmax(lists: Lists) -> np.ndarray:
    """Min-max (Lee, SIGIR 1997, "Analyses of multiple evidence combination"): ``(s - min) / (max - min)``,
    in [0, 1]; a list of equal scores maps to 0."""
    s = lists.scores
    low = lists.per_row(np.minimum.reduceat(s, lists.starts))
    high = lists.per_row(np.maximum.reduceat(s, lists.starts))
    return _divide(s - low, high - low)


def minmax_inverted(lists: Lists) -> np.ndarray:
    """Inverted min-max, for distances (lower is better): ``(max - s) / (max - min)``. It reverses the
    list's order, so rank-based methods see the lowest score first."""
    s = lists.scores
    low = lists.per_row(np.minimum.reduceat(s, lists.starts))
    high = lists.per_row(np.maximum.reduceat(s, lists.starts))
    return _divide(high - s, high - low)


def max_norm(lists: Lists) -> np.ndarray:
    """Max (Montague and Aslam, CIKM 2001, "Relevance score normalization for metasearch"): ``s / max``;
    a list whose maximum is not positive maps to 0."""
    high = lists.per_row(np.maximum.reduceat(lists.scores, lists.starts))
    return _divide(lists.scores, high)


def sum_norm(lists: Lists) -> np.ndarray:
    """Sum (Montague and Aslam, CIKM 2001): shift the minimum to 0, then scale the list to sum to 1:
    ``(s - min) / (sum(s) - n * min)``."""
    s = lists.scores
    low = np.minimum.reduceat(s, lists.starts)
    total = np.add.reduceat(s, lists.starts)
    return _divide(s - lists.per_row(low), lists.per_row(total - low * lists.lengths))


def zscore(lists: Lists) -> np.ndarray:
    """Z-score, "ZMUV" (Montague and Aslam, CIKM 2001): ``(s - mean) / std`` with the population standard
    deviation; a list of equal scores maps to 0."""
    s = lists.scores
    mean = lists.per_row(np.add.reduceat(s, lists.starts) / lists.lengths)
    centred = s - mean
    std = lists.per_row(np.sqrt(np.add.reduceat(centred * centred, lists.starts) / lists.lengths))
    return _divide(centred, std)


def rank_norm(lists: Lists) -> np.ndarray:
    """Rank (Renda and Straccia, SAC 2003, "Web metasearch: rank vs. score based rank aggregation methods"):
    ``1 - (rank - 1) / n`` for a list of n results."""
    return 1.0 - lists.position() / lists.per_row(lists.lengths).astype(np.float64)


def borda(lists: Lists) -> np.ndarray:
    """Borda (Renda and Straccia, SAC 2003): ``1 - (rank - 1) / N`` where N counts the distinct documents of
    the query over all fused runs; a document the run did not return gets :func:`borda_unranked`."""
    return 1.0 - lists.position() / lists.per_row(lists.candidates).astype(np.float64)


def borda_unranked(lengths: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Borda's value for a document a list of n results leaves out: ``0.5 - (n - 1) / (2 N)``."""
    return 0.5 - (lengths - 1) / (2.0 * candidates)


@dataclass(frozen=True)
class NormInfo:
    """A registered normalisation: its function, what it does to the order, and the value of a document
    the list does not contain (when the normalisation defines one)."""

    name: str
    function: Callable[[Lists], np.ndarray]
    summary: str
    reverses: bool = False
    unranked: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    aliases: tuple[str, ...] = ()


NORMALIZATIONS: Registry[NormInfo] = Registry(
    "normalisation",
    NormInfo("none", none, "scores as read", aliases=("raw", "identity")),
    NormInfo("minmax", minmax, "(s - min) / (max - min), in [0, 1]", aliases=("min_max",)),
    NormInfo(
        "minmax_inverted",
        minmax_inverted,
        "(max - s) / (max - min): for distances, lower is better; reverses the order",
        reverses=True,
        aliases=("min_max_inverted", "inverted_minmax"),
    ),
    NormInfo("max", max_norm, "s / max"),
    NormInfo("sum", sum_norm, "(s - min) / sum(s - min): the list sums to 1"),
    NormInfo("zscore", zscore, "(s - mean) / std (population std)", aliases=("zmuv", "z_score", "z")),
    NormInfo("rank", rank_norm, "1 - (rank - 1) / n, n the list's length"),
    NormInfo(
        "borda",
        borda,
        "1 - (rank - 1) / N, N the query's candidates over all runs; unranked: 0.5 - (n - 1) / (2N)",
        unranked=borda_unranked,
    ),
)


def normalization_names() -> list[str]:
    """Canonical names, in registry order (aliases left out)."""
    return NORMALIZATIONS.names()


@dataclass(frozen=True)
class Normalization:
    """A normalisation named by value: ``Normalization.parse("min-max")`` equals ``Normalization("minmax")``
    and prints as ``minmax``.

    >>> str(Normalization.parse("ZMUV"))
    'zscore'
    """

    name: str

    @classmethod
    def parse(cls, text: str | Normalization | None) -> Normalization:
        if isinstance(text, Normalization):
            return text
        if text is None:
            text = "none"
        info = NORMALIZATIONS.lookup(str(text))
        return cls(info.name)

    @property
    def info(self) -> NormInfo:
        return NORMALIZATIONS[self.name]

    def __str__(self) -> str:
        return self.name
