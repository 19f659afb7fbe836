"""``evaluate_rag(records)``: score retrieval and generation separately and label every sample.

>>> report = evaluate_rag([
...     {"id": "q1", "retrieved": ["p3", "p9", "p1"], "context": ["p3", "p9"], "gold_evidence": ["p9", ["p4", "p5"]],
...      "answer": "Jane Austen wrote it [p9].", "gold_answers": ["Jane Austen"]},
...     {"id": "q2", "retrieved": ["p2", "p7"], "gold_evidence": ["p8"], "answer": "Dickens",
...      "gold_answers": ["Austen"]},
... ])
>>> [(row["id"], row["label"], row["reason"]) for row in report.rows]
[('q1', 'ok', 'correct_answer'), ('q2', 'retrieval_failure', 'not_retrieved')]
>>> report.rows[0]["first_gold_rank"], report.rows[0]["citation_precision"], report.rows[0]["citation_recall"]
(2, 1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stagewise.errors import StagewiseError, parameter_error
from stagewise.rag.answers import Criterion, normalize_answer, parse_criterion, score_answer
from stagewise.rag.citations import (
    CitedSentence,
    alce_scores,
    citation_precision,
    citation_recall,
    split_cited_sentences,
)
from stagewise.rag.judges import (
    CachedJudge,
    GoldEvidenceJudge,
    JudgeStats,
    LexicalJudge,
    Passage,
    SupportJudge,
)
from stagewise.rag.labels import answer_reason, retrieval_reason, top_label
from stagewise.rag.records import RagRecord, read_records

__all__ = [
    "DEFAULT_CONTEXT_K",
    "DEFAULT_METRICS",
    "EVIDENCE_SOURCES",
    "JUDGES",
    "RagOptions",
    "RagSample",
    "evaluate_rag",
]

DEFAULT_CONTEXT_K = 5
DEFAULT_METRICS: tuple[str, ...] = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
JUDGES: tuple[str, ...] = ("auto", "gold", "lexical", "none")
EVIDENCE_SOURCES: tuple[str, ...] = ("ids", "answers")


@dataclass(frozen=True)
class RagOptions:
    """The conventions of one diagnosis; every output prints them."""

    context_k: int | None = None
    correct: Criterion = field(default_factory=lambda: Criterion("contains"))
    partial_recall: float = 0.5
    kilt_k: int | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    evidence: str = "ids"
    judge: str = "auto"
    answer_judge: str = "lexical(threshold=0.6)"

    def describe(self) -> dict[str, Any]:
        k = self.context_k
        return {
            "correct": self.correct.name,
            "correct_rule": self.correct.describe()
            + "; an abstention is never a correct answer; for an unanswerable question (gold_answers []) the "
            "correct answer is an abstention",
            "normalisation": "SQuAD v1.1: lowercase, remove string.punctuation, remove the words a/an/the, "
            "collapse whitespace; citation markers are removed from the answer first",
            "context_k": k if k is not None else DEFAULT_CONTEXT_K,
            "context_rule": (
                f"context = the record's 'context', else retrieved[:{k if k is not None else DEFAULT_CONTEXT_K}]; "
                "the cut-off for ranked_too_low/dropped_from_context is "
                + (f"{k}" if k is not None else f"len(context) when the record gives one, else {DEFAULT_CONTEXT_K}")
            ),
            "evidence_in_context": "at least one alternative (an id, or a list of ids needed together) is wholly "
            "in the context; an unanswerable question without gold evidence needs none (in context)",
            "evidence_source": {
                "ids": "the record's gold_evidence ids; absent gold_evidence means none",
                "answers": "the record's gold_evidence ids; when absent, each passage whose text contains a "
                "normalised gold answer on token boundaries (DPR's has_answer) is one alternative",
            }[self.evidence],
            "alternatives_as_qrels": "every id of every alternative is a relevant document (label 1) for the "
            "metrics engine, and the retrieved list is a run scored -rank; recall@k is the share of those ids in "
            "the top k; samples without gold evidence have no retrieval metrics",
            "duplicates": "a repeated retrieved id keeps its first position; ranks count the list without copies",
            "partial_answer": f"a wrong, non-abstaining answer holding >= {self.partial_recall:g} of some gold "
            "answer's normalised tokens",
            "abstention": "empty, 'unknown'/'none'/'n/a'/'no answer', or a decline phrase in the first sentence "
            "(stagewise.rag.answers.ABSTENTION_PATTERNS); a record's 'abstained' field overrides",
            "kilt": "KILT-style scores count an answer only when R-precision of some alternative is 1 (KILT)"
            if self.kilt_k is None
            else f"KILT-style scores count an answer only when some alternative is wholly in the top {self.kilt_k}",
            "citations": "the record's 'citations', else [id] markers in the answer; a marker [n] that is no known "
            "id is the n-th context passage (ALCE); precision = cited gold ids / cited ids (null when nothing is "
            "cited); recall = the best alternative's share of cited ids (null without gold evidence)",
            "sentence_citations": f"ALCE sentence-level citation recall/precision with the {self.judge} judge"
            if self.judge != "none"
            else "not computed (judge none)",
            "answer_judge": self.answer_judge if self.correct.kind == "judge" else None,
        }


def _positive_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise parameter_error(name, "evaluate_rag", "an int >= 1 or None", value)
    return value


class _Counted:
    """A judge that only counts its calls into a shared :class:`JudgeStats` (for the cheap gold judge)."""

    def __init__(self, judge: SupportJudge, stats: JudgeStats) -> None:
        self.judge, self.stats = judge, stats

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        self.stats.requests += 1
        self.stats.calls += 1
        return self.judge.supports(passages, claim)


def _resolve_judge(
    judge: Any, records: Sequence[RagRecord], cache_path: str | Path | None
) -> tuple[str, CachedJudge | None]:
    if judge is None or judge == "none":
        return "none", None
    if isinstance(judge, str):
        if judge not in JUDGES:
            raise parameter_error("judge", "evaluate_rag", f"one of {', '.join(JUDGES)} or a SupportJudge", judge)
        if judge == "auto":
            judge = "lexical" if any(rec.passages for rec in records) else "gold"
        if judge == "gold":
            return "gold", None
        return "lexical", CachedJudge(LexicalJudge(), cache_path)
    if not callable(getattr(judge, "supports", None)):
        raise parameter_error("judge", "evaluate_rag", f"one of {', '.join(JUDGES)} or a SupportJudge", judge)
    cached = judge if isinstance(judge, CachedJudge) else CachedJudge(judge, cache_path)
    return cached.name, cached


def _answer_evidence(rec: RagRecord, retrieved: Sequence[str], context: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """DPR's has_answer: the passages (retrieved or in context) whose text contains a gold answer."""
    if not rec.passages or not rec.gold_answers:
        return ()
    golds = [f" {g} " for g in (normalize_answer(a) for a in rec.gold_answers) if g]
    out = []
    for pid in dict.fromkeys((*retrieved, *context)):
        text = rec.passages.get(pid)
        if text is not None:
            padded = f" {normalize_answer(text)} "
            if any(g in padded for g in golds):
                out.append((pid,))
    return tuple(out)


