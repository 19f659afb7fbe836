"""Preference judgements (trec_eval's ``-R prefs`` and ``-R qrels_prefs``) and the preferences a ranking keeps.

A prefs file has lines ``qid jg jsg docno level``: within one judgement sub-group (jsg) a document with a higher
level is preferred to one with a lower level; a judgement group (jg) is one user's consistent set of sub-groups,
whose preferences are closed transitively (A > B in one sub-group and B > C in another give A > C). A level of 0
marks a non-relevant document. ``-R qrels_prefs`` reads an ordinary qrels file the same way, its iteration column
as the judgement group and one sub-group per group.

For one topic and one ranking, each document named in the judgements gets an id (``form_prefs_counts.c``):
the retrieved ones 0, 1, ... in rank order, then the others in doc id (byte) order. A preference "x over y" is
*fulfilled* when x has the smaller id; it is *retrieved* when both are, *implied* when only x or only y is, and
*not occurring* when neither is. The measures (:mod:`stagewise.trec_eval.prefs_measures`) are ratios of these
counts. Ranking: score descending, ties by doc id ascending (form_prefs_counts sorts that way, unlike the
descending doc ids of the qrels measures); scores compared as C floats unless ``ties="docid-double"``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from stagewise._io import display_name
from stagewise.data.run import Run
from stagewise.errors import InputError
from stagewise.trec_eval.text_files import decimal, fields_by_line


@dataclass
class TopicPrefs:
    """One topic's judgement lines, in file order."""

    group: list[str] = field(default_factory=list)
    sub_group: list[str] = field(default_factory=list)
    doc: list[str] = field(default_factory=list)
    level: list[float] = field(default_factory=list)
    line: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PrefsFile:
    """A parsed prefs (or qrels_prefs) file: its name and each topic's lines, topics in byte order."""

    source: str
    topics: dict[str, TopicPrefs]


def read_prefs(source: str, *, sub_groups: bool = True) -> PrefsFile:
    """Read ``qid jg jsg docno level`` lines (``sub_groups``, -R prefs) or ``qid jg docno level`` lines (-R
    qrels_prefs: one sub-group per group). ``#`` at the start of a line makes it a comment."""
    n_fields = 5 if sub_groups else 4
    expected = "qid jg jsg docno level" if sub_groups else "qid jg docno level (a qrels line, jg = iteration)"
    topics: dict[str, TopicPrefs] = {}
    levels: dict[str, float] = {}  # a file holds few distinct levels: each is checked once
    for number, fields in fields_by_line(source, n_fields, expected):
        qid, group, *rest = fields
        sub_group, doc, level = rest if sub_groups else ("0", *rest)
        topic = topics.get(qid) or topics.setdefault(qid, TopicPrefs())
        topic.group.append(group)
        topic.sub_group.append(sub_group)
        topic.doc.append(doc)
        value = levels.get(level)
        topic.level.append(
            value if value is not None else levels.setdefault(level, decimal(level, source, number, "level"))
        )
        topic.line.append(number)
    if not topics:
        raise InputError(display_name(source), "has no judgements", expected=expected)
    return PrefsFile(display_name(source), dict(sorted(topics.items())))


def prefs_rankings(run: Run, *, double: bool, max_ret: int | None) -> dict[str, list[str]]:
    """Each query's documents best first as form_prefs_counts orders them: score descending (compared as C
    floats, or as doubles with ``double``), ties by doc id ascending (bytes); at most ``max_ret`` each."""
    scores = run.scores if double else run.scores.astype(np.float32).astype(np.float64)
    frame = pl.DataFrame({"q": run.query_codes, "s": scores, "d": run.doc_ids})
    ordered = frame.sort(["q", "s", "d"], descending=[False, True, False], maintain_order=True)
    docs = ordered["d"].to_list()
    offsets = run.offsets.tolist()
    return {
        str(query): docs[offsets[c] : offsets[c + 1]][:max_ret] if max_ret else docs[offsets[c] : offsets[c + 1]]
        for c, query in enumerate(run.query_ids)
    }


