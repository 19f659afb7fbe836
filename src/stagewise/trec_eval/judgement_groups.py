"""trec_eval's ``-R qrels_jg``: qrels whose iteration column names a judgement group (one user's judgements).

``map_avgjg``, ``P_avgjg`` and ``Rprec_mult_avgjg`` are map, P and Rprec_mult computed against each group's
judgements alone, then averaged over the topic's groups (``m_*_avgjg.c``, ``form_res_rels_jg.c``). Here each
(topic, group) becomes one query of an ordinary evaluation, with the topic's ranking repeated for it, so the
kernels, ``-M``, ``-J``, ``-l`` and the tie convention are exactly those of the qrels measures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from stagewise._io import display_name
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
from stagewise.errors import InputError
from stagewise.metrics.context import Conventions, EvalContext, build_context
from stagewise.trec_eval import measures as M
from stagewise.trec_eval.text_files import fields_by_line, integral

# Joins a topic and a group into one query id: a tab cannot occur inside a whitespace-separated field.
_JOIN = "\t"
_PLAIN = {"map_avgjg": "map", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}


@dataclass(frozen=True)
class GroupQrels:
    """The judgements with (topic, group) as the query, and each such query's topic."""

    qrels: Qrels
    source: str


def read_qrels_jg(source: str) -> GroupQrels:
    """Read ``qid jg docno rel`` lines (``#`` at the start of a line: a comment). A document judged twice in
    one group of one topic is an error naming both lines."""
    name = display_name(source)
    seen: dict[tuple[str, str, str], int] = {}
    queries, docs, labels, lines = [], [], [], []
    for number, (qid, group, doc, rel) in fields_by_line(source, 4, "qid jg docno rel (jg: the judgement group)"):
        first = seen.setdefault((qid, group, doc), number)
        if first != number:
            raise InputError(
                name, f"document {doc!r} is judged twice in group {group!r} of topic {qid!r} (first on line {first})",
                line=number, expected="one judgement per document, topic and group",
            )  # fmt: skip
        queries.append(qid + _JOIN + group)
        docs.append(doc)
        labels.append(integral(rel, source, number, "relevance"))
        lines.append(number)
    if not queries:
        raise InputError(name, "has no judgements", expected="qid jg docno rel lines")
    frame = pl.DataFrame({"query_id": queries, "doc_id": docs, "relevance": labels})
    return GroupQrels(Qrels.from_frame(frame, name=name, source=name, line_of=lambda row: lines[row]), name)


def group_context(judgements: GroupQrels, run: Run, conventions: Conventions) -> EvalContext:
    """The evaluation of every (topic, group) query: each topic's ranking repeated once per group."""
    group_ids = judgements.qrels.query_ids
    topics = pl.DataFrame(
        {"topic": [q.split(_JOIN, 1)[0] for q in group_ids.tolist()], "group_query": group_ids.tolist()}
    )
    ranked = pl.DataFrame(
        {"topic": run.query_ids[run.query_codes] if len(run) else [], "doc_id": run.doc_ids, "score": run.scores}
    )
    rows = ranked.join(topics, on="topic", how="inner").select(
        pl.col("group_query").alias("query_id"), "doc_id", "score"
    )
    if rows.height == 0:  # no topic in common: build_context says so, or (-c) scores every topic 0
        rows = ranked.select(pl.col("topic").alias("query_id"), "doc_id", "score")
    repeated = Run.from_frame(rows, name=run.name, source=run.source)
    return build_context(judgements.qrels, repeated, conventions)


def topic_values(item: M.Requested, ctx: EvalContext) -> tuple[list[str], list[np.ndarray]]:
    """The topics (byte order) and, for each name of ``item`` (a -R qrels_jg measure), the mean over each
    topic's groups of the plain measure (a group with no ranking, under -c: 0)."""
    plain = M.Requested(_PLAIN[item.base], item.params, list(item.names), list(item.cutoffs))
    topic_of = np.array([q.split(_JOIN, 1)[0] for q in ctx.query_ids.tolist()])
    topics, which = np.unique(topic_of, return_inverse=True)
    n_groups = np.bincount(which, minlength=len(topics)).astype(np.float64)
    out = []
    for values in M.compute(plain, ctx, 0):
        values = np.where(ctx.in_run, values, 0.0)
        total = np.zeros(len(topics))
        np.add.at(total, which, values)  # in query order: each topic's groups in byte order, as trec_eval adds
        out.append(np.where(n_groups > 1, total / n_groups, total))
    return topics.tolist(), out