@dataclass(slots=True)
class RagSample:
    """Everything that led to one sample's label, in the order of its row in the output (see ``docs/rag.md``).

    :meth:`to_dict` gives the row: these fields, then ``line`` (when the record came from a file), then the
    ranking metrics (``metrics``, filled by the metrics engine; None without gold evidence).
    """

    id: str
    label: str
    reason: str
    detail: str
    evidence_in_context: bool
    answer_correct: bool
    correct_by: str
    answerable: bool
    abstained: bool
    em: float
    f1: float
    contains: bool
    first_gold_rank: int | None
    evidence_rank: int | None
    gold_evidence_given: bool
    gold_evidence: list[list[str]]
    gold_ranks: dict[str, int]
    context: list[str]
    context_cutoff: int
    retrieved_count: int
    duplicates_dropped: int
    rprec: float | None
    kilt_em: float | None
    kilt_f1: float | None
    kilt_correct: bool | None
    citations: list[str]
    cited_unseen: list[str]
    no_citations: bool
    citation_precision: float | None
    citation_recall: float | None
    sentence_citation_recall: float | None
    sentence_citation_precision: float | None
    line: int | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The sample's row: a plain dict, JSON-ready but for NaN (see :mod:`stagewise.report.rag`)."""
        row = {name: getattr(self, name) for name in _ROW_FIELDS}
        if self.line is not None:
            row["line"] = self.line
        row.update(self.metrics)
        return row


