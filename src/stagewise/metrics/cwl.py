"""cwl_eval's C/W/L user models as measure families: ``inst``, ``insq``, ``bpm``, ``nerr8`` to ``nerr11``, ``sdcg``.

In the C/W/L framework (Moffat et al.; Azzopardi, Thomas and Moffat, cwl_eval, SIGIR 2019) a measure is a user
who reads rank 1, then continues from rank ``i`` to ``i + 1`` with probability ``C(i)``. The chance of reading
rank ``i`` is ``P(i) = C(1) ... C(i - 1)`` (``P(1) = 1``), the weight of rank ``i`` is ``W(i) = P(i) / sum P``,
and the measure is the expected gain per result read, ``sum W(i) g(i)`` (cwl_eval's "expected utility", EU; the
totals, costs and residuals it also prints are not measures here). The families differ in ``C`` only.

Conventions, as cwl_eval computes them when ir_measures 0.4.3 calls it (its ``cwl_eval`` provider), and stated
in every output (each option is in the measure's JSON conventions; ``max_rel`` taken from the judgements is a
note under the table):

- **gain**: ``g = (clip(max(label, 0), min_rel, max_rel) - min_rel) / (max_rel - min_rel)``: a label below 0
  counts as 0, then the label is clipped to ``[min_rel, max_rel]`` and scaled into [0, 1]. An unjudged result
  gains 0 (cwl_eval's lower bound; residuals are not computed). ir_measures requires ``max_rel``; here it
  defaults to the highest label of the evaluated queries' judgements, as ``err``'s ``max_label`` does.
- **depth**: the user model walks ``depth`` ranks (cwl_eval's ``max_depth``, 1000 in ir_measures): the ranking
  is cut there and padded with gain 0, so ``sum P`` runs over exactly ``depth`` ranks.
- **cost**: every result costs 1 (no cost file), so BPM's cost budget ``K`` is a number of results: its cutoff.
- **ties**: as the evaluation's ``ties`` convention orders the run; ir_measures' provider sorts a run by score
  (doubles), keeping the input order of equal scores: ``ties="input"`` gives its numbers.

``C(i)`` per family, ranks 1-based, ``cg(i) = g(1) + ... + g(i)``:

============  =======================================================================  ======================
family        C(i)                                                                     ir_measures spelling
============  =======================================================================  ======================
inst          ``((i + 2T - cg(i) - 1) / (i + 2T - cg(i)))**2``                          ``INST(T=1,max_rel=3)``
insq          ``((i + 2T - 1) / (i + 2T))**2``                                          ``INSQ(T=1,max_rel=3)``
bpm@K         1 while ``cg(i) < T`` and ``i < K``, then 0 (the static BPM)              ``BPM(T=1,max_rel=3)@10``
nerr8@k       ``1 - g(i)`` for ``i < k``, then 0                                       ``NERR8(max_rel=3)@10``
nerr9@k       ``i / (i + 1) * (1 - g(i))`` for ``i < k``, then 0                        ``NERR9(max_rel=3)@10``
nerr10        ``p * (1 - g(i))``                                                        ``NERR10(p=0.9,max_rel=3)``
nerr11        ``((i + 2T - 1) / (i + 2T))**2 * (1 - g(i))``                             ``NERR11(T=1,max_rel=3)``
sdcg@k        ``log2(i + 1) / log2(i + 2)`` for ``i < k``, then 0: DCG@k over the DCG@k   ``SDCG(max_rel=3)@10``
              of a ranking whose every result has gain 1
============  =======================================================================  ======================

The kernel is vectorised over queries: a (queries x depth) matrix of gains per block of queries, the
continuation probabilities computed on it at once, and the products taken along the ranks with
``np.cumprod`` (sequential, as cwl_eval's own, so BPM's threshold ``cg(i) < T`` is decided on the same
floating-point sums).

>>> from stagewise.metrics.measures import Measure
>>> str(Measure.parse("INST(T=2,max_rel=3)")), str(Measure.parse("BPM(max_rel=3)@10"))
('inst(T=2,max_rel=3)', 'bpm@10(max_rel=3)')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise.errors import MetricError
from stagewise.metrics.context import EvalContext
from stagewise.metrics.measures import FAMILIES, Family, Measure, top_label
from stagewise.spec import Param

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.data.qrels import Qrels

#: The most (queries x depth) cells one block of the kernel holds: 2M float64, 16 MB per matrix.
BLOCK_CELLS = 2_000_000

#: C(i) from (ranks 1..depth as a row, the block's gains, the cutoff, the options): an array that broadcasts to
#: the gains' shape (one row when C does not depend on the gains).
Continuation = Callable[[np.ndarray, np.ndarray, Any, dict[str, Any]], np.ndarray]


# -- the options ------------------------------------------------------------------------------------------------

_T = Param(
    float,
    1.0,
    "the total gain the user wants (scaled gains, so 1 is one fully relevant result)",
    "a number > 0",
    lambda v: v > 0,
)
_MIN_REL = Param(int, 0, "lowest label of the gain scale: labels at or below it gain 0")
_MAX_REL = Param(
    int,
    None,
    "highest label of the gain scale: labels at or above it gain 1 (default: the highest label in the "
    "judgements of the evaluated queries)",
)
_DEPTH = Param(
    int,
    1000,
    "ranks the user model walks (cwl_eval's max_depth, 1000 in ir_measures): the ranking is cut and padded "
    "with gain 0 to this depth",
    "an int >= 1",
    lambda v: v >= 1,
)
_P = Param(float, 0.9, "persistence (cwl_eval's phi), in (0, 1]", "a number in (0, 1]", lambda v: 0 < v <= 1)
_DCG = Param(str, "log2", "the discount, log2(rank + 1) (ir_measures' only choice)", choices=("log2",))

_SCALE = {"min_rel": _MIN_REL, "max_rel": _MAX_REL, "depth": _DEPTH}


# -- the gain and the walk ----------------------------------------------------------------------------------------


def scaled_gain(labels: np.ndarray, min_rel: int, max_rel: int) -> np.ndarray:
    """cwl_eval's gain of a label as ir_measures feeds it: negative labels read as 0, then clipped to
    ``[min_rel, max_rel]`` and scaled into [0, 1].

    >>> scaled_gain(np.array([-1, 0, 1, 2, 3, 5]), 0, 3).tolist()
    [0.0, 0.0, 0.3333333333333333, 0.6666666666666666, 1.0, 1.0]
    """
    clipped = np.clip(np.maximum(labels, 0), min_rel, max_rel)
    return (clipped - min_rel) / (max_rel - min_rel)


def expected_utility(ctx: EvalContext, cutoff: Any, opts: dict[str, Any], continuation: Continuation) -> np.ndarray:
    """Per query, ``sum P(i) g(i) / sum P(i)`` over ranks 1..depth, ``P(i) = C(1) ... C(i - 1)``."""
    min_rel, max_rel, depth = opts["min_rel"], _stated_max_rel(opts), opts["depth"]
    _check_scale(min_rel, max_rel)
    out = np.zeros(ctx.n_queries, dtype=np.float64)
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    keep = ctx.row_rank <= depth
    row_query, row_rank = ctx.row_query[keep], ctx.row_rank[keep]
    row_gain = scaled_gain(ctx.row_label[keep], min_rel, max_rel)
    block = max(1, BLOCK_CELLS // depth)
    for start in range(0, ctx.n_queries, block):
        stop = min(start + block, ctx.n_queries)
        lo, hi = np.searchsorted(row_query, [start, stop])  # rows are sorted by query, then rank
        gains = np.zeros((stop - start, depth), dtype=np.float64)
        gains[row_query[lo:hi] - start, row_rank[lo:hi] - 1] = row_gain[lo:hi]
        c = np.broadcast_to(continuation(ranks, gains, cutoff, opts), gains.shape)
        reach = np.ones_like(gains)
        np.cumprod(c[:, :-1], axis=1, out=reach[:, 1:])
        out[start:stop] = (reach * gains).sum(axis=1) / reach.sum(axis=1)
    return out


def _stated_max_rel(opts: dict[str, Any]) -> int:
    if opts["max_rel"] is None:
        raise MetricError(
            "the C/W/L measures' max_rel comes from the judgements: resolve the measure first (Measure.resolve; "
            "stagewise.evaluate does)"
        )
    return int(opts["max_rel"])


def _check_scale(min_rel: int, max_rel: int) -> None:
    if not min_rel < max_rel:
        raise MetricError(
            f"a C/W/L measure's gain scale needs min_rel < max_rel (got min_rel={min_rel}, max_rel={max_rel}); "
            "give max_rel, the highest label of the judgements' scale, as in INST(max_rel=3)"
        )


def resolve_max_rel(measure: Measure, qrels: Qrels, query_ids: np.ndarray | None) -> Measure:
    """``max_rel`` as given, else the highest label of the evaluated queries' judgements (at least
    ``min_rel + 1``, so that a scale exists when every label is 0); the scale is checked here, before any run
    is measured."""
    if measure.option("max_rel") is None:
        top = max(top_label(qrels, query_ids), measure.option("min_rel") + 1)
        measure = measure.with_options(max_rel=top)
    _check_scale(measure.option("min_rel"), measure.option("max_rel"))
    return measure


# -- continuation probabilities, one function per model ------------------------------------------------------------


def _cumulative_gain(gains: np.ndarray) -> np.ndarray:
    return np.cumsum(gains, axis=1)  # sequential along the ranks, as cwl_eval's np.cumsum of one ranking


def inst_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """INST (Moffat et al., ADCS 2015): the user wants T and has ``T - cg(i)`` left to find."""
    t = opts["T"]
    left = t - _cumulative_gain(gains)
    return (((ranks + t + left) - 1.0) / (ranks + t + left)) ** 2.0


def insq_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """INSQ (Moffat, Scholer and Thomas, ADCS 2012): INST's form with nothing found yet, whatever is found."""
    t = opts["T"]
    return (((ranks + 2.0 * t) - 1.0) / (ranks + 2.0 * t)) ** 2.0


