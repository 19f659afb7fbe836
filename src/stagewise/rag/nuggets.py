"""Nugget evaluation as TREC RAG 2024 scores it, and the lesson's 2x2 one nugget at a time.

A **nugget** is an atomic fact a good answer should hold, ``vital`` (it must be there) or ``okay`` (worth having).
Each nugget of a query is **assigned** to an answer: ``support``, ``partial_support`` or ``not_support``
(:data:`ASSIGNMENTS`), by a person, by nuggetizer's LLM, or by any stagewise support judge
(:func:`assign_nuggets`: ``supported`` -> support, ``partial`` -> partial_support, ``not`` and ``unjudged`` ->
not_support). The four scores of a query, as the TREC 2024 RAG Track's AutoNuggetizer framework and the
``nuggetizer`` package compute them (:func:`nugget_scores`; their names are nuggetizer's):

===================== ===================== ====================================================================
score                 nuggets               credit
===================== ===================== ====================================================================
``strict_vital_score`` vital only           1 for support, else 0
``strict_all_score``   all                  1 for support, else 0
``vital_score``        vital only           1 for support, 0.5 for partial_support, 0 for not_support
``all_score``          all                  as ``vital_score``
===================== ===================== ====================================================================

each the credit summed over the nuggets divided by their number; a query with no (vital) nugget scores 0 there,
as nuggetizer does. A run's score is the mean over its queries.

Files are nuggetizer's JSONL (:func:`read_nuggets`): one query a line, ``{"qid", "query"?, "nuggets": [{"text",
"importance"?, "assignment"?}], "answer_text"?}``: its ``create`` output (nuggets only) or its ``assign`` output
(nuggets with their assignment to one answer). A nugget without ``importance`` is vital, as nuggetizer reads it.

**The nugget 2x2** (:func:`nugget_table`): the lesson's table of evidence retrieved x answer correct, asked of
each nugget: is it in the retrieved context (a judge finds the context passages, read together, support it), and
is it in the answer (its assignment is ``support``; ``partial_support`` counts too with ``partial=True``)?

===================== ===================== ====================
                      in the answer         not in the answer
===================== ===================== ====================
in the context        ``ok``                ``generation_failure``
not in the context    ``lucky``             ``retrieval_failure``
===================== ===================== ====================

>>> record = NuggetRecord("q1", (Nugget("Emma is by Jane Austen", "vital", "support"),
...                              Nugget("Emma appeared in 1815", "vital", "partial_support"),
...                              Nugget("Emma was her fourth novel", "okay", "not_support")))
>>> nugget_scores(record.nuggets)
{'strict_vital_score': 0.5, 'strict_all_score': 0.3333333333333333, 'vital_score': 0.75, 'all_score': 0.5}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from stagewise.errors import InputError, StagewiseError
from stagewise.rag.judges import Passage, judge_name, judge_version
from stagewise.rag.verdicts import SUPPORT_LABELS, support_verdicts

__all__ = [
    "ASSIGNMENTS",
    "CELLS",
    "IMPORTANCE",
    "NUGGET_SCORES",
    "Nugget",
    "NuggetRecord",
    "NuggetReport",
    "assign_nuggets",
    "nugget_report",
    "nugget_scores",
    "nugget_table",
    "nuggets_for_samples",
    "read_nuggets",
]

#: Nuggetizer's assignment labels, strongest first, with the credit each earns in the partial scores.
ASSIGNMENTS: dict[str, float] = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}
#: A nugget's importance: vital (must be in a good answer) or okay (worth having).
IMPORTANCE: tuple[str, ...] = ("vital", "okay")
#: The four scores, in nuggetizer's order and with its names.
NUGGET_SCORES: tuple[str, ...] = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
#: The nugget 2x2's cells: (in context, in answer) -> the lesson's label.
CELLS: dict[tuple[bool, bool], str] = {
    (True, True): "ok",
    (True, False): "generation_failure",
    (False, True): "lucky",
    (False, False): "retrieval_failure",
}
_FROM_VERDICT = dict(zip(SUPPORT_LABELS, ASSIGNMENTS, strict=True))  # supported -> support, ...


@dataclass(frozen=True)
class Nugget:
    """One nugget: its ``text``, ``importance`` (``vital`` or ``okay``) and ``assignment`` to an answer (one of
    :data:`ASSIGNMENTS`, or None when not yet assigned)."""

    text: str
    importance: str = "vital"
    assignment: str | None = None
    unjudged: bool = False  # a judge could not assign it (scored not_support)

    @property
    def vital(self) -> bool:
        return self.importance == "vital"


@dataclass(frozen=True)
class NuggetRecord:
    """The nuggets of one query, with the answer they were assigned to when the file holds it."""

    qid: str
    nuggets: tuple[Nugget, ...]
    query: str | None = None
    answer: str | None = None
    line: int | None = None


def nugget_scores(nuggets: Sequence[Nugget]) -> dict[str, float]:
    """The four TREC RAG 2024 scores of one query's assigned nuggets (see the module's table).

    An unassigned nugget is an error: score a file after assignment (nuggetizer's ``assign``, or
    :func:`assign_nuggets` with a judge)."""
    for nugget in nuggets:
        if nugget.assignment not in ASSIGNMENTS:
            raise StagewiseError(
                f"nugget {nugget.text!r} has no assignment ({nugget.assignment!r}); expected one of "
                f"{', '.join(ASSIGNMENTS)} (assign the nuggets first: nuggetizer assign, or a stagewise judge)"
            )
    vital = [n for n in nuggets if n.vital]

    def share(group: Sequence[Nugget], strict: bool) -> float:
        if not group:
            return 0.0
        credit = (float(n.assignment == "support") if strict else ASSIGNMENTS[n.assignment] for n in group)  # type: ignore[index]
        return sum(credit) / len(group)

    return {
        "strict_vital_score": share(vital, True),
        "strict_all_score": share(nuggets, True),
        "vital_score": share(vital, False),
        "all_score": share(nuggets, False),
    }


# -- reading ---------------------------------------------------------------------------------------------------

_EXPECTED = (
    'one JSON object a line: {"qid", "query"?, "nuggets": [{"text", "importance": "vital"|"okay", '
    '"assignment"?: "support"|"partial_support"|"not_support"}], "answer_text"?} (nuggetizer\'s JSONL)'
)


def _nugget(obj: Any, where: str | None, line: int, index: int) -> Nugget:
    at = f"nuggets[{index}]"
    if not isinstance(obj, Mapping) or not isinstance(obj.get("text"), str):
        raise InputError(where, f"{at} needs a 'text' string", line=line, expected=_EXPECTED)
    importance = obj.get("importance", "vital")
    if importance not in IMPORTANCE:
        raise InputError(where, f"{at} has importance {importance!r}", line=line, expected="'vital' or 'okay'")
    assignment = obj.get("assignment")
    if assignment is not None and assignment not in ASSIGNMENTS:
        raise InputError(
            where, f"{at} has assignment {assignment!r}", line=line, expected=f"one of {', '.join(ASSIGNMENTS)}"
        )
    return Nugget(obj["text"], importance, assignment)


def _record(obj: Any, where: str | None, line: int) -> NuggetRecord:
    if not isinstance(obj, Mapping):
        raise InputError(where, "a line must be a JSON object", line=line, expected=_EXPECTED)
    qid = obj.get("qid", obj.get("topic_id"))
    if qid is None and isinstance(obj.get("query"), Mapping):  # nuggetizer's create input: {"query": {"qid"...}}
        qid = obj["query"].get("qid")
    if qid is None or isinstance(qid, bool) or not isinstance(qid, str | int):
        raise InputError(where, "no 'qid'", line=line, expected=_EXPECTED)
    nuggets = obj.get("nuggets")
    if not isinstance(nuggets, list):
        raise InputError(where, "no 'nuggets' list", line=line, expected=_EXPECTED)
    query = obj.get("query")
    query = query.get("text") if isinstance(query, Mapping) else query
    answer = obj.get("answer_text")
    return NuggetRecord(
        str(qid),
        tuple(_nugget(n, where, line, i) for i, n in enumerate(nuggets)),
        query if isinstance(query, str) else None,
        answer if isinstance(answer, str) else None,
        line,
    )


def read_nuggets(source: str | Path | Iterable[Mapping[str, Any]]) -> list[NuggetRecord]:
    """Nugget records from nuggetizer's JSONL (a path, ``-`` for stdin, ``.gz`` accepted) or from dicts of that
    shape. A malformed line, an unknown importance or assignment, or a query given twice is an
    :class:`~stagewise.errors.InputError` naming the file and line."""
    where: str | None = None
    if isinstance(source, str | Path):
        from stagewise._io import display_name, read_bytes
        from stagewise.rag.records import decode, loads

        where = display_name(source)
        text = decode(read_bytes(source), where)
        items = [(n, loads(raw, where, n)) for n, raw in enumerate(text.split("\n"), start=1) if raw.strip()]
    else:
        items = list(enumerate(source, start=1))
    out: list[NuggetRecord] = []
    seen: dict[str, int] = {}
    for line, obj in items:
        record = _record(obj, where, line)
        if record.qid in seen:
            raise InputError(
                where, f"query {record.qid!r} is given twice (lines {seen[record.qid]} and {line})", line=line
            )
        seen[record.qid] = line
        out.append(record)
    return out


# -- judging ---------------------------------------------------------------------------------------------------


def _label(judge: Any) -> str:
    name, version = judge_name(judge), judge_version(judge)
    return name if version is None else f"{name} {version}"


def assign_nuggets(judge: Any, records: Sequence[NuggetRecord], answers: Mapping[str, str]) -> list[NuggetRecord]:
    """Each record's nuggets assigned to its answer (``answers[qid]``, else the record's own ``answer``) by a
    judge, in one batch. A judge with ``nugget_verdicts([(query, answer, nugget texts), ...])`` (the LLM judge's
    nugget prompt, which sees the query as nuggetizer's does) answers in nuggetizer's labels; any other support
    judge is asked whether the answer supports each nugget: ``supported`` -> support, ``partial`` ->
    partial_support, ``not`` -> not_support. A nugget the judge could not answer is scored not_support and
    marked ``unjudged`` (reports count them). A record without an answer is an error naming its query.

    >>> from stagewise.rag.judges import LexicalJudge
    >>> (out,) = assign_nuggets(LexicalJudge(), [NuggetRecord("q", (Nugget("Austen wrote Emma"),))],
    ...                         {"q": "Emma is a novel by Jane Austen."})
    >>> out.nuggets[0].assignment
    'support'
    """
    owners = []
    for record in records:
        answer = answers.get(record.qid, record.answer)
        if answer is None:
            raise StagewiseError(f"query {record.qid!r} has nuggets but no answer to assign them to")
        owners.append(answer)
    labels = _nugget_labels(judge, records, owners)
    out = []
    for record, answer in zip(records, owners, strict=True):
        nuggets = tuple(
            replace(n, assignment=label if label in ASSIGNMENTS else "not_support", unjudged=label not in ASSIGNMENTS)
            for n, label in zip(record.nuggets, next(labels), strict=True)
        )
        out.append(replace(record, nuggets=nuggets, answer=answer))
    return out


def _nugget_labels(judge: Any, records: Sequence[NuggetRecord], answers: Sequence[str]) -> Iterator[list[str]]:
    """Per record, the label of each nugget: nuggetizer's, or ``unjudged``."""
    ask = getattr(judge, "nugget_verdicts", None)
    if callable(ask):
        items = [(r.query or "", a, [n.text for n in r.nuggets]) for r, a in zip(records, answers, strict=True)]
        got = ask(items) if items else []
        if len(got) != len(items) or any(len(g) != len(r.nuggets) for g, r in zip(got, records, strict=False)):
            raise StagewiseError(f"judge {_label(judge)} gave nugget verdicts that do not match the nuggets asked")
        return iter([[v.label for v in verdicts] for verdicts in got])
    items = [([Passage("answer", a)], n.text) for r, a in zip(records, answers, strict=True) for n in r.nuggets]
    verdicts = iter(support_verdicts(judge, items) if items else [])
    return iter([[_FROM_VERDICT.get(next(verdicts).label, "unjudged") for _ in r.nuggets] for r in records])


def nugget_table(
    judge: Any, records: Sequence[NuggetRecord], contexts: Mapping[str, Sequence[Passage]], *, partial: bool = False
) -> dict[str, list[tuple[Nugget, bool, bool, str]]]:
    """The nugget 2x2 of each query: per nugget ``(nugget, in_context, in_answer, cell)``.

    ``in_context``: ``judge`` finds the query's context passages (``contexts[qid]``, read together) support the
    nugget (a query with no context has none in context); ``in_answer``: the nugget's assignment is ``support``
    (or ``partial_support`` too, with ``partial=True``). The nuggets must be assigned already."""
    items = []
    for record in records:
        passages = list(contexts.get(record.qid, ()))
        for nugget in record.nuggets:
            if nugget.assignment not in ASSIGNMENTS:
                raise StagewiseError(f"query {record.qid!r}: nugget {nugget.text!r} is not assigned to the answer")
            if passages:
                items.append((passages, nugget.text))
    verdicts = iter(support_verdicts(judge, items) if items else [])
    answered = {"support", "partial_support"} if partial else {"support"}
    out: dict[str, list[tuple[Nugget, bool, bool, str]]] = {}
    for record in records:
        has_context = bool(contexts.get(record.qid))
        rows = []
        for nugget in record.nuggets:
            in_context = next(verdicts).supported if has_context else False
            in_answer = nugget.assignment in answered
            rows.append((nugget, in_context, in_answer, CELLS[(in_context, in_answer)]))
        out[record.qid] = rows
    return out


# -- a report --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NuggetReport:
    """Nugget scores per query and their means over queries, the nugget 2x2 counts (all nuggets and vital ones)
    when contexts were given, and who judged: ``assigned_by`` (the file, or a judge's name) and
    ``context_judge``."""

    assigned_by: str
    scores: dict[str, dict[str, float]]
    means: dict[str, float]
    context_judge: str | None = None
    table: dict[str, dict[str, int]] = field(default_factory=dict)
    cells: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    partial_in_answer: bool = False
    source: str | None = None
    without_nuggets: tuple[str, ...] = ()
    unjudged: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "assigned_by": self.assigned_by,
            "convention": "TREC RAG 2024 (nuggetizer): strict = support earns 1; otherwise partial_support earns "
            "0.5; vital = vital nuggets only; a query without (vital) nuggets scores 0; means over queries",
            "queries": len(self.scores),
            "means": self.means,
            "unjudged_nuggets": self.unjudged,
        }
        if self.source is not None:
            out["source"] = self.source
        if self.without_nuggets:
            out["samples_without_nuggets"] = list(self.without_nuggets)
        if self.context_judge is not None:
            out["table"] = {
                "context_judge": self.context_judge,
                "rule": "in context: the judge finds the context passages, read together, support the nugget; "
                "in answer: assigned support" + (" or partial_support" if self.partial_in_answer else ""),
                "all": self.table.get("all", {}),
                "vital": self.table.get("vital", {}),
            }
        return out