_ROW_FIELDS = tuple(name for name in RagSample.__dataclass_fields__ if name not in ("line", "metrics"))


@dataclass(slots=True)
class _Evidence:
    """Where a sample's gold evidence sits: its alternatives, their ids, their ranks, and the context."""

    context: Sequence[str]
    ctx: set[str]
    cutoff: int
    alts: Sequence[Sequence[str]]
    gold_ids: tuple[str, ...]
    gold_rank: dict[str, int]
    complete: list[Sequence[str]]
    in_context: bool


@dataclass(slots=True)
class _Answer:
    """The answer without its citation markers, its scores, and whether it counts as correct."""

    sentences: list[CitedSentence] | None
    marker_cites: tuple[str, ...]
    scores: Any
    abstained: bool
    correct: bool
    partial: bool


def _evidence(rec: RagRecord, opts: RagOptions) -> _Evidence:
    retrieved = rec.retrieved
    if rec.context is not None:
        context = rec.context
        cutoff = opts.context_k if opts.context_k is not None else len(context)
    else:
        cutoff = opts.context_k if opts.context_k is not None else DEFAULT_CONTEXT_K
        context = retrieved[:cutoff]
    ctx = set(context)
    alts = rec.gold_evidence
    if alts is None and opts.evidence == "answers":
        alts = _answer_evidence(rec, retrieved, context)
    alts = alts or ()
    gold_ids = tuple(dict.fromkeys(g for alt in alts for g in alt))
    if gold_ids and retrieved:
        pos = {doc: i for i, doc in enumerate(retrieved, start=1)}
        gold_rank = {g: pos[g] for g in gold_ids if g in pos}
    else:
        gold_rank = {}
    complete = [alt for alt in alts if all(g in ctx for g in alt)]
    in_context = bool(complete) or (not alts and not rec.answerable)
    return _Evidence(context, ctx, cutoff, alts, gold_ids, gold_rank, complete, in_context)


def _answer(rec: RagRecord, opts: RagOptions, ev: _Evidence, alce: bool, answer_judge: SupportJudge | None) -> _Answer:
    # the answer, split into sentences with their citation markers (once), and without the markers
    answer = rec.answer
    sentences: list[CitedSentence] | None = None
    if "[" in answer or alce:
        known = set(rec.retrieved)
        known.update(ev.ctx, ev.gold_ids)
        if rec.passages:
            known.update(rec.passages)
        sentences = split_cited_sentences(answer, known, ev.context)
        clean = "\n".join(s.text for s in sentences)  # a line per sentence: abstention reads the first one
        marker_cites = tuple(dict.fromkeys(c for s in sentences for c in s.cited))
    else:
        clean, marker_cites = answer, ()
    scores = score_answer(clean, rec.gold_answers, abstained=rec.abstained)
    abstained = scores.abstained
    kind = opts.correct.kind
    if kind == "contains":
        passes = scores.contains
    elif kind == "em":
        passes = scores.em == 1.0
    elif kind == "f1":
        passes = scores.f1 >= (opts.correct.threshold or 0.0)
    else:
        assert answer_judge is not None  # set whenever the criterion is "judge"
        passes = any(answer_judge.supports([Passage("answer", clean)], g) for g in rec.gold_answers)
    answerable = rec.answerable
    correct = (passes and not abstained) if answerable else abstained
    partial = answerable and not correct and not abstained and scores.gold_recall >= opts.partial_recall
    return _Answer(sentences, marker_cites, scores, abstained, correct, partial)


