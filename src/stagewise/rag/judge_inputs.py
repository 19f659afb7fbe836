"""The inputs of ``stagewise judge``: claims with passages, (query, passage) pairs, and their human labels.

Every reader names the file and the line of a bad input (:class:`~stagewise.errors.InputError`) and keeps the
file's order, so the outputs follow the input line by line.

- **Claims** (``judge support``, ``judge audit``): JSON lines ``{"id", "claim", "passages": [...]}``, each
  passage a text (its id is then ``p1``, ``p2``... by position) or ``{"id", "text"}``. For an audit each line
  also has ``"label"``: ``supported``, ``partial`` or ``not`` (TREC RAG's three levels), or ``true`` /
  ``false``. Binary support, which the audit's figures use, counts ``supported`` (or ``true``) only:
  ``partial`` is not supported, as :attr:`stagewise.rag.verdicts.Verdict.supported` reads a judge's label.
- **ExpertQA's own files** (``rand_test.jsonl``, ``rand_val.jsonl``: lines with ``question`` and ``answers``)
  are read as labelled claims directly: each claim with passage text in its evidence (the text after the
  ``[n] URL`` line) and an expert support label ``Complete`` (supported), ``Partial`` or ``Incomplete`` (not
  supported); claims labelled ``Missing`` or ``N/A``, unlabelled, or whose evidence is a URL alone are left
  out and counted (the mapping ``tools/fit_support_judge.py`` and ``benchmarks/judge_quality.py`` use). A
  claim's id is ``<line>/<system>/<n>`` (its question's line, the system, its 1-based position).
- **Relevance pairs** (``judge relevance``, ``judge audit --task relevance``): JSON lines ``{"qid", "query",
  "docid", "passage"}`` (the passage a text or ``{"id", "text"}``, whose id serves as ``docid``), with
  ``"label"`` (an integer grade) for an audit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagewise.errors import InputError
from stagewise.rag.judges import Passage

__all__ = [
    "EXPERTQA_SUPPORT",
    "Claim",
    "RelevancePair",
    "read_claims",
    "read_relevance_pairs",
]

#: ExpertQA's expert support labels read as binary support; the labels not listed are left out.
EXPERTQA_SUPPORT: dict[str, bool] = {"Complete": True, "Partial": False, "Incomplete": False}
_SUPPORT_LABELS = {"supported": True, "partial": False, "not": False, True: True, False: False}


@dataclass(frozen=True)
class Claim:
    """A claim to judge: its ``id``, text and passages; ``label`` and ``supported`` (binary) when labelled."""

    id: str
    claim: str
    passages: tuple[Passage, ...]
    label: str | None = None
    supported: bool | None = None


@dataclass(frozen=True)
class RelevancePair:
    """A (query, passage) pair: ``qid``, the query's text, ``docid``, the passage; ``grade`` when labelled."""

    qid: str
    query: str
    docid: str
    passage: Passage
    grade: int | None = None


def _lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8 text", expected="JSON lines") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"is not JSON ({exc.msg})", line=number, expected="one JSON object a line") from None
        if not isinstance(item, dict):
            raise InputError(path, f"holds a JSON {type(item).__name__}", line=number, expected="a JSON object")
        yield number, item