def nugget_report(
    records: Sequence[NuggetRecord],
    *,
    assigned_by: str = "file",
    contexts: Mapping[str, Sequence[Passage]] | None = None,
    context_judge: Any = None,
    partial: bool = False,
) -> NuggetReport:
    """:class:`NuggetReport` of assigned records; with ``contexts`` and ``context_judge``, the nugget 2x2 too."""
    if not records:
        raise StagewiseError("no nugget records to score")
    scores = {r.qid: nugget_scores(r.nuggets) for r in records}
    means = {name: sum(s[name] for s in scores.values()) / len(scores) for name in NUGGET_SCORES}
    unjudged = sum(n.unjudged for r in records for n in r.nuggets)
    if contexts is None or context_judge is None:
        return NuggetReport(assigned_by, scores, means, unjudged=unjudged)
    per_query = nugget_table(context_judge, records, contexts, partial=partial)
    table = {"all": dict.fromkeys(CELLS.values(), 0), "vital": dict.fromkeys(CELLS.values(), 0)}
    cells: dict[str, list[dict[str, Any]]] = {}
    for qid, rows in per_query.items():
        cells[qid] = []
        for nugget, in_context, in_answer, cell in rows:
            table["all"][cell] += 1
            if nugget.vital:
                table["vital"][cell] += 1
            cells[qid].append({"text": nugget.text, "importance": nugget.importance, "assignment": nugget.assignment,
                               "in_context": in_context, "in_answer": in_answer, "cell": cell})  # fmt: skip
    return NuggetReport(assigned_by, scores, means, _label(context_judge), table, cells, partial, unjudged=unjudged)