def _reason(rec: RagRecord, opts: RagOptions, ev: _Evidence, ans: _Answer) -> tuple[str, str]:
    """The reason under the label, and the sentence that explains it."""
    if ev.in_context:
        reason = answer_reason(rec.answerable, ans.correct, ans.abstained, ans.partial)
        where = f"evidence {_fmt(ev.complete[0])} in context" if ev.complete else "no evidence needed (unanswerable)"
        return reason, f"{where}; {_answer_detail(reason, opts.correct)}"
    dropped = [g for g, r in ev.gold_rank.items() if r <= ev.cutoff and g not in ev.ctx]
    partial_sets = [alt for alt in ev.alts if 0 < sum(1 for g in alt if g in ev.ctx) < len(alt)]
    anywhere = bool(ev.gold_rank) or any(g in ev.ctx for g in ev.gold_ids)
    reason = retrieval_reason(anywhere, bool(dropped), bool(partial_sets))
    detail = _evidence_detail(
        reason, ev.alts, ev.gold_rank, dropped, partial_sets, ev.ctx, ev.cutoff, len(rec.retrieved)
    )
    detail += "; answer " + ("correct" if ans.correct else "wrong") + (" (declined)" if ans.abstained else "")
    return reason, detail


def _kilt(rec: RagRecord, opts: RagOptions, ev: _Evidence, ans: _Answer) -> tuple[Any, ...]:
    """KILT-style scores: (rprec, kilt_em, kilt_f1, kilt_correct, evidence_rank), all None without evidence."""
    alts, gold_rank, retrieved = ev.alts, ev.gold_rank, rec.retrieved
    if not alts:
        return None, None, None, None, None
    rprec = max(sum(1 for d in retrieved[: len(alt)] if d in alt) / len(alt) for alt in alts)
    if opts.kilt_k is None:
        hit = rprec == 1.0
    else:
        hit = any(all(gold_rank.get(g, opts.kilt_k + 1) <= opts.kilt_k for g in alt) for alt in alts)
    kilt_em, kilt_f1, kilt_correct = (ans.scores.em, ans.scores.f1, ans.correct) if hit else (0.0, 0.0, False)
    evidence_rank = min(
        (max(gold_rank[g] for g in alt) for alt in alts if all(g in gold_rank for g in alt)), default=None
    )
    return rprec, kilt_em, kilt_f1, kilt_correct, evidence_rank


def _sentence_citations(
    rec: RagRecord,
    ev: _Evidence,
    ans: _Answer,
    alce: bool,
    support: CachedJudge | None,
    gold_stats: JudgeStats | None,
) -> tuple[float | None, float | None]:
    """ALCE's sentence-level citation recall and precision (None when not computed)."""
    sentences = ans.sentences
    if not alce or ans.abstained or sentences is None:
        return None, None
    if rec.citations is not None and not ans.marker_cites:
        sentences = [CitedSentence(s.text, rec.citations) for s in sentences]
    judge: SupportJudge = support or _Counted(GoldEvidenceJudge(ev.alts), gold_stats or JudgeStats())
    return alce_scores(sentences, ev.ctx, judge, rec.passages or {})