@dataclass
class GroupCounts:
    """One judgement group's preferences against a ranking (``JG`` in trec_eval's ``trec_format.h``).

    ``better``/``worse`` hold each preference "better over worse" as document ids (an id below ``retrieved`` is
    a retrieved document). ``ecs`` is the group's equivalence classes (ids by level, best level first) when it
    has one sub-group, else None; ``level_of`` is each id's level in the group (-1 where the group does not
    judge it), used when it has several.
    """

    better: np.ndarray
    worse: np.ndarray
    num_rel: int
    num_rel_ret: int
    num_nonrel: int
    num_nonrel_ret: int
    ecs: list[np.ndarray] | None
    level_of: np.ndarray | None
    fulfilled_ret: int = 0
    fulfilled_imp: int = 0
    possible_ret: int = 0
    possible_imp: int = 0
    possible_notoccur: int = 0

    def count(self, retrieved: int) -> None:
        """Sort every preference into trec_eval's five areas (retrieved/implied/not occurring, and whether
        the ranking fulfils it)."""
        x, y = self.better, self.worse
        kept = x < y
        self.fulfilled_ret = int(np.count_nonzero(kept & (y < retrieved)))
        self.fulfilled_imp = int(np.count_nonzero(kept & (x < retrieved) & (y >= retrieved)))
        self.possible_notoccur = int(np.count_nonzero((x >= retrieved) & (y >= retrieved)))
        self.possible_ret = self.fulfilled_ret + int(np.count_nonzero(~kept & (x < retrieved)))
        self.possible_imp = self.fulfilled_imp + int(np.count_nonzero(~kept & (x >= retrieved) & (y < retrieved)))


@dataclass
class TopicCounts:
    """A topic's judgement groups (in group id order) counted against one ranking."""

    judged: int  # documents named in the topic's judgements
    retrieved: int  # of which the ranking retrieved
    groups: list[GroupCounts]


def topic_counts(topic: TopicPrefs, ranking: list[str], source: str, qid: str) -> TopicCounts:
    """Count ``topic``'s preferences against ``ranking`` (the retrieved documents, best first)."""
    judged = set(topic.doc)
    retrieved_judged = [d for d in ranking if d in judged]  # a run repeats no document (read_run refuses it)
    others = sorted(judged.difference(retrieved_judged))
    ids = {doc: i for i, doc in enumerate(retrieved_judged + others)}
    n_ret = len(retrieved_judged)
    doc_id = np.array([ids[d] for d in topic.doc], dtype=np.int64)
    order = sorted(
        range(len(doc_id)), key=lambda i: (topic.group[i], topic.sub_group[i], -topic.level[i], int(doc_id[i]))
    )
    groups = []
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and topic.group[order[end]] == topic.group[order[start]]:
            end += 1
        rows = order[start:end]
        if len({topic.sub_group[i] for i in rows}) == 1:
            group = _equivalence_classes(topic, rows, doc_id, n_ret, source, qid)
        else:
            group = _preference_closure(topic, rows, doc_id, len(ids), n_ret, source, qid)
        group.count(n_ret)
        groups.append(group)
        start = end
    return TopicCounts(len(ids), n_ret, groups)


def _equivalence_classes(
    topic: TopicPrefs, rows: list[int], doc_id: np.ndarray, n_ret: int, source: str, qid: str
) -> GroupCounts:
    """A group with one sub-group: every document is preferred to every document of a lower level."""
    levels = [topic.level[i] for i in rows]
    ids = doc_id[rows]
    cuts = [0] + [k for k in range(1, len(rows)) if levels[k] != levels[k - 1]] + [len(rows)]
    ecs = [ids[a:b] for a, b in itertools.pairwise(cuts)]
    counts = {"rel": 0, "rel_ret": 0, "nonrel": 0, "nonrel_ret": 0}
    better, worse = [], []
    for k, ec in enumerate(ecs):
        kind = "rel" if levels[cuts[k]] > 0.0 else "nonrel"  # a negative level counts as non-relevant here
        counts[kind] += len(ec)
        counts[kind + "_ret"] += int(np.count_nonzero(ec < n_ret))
        lower = ids[cuts[k + 1] :]
        better.append(np.repeat(ec, len(lower)))
        worse.append(np.tile(lower, len(ec)))
    x, y = np.concatenate(better), np.concatenate(worse)
    same = np.flatnonzero(x == y)
    if len(same):
        doc_rows = [i for i in rows if doc_id[i] == x[same[0]]]
        raise InputError(
            source,
            f"topic {qid!r}: document {topic.doc[doc_rows[0]]!r} has two levels in judgement group "
            f"{topic.group[doc_rows[0]]!r}, sub-group {topic.sub_group[doc_rows[0]]!r}",
            line=max(topic.line[i] for i in doc_rows),
            expected="one level per document in a sub-group",
        )
    return GroupCounts(x, y, counts["rel"], counts["rel_ret"], counts["nonrel"], counts["nonrel_ret"], ecs, None)


