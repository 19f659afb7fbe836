"""Assessment campaigns, the pure part: the pool file read as items, and who judges what.

A campaign hands every pooled (query, document) item to assessors. A share ``overlap`` of the items, drawn with
the seed, goes to several assessors (all of them by default, ``per_overlap`` of them when given) so that their
agreement can be measured; every other item goes to one assessor. Each item goes to the least-loaded assessors,
ties broken by an order of the assessors drawn with the same seed, so queues differ in length by one at most
and the same pool, assessors, overlap and seed give the same queues. Each queue keeps the pool's order, which
keeps a query's documents together (an assessor reads a topic once, not once per document).

The number of overlap items is ``round(overlap * items)``, half rounded up, and at least one when ``overlap`` is
above 0 (a campaign asked to measure agreement always can).

>>> a = assign(10, ["ann", "bob"], overlap=0.2, seed=7)
>>> sorted(a.overlap_items), [len(q) for q in a.queues.values()]
([2, 5], [6, 6])
>>> a == assign(10, ["ann", "bob"], overlap=0.2, seed=7)
True
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagewise.errors import ConventionError, InputError, parameter_error

__all__ = [
    "ASSESSOR_NAME",
    "Assignment",
    "PoolItem",
    "assign",
    "check_assessors",
    "merged_text",
    "next_item",
    "read_pool",
]

#: What an assessor's name may be: it heads a qrels column and a table row, and travels in JSON and URLs.
ASSESSOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")


@dataclass(frozen=True)
class PoolItem:
    """One (query, document) to judge, and what the pool said of it (``note``: its order, priority and runs; shown
    to assessors only when the campaign is not blind)."""

    query_id: str
    doc_id: str
    note: str = ""


@dataclass(frozen=True)
class Assignment:
    """Each assessor's queue, ``(item, overlap)`` pairs in the pool's order; ``overlap_items``: the items judged by
    more than one assessor."""

    queues: dict[str, tuple[tuple[int, bool], ...]]
    overlap_items: frozenset[int]


def check_assessors(names: Sequence[str]) -> list[str]:
    """The names, after refusing an empty list, a name given twice or one :data:`ASSESSOR_NAME` refuses."""
    names = [str(n) for n in names]
    if not names:
        raise ConventionError("a campaign needs at least one assessor (--assessor NAME, repeatable)")
    for name in names:
        if not ASSESSOR_NAME.fullmatch(name):
            raise ConventionError(
                f"assessor name {name[:80]!r} is not allowed; use 1 to 64 letters, digits, _ . @ or -, "
                "starting with a letter or digit"
            )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConventionError(f"assessor {twice[0]!r} is given twice; give each assessor once")
    return names


def assign(
    n_items: int, assessors: Sequence[str], *, overlap: float = 0.0, seed: int = 0, per_overlap: int | None = None
) -> Assignment:
    """Queues for ``assessors`` over items ``0 .. n_items - 1`` (see the module's docstring for the rule)."""
    names = check_assessors(assessors)
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 0:
        raise parameter_error("n_items", "assign", "an int >= 0", n_items)
    if isinstance(overlap, bool) or not isinstance(overlap, int | float) or not 0 <= overlap <= 1:
        raise parameter_error("overlap", "assign", "a number in [0, 1]", overlap)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise parameter_error("seed", "assign", "an int", seed)
    k = len(names) if per_overlap is None else per_overlap
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(names) or (k == 1 and len(names) > 1):
        raise parameter_error("per_overlap", "assign", f"an int from 2 to {len(names)} (the assessors)", k)
    rng = random.Random(seed)
    n_overlap = min(n_items, math.floor(overlap * n_items + 0.5))
    if overlap > 0 and n_items and n_overlap == 0:
        n_overlap = 1
    shared = frozenset(rng.sample(range(n_items), n_overlap))
    tie = list(names)
    rng.shuffle(tie)
    rank = {name: i for i, name in enumerate(tie)}
    load = dict.fromkeys(names, 0)
    chosen: dict[str, list[tuple[int, bool]]] = {name: [] for name in names}

    def least(count: int) -> list[str]:
        return sorted(names, key=lambda n: (load[n], rank[n]))[:count]

    single = [i for i in range(n_items) if i not in shared]
    rng.shuffle(single)  # who gets an item does not follow the pool's order (a query's documents are spread)
    for item, is_shared in [(i, True) for i in sorted(shared)] + [(i, False) for i in single]:
        for name in least(k if is_shared else 1):
            chosen[name].append((item, is_shared and len(names) > 1))
            load[name] += 1
    queues = {name: tuple(sorted(chosen[name])) for name in names}
    return Assignment(queues, shared if len(names) > 1 else frozenset())


def next_item(queue: Sequence[Mapping[str, Any]]) -> int | None:
    """The item an assessor judges next: the first of the queue not judged yet; once every item is judged or
    skipped, the first skipped one (a skip puts an item off, it does not drop it); None when all are labelled.

    >>> next_item([{"item": 4, "judgement": 2}, {"item": 7, "judgement": -1}, {"item": 9, "judgement": None}])
    9
    >>> next_item([{"item": 4, "judgement": 2}, {"item": 7, "judgement": -1}])
    7
    """
    skipped = None
    for entry in queue:
        if entry["judgement"] is None:
            return int(entry["item"])
        if skipped is None and entry["judgement"] < 0:
            skipped = int(entry["item"])
    return skipped


def read_pool(path: str | Path) -> list[PoolItem]:
    """The items of a pool file written by ``stagewise pool``: the TREC layout (``qid Q0 docid ORDER PRIORITY
    STRATEGY``; any line of three fields or more with the query id first and the document id third, trectools'
    pools included) or JSONL (``query_id``, ``doc_id``, optional ``order``, ``priority``, ``runs``). The file's
    order is the judging order; a pair listed twice is an error naming the line."""
    from stagewise.data.collections import _read_text

    source = Path(path)
    if not source.is_file():
        raise InputError(source, "no such pool file", hint="write one with stagewise pool RUN... -o POOL")
    text = _read_text(source)
    jsonl = source.name.lower().removesuffix(".gz").endswith((".jsonl", ".ndjson", ".json"))
    rows = _jsonl_rows(text, source) if jsonl else _trec_rows(text, source)
    items: list[PoolItem] = []
    seen: dict[tuple[str, str], int] = {}
    for line, item in rows:
        key = (item.query_id, item.doc_id)
        if key in seen:
            raise InputError(
                source, f"document {item.doc_id!r} of query {item.query_id!r} is pooled twice (first on line "
                f"{seen[key]})", line=line, expected="each (query, document) once",
            )  # fmt: skip
        seen[key] = line
        items.append(item)
    if not items:
        raise InputError(source, "holds no pooled documents", expected="lines 'qid Q0 docid ...' or JSONL records")
    return items


def _trec_rows(text: str, source: Path) -> list[tuple[int, PoolItem]]:
    rows = []
    for line, raw in enumerate(text.split("\n"), start=1):
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 3:
            raise InputError(
                source, f"{len(fields)} fields", line=line, expected="'qid Q0 docid ORDER PRIORITY STRATEGY'"
            )
        note = f"pool order {fields[3]}, priority {fields[4]}" if len(fields) >= 5 else ""
        rows.append((line, PoolItem(fields[0], fields[2], note)))
    return rows


def _jsonl_rows(text: str, source: Path) -> list[tuple[int, PoolItem]]:
    from stagewise.data.readers import json_records

    rows = []
    for line, record in json_records(text, str(source)):
        q, d = record.get("query_id"), record.get("doc_id")
        if not isinstance(q, str | int) or not isinstance(d, str | int) or isinstance(q, bool) or isinstance(d, bool):
            raise InputError(
                source, f"no query_id or doc_id (fields {sorted(record)})", line=line,
                expected='{"query_id": "...", "doc_id": "...", ...} as stagewise pool --format jsonl writes',
            )  # fmt: skip
        parts = [f"pool {key} {json.dumps(record[key])}" for key in ("order", "priority", "runs") if key in record]
        rows.append((line, PoolItem(str(q), str(d), ", ".join(parts))))
    return rows


def merged_text(merged: object, campaign: str) -> str:
    """Merged qrels (:class:`~stagewise.assess.merge.Merged`) as TREC lines by query then document (byte order),
    after a ``#`` header naming the campaign, the merge policy and the assessors (trec_eval skips it)."""
    q = merged.qrels  # type: ignore[attr-defined]
    queries = q.query_ids[q.query_codes].tolist()
    rows = sorted(
        zip(queries, q.docs.values(), q.labels.tolist(), strict=True), key=lambda r: (r[0].encode(), r[1].encode())
    )
    assessors = ", ".join(merged.assessors)  # type: ignore[attr-defined]
    head = f"# merged by stagewise: campaign {campaign}; policy {merged.policy}; assessors {assessors}\n"  # type: ignore[attr-defined]
    return head + "".join(f"{a} 0 {d} {int(x)}\n" for a, d, x in rows)
