"""A slow, loop-by-loop statement of trec_eval's preference measures (``-R prefs``, ``-R qrels_prefs``).

The test oracle for :mod:`stagewise.trec_eval.prefs_measures`: sets and dicts, one preference at a time, no numpy.
It is checked against trec_eval's expected outputs (``out.test.prefs``, ``out.test.qrels_prefs``) in
``tests/test_trec_eval_prefs.py`` before it is used as a reference on random judgements.

Facts carried over from trec_eval 10 (``form_prefs_counts.c``, ``m_prefs_*.c``): a document's place is its rank
among the judged documents retrieved, then (unretrieved) its doc id in byte order; within a sub-group a higher
level is preferred; a group with several sub-groups closes its preferences transitively; a group with one
sub-group keeps every pair of its level classes (a document listed twice counts twice). The Rnonrel measures
recount a group whose non-relevant documents (level 0; in a one-sub-group group, level <= 0) outnumber its
relevant ones, with trec_eval's quirks kept (documented where they happen).
"""

from __future__ import annotations

from collections.abc import Sequence

Line = tuple[str, str, str, float]  # (group, sub-group, doc, level)


def _place(lines: Sequence[Line], ranking: Sequence[str]) -> tuple[dict[str, int], int]:
    judged = {doc for _, _, doc, _ in lines}
    retrieved = [doc for doc in ranking if doc in judged]
    rest = sorted(judged - set(retrieved), key=lambda d: d.encode("utf-8"))
    return {doc: i for i, doc in enumerate(retrieved + rest)}, len(retrieved)


def _group(lines: list[Line], place: dict[str, int]) -> dict:
    """One group's preferences (a list of (better, worse) places) and its per-place levels."""
    lines = sorted(lines, key=lambda line: (line[1].encode(), -line[3], place[line[2]]))
    sub_groups = {line[1] for line in lines}
    if len(sub_groups) == 1:
        levels = sorted({line[3] for line in lines}, reverse=True)
        classes = [[place[line[2]] for line in lines if line[3] == lv] for lv in levels]
        prefs = []
        for a in range(len(classes)):
            for b in range(a + 1, len(classes)):
                for x in classes[a]:
                    for y in classes[b]:
                        if x == y:
                            raise ValueError("a document at two levels of one sub-group")
                        prefs.append((x, y))
        members = [(place[line[2]], line[3]) for line in lines]  # with repeats
        return {"prefs": prefs, "classes": classes, "class_levels": levels, "members": members, "level": None}
    level = {}
    for _, _, doc, lv in lines:  # the last line of a document (sub-group, then level descending) sets it
        level[place[doc]] = lv
    direct = set()
    for sub in sub_groups:
        block = [line for line in lines if line[1] == sub]
        for _, _, a, la in block:
            for _, _, b, lb in block:
                if la > lb:
                    direct.add((place[a], place[b]))
    closed = set(direct)
    while True:
        wider = closed | {(a, d) for a, b in closed for c, d in closed if b == c}
        if wider == closed:
            break
        closed = wider
    prefs = sorted((a, b) for a, b in closed if a != b)
    if any((b, a) in closed for a, b in prefs):
        raise ValueError("contradictory preferences")
    return {"prefs": prefs, "classes": None, "members": sorted(level.items()), "level": level}


def _counts(group: dict, n_ret: int) -> dict:
    c = dict.fromkeys(("ful_ret", "ful_imp", "poss_ret", "poss_imp", "notoccur"), 0)
    for x, y in group["prefs"]:
        if x < n_ret and y < n_ret:
            c["poss_ret"] += 1
            c["ful_ret"] += x < y
        elif x < n_ret or y < n_ret:
            c["poss_imp"] += 1
            c["ful_imp"] += x < n_ret
        else:
            c["notoccur"] += 1
    one_sub_group = group["classes"] is not None
    for where, lv in group["members"]:
        kind = ("rel" if lv > 0 else "nonrel") if one_sub_group else ("rel" if lv > 0 else "nonrel" if lv == 0 else "")
        if kind:
            c[kind] = c.get(kind, 0) + 1
            c[kind + "_ret"] = c.get(kind + "_ret", 0) + (where < n_ret)
    for key in ("rel", "rel_ret", "nonrel", "nonrel_ret"):
        c.setdefault(key, 0)
    return c


def _div(a: float, b: float) -> float:
    return a / b if b else (float("nan") if a == 0 else float("inf"))