def _preference_closure(
    topic: TopicPrefs, rows: list[int], doc_id: np.ndarray, n_judged: int, n_ret: int, source: str, qid: str
) -> GroupCounts:
    """A group with several sub-groups: each sub-group's preferences, closed transitively over the group."""
    level_of = np.full(n_judged, -1.0)
    for i in rows:  # in (sub-group, level descending) order, as trec_eval checks them
        now, new = level_of[doc_id[i]], topic.level[i]
        if (now > 0.0 and new == 0.0) or (now == 0.0 and new > 0.0):
            raise InputError(
                source,
                f"topic {qid!r}: document {topic.doc[i]!r} is non-relevant (level 0) and relevant in judgement "
                f"group {topic.group[i]!r}",
                line=topic.line[i],
                expected="a document at level 0 in one sub-group at level 0 in every sub-group of its group",
            )
        level_of[doc_id[i]] = new
    members = np.unique(doc_id[rows])
    local = {int(d): k for k, d in enumerate(members)}
    prefers = np.zeros((len(members), len(members)), dtype=bool)
    sub_groups = [topic.sub_group[i] for i in rows]
    cuts = [0] + [k for k in range(1, len(rows)) if sub_groups[k] != sub_groups[k - 1]] + [len(rows)]
    for a, b in itertools.pairwise(cuts):  # each sub-group: every document over each lower-level one
        block = rows[a:b]
        levels = np.array([topic.level[i] for i in block])
        at = np.array([local[int(doc_id[i])] for i in block])
        over, under = np.nonzero(levels[:, None] > levels[None, :])
        prefers[at[over], at[under]] = True
    closed = _transitive_closure(prefers)
    contradicted = np.argwhere(closed & closed.T)
    if len(contradicted):
        a, b = (members[k] for k in contradicted[0])
        names = {int(doc_id[i]): topic.doc[i] for i in rows}
        raise InputError(
            source,
            f"topic {qid!r}, judgement group {topic.group[rows[0]]!r}: the sub-groups prefer {names[int(a)]!r} to "
            f"{names[int(b)]!r} and {names[int(b)]!r} to {names[int(a)]!r} (directly or through others)",
            line=topic.line[rows[0]],
            expected="consistent preferences within a judgement group (put disagreeing users in different groups)",
        )
    x, y = np.nonzero(closed)
    in_group = level_of[members]
    retrieved = members < n_ret
    rel, nonrel = in_group > 0.0, in_group == 0.0
    return GroupCounts(
        members[x],
        members[y],
        int(np.count_nonzero(rel)),
        int(np.count_nonzero(rel & retrieved)),
        int(np.count_nonzero(nonrel)),
        int(np.count_nonzero(nonrel & retrieved)),
        None,
        level_of,
    )


def _transitive_closure(prefers: np.ndarray) -> np.ndarray:
    """Pairs (i, j), i != j, with a chain of preferences from i to j: the fixed point of squaring the
    reflexive relation (trec_eval's add_transitives), by matrix products."""
    reach = prefers.copy()
    np.fill_diagonal(reach, True)
    while True:
        as_float = reach.astype(np.float32)
        wider = (as_float @ as_float) > 0
        if np.array_equal(wider, reach):
            break
        reach = wider
    np.fill_diagonal(reach, False)
    return reach
