"""trec_eval's 14 preference measures of one topic, from its counted preferences (:mod:`.prefs`).

Each measure is trec_eval's ``m_prefs_*.c`` restated; a topic's value is 0 where its ratio has no denominator.
Summed where trec_eval sums (sequentially, in its order), so the printed digits are trec_eval's. Names:

- ``_simp``: fulfilled / possible over all preferences of all groups; ``_pair``: the mean over document pairs of
  the share of groups whose preference the ranking keeps; ``_avgjg``: the mean over groups of each group's
  fulfilled / possible; ``_avgjg_Rnonrel``: as ``_avgjg`` with each group's non-relevant documents cut (or padded)
  to as many as it has relevant ones.
- no suffix: a preference between two unretrieved documents counts as failed; ``_ret``: only preferences between
  two retrieved documents count; ``_imp``: those between two unretrieved documents are left out.
"""

from __future__ import annotations

import numpy as np

from stagewise.trec_eval.prefs import GroupCounts, TopicCounts

__all__ = ["topic_values"]


def _c_ratio(num: float, den: float) -> float:
    """C's double division: 0/0 is NaN (trec_eval's Rnonrel measures divide without a guard)."""
    if den:
        return num / den
    return float("nan") if num == 0 else float("inf")


def _sequential_sum(values: np.ndarray) -> float:
    """Left-to-right sum, as a C loop adds (numpy's sum pairs terms, which can move the last bit)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def topic_values(counts: TopicCounts) -> dict[str, float]:
    """Every preference measure of one topic."""
    groups = counts.groups
    ful_ret = sum(g.fulfilled_ret for g in groups)
    ful_imp = sum(g.fulfilled_imp for g in groups)
    poss_ret = sum(g.possible_ret for g in groups)
    poss_imp = sum(g.possible_imp for g in groups)
    notoccur = sum(g.possible_notoccur for g in groups)
    pair, pair_ret, pair_imp = _pair_means(counts)
    return {
        "prefs_num_prefs_poss": float(poss_ret + poss_imp + notoccur),
        "prefs_num_prefs_ful": float(ful_ret + ful_imp),
        "prefs_num_prefs_ful_ret": float(ful_ret),
        "prefs_simp": (ful_ret + ful_imp) / (poss_ret + poss_imp + notoccur) if poss_ret + poss_imp + notoccur else 0.0,
        "prefs_pair": pair,
        "prefs_avgjg": _group_mean(groups, lambda g: (g.fulfilled_ret + g.fulfilled_imp, _all_possible(g))),
        "prefs_avgjg_Rnonrel": _group_mean(groups, lambda g: _r_nonrel(g, counts), guard=False),
        "prefs_simp_ret": ful_ret / poss_ret if poss_ret else 0.0,
        "prefs_pair_ret": pair_ret,
        "prefs_avgjg_ret": _group_mean(groups, lambda g: (g.fulfilled_ret, g.possible_ret)),
        "prefs_avgjg_Rnonrel_ret": _group_mean(groups, lambda g: _r_nonrel_ret(g, counts), guard=False),
        "prefs_simp_imp": (ful_ret + ful_imp) / (poss_ret + poss_imp) if poss_ret + poss_imp else 0.0,
        "prefs_pair_imp": pair_imp,
        "prefs_avgjg_imp": _group_mean(
            groups, lambda g: (g.fulfilled_ret + g.fulfilled_imp, g.possible_ret + g.possible_imp)
        ),
    }


def _all_possible(g: GroupCounts) -> int:
    return g.possible_ret + g.possible_imp + g.possible_notoccur


def _group_mean(groups: list[GroupCounts], ratio, guard: bool = True) -> float:
    """Mean over groups of fulfilled / possible; with ``guard`` a group with nothing possible adds 0 (else
    C's NaN, which makes the topic's value 0, as trec_eval's ``sum > 0`` test then fails)."""
    total = 0.0
    for group in groups:
        fulfilled, possible = ratio(group)
        if possible or not guard:
            total += _c_ratio(fulfilled, possible)
    return total / len(groups) if total > 0.0 else 0.0


def _pair_means(counts: TopicCounts) -> tuple[float, float, float]:
    """prefs_pair, prefs_pair_ret and prefs_pair_imp: per document pair, the share of the groups preferring
    one of them that prefer the better-ranked one; averaged over the pairs each measure counts."""
    if len(counts.groups) == 1 and _pairs_once(counts.groups[0]):
        # Each pair is preferred once, one way: its share is 1 (kept) or 0, so the sums are counts (exact in any
        # order) and no pair needs looking up: prefs_pair is prefs_simp here, as trec_eval's help says.
        g = counts.groups[0]
        kept, kept_ret = g.fulfilled_ret + g.fulfilled_imp, g.fulfilled_ret
        return (
            kept / len(g.better) if len(g.better) else 0.0,
            kept_ret / g.possible_ret if g.possible_ret else 0.0,
            kept / (g.possible_ret + g.possible_imp) if g.possible_ret + g.possible_imp else 0.0,
        )
    x = np.concatenate([g.better for g in counts.groups])
    y = np.concatenate([g.worse for g in counts.groups])
    n, n_ret = max(counts.judged, 1), counts.retrieved
    low, high = np.minimum(x, y), np.maximum(x, y)
    pairs, which = np.unique(low * n + high, return_inverse=True)
    kept = np.bincount(which, weights=(x < y).astype(np.float64), minlength=len(pairs))
    share = kept / np.bincount(which, minlength=len(pairs))
    low, high = pairs // n, pairs % n
    both = high < n_ret
    one = (low < n_ret) & (high >= n_ret)
    shares = np.concatenate([share[both], share[one]])  # trec_eval's loop order: both retrieved, then one
    both_sum = _sequential_sum(share[both])
    either_sum = _sequential_sum(shares)
    n_both, n_either = int(np.count_nonzero(both)), len(shares)
    return (
        either_sum / len(pairs) if len(pairs) else 0.0,
        both_sum / n_both if n_both else 0.0,
        either_sum / n_either if n_either else 0.0,
    )


def _pairs_once(g: GroupCounts) -> bool:
    """Whether no pair of documents occurs twice in the group's preferences: always after a transitive closure;
    with one sub-group, unless a document is listed twice."""
    if g.ecs is None:
        return True
    members = np.concatenate(g.ecs)
    return len(np.unique(members)) == len(members)


def _later_count(better: np.ndarray, worse: np.ndarray) -> int:
    """How many (b, w) pairs, b from ``better`` and w from sorted ``worse``, have b < w."""
    return int((len(worse) - np.searchsorted(worse, better, side="right")).sum())


def _r_nonrel(g: GroupCounts, counts: TopicCounts) -> tuple[int, int]:
    """prefs_avgjg_Rnonrel's (fulfilled, possible) for one group: R relevant and N non-relevant documents;
    N <= R adds R - N fulfilled preferences per relevant document, N > R keeps only the first R non-relevant."""
    rel, nonrel, n_ret = g.num_rel, g.num_nonrel, counts.retrieved
    if rel >= nonrel:
        fulfilled = g.fulfilled_ret + g.fulfilled_imp + g.num_rel_ret * (rel - nonrel)
        return fulfilled, _all_possible(g) + g.num_rel * (rel - nonrel)
    if g.ecs is not None:
        fulfilled = total = 0
        top = g.ecs[-1][:rel]  # trec_eval reads past the class when it has fewer: clipped here
        for a, ec in enumerate(g.ecs):
            better = ec[ec < n_ret]  # only a retrieved document can come first
            for other in [*g.ecs[a + 1 : len(g.ecs) - 1], top]:  # quirk kept: the last class meets its own cut
                fulfilled += _later_count(better, other)
                total += len(ec) * len(other)
        return fulfilled, total
    keep = _kept_documents(g.level_of, rel, len(g.level_of))
    x, y = g.better, g.worse
    both = keep[x] & keep[y]
    return int(np.count_nonzero(both & (x < n_ret) & (x < y))), int(np.count_nonzero(both))


def _r_nonrel_ret(g: GroupCounts, counts: TopicCounts) -> tuple[int, int]:
    """prefs_avgjg_Rnonrel_ret's (fulfilled, possible): as :func:`_r_nonrel` over retrieved documents only
    (trec_eval's formula, including its use of all R relevant documents where it pads)."""
    rel, nonrel, n_ret = g.num_rel_ret, g.num_nonrel_ret, counts.retrieved
    if rel >= nonrel:
        return g.fulfilled_ret + g.num_rel_ret * (rel - nonrel), g.possible_ret + g.num_rel * (rel - nonrel)
    if g.ecs is not None:
        fulfilled = total = 0
        top = g.ecs[-1][:rel]
        top = top[top < n_ret]
        for a, ec in enumerate(g.ecs):
            better = ec[ec < n_ret]
            for other in [*g.ecs[a + 1 : len(g.ecs) - 1], top]:
                other = other[other < n_ret]
                fulfilled += _later_count(better, other)
                total += len(better) * len(other)
        return fulfilled, total
    keep = _kept_documents(g.level_of, g.num_rel, n_ret)
    x, y = g.better, g.worse
    both = keep[x] & keep[y] & (x < n_ret) & (y < n_ret)
    return int(np.count_nonzero(both & (x < y))), int(np.count_nonzero(both))


def _kept_documents(level_of: np.ndarray, rel: int, scan: int) -> np.ndarray:
    """Per document id, False for a non-relevant one beyond the first ``rel`` (found among ids below ``scan``):
    from there on trec_eval drops the non-relevant documents of the group."""
    nonrel = np.flatnonzero(level_of[:scan] == 0.0)
    first_dropped = int(nonrel[rel]) if len(nonrel) > rel else scan
    ids = np.arange(len(level_of))
    return ~((ids >= first_dropped) & (level_of == 0.0))
