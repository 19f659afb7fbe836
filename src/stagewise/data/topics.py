"""Topics for assessors: each query's title, and its description and narrative when the file gives them.

Three layouts are read, chosen by the file's content and name:

- TREC topics (``<top> <num> Number: 301 <title> ... <desc> Description: ... <narr> Narrative: ... </top>``),
  the closing tags (``</title>``) optional, as in the Robust, Web and Deep Learning tracks' files;
- JSONL, one topic a line: the id in ``_id``/``id``/``qid``/``query_id``/``topic_id``/``number``, the title in
  ``title``/``text``/``query``, and optional ``description``/``desc`` and ``narrative``/``narr``;
- anything else :func:`stagewise.data.collections.read_queries` reads (TSV ``qid<TAB>text``, a BEIR folder):
  titles only.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "topics.txt")
>>> _ = open(path, "w").write("<top>\\n<num> Number: 301\\n<title> Organized crime\\n<desc> Description:\\n"
...                           "Find gangs.\\n<narr> Narrative:\\nAny gang.\\n</top>\\n")
>>> read_topics(path)["301"]
Topic(query_id='301', title='Organized crime', description='Find gangs.', narrative='Any gang.')
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from stagewise.errors import InputError

__all__ = ["Topic", "read_topics"]


class Topic(NamedTuple):
    """One query as an assessor reads it; ``description`` and ``narrative`` are None when the file has none."""

    query_id: str
    title: str
    description: str | None = None
    narrative: str | None = None


_ID_FIELDS = ("_id", "id", "qid", "query_id", "topic_id", "number")
_TITLE_FIELDS = ("title", "text", "query")
_FIELD = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)
_PREFIX = {"num": "number:", "desc": "description:", "narr": "narrative:"}


def read_topics(path: str | Path) -> dict[str, Topic]:
    """``{query_id: Topic}`` from a TREC topic file, a JSONL file or what ``read_queries`` reads (above)."""
    from stagewise.data.collections import _read_text

    source = Path(path)
    if not source.exists():
        raise InputError(source, "no such topics file", hint="give --topics a TREC topic file, JSONL or TSV")
    if source.is_dir():
        return _from_queries(source)
    text = _read_text(source)
    if re.search(r"<top>", text[:65536], re.IGNORECASE):
        topics = _trec(text, source)
    elif source.name.lower().removesuffix(".gz").endswith((".jsonl", ".ndjson", ".json")):
        topics = _jsonl(text, source)
    else:
        return _from_queries(source)
    if not topics:
        raise InputError(source, "holds no topics", expected="<top> blocks, or one JSON object a line")
    return topics


def _from_queries(source: Path) -> dict[str, Topic]:
    from stagewise.data.collections import read_queries

    queries = read_queries(source)
    return {q: Topic(q, t) for q, t in zip(queries.ids, queries.texts, strict=True)}


def _clean(value: str, field: str) -> str:
    value = re.sub(r"</(?:num|title|desc|narr)>", " ", value, flags=re.IGNORECASE)
    value = " ".join(value.split())
    prefix = _PREFIX.get(field)
    if prefix and value.lower().startswith(prefix):
        value = value[len(prefix) :].strip()
    return value


def _trec(text: str, source: Path) -> dict[str, Topic]:
    topics: dict[str, Topic] = {}
    for block in re.finditer(r"<top>(.*?)(?:</top>|$)", text, re.IGNORECASE | re.DOTALL):
        line = text.count("\n", 0, block.start()) + 1
        marks = list(_FIELD.finditer(block.group(1)))
        fields: dict[str, str] = {}
        for mark, after in zip(marks, [*marks[1:], None], strict=True):
            end = after.start() if after is not None else len(block.group(1))
            fields[mark.group(1).lower()] = _clean(block.group(1)[mark.end() : end], mark.group(1).lower())
        qid, title = fields.get("num"), fields.get("title")
        if not qid or title is None:
            raise InputError(source, "a <top> block without <num> or <title>", line=line, expected="both")
        if qid in topics:
            raise InputError(source, f"topic {qid!r} is given twice", line=line, expected="each topic once")
        topics[qid] = Topic(qid, title, fields.get("desc") or None, fields.get("narr") or None)
    return topics


def _field(record: dict, names: tuple[str, ...], source: Path, line: int) -> str | None:
    for name in names:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, str | int):
            raise InputError(source, f"field {name!r} is {type(value).__name__}", line=line, expected="a string")
        return str(value).strip()
    return None


def _jsonl(text: str, source: Path) -> dict[str, Topic]:
    from stagewise.data.readers import json_records

    topics: dict[str, Topic] = {}
    for line, record in json_records(text, str(source)):
        qid = _field(record, _ID_FIELDS, source, line)
        title = _field(record, _TITLE_FIELDS, source, line)
        if qid is None or title is None:
            raise InputError(
                source, f"a topic without an id or a title (fields {sorted(record)})", line=line,
                expected=f"an id in one of {_ID_FIELDS} and a title in one of {_TITLE_FIELDS}",
            )  # fmt: skip
        if qid in topics:
            raise InputError(source, f"topic {qid!r} is given twice", line=line, expected="each topic once")
        description = _field(record, ("description", "desc"), source, line)
        narrative = _field(record, ("narrative", "narr"), source, line)
        topics[qid] = Topic(qid, title, description or None, narrative or None)
    return topics