def bpm_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """The static Bejeweled Player Model (Zhang et al., SIGIR 2017): continue while the gain found is below T
    and the results read are fewer than K (every result costs 1); stop for good once either is reached."""
    wanting = np.cumprod(_cumulative_gain(gains) < opts["T"], axis=1)  # cwl_eval's loop stops at the first miss
    return (wanting * (ranks < cutoff)).astype(np.float64)


def nerr8_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """NERR, equation 8 of Azzopardi, Mackenzie and Moffat (ICTIR 2021): stop on a result with its gain,
    never read past k."""
    return np.where(ranks < cutoff, 1.0 - gains, 0.0)


def nerr9_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """NERR, equation 9: equation 8 with reciprocal-rank patience ``i / (i + 1)``."""
    return np.where(ranks < cutoff, (1.0 * ranks / (ranks + 1.0)) * (1.0 - gains), 0.0)


def nerr10_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """NERR, equation 10: RBP's persistence p, times the chance of not being satisfied by the result."""
    return opts["p"] * (1.0 - gains)


def nerr11_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """NERR, equation 11 (ir_measures' NERR11; the paper's equation 12): INSQ's patience for T, times the chance
    of not being satisfied by the result."""
    t = opts["T"]
    return (((ranks + 2.0 * t) - 1.0) / (ranks + 2.0 * t)) ** 2.0 * (1.0 - gains)


