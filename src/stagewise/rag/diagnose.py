"""``evaluate_rag(records)``: score retrieval and generation separately and label every sample.

>>> report = evaluate_rag([
...     {"id": "q1", "retrieved": ["p3", "p9", "p1"], "context": ["p3", "p9"], "gold_evidence": ["p9", ["p4", "p5"]],
...      "answer": "Jane Austen wrote it [p9].", "gold_answers": ["Jane Austen"]},
...     {"id": "q2", "retrieved": ["p2", "p7"], "gold_evidence": ["p8"], "answer": "Dickens",
...      "gold_answers": ["Austen"]},
... ])
>>> [(sample.id, sample.label, sample.reason) for sample in report.rows]
[('q1', 'ok', 'correct_answer'), ('q2', 'retrieval_failure', 'not_retrieved')]
>>> report.rows[0].first_gold_rank, report.rows[0].citation_precision, report.rows[0].citation_recall
(2, 1.0, 1.0)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise.errors import StagewiseError
from stagewise.rag.answers import Attempt, Criterion, normalize_answer, score_answer
from stagewise.rag.citations import (
    CitedSentence,
    Question,
    alce_rounds,
    citation_precision,
    citation_recall,
    split_cited_sentences,
)
from stagewise.rag.judges import JUDGES, CachedJudge, JudgeStats, LexicalJudge, Passage, SupportJudge, parse_judge
from stagewise.rag.labels import answer_reason, retrieval_reason, top_label
from stagewise.rag.options import DEFAULT_CONTEXT_K, DEFAULT_METRICS, EVIDENCE_SOURCES, RagOptions, options_from
from stagewise.rag.records import RagRecord, read_records

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.report import RagReport

__all__ = [
    "DEFAULT_CONTEXT_K",
    "DEFAULT_METRICS",
    "EVIDENCE_SOURCES",
    "JUDGES",
    "RagOptions",
    "RagSample",
    "evaluate_rag",
]


class _Counted:
    """A judge that only counts its calls into a shared :class:`JudgeStats` (for a cheap per-sample judge)."""

    def __init__(self, judge: SupportJudge, stats: JudgeStats) -> None:
        self.judge, self.stats = judge, stats

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        self.stats.requests += 1
        self.stats.calls += 1
        return self.judge.supports(passages, claim)


@dataclass
class _Judges:
    """The judges of one diagnosis, resolved from its options: the support judge (one cached judge, or one built
    per sample from its gold evidence), and the answer judge of a criterion that needs one."""

    label: str = "none"
    support: CachedJudge | None = None
    per_sample: Callable[..., SupportJudge] | None = None
    per_sample_stats: JudgeStats = field(default_factory=JudgeStats)
    version: str | None = None
    answer: CachedJudge | None = None

    @property
    def alce(self) -> bool:
        """Whether sentence-level citation scores are computed (a support judge was chosen)."""
        return self.support is not None or self.per_sample is not None

    def for_sample(self, alternatives: Sequence[Sequence[str]]) -> SupportJudge | None:
        """The support judge for one sample (None when there is none)."""
        if self.per_sample is None:
            return self.support
        return _Counted(self.per_sample(alternatives), self.per_sample_stats)

    def info(self) -> dict[str, Any]:
        """The judges section of the conventions: each judge's canonical name, version and counts."""
        out: dict[str, Any] = {}
        if self.label != "none":
            stats = self.support.stats if self.support is not None else self.per_sample_stats
            out["support"] = _named(self.label, self.version) | stats.as_dict()
        if self.answer is not None:
            out["answer"] = _named(self.answer.name, self.answer.version) | self.answer.stats.as_dict()
        return out


def _named(name: str, version: str | None) -> dict[str, Any]:
    return {"name": name} if version is None else {"name": name, "version": version}


def _resolve_judges(opts: RagOptions, records: Sequence[RagRecord]) -> _Judges:
    """The judges the options name, built once: ``auto`` resolved from the records, a per-sample judge (``gold``)
    kept as its factory, any other wrapped in a :class:`CachedJudge` (with ``judge_cache`` on disk)."""
    out = _Judges()
    judge = opts.judge
    if isinstance(judge, str):
        spec = parse_judge(judge)
        if spec.entry.choose is not None:  # auto: the records decide
            spec = parse_judge(spec.entry.choose(records))
        entry = spec.entry
        if entry.build is not None and entry.per_sample:
            out.label, out.per_sample = spec.name, spec.build
        elif entry.build is not None:
            out.support = CachedJudge(spec.build(), opts.judge_cache)
            out.label, out.version = spec.name, out.support.version
    else:
        out.support = judge if isinstance(judge, CachedJudge) else CachedJudge(judge, opts.judge_cache)
        out.label, out.version = out.support.name, out.support.version
    if opts.correct.needs_judge:  # type: ignore[union-attr]  # a Criterion once the options are built
        answer = opts.answer_judge
        if isinstance(answer, str):
            spec = parse_judge(answer)
            if spec.entry.build is None or spec.entry.per_sample or spec.entry.choose is not None:
                raise StagewiseError(f"the answer judge must read text; {spec.name!r} does not")
            answer = spec.build()
        out.answer = CachedJudge(answer if answer is not None else LexicalJudge())
    return out


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