def _sample(
    rec: RagRecord,
    opts: RagOptions,
    support: CachedJudge | None,
    gold_stats: JudgeStats | None,
    answer_judge: SupportJudge | None,
) -> tuple[RagSample, tuple[str, ...], tuple[str, ...]]:
    """One sample's record, its gold ids and its retrieved list (for the metrics engine)."""
    ev = _evidence(rec, opts)
    alce = support is not None or gold_stats is not None
    ans = _answer(rec, opts, ev, alce, answer_judge)
    reason, detail = _reason(rec, opts, ev, ans)
    rprec, kilt_em, kilt_f1, kilt_correct, evidence_rank = _kilt(rec, opts, ev, ans)
    cited = rec.citations if rec.citations is not None else ans.marker_cites
    sentence_recall, sentence_precision = _sentence_citations(rec, ev, ans, alce, support, gold_stats)
    sample = RagSample(
        id=rec.id,
        label=top_label(ev.in_context, ans.correct),
        reason=reason,
        detail=detail,
        evidence_in_context=ev.in_context,
        answer_correct=ans.correct,
        correct_by=opts.correct.name,
        answerable=rec.answerable,
        abstained=ans.abstained,
        em=ans.scores.em,
        f1=ans.scores.f1,
        contains=ans.scores.contains,
        first_gold_rank=min(ev.gold_rank.values(), default=None),
        evidence_rank=evidence_rank,
        gold_evidence_given=rec.gold_evidence is not None,
        gold_evidence=[list(alt) for alt in ev.alts],
        gold_ranks=ev.gold_rank,
        context=list(ev.context),
        context_cutoff=ev.cutoff,
        retrieved_count=len(rec.retrieved),
        duplicates_dropped=rec.duplicates_dropped,
        rprec=rprec,
        kilt_em=kilt_em,
        kilt_f1=kilt_f1,
        kilt_correct=kilt_correct,
        citations=list(cited),
        cited_unseen=[c for c in cited if c not in ev.ctx],
        no_citations=not cited and not ans.abstained,
        citation_precision=citation_precision(cited, ev.gold_ids),
        citation_recall=citation_recall(cited, ev.alts),
        sentence_citation_recall=sentence_recall,
        sentence_citation_precision=sentence_precision,
        line=rec.line,
    )
    return sample, ev.gold_ids, rec.retrieved


def _fmt(ids: Sequence[str]) -> str:
    return ids[0] if len(ids) == 1 else "[" + ", ".join(ids) + "]"


def _answer_detail(reason: str, criterion: Criterion) -> str:
    return {
        "correct_answer": f"answer correct ({criterion.name})",
        "correct_abstention": "the system declined, as it should",
        "wrong_answer": f"answer wrong ({criterion.name})",
        "partial_answer": f"answer wrong ({criterion.name}) but holds part of a gold answer",
        "false_abstention": "the system declined although the evidence was in context",
        "hallucinated_answer": "the question has no answer in the corpus, yet the system answered",
    }[reason]


def _evidence_detail(
    reason: str,
    alts: Sequence[Sequence[str]],
    gold_rank: dict[str, int],
    dropped: list[str],
    partial_sets: list[Sequence[str]],
    ctx: set[str],
    cutoff: int,
    n_retrieved: int,
) -> str:
    if reason == "not_retrieved":
        if not alts:
            return f"no gold evidence given; none can be in context ({n_retrieved} retrieved)"
        return f"no gold id among the {n_retrieved} retrieved"
    if reason == "dropped_from_context":
        where = ", ".join(f"{g} at rank {gold_rank[g]}" for g in dropped)
        return f"gold {where} (cut-off {cutoff}) missing from the context"
    if reason == "partial_evidence":
        alt = partial_sets[0]
        have = [g for g in alt if g in ctx]
        lack = [f"{g} (rank {gold_rank[g]})" if g in gold_rank else f"{g} (not retrieved)" for g in alt if g not in ctx]
        return f"needed together {_fmt(alt)}: {', '.join(have)} in context, missing {', '.join(lack)}"
    where = ", ".join(f"{g} at rank {r}" for g, r in sorted(gold_rank.items(), key=lambda x: x[1])[:3])
    return f"gold {where}, below the cut-off {cutoff}"


# Metric families whose value depends only on the ranks of relevant documents (and the qrels), never on
# non-relevant documents ranked after the last relevant one: for them the engine gets each list cut after its last
# gold id, which gives the same numbers with far fewer rows. Any other metric gets the whole list.
_PREFIX_SAFE = frozenset({"recall", "P", "ndcg", "mrr", "map", "success", "Rprec"})