def nuggets_for_samples(
    source: str | Path,
    answers: Mapping[str, str],
    contexts: Mapping[str, Sequence[Passage]],
    judge: Any,
    *,
    partial: bool = False,
) -> NuggetReport:
    """The nugget report of the samples in ``answers`` (id -> answer text), nuggets read from ``source``
    (nuggetizer's JSONL, matched by ``qid``): a query whose nuggets are unassigned has them assigned to its answer
    by ``judge``; ``judge`` also decides which nuggets the sample's context passages hold (the 2x2). Samples the
    file lacks are listed in ``without_nuggets``; none matching is an error."""
    from stagewise._io import display_name

    records = [r for r in read_nuggets(source) if r.qid in answers]
    where = display_name(source) if isinstance(source, str | Path) else None
    if not records:
        raise InputError(where, "no qid matches a record id", hint=f"record ids: {', '.join(list(answers)[:5])}...")
    unassigned = [r for r in records if any(n.assignment is None for n in r.nuggets)]
    assigned = {r.qid: r for r in assign_nuggets(judge, unassigned, answers)} if unassigned else {}
    records = [assigned.get(r.qid, r) for r in records]
    by = "file" if not assigned else _label(judge) if len(assigned) == len(records) else f"file and {_label(judge)}"
    report = nugget_report(records, assigned_by=by, contexts=contexts, context_judge=judge, partial=partial)
    found = {r.qid for r in records}
    return replace(report, source=where, without_nuggets=tuple(q for q in answers if q not in found))