@dataclass(frozen=True, slots=True)
class RagSample:
    """Everything that led to one sample's label, in the order of its row in the output (see ``docs/rag.md``).

    A frozen record: read its fields as attributes (``sample.label``, ``sample.metrics["mrr"]``).
    :meth:`to_dict` gives the output row: these fields, then ``line`` (when the record came from a file), then
    the ranking metrics (``metrics``, from the metrics engine; None without gold evidence).
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

    def __getitem__(self, key: str) -> Any:
        """Deprecated: ``sample["label"]`` (rows were dicts); read ``sample.label`` or ``sample.to_dict()``."""
        warnings.warn(
            "RagReport.rows are RagSample records: read sample.label (or sample.to_dict()[key]), not sample[key]",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Deprecated, as :meth:`__getitem__`: ``sample.get("label")``."""
        warnings.warn(
            "RagReport.rows are RagSample records: read sample.label (or sample.to_dict().get(key)), not "
            "sample.get(key)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.to_dict().get(key, default)


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


@dataclass(frozen=True, slots=True)
class _Setup:
    """What every sample of one diagnosis shares: its options, its judges, the criterion and its check."""

    opts: RagOptions
    criterion: Criterion
    check: Callable[[Attempt], bool]
    judges: _Judges
    alce: bool  # sentence-level citation scores are computed (judges.alce, read once)


def _answer(rec: RagRecord, setup: _Setup, ev: _Evidence) -> _Answer:
    # the answer, split into sentences with their citation markers (once), and without the markers
    answer = rec.answer
    sentences: list[CitedSentence] | None = None
    if "[" in answer or setup.alce:
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
    passes = setup.check(Attempt(clean, rec.gold_answers, scores, setup.judges.answer))  # the criterion's own rule
    answerable = rec.answerable
    correct = (passes and not abstained) if answerable else abstained
    partial = answerable and not correct and not abstained and scores.gold_recall >= setup.opts.partial_recall
    return _Answer(sentences, marker_cites, scores, abstained, correct, partial)


def _reason(rec: RagRecord, criterion: Criterion, ev: _Evidence, ans: _Answer) -> tuple[str, str]:
    """The reason under the label, and the sentence that explains it."""
    if ev.in_context:
        reason = answer_reason(rec.answerable, ans.correct, ans.abstained, ans.partial)
        where = f"evidence {_fmt(ev.complete[0])} in context" if ev.complete else "no evidence needed (unanswerable)"
        return reason, f"{where}; {_answer_detail(reason, criterion)}"
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


_Rounds = Generator[list[Question], list[bool], tuple[float | None, float | None]]


@dataclass(slots=True)
class _Pending:
    """One sample's ALCE questions still to answer: its fields (filled when the rounds end), the rounds
    (:func:`~stagewise.rag.citations.alce_rounds`), its judge, and the round now asked."""

    fields: dict[str, Any]
    rounds: _Rounds
    judge: SupportJudge
    questions: list[Question] | None = None


def _sentence_citations(rec: RagRecord, ev: _Evidence, ans: _Answer, judges: _Judges) -> tuple[_Rounds, Any] | None:
    """ALCE's sentence-level citation recall and precision, as rounds of questions for the sample's judge
    (None when they are not computed: the answer declined, or no judge)."""
    sentences = ans.sentences
    if ans.abstained or sentences is None:
        return None
    judge = judges.for_sample(ev.alts)
    if judge is None:
        return None
    if rec.citations is not None and not ans.marker_cites:
        sentences = [CitedSentence(s.text, rec.citations) for s in sentences]
    return alce_rounds(sentences, ev.ctx, rec.passages or {}), judge


def _advance(item: _Pending, answers: list[bool] | None) -> bool:
    """Send a round's answers (None: start) and keep the next round; at the end, write the scores into the
    sample's fields. True while questions remain."""
    try:
        item.questions = next(item.rounds) if answers is None else item.rounds.send(answers)
        return True
    except StopIteration as done:
        item.fields["sentence_citation_recall"], item.fields["sentence_citation_precision"] = done.value
        return False


def _answer_in_rounds(pending: list[_Pending], support: CachedJudge | None) -> None:
    """Answer every sample's ALCE questions a round at a time, all samples together: a judge that answers
    batches (:meth:`CachedJudge.prefetch`: a model behind an endpoint runs the calls concurrently, the
    calibrated judge encodes once) is asked each round in one batch, the first questions of every sentence,
    then the follow-ups (each citation alone, the others without it) that those answers call for. The answers
    are then read one by one in sample order, so requests, calls and cache hits count as if asked serially
    (a prefetched answer counts as a call when first read), and the numbers are the judge's own."""
    batched = support if support is not None and support.batches else None
    waiting = [item for item in pending if _advance(item, None)]
    while waiting:
        if batched is not None:
            batched.prefetch([q for item in waiting if item.judge is batched for q in item.questions or ()])
        waiting = [
            item
            for item in waiting
            if _advance(item, [bool(item.judge.supports(p, claim)) for p, claim in item.questions or ()])
        ]


def _fields(rec: RagRecord, setup: _Setup) -> tuple[dict[str, Any], tuple[str, ...], _Pending | None]:
    """One sample's fields (all but its ranking metrics and its sentence-level citation scores), its gold ids
    (for the metrics engine), and its ALCE questions (None when there are none)."""
    opts = setup.opts
    ev = _evidence(rec, opts)
    ans = _answer(rec, setup, ev)
    reason, detail = _reason(rec, setup.criterion, ev, ans)
    rprec, kilt_em, kilt_f1, kilt_correct, evidence_rank = _kilt(rec, opts, ev, ans)
    cited = rec.citations if rec.citations is not None else ans.marker_cites
    fields = {
        "id": rec.id,
        "label": top_label(ev.in_context, ans.correct),
        "reason": reason,
        "detail": detail,
        "evidence_in_context": ev.in_context,
        "answer_correct": ans.correct,
        "correct_by": setup.criterion.name,
        "answerable": rec.answerable,
        "abstained": ans.abstained,
        "em": ans.scores.em,
        "f1": ans.scores.f1,
        "contains": ans.scores.contains,
        "first_gold_rank": min(ev.gold_rank.values(), default=None),
        "evidence_rank": evidence_rank,
        "gold_evidence_given": rec.gold_evidence is not None,
        "gold_evidence": [list(alt) for alt in ev.alts],
        "gold_ranks": ev.gold_rank,
        "context": list(ev.context),
        "context_cutoff": ev.cutoff,
        "retrieved_count": len(rec.retrieved),
        "duplicates_dropped": rec.duplicates_dropped,
        "rprec": rprec,
        "kilt_em": kilt_em,
        "kilt_f1": kilt_f1,
        "kilt_correct": kilt_correct,
        "citations": list(cited),
        "cited_unseen": [c for c in cited if c not in ev.ctx],
        "no_citations": not cited and not ans.abstained,
        "citation_precision": citation_precision(cited, ev.gold_ids),
        "citation_recall": citation_recall(cited, ev.alts),
        "sentence_citation_recall": None,  # filled by _answer_in_rounds
        "sentence_citation_precision": None,
        "line": rec.line,
    }
    questions = _sentence_citations(rec, ev, ans, setup.judges) if setup.alce else None
    return fields, ev.gold_ids, (_Pending(fields, *questions) if questions is not None else None)


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


def _engine_metrics(
    gold: list[tuple[str, ...]],
    retrieved: list[tuple[str, ...]],
    metrics: Sequence[str],
    last_gold_rank: list[int],
) -> tuple[dict[int, dict[str, float]], dict[str, Any] | None]:
    """Per-sample values of the ranking metrics (gold ids as qrels, the retrieved list as a run).

    When every metric is prefix-safe (:attr:`Measure.prefix_safe`: its value depends only on the ranks of the
    relevant documents, never on non-relevant ones ranked after the last relevant one), the engine gets each list
    cut after its last gold id: the same numbers from far fewer rows. Any other metric gets the whole list.
    """
    import polars as pl

    from stagewise.engines import evaluate
    from stagewise.metrics.measures import Measure

    judged = [i for i, g in enumerate(gold) if g]
    if not judged or not metrics:
        return {}, None
    if all(Measure.parse(m).prefix_safe for m in metrics):
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


def evaluate_rag(records: Any, options: RagOptions | None = None, **overrides: Any) -> RagReport:
    """Diagnose RAG samples: evidence metrics, answer metrics, citations, and a label with its reason for each.

    Parameters
    ----------
    records : path, or iterable of dicts or RagRecord
        JSONL records (see :mod:`stagewise.rag.records`), or the output of an adapter
        (:mod:`stagewise.rag.adapters`).
    options : RagOptions, optional
        Every convention of the diagnosis as one value (default ``RagOptions()``): ``context_k``, ``correct``
        (an answer criterion of :data:`stagewise.rag.answers.CRITERIA`), ``judge`` and ``answer_judge`` (judges
        of :data:`stagewise.rag.judges.JUDGES`, or objects), ``judge_cache``, ``metrics``, ``kilt_k``,
        ``partial_recall``, ``evidence``; see :class:`~stagewise.rag.options.RagOptions`.
    **overrides
        Any of those options by name, applied over ``options`` (``evaluate_rag(records, context_k=3)``); an
        unknown name is a :class:`~stagewise.errors.ConventionError` that lists the options.

    Returns
    -------
    RagReport
        ``rows`` (one :class:`RagSample` per sample, input order), the 2x2 table, reasons, means and conventions;
        its ``options`` are the ones used (``auto`` resolved to the judge it chose).
    """
    import gc

    opts = options_from(options, **overrides)  # the cheap checks, before any record is read
    enabled = gc.isenabled()
    gc.disable()  # the rows are many small acyclic containers; cyclic collection passes only cost time here
    try:
        return _evaluate_rag(records, opts)
    finally:
        if enabled:
            gc.enable()


def _evaluate_rag(records: Any, opts: RagOptions) -> RagReport:
    import dataclasses

    from stagewise.metrics.measures import Measure
    from stagewise.rag.report import RagReport

    metric_names = opts.metrics
    for name in metric_names:
        Measure.parse(name)
    recs = read_records(records)
    judges = _resolve_judges(opts, recs)
    criterion: Criterion = opts.correct  # type: ignore[assignment]  # parsed by RagOptions
    setup = _Setup(opts, criterion, criterion.checker(), judges, judges.alce)
    fields, golds, retrieved, last, pending = [], [], [], [], []
    for rec in recs:
        sample, gold_ids, questions = _fields(rec, setup)
        if questions is not None:
            pending.append(questions)
        fields.append(sample)
        golds.append(gold_ids)
        retrieved.append(rec.retrieved)
        last.append(max(sample["gold_ranks"].values(), default=0))
    _answer_in_rounds(pending, judges.support)
    values, engine_conventions = _engine_metrics(golds, retrieved, metric_names, last)
    none = dict.fromkeys(metric_names)
    rows = []
    for i, sample in enumerate(fields):
        per = values.get(i)
        rows.append(RagSample(**sample, metrics={name: per[name] for name in metric_names} if per else dict(none)))
    if not recs:
        raise StagewiseError("no records to evaluate")
    used = dataclasses.replace(
        opts,
        judge=judges.label if isinstance(opts.judge, str) else opts.judge,
        answer_judge=judges.answer.judge if judges.answer is not None else opts.answer_judge,
    )
    claims, nuggets = _claim_level(recs, fields, opts)
    return RagReport(
        rows=rows,
        options=used,
        engine_conventions=engine_conventions,
        judges=judges.info(),
        claims=claims,
        nuggets=nuggets,
    )


def _text_judge(spec: Any) -> Any:
    """The judge of claim and nugget checks: a judge object, or one built from its name (it must read text)."""
    if not isinstance(spec, str):
        return spec
    judge = parse_judge(spec)
    if judge.entry.build is None or judge.entry.per_sample or judge.entry.choose is not None:
        raise StagewiseError(f"the claim judge must read text; {judge.name!r} does not (try lexical or calibrated)")
    return judge.build()


def _claim_level(recs: Sequence[RagRecord], fields: Sequence[dict[str, Any]], opts: RagOptions) -> tuple[Any, Any]:
    """RAGChecker's claim metrics and the TREC RAG nugget scores, when the options ask for them (else None)."""
    if opts.claims is None and opts.claim_judge is None and opts.nuggets is None:
        return None, None
    from stagewise.rag.claims import claims_from_file, claims_from_judge
    from stagewise.rag.nuggets import nuggets_for_samples

    contexts = {
        rec.id: [Passage(pid, rec.passages[pid]) for pid in f["context"] if rec.passages and pid in rec.passages]
        for rec, f in zip(recs, fields, strict=True)
    }
    judge = _text_judge(opts.claim_judge if opts.claim_judge is not None else "lexical")
    claims = None
    if opts.claims is not None:
        claims = claims_from_file(opts.claims, [rec.id for rec in recs])
    elif opts.claim_judge is not None:
        samples = [
            {"id": rec.id, "response": rec.answer, "gt_answer": "\n".join(rec.gold_answers), "chunks": contexts[rec.id]}
            for rec in recs
            if rec.gold_answers  # an unanswerable question has no ground-truth claims to check
        ]
        claims = claims_from_judge(judge, samples) if samples else None
    nuggets = None
    if opts.nuggets is not None:
        nuggets = nuggets_for_samples(opts.nuggets, {rec.id: rec.answer for rec in recs}, contexts, judge)
    return claims, nuggets