def _field(item: dict[str, Any], key: str, path: Any, number: int, expected: str, kind: type | tuple = str) -> Any:
    if key not in item:
        raise InputError(path, f"has no {key!r}", line=number, expected=expected)
    value = item[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # JSON true is no int
        raise InputError(path, f"{key!r} is {json.dumps(value)[:60]}", line=number, expected=expected)
    return value


def _passage(value: Any, position: int, path: Any, number: int) -> Passage:
    if isinstance(value, str):
        return Passage(f"p{position}", value)
    if isinstance(value, dict) and isinstance(value.get("text"), str) and isinstance(value.get("id"), str | int):
        return Passage(str(value["id"]), value["text"])
    raise InputError(
        path, f"passage {position} is {json.dumps(value)[:60]}", line=number, expected='a text or {"id", "text"}'
    )


def _claim_line(item: dict[str, Any], number: int, path: Any, labelled: bool) -> Claim:
    shape = '{"id", "claim", "passages"' + (', "label"}' if labelled else "}")
    ident = _field(item, "id", path, number, f"{shape} with a string or integer id", (str, int))
    claim = _field(item, "claim", path, number, f"{shape} with the claim's text")
    raw = _field(item, "passages", path, number, f"{shape} with a list of passages", list)
    passages = tuple(_passage(p, i, path, number) for i, p in enumerate(raw, 1))
    if not labelled:
        return Claim(str(ident), claim, passages)
    label = _field(item, "label", path, number, f"{shape}; label supported, partial, not, true or false", (str, bool))
    key = label.lower() if isinstance(label, str) else label
    if key not in _SUPPORT_LABELS:
        raise InputError(path, f"label {label!r}", line=number, expected="supported, partial, not, true or false")
    name = key if isinstance(key, str) else ("supported" if key else "not")
    return Claim(str(ident), claim, passages, name, _SUPPORT_LABELS[key])


def _evidence_text(item: Any) -> str:
    """The passage part of an ExpertQA evidence string ``"[n] URL\\n\\ntext"`` ("" when it is a URL alone)."""
    _head, sep, rest = str(item).partition("\n\n")
    return rest.strip() if sep else ""


def _expertqa(number: int, item: dict[str, Any], path: Any, skipped: dict[str, int]) -> list[Claim]:
    answers = item.get("answers")
    if not isinstance(answers, dict):
        raise InputError(path, "has no 'answers' object", line=number, expected="ExpertQA's question lines")
    out = []
    for system, answer in answers.items():
        for position, claim in enumerate(answer.get("claims") or [], 1):
            label = claim.get("support")
            texts = [t for t in (_evidence_text(e) for e in claim.get("evidence") or []) if t]
            why = None if label in EXPERTQA_SUPPORT else f"support label {label or 'missing'}"
            why = why or (None if texts else "evidence without passage text")
            if why is not None:
                skipped[why] = skipped.get(why, 0) + 1
                continue
            passages = tuple(Passage(f"e{i}", t) for i, t in enumerate(texts, 1))
            ident = f"{number}/{system}/{position}"
            out.append(Claim(ident, str(claim.get("claim_string", "")), passages, label, EXPERTQA_SUPPORT[label]))
    return out


def read_claims(path: str | Path, *, labelled: bool = False) -> tuple[list[Claim], dict[str, int]]:
    """The claims of a JSONL file, and the counts of what was left out (ExpertQA only; see the module's
    docstring). An id given twice is an error naming both lines (the outputs are keyed by id)."""
    claims: list[Claim] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    for number, item in _lines(path):
        if "answers" in item and "question" in item:
            if not labelled:
                raise InputError(path, "is ExpertQA's file", line=number, expected="claim lines for judge support")
            found = _expertqa(number, item, path, skipped)
        else:
            found = [_claim_line(item, number, path, labelled)]
        for claim in found:
            if claim.id in seen:
                raise InputError(path, f"id {claim.id!r} also on line {seen[claim.id]}", line=number)
            seen[claim.id] = number
            claims.append(claim)
    if not claims:
        raise InputError(path, "has no claims", expected='JSON lines {"id", "claim", "passages"}')
    return claims, dict(sorted(skipped.items()))


def _pair_line(item: dict[str, Any], number: int, path: Any, labelled: bool) -> RelevancePair:
    shape = '{"qid", "query", "docid", "passage"' + (', "label"}' if labelled else "}")
    qid = _field(item, "qid", path, number, f"{shape} with a string or integer qid", (str, int))
    query = _field(item, "query", path, number, f"{shape} with the query's text")
    if "passage" not in item:
        raise InputError(path, "has no 'passage'", line=number, expected=f"{shape}")
    passage = _passage(item["passage"], 1, path, number)
    docid = item.get("docid", passage.id if isinstance(item["passage"], dict) else None)
    if not isinstance(docid, str | int) or isinstance(docid, bool):
        raise InputError(path, "has no 'docid'", line=number, expected=f'{shape} (or a passage {{"id", "text"}})')
    grade = None
    if labelled:
        grade = _field(item, "label", path, number, f"{shape} with an integer grade", int)
    return RelevancePair(str(qid), query, str(docid), Passage(str(docid), passage.text), grade)


def read_relevance_pairs(path: str | Path, *, labelled: bool = False) -> list[RelevancePair]:
    """The (query, passage) pairs of a JSONL file, in order; a (qid, docid) given twice is an error."""
    pairs: list[RelevancePair] = []
    seen: dict[tuple[str, str], int] = {}
    for number, item in _lines(path):
        pair = _pair_line(item, number, path, labelled)
        key = (pair.qid, pair.docid)
        if key in seen:
            raise InputError(path, f"pair {pair.qid} {pair.docid} also on line {seen[key]}", line=number)
        seen[key] = number
        pairs.append(pair)
    if not pairs:
        raise InputError(path, "has no pairs", expected='JSON lines {"qid", "query", "docid", "passage"}')
    return pairs