def _engine_metrics(
    gold: list[tuple[str, ...]],
    retrieved: list[tuple[str, ...]],
    metrics: Sequence[str],
    last_gold_rank: list[int],
) -> tuple[dict[int, dict[str, float]], dict[str, Any] | None]:
    """Per-sample values of the ranking metrics (gold ids as qrels, the retrieved list as a run)."""
    import polars as pl

    from stagewise.metrics.evaluate import evaluate
    from stagewise.metrics.measures import Measure

    judged = [i for i, g in enumerate(gold) if g]
    if not judged or not metrics:
        return {}, None
    if all(Measure.parse(m).family in _PREFIX_SAFE for m in metrics):
        lists = {i: retrieved[i][: last_gold_rank[i]] for i in judged}
    else:
        lists = {i: retrieved[i] for i in judged}
    qids = {i: f"{i:09d}" for i in judged}
    q_query = [qids[i] for i in judged for _ in gold[i]]
    q_doc = [d for i in judged for d in gold[i]]
    r_query = [qids[i] for i in judged for _ in lists[i]]
    r_doc = [d for i in judged for d in lists[i]]
    r_score = [-float(rank) for i in judged for rank in range(1, len(lists[i]) + 1)]
    if not r_doc:  # nothing retrieved anywhere: every judged sample scores 0
        return {i: dict.fromkeys(metrics, 0.0) for i in judged}, None
    qrels = pl.DataFrame({"query_id": q_query, "doc_id": q_doc, "relevance": [1] * len(q_doc)})
    run = pl.DataFrame({"query_id": r_query, "doc_id": r_doc, "score": r_score})
    result = evaluate(qrels, run, list(metrics), missing="zero")
    scores = result.runs[0]
    index = [int(q) for q in scores.query_ids.tolist()]
    columns = {m: scores.values[m].tolist() for m in metrics}
    out = {i: {m: columns[m][j] for m in metrics} for j, i in enumerate(index)}
    return out, result.conventions_report()


def evaluate_rag(
    records: Any,
    *,
    context_k: int | None = None,
    correct: str | Criterion = "contains",
    judge: Any = "auto",
    answer_judge: SupportJudge | None = None,
    judge_cache: str | Path | None = None,
    metrics: Iterable[str] = DEFAULT_METRICS,
    kilt_k: int | None = None,
    partial_recall: float = 0.5,
    evidence: str = "ids",
):
    """Diagnose RAG samples: evidence metrics, answer metrics, citations, and a label with its reason for each.

    Parameters
    ----------
    records : path, or iterable of dicts or RagRecord
        JSONL records (see :mod:`stagewise.rag.records`), or the output of an adapter
        (:mod:`stagewise.rag.adapters`).
    context_k : int, optional
        The context a record without ``context`` gets: ``retrieved[:context_k]`` (default 5). Also the cut-off
        below which a retrieved gold id is ``ranked_too_low``; when None, a record that gives ``context`` uses
        ``len(context)``.
    correct : {"contains", "em", "f1:T", "judge"}, default="contains"
        What decides "answer correct"; printed in every output.
    judge : {"auto", "gold", "lexical", "none"} or SupportJudge, default="auto"
        The support judge for ALCE sentence-level citation scores: ``gold`` (cited ids wholly contain a gold
        alternative), ``lexical`` (:class:`~stagewise.rag.judges.LexicalJudge`), ``auto`` (lexical when records
        carry passage texts, else gold), ``none``, or any object with ``supports(passages, claim)``.
    answer_judge : SupportJudge, optional
        For ``correct="judge"``: the answer is correct when the judge finds it supports some gold answer
        (default :class:`~stagewise.rag.judges.LexicalJudge`).
    judge_cache : path, optional
        A JSONL file where a custom judge's answers are kept between runs.
    metrics : iterable of str, default=("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
        Ranking metrics computed by the metrics engine with gold evidence as qrels.
    kilt_k : int, optional
        KILT-style scores count an answer only when the evidence is in the top ``kilt_k``; default KILT's rule
        (R-precision of some alternative equals 1).
    partial_recall : float, default=0.5
        A wrong answer holding at least this share of some gold answer's tokens is ``partial_answer``.
    evidence : {"ids", "answers"}, default="ids"
        Where gold evidence comes from when a record gives none: nowhere, or DPR's has_answer over the record's
        passage texts.

    Returns
    -------
    RagReport
        ``rows`` (one dict per sample, input order), the 2x2 table, reasons, means and conventions.
    """
    import gc

    enabled = gc.isenabled()
    gc.disable()  # the rows are many small acyclic containers; cyclic collection passes only cost time here
    try:
        return _evaluate_rag(
            records,
            context_k=context_k,
            correct=correct,
            judge=judge,
            answer_judge=answer_judge,
            judge_cache=judge_cache,
            metrics=metrics,
            kilt_k=kilt_k,
            partial_recall=partial_recall,
            evidence=evidence,
        )
    finally:
        if enabled:
            gc.enable()