def sdcg_c(ranks: np.ndarray, gains: np.ndarray, cutoff: Any, opts: dict[str, Any]) -> np.ndarray:
    """Scaled DCG@k (cwl_eval's NDCG-k): DCG's log2 discount as a walk, normalised over the top k."""
    log = np.vectorize(lambda i: math.log(i + 1, 2.0) / math.log(i + 2, 2.0), otypes=[np.float64])
    return np.where(ranks < cutoff, log(ranks), 0.0)  # math.log(x, base) as cwl_eval computes it


# -- the families -----------------------------------------------------------------------------------------------

_GAIN_RULE = "gain (label clipped to [min_rel, max_rel] - min_rel) / (max_rel - min_rel), unjudged 0 (cwl_eval)"


def _family(
    name: str, summary: str, continuation: Continuation, *, cutoff: str = "none", options: dict[str, Param]
) -> Family:
    return Family(
        name,
        f"{summary}; {_GAIN_RULE}",
        lambda c, k, o: expected_utility(c, k, o, continuation),
        cutoff=cutoff,
        options={**options, **_SCALE},
        binary=False,
        resolve=resolve_max_rel,
        stated={"gain": _GAIN_RULE.removeprefix("gain ")},
    )


CWL_FAMILIES: tuple[Family, ...] = (
    _family("inst", "INST (C/W/L): expected gain per result read by a user who wants T", inst_c, options={"T": _T}),
    _family("insq", "INSQ (C/W/L): INST's patience without the gain found", insq_c, options={"T": _T}),
    _family(
        "bpm",
        "static Bejeweled Player Model (C/W/L): reads until gain T or K = cutoff results",
        bpm_c,
        cutoff="required",
        options={"T": _T},
    ),
    _family("nerr8", "NERR eq. 8 (C/W/L approximation of ERR), cut at k", nerr8_c, cutoff="required", options={}),
    _family("nerr9", "NERR eq. 9 (C/W/L approximation of ERR), cut at k", nerr9_c, cutoff="required", options={}),
    _family("nerr10", "NERR eq. 10 (C/W/L approximation of ERR), persistence p", nerr10_c, options={"p": _P}),
    _family("nerr11", "NERR eq. 11 (C/W/L approximation of ERR), INST's goal T", nerr11_c, options={"T": _T}),
    _family(
        "sdcg",
        "scaled DCG@k (C/W/L): DCG@k over the DCG@k of k results of gain 1",
        sdcg_c,
        cutoff="required",
        options={"dcg": _DCG},
    ),
)

for _entry in CWL_FAMILIES:
    if _entry.name not in FAMILIES:  # a reload of this module keeps the first registration
        FAMILIES.register(_entry)