def _rnonrel(group: dict, c: dict, n_ret: int, n_judged: int, retrieved_only: bool) -> float:
    if retrieved_only:
        big_r, big_n = c["rel_ret"], c["nonrel_ret"]
        if big_r >= big_n:
            return _div(c["ful_ret"] + c["rel_ret"] * (big_r - big_n), c["poss_ret"] + c["rel"] * (big_r - big_n))
    else:
        big_r, big_n = c["rel"], c["nonrel"]
        if big_r >= big_n:
            ful = c["ful_ret"] + c["ful_imp"] + c["rel_ret"] * (big_r - big_n)
            return _div(ful, c["poss_ret"] + c["poss_imp"] + c["notoccur"] + c["rel"] * (big_r - big_n))
    ful = total = 0
    if group["classes"] is not None:
        classes = group["classes"]
        if retrieved_only:
            classes = [[x for x in cl if x < n_ret] for cl in classes]
        # trec_eval's quirk: the cut keeps the first R of the LAST class (whatever its level), and every class,
        # the last one included, is paired with that cut
        cut = sorted(group["classes"][-1])[:big_r]
        if retrieved_only:
            cut = [x for x in cut if x < n_ret]
        for a, better in enumerate(classes):
            for worse in [*classes[a + 1 : len(classes) - 1], cut]:
                for x in better:
                    for y in worse:
                        total += 1
                        ful += x < y and x < n_ret
        return _div(ful, total)
    level = group["level"]
    scan = n_ret if retrieved_only else n_judged
    nonrel = [i for i in range(scan) if level.get(i, -1.0) == 0.0]
    first_dropped = nonrel[c["rel"]] if len(nonrel) > c["rel"] else scan  # trec_eval uses R of all documents

    def kept(i: int) -> bool:
        return not (i >= first_dropped and level.get(i, -1.0) == 0.0)

    for x, y in group["prefs"]:
        if kept(x) and kept(y) and (not retrieved_only or (x < n_ret and y < n_ret)):
            total += 1
            ful += x < y and x < n_ret
    return _div(ful, total)


def _mean_over_groups(ratios: list[float]) -> float:
    total = 0.0
    for r in ratios:
        total += r
    return total / len(ratios) if total > 0 else 0.0


def naive_prefs_values(lines: Sequence[Line], ranking: Sequence[str]) -> dict[str, float]:
    """All 14 preference measures of one topic: ``lines`` its judgements, ``ranking`` the retrieved docs, best
    first (already ordered and cut as trec_eval does)."""
    place, n_ret = _place(lines, ranking)
    n = len(place)
    by_group: dict[str, list[Line]] = {}
    for line in lines:
        by_group.setdefault(line[0], []).append(line)
    groups = [_group(by_group[g], place) for g in sorted(by_group, key=lambda g: g.encode())]
    counts = [_counts(g, n_ret) for g in groups]
    paired = list(zip(groups, counts, strict=True))
    s = {k: sum(c[k] for c in counts) for k in ("ful_ret", "ful_imp", "poss_ret", "poss_imp", "notoccur")}
    poss_all = s["poss_ret"] + s["poss_imp"] + s["notoccur"]
    kept_by: dict[tuple[int, int], int] = {}
    for g in groups:
        for x, y in g["prefs"]:
            kept_by[(x, y)] = kept_by.get((x, y), 0) + 1
    pairs = {(min(x, y), max(x, y)) for x, y in kept_by}
    shares = {p: kept_by.get(p, 0) / (kept_by.get(p, 0) + kept_by.get(p[::-1], 0)) for p in pairs}
    both = [shares[p] for p in sorted(pairs) if p[1] < n_ret]
    one = [shares[p] for p in sorted(pairs) if p[0] < n_ret <= p[1]]
    return {
        "prefs_num_prefs_poss": float(poss_all),
        "prefs_num_prefs_ful": float(s["ful_ret"] + s["ful_imp"]),
        "prefs_num_prefs_ful_ret": float(s["ful_ret"]),
        "prefs_simp": (s["ful_ret"] + s["ful_imp"]) / poss_all if poss_all else 0.0,
        "prefs_pair": sum(both + one) / len(pairs) if pairs else 0.0,
        "prefs_avgjg": _mean_over_groups(
            [_div(c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"] + c["notoccur"])
             if c["poss_ret"] + c["poss_imp"] + c["notoccur"] else 0.0 for c in counts]
        ),
        "prefs_avgjg_Rnonrel": _mean_over_groups([_rnonrel(g, c, n_ret, n, False) for g, c in paired]),
        "prefs_simp_ret": s["ful_ret"] / s["poss_ret"] if s["poss_ret"] else 0.0,
        "prefs_pair_ret": sum(both) / len(both) if both else 0.0,
        "prefs_avgjg_ret": _mean_over_groups(
            [c["ful_ret"] / c["poss_ret"] if c["poss_ret"] else 0.0 for c in counts]
        ),
        "prefs_avgjg_Rnonrel_ret": _mean_over_groups([_rnonrel(g, c, n_ret, n, True) for g, c in paired]),
        "prefs_simp_imp": (s["ful_ret"] + s["ful_imp"]) / (s["poss_ret"] + s["poss_imp"])
        if s["poss_ret"] + s["poss_imp"]
        else 0.0,
        "prefs_pair_imp": sum(both + one) / len(both + one) if both or one else 0.0,
        "prefs_avgjg_imp": _mean_over_groups(
            [_div(c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"]) if c["poss_ret"] + c["poss_imp"] else 0.0
             for c in counts]
        ),
    }  # fmt: skip


def rank_for_prefs(docs: Sequence[tuple[str, float]], max_ret: int | None = None) -> list[str]:
    """form_prefs_counts' order: score descending (as doubles), ties by doc id ascending in byte order."""
    ordered = sorted(docs, key=lambda d: (-d[1], d[0].encode("utf-8")))
    return [doc for doc, _ in ordered][:max_ret]