def _evaluate_rag(
    records: Any,
    *,
    context_k: int | None,
    correct: str | Criterion,
    judge: Any,
    answer_judge: SupportJudge | None,
    judge_cache: str | Path | None,
    metrics: Iterable[str],
    kilt_k: int | None,
    partial_recall: float,
    evidence: str,
):
    from stagewise.metrics.measures import Measure
    from stagewise.rag.report import RagReport

    recs = read_records(records)
    context_k = _positive_int(context_k, "context_k")
    kilt_k = _positive_int(kilt_k, "kilt_k")
    criterion = parse_criterion(correct)
    if not (isinstance(partial_recall, int | float) and 0.0 <= partial_recall <= 1.0):
        raise parameter_error("partial_recall", "evaluate_rag", "a number in [0, 1]", partial_recall)
    if evidence not in EVIDENCE_SOURCES:
        raise parameter_error("evidence", "evaluate_rag", f"one of {', '.join(EVIDENCE_SOURCES)}", evidence)
    metric_names = tuple(metrics)
    for name in metric_names:
        Measure.parse(name)
    judge_label, support = _resolve_judge(judge, recs, judge_cache)
    gold_stats = JudgeStats() if judge_label == "gold" else None
    answer_cached: CachedJudge | None = None
    if criterion.kind == "judge":
        answer_cached = CachedJudge(answer_judge if answer_judge is not None else LexicalJudge())
    opts = RagOptions(
        context_k=context_k,
        correct=criterion,
        partial_recall=float(partial_recall),
        kilt_k=kilt_k,
        metrics=metric_names,
        evidence=evidence,
        judge=judge_label,
        answer_judge=answer_cached.name if answer_cached is not None else "lexical(threshold=0.6)",
    )
    samples, golds, retrieved, last = [], [], [], []
    for rec in recs:
        sample, gold_ids, ranked = _sample(rec, opts, support, gold_stats, answer_cached)
        samples.append(sample)
        golds.append(gold_ids)
        retrieved.append(ranked)
        last.append(max(sample.gold_ranks.values(), default=0))
    values, engine_conventions = _engine_metrics(golds, retrieved, metric_names, last)
    for i, sample in enumerate(samples):
        per = values.get(i)
        sample.metrics = {name: per[name] if per is not None else None for name in metric_names}
    rows = [sample.to_dict() for sample in samples]
    judges: dict[str, Any] = {}
    if judge_label != "none":
        stats = support.stats if support is not None else gold_stats
        judges["support"] = {"name": judge_label, **(stats.as_dict() if stats else {})}
    if answer_cached is not None:
        judges["answer"] = {"name": answer_cached.name, **answer_cached.stats.as_dict()}
    if not recs:
        raise StagewiseError("no records to evaluate")
    return RagReport(rows=rows, options=opts, engine_conventions=engine_conventions, judges=judges)
