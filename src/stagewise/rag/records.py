"""RAG records: one sample each (question, retrieved ids, context, gold evidence, answer, gold answers).

The JSONL form, one object a line::

    {"id": "q1",
     "question": "who wrote Emma?",               # optional
     "retrieved": ["p3", "p9", "p1"],             # the retriever's ranked ids; [] when nothing was retrieved
     "context": ["p3", "p9"],                     # optional: ids given to the generator; default retrieved[:k]
     "gold_evidence": ["p9", ["p4", "p5"]],       # optional: alternatives, an id or a set needed together
     "answer": "Jane Austen wrote it [p9].",      # "" (or an abstention) when the system declined
     "gold_answers": ["Jane Austen"],             # [] = the question has no answer in the corpus
     "citations": ["p9"],                         # optional; else read from [id] markers in the answer
     "passages": {"p9": "..."},                   # optional texts, for lexical support checks
     "abstained": false}                          # optional: overrides abstention detection

Stated behaviour for the awkward cases:

- ``id``, ``answer`` and ``gold_answers`` are required; a missing or mistyped field is an
  :class:`~stagewise.errors.InputError` naming the file and line. Ids may be strings or integers (read as
  strings). ``gold_answers`` may be a single string (one answer).
- Two records with the same ``id`` are an error naming both lines.
- ``gold_evidence`` absent or ``null`` means no gold evidence was given (``gold_evidence_given`` is False in the
  output); ``[]`` means the question has no evidence. An alternative that is an empty list is an error.
  Repeated ids inside an alternative, and repeated alternatives, count once.
- A repeated id in ``retrieved`` keeps its first (best) position; later copies are dropped and counted, and ranks
  are positions in the list without them (KILT's R-precision de-duplicates the same way). Repeated ids in
  ``context`` and ``citations`` count once.
- Unknown fields are ignored.

>>> rec = record_from_dict({"id": 7, "retrieved": ["p3", "p3", "p9"], "gold_evidence": ["p9", ["p4", "p4", "p5"]],
...                         "answer": "Jane Austen", "gold_answers": "Jane Austen"})
>>> rec.id, rec.retrieved, rec.duplicates_dropped, rec.gold_evidence, rec.gold_answers
('7', ('p3', 'p9'), 1, (('p9',), ('p4', 'p5')), ('Jane Austen',))
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stagewise._json import deep_line
from stagewise.errors import InputError

__all__ = ["RagRecord", "read_records", "record_from_dict", "records_from_run"]

_EXPECTED = (
    'one JSON object per line with "id", "answer", "gold_answers" and optionally "retrieved", "context", '
    '"gold_evidence", "citations", "passages", "question", "abstained"'
)


@dataclass(frozen=True, slots=True)
class RagRecord:
    """One RAG sample, validated. Build it with :func:`record_from_dict` or :func:`read_records`.

    ``retrieved`` is de-duplicated (first occurrence kept; ``duplicates_dropped`` counts the rest);
    ``context`` is None when the record gave none (then the first ``context_k`` retrieved ids are used);
    ``gold_evidence`` is a tuple of alternatives, each a tuple of ids needed together, or None when not given.
    """

    id: str
    answer: str
    gold_answers: tuple[str, ...]
    retrieved: tuple[str, ...] = ()
    context: tuple[str, ...] | None = None
    gold_evidence: tuple[tuple[str, ...], ...] | None = None
    citations: tuple[str, ...] | None = None
    passages: Mapping[str, str] | None = None
    question: str | None = None
    abstained: bool | None = None
    duplicates_dropped: int = 0
    source: str | None = None
    line: int | None = None

    @property
    def answerable(self) -> bool:
        """False when ``gold_answers`` is empty: the corpus holds no answer."""
        return bool(self.gold_answers)


def _fail(source: str | None, line: int | None, problem: str) -> InputError:
    return InputError(source, problem, line=line, expected=_EXPECTED)


def _as_id(value: Any, field: str, source: str | None, line: int | None) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _fail(source, line, f"{field} holds {json.dumps(value)!s:.60}, which is not an id (a string or an integer)")


def _id_list(value: Any, field: str, source: str | None, line: int | None) -> list[str]:
    if not isinstance(value, list | tuple):
        raise _fail(source, line, f'"{field}" must be a list of ids, not {type(value).__name__}')
    if all(type(v) is str for v in value):  # the common case, without a call per id
        return list(value)
    return [_as_id(v, f'"{field}"', source, line) for v in value]


def _unique(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def _alternatives(value: Any, source: str | None, line: int | None) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list | tuple):
        raise _fail(source, line, f'"gold_evidence" must be a list of alternatives, not {type(value).__name__}')
    out: dict[tuple[str, ...], None] = {}
    for item in value:
        if isinstance(item, list | tuple):
            if not item:
                raise _fail(source, line, '"gold_evidence" holds an empty alternative []')
            alt = _unique(_as_id(v, '"gold_evidence"', source, line) for v in item)
        else:
            alt = (_as_id(item, '"gold_evidence"', source, line),)
        out.setdefault(alt, None)
    return tuple(out)


def _passages(value: Any, source: str | None, line: int | None) -> dict[str, str]:
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list):  # [{"id": ..., "text": ...}, ...]
        try:
            items = [(p["id"], p["text"]) for p in value]
        except (TypeError, KeyError):
            raise _fail(source, line, '"passages" must be {id: text} or a list of {"id", "text"} objects') from None
    else:
        raise _fail(source, line, f'"passages" must be {{id: text}}, not {type(value).__name__}')
    out = {}
    for key, text in items:
        if not isinstance(text, str):
            raise _fail(source, line, f"the text of passage {key!r} is {type(text).__name__}, not a string")
        out[_as_id(key, '"passages"', source, line)] = text
    return out


def record_from_dict(obj: Any, *, source: str | None = None, line: int | None = None) -> RagRecord:
    """Validate one record (a dict in the JSONL form above) and build a :class:`RagRecord`."""
    if isinstance(obj, RagRecord):
        return obj
    if not isinstance(obj, Mapping):
        raise _fail(source, line, f"a record must be a JSON object, not {type(obj).__name__}")
    missing = [f for f in ("id", "answer", "gold_answers") if f not in obj]
    if missing:
        raise _fail(source, line, f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    rid = _as_id(obj["id"], '"id"', source, line)
    answer = obj["answer"]
    if not isinstance(answer, str):
        raise _fail(source, line, f'"answer" must be a string ("" for no answer), not {type(answer).__name__}')
    gold = obj["gold_answers"]
    if isinstance(gold, str):
        gold = [gold]
    if not isinstance(gold, list | tuple) or not all(isinstance(g, str) for g in gold):
        raise _fail(source, line, '"gold_answers" must be a list of strings ([] when the corpus has no answer)')
    raw_retrieved = obj.get("retrieved")
    retrieved_list = [] if raw_retrieved is None else _id_list(raw_retrieved, "retrieved", source, line)
    retrieved = _unique(retrieved_list)
    context = obj.get("context")
    evidence = obj.get("gold_evidence")
    citations = obj.get("citations")
    passages = obj.get("passages")
    question = obj.get("question")
    if question is not None and not isinstance(question, str):
        raise _fail(source, line, f'"question" must be a string, not {type(question).__name__}')
    abstained = obj.get("abstained")
    if abstained is not None and not isinstance(abstained, bool):
        raise _fail(source, line, f'"abstained" must be true, false or null, not {json.dumps(abstained)}')
    return RagRecord(
        id=rid,
        answer=answer,
        gold_answers=tuple(gold),
        retrieved=retrieved,
        context=None if context is None else _unique(_id_list(context, "context", source, line)),
        gold_evidence=None if evidence is None else _alternatives(evidence, source, line),
        citations=None if citations is None else _unique(_id_list(citations, "citations", source, line)),
        passages=None if passages is None else _passages(passages, source, line),
        question=question,
        abstained=abstained,
        duplicates_dropped=len(retrieved_list) - len(retrieved),
        source=source,
        line=line,
    )


def _check_unique(records: list[RagRecord], source: str | None) -> None:
    seen: dict[str, RagRecord] = {}
    for rec in records:
        first = seen.setdefault(rec.id, rec)
        if first is not rec:
            where = f"line {first.line}" if first.line is not None else "an earlier record"
            raise InputError(
                rec.source or source,
                f"duplicate id {rec.id!r} (first on {where})",
                line=rec.line,
                hint="ids must be unique",
            )


def read_records(source: Any) -> list[RagRecord]:
    """Read and validate records from a JSONL file (``.gz`` and ``-`` for stdin accepted), a JSON file holding a
    list, or an iterable of dicts or :class:`RagRecord`.

    Blank lines are skipped; line numbers in errors are 1-based lines of the file (for a JSON list, the
    1-based position in the list).
    """
    raw = read_records_raw(source)
    records = [record_from_dict(obj, source=where, line=line) for obj, where, line in raw]
    if not records:
        raise InputError(_source_name(source), "holds no records", expected=_EXPECTED)
    _check_unique(records, None)
    return records


def _source_name(source: Any) -> str | None:
    if isinstance(source, str | bytes) or hasattr(source, "__fspath__"):
        from stagewise._io import display_name

        return display_name(source)
    return None


def records_from_run(
    run: Any | None,
    answers: Any,
    qrels: Any = None,
    *,
    relevance_level: int = 1,
) -> list[RagRecord]:
    """Records from a retrieval :class:`~stagewise.Run` plus an answers file (and, optionally, qrels); either of
    ``run`` and ``qrels`` may be None (the records then give that part themselves).

    ``answers`` holds one object per sample in the record form without ``retrieved`` (``id``, ``answer``,
    ``gold_answers``, optionally ``context``, ``citations``, ``passages``, ``gold_evidence``). A sample's
    ``retrieved`` list is the run's ranking for the query with the same id, in the run's evaluation order (score
    descending, then doc id descending, as trec_eval); a sample the run lacks has retrieved nothing. With
    ``qrels``, each document labelled >= ``relevance_level`` for the query is one alternative of the gold
    evidence (any one of them suffices); a record's own ``gold_evidence`` is then an error.

    >>> recs = records_from_run({"q1": {"p1": 2.0, "p9": 1.0}}, [{"id": "q1", "answer": "x", "gold_answers": ["x"]}],
    ...                         {"q1": {"p9": 1, "p4": 0}})
    >>> recs[0].retrieved, recs[0].gold_evidence
    (('p1', 'p9'), (('p9',),))
    """
    from stagewise.data.readers import read_qrels, read_run

    ranked: dict[str, list[str]] | None = None
    if run is not None:
        loaded = read_run(run)
        ranked = loaded.rankings()
    relevant: dict[str, list[str]] | None = None
    if qrels is not None:
        judged = read_qrels(qrels)
        relevant = {}
        for query, labels in judged.to_dict().items():
            relevant[query] = [d for d, label in labels.items() if label >= relevance_level]
    base = read_records_raw(answers)
    out = []
    for obj, where, line in base:
        if isinstance(obj, RagRecord):
            raise _fail(where, line, "records_from_run needs plain objects, not RagRecord")
        merged = dict(obj)
        qid = _as_id(obj.get("id"), '"id"', where, line) if "id" in obj else None
        if ranked is not None:
            if obj.get("retrieved") is not None:
                raise _fail(where, line, '"retrieved" is given both by the record and by the run; give it once')
            merged["retrieved"] = ranked.get(qid, []) if qid is not None else []
        if relevant is not None:
            if obj.get("gold_evidence") is not None:
                raise _fail(where, line, '"gold_evidence" is given both by the record and by the qrels; give it once')
            merged["gold_evidence"] = relevant.get(qid, []) if qid is not None else []
        out.append(record_from_dict(merged, source=where, line=line))
    _check_unique(out, None)
    return out


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _long_int(digits: str) -> int:
    """An integer, or a ValueError that says so when it is longer than Python reads from text."""
    import sys

    limit = sys.get_int_max_str_digits()
    count = len(digits.lstrip("-"))
    if limit and count > limit:
        raise ValueError(f"a number with {count} digits (more than {limit}); write a long id as a string")
    return int(digits)


def loads(text: str, where: str | None, line: int | None, column: bool = True) -> Any:
    """One JSON value, or an :class:`InputError` naming the file and line for every way it can fail: bad JSON,
    nesting deeper than the parser's recursion allows, an integer longer than Python reads from text, and a
    ``\\uD800``-style escape of half a surrogate pair (valid JSON, but no text: no file, table or database
    can hold it, and the web app's label store failed on it)."""
    try:
        value = json.loads(text, parse_int=_long_int)
        if _SURROGATE_ESCAPE.search(text):  # cheap test first: only escapes can make a lone surrogate
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError as exc:
        half = exc.object[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        raise InputError(
            where,
            f"invalid JSON text: the escape {half} is half of a surrogate pair, which is not a character",
            line=line,
            expected="a complete pair (such as \\ud83d\\ude00) or the character itself",
        ) from None
    except json.JSONDecodeError as exc:
        at = f" at column {exc.colno}" if column else ""
        raise InputError(where, f"invalid JSON ({exc.msg}{at})", line=(line or 1) + exc.lineno - 1) from None
    except RecursionError:
        at = (line or 1) + deep_line(text) - 1
        raise InputError(
            where, "invalid JSON: nested too deeply to read", line=at, expected="records a few levels deep"
        ) from None
    except ValueError as exc:  # _long_int's, or a float json cannot hold
        raise InputError(where, f"invalid JSON: {exc}", line=line) from None


def decode(data: bytes, where: str | None) -> str:
    """``data`` as UTF-8 text, or an :class:`InputError` naming the line that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            where, "is not valid UTF-8", line=data[: exc.start].count(b"\n") + 1, expected="UTF-8 text"
        ) from None


def _jsonl_line(raw: str, where: str, number: int, *, first: bool) -> Any:
    """One JSONL line's value; a first line that is no JSON says what the file looks like instead (a TREC run
    or qrels, or one JSON document spread over many lines, as RAGChecker writes them)."""
    try:
        return loads(raw, where, number)
    except InputError as exc:
        stripped = raw.strip()
        if not first or exc.hint:
            raise
        if stripped.startswith("{") and not stripped.endswith("}"):
            hint = (
                "this looks like one JSON document over many lines, not one record a line; "
                "RAGChecker's files are read with --from ragchecker"
            )
        elif not stripped.startswith(("{", "[")):
            hint = (
                "RAG records are JSON objects, one a line; stagewise rag takes a TREC run or qrels as --run or --qrels"
            )
        else:
            raise
        raise InputError(exc.source, exc.problem, line=exc.line, expected=exc.expected, hint=hint) from None


def read_records_raw(source: Any) -> list[tuple[Any, str | None, int | None]]:
    """The raw objects of a JSONL/JSON file or an iterable, each with its source and line (not validated)."""
    if isinstance(source, str | bytes) or hasattr(source, "__fspath__"):
        from stagewise._io import display_name, read_bytes

        where = display_name(source)
        text = decode(read_bytes(source), where)
        if text.lstrip().startswith("["):
            pairs = list(enumerate(loads(text, where, 1, column=False), start=1))
        else:
            pairs = []
            for number, raw in enumerate(text.split("\n"), start=1):
                if raw.strip():
                    pairs.append((number, _jsonl_line(raw, where, number, first=not pairs)))
        out = []
        for number, obj in pairs:
            if not isinstance(obj, Mapping):
                raise _fail(where, number, f"a record must be a JSON object, not {type(obj).__name__}")
            out.append((obj, where, number))
        return out
    out = []
    for number, obj in enumerate(source, start=1):
        if isinstance(obj, RagRecord):
            out.append((obj, obj.source, obj.line))
            continue
        if not isinstance(obj, Mapping):
            raise _fail(None, number, f"a record must be an object, not {type(obj).__name__}")
        out.append((obj, None, number))
    return out
