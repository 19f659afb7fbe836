"""The difference of two qrels: (query, document) pairs added, removed and relabelled, overall and per query,
as typed records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagewise.assess._tables import qrels_pairs, split_key

__all__ = ["PairChange", "QrelsDiff", "QueryDiff", "qrels_diff"]


@dataclass(frozen=True)
class PairChange:
    """One pair that differs: ``old`` is ``None`` when it was added, ``new`` is ``None`` when it was removed."""

    query_id: str
    doc_id: str
    old: int | None
    new: int | None


@dataclass(frozen=True)
class QueryDiff:
    """One query's counts of added, removed, relabelled and unchanged pairs."""

    query_id: str
    added: int
    removed: int
    relabelled: int
    unchanged: int


@dataclass(frozen=True)
class QrelsDiff:
    """The whole difference. ``transitions`` counts relabelled pairs by ``(old label, new label)``."""

    added: int
    removed: int
    relabelled: int
    unchanged: int
    transitions: dict[tuple[int, int], int]
    per_query: tuple[QueryDiff, ...]
    changes: tuple[PairChange, ...]


def qrels_diff(old: Any, new: Any) -> QrelsDiff:
    """What changed from ``old`` to ``new``.

    Parameters
    ----------
    old, new : Qrels or anything ``read_qrels`` takes

    Returns
    -------
    QrelsDiff
        Counts overall and per query (queries in byte order, every query of either side), the relabelling
        transitions and each changed pair (sorted by query, then document).

    Examples
    --------
    >>> d = qrels_diff({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 2}, "q2": {"c": 1}})
    >>> d.added, d.removed, d.relabelled, d.unchanged, d.transitions
    (1, 1, 1, 0, {(1, 2): 1})
    >>> d.per_query[0]
    QueryDiff(query_id='q1', added=0, removed=1, relabelled=1, unchanged=0)
    """
    keys_old, labels_old = qrels_pairs(old, "old qrels")
    keys_new, labels_new = qrels_pairs(new, "new qrels")
    _, io, inew = np.intersect1d(keys_old, keys_new, assume_unique=True, return_indices=True)
    removed = np.setdiff1d(np.arange(len(keys_old)), io)
    added = np.setdiff1d(np.arange(len(keys_new)), inew)
    moved = labels_old[io] != labels_new[inew]
    records = [(str(keys_old[i]), int(labels_old[i]), None) for i in removed]
    records += [(str(keys_new[i]), None, int(labels_new[i])) for i in added]
    records += [
        (str(keys_old[i]), int(labels_old[i]), int(labels_new[j])) for i, j in zip(io[moved], inew[moved], strict=True)
    ]
    records.sort(key=lambda r: r[0].encode("utf-8"))
    queries, docs = split_key(np.asarray([r[0] for r in records], dtype=str)) if records else ([], [])
    changes = tuple(PairChange(q, d, r[1], r[2]) for q, d, r in zip(queries, docs, records, strict=True))
    unchanged_queries, _ = split_key(keys_old[io[~moved]])
    return QrelsDiff(
        added=len(added),
        removed=len(removed),
        relabelled=int(moved.sum()),
        unchanged=int((~moved).sum()),
        transitions=dict(Counter((c.old, c.new) for c in changes if c.old is not None and c.new is not None)),
        per_query=_per_query(changes, unchanged_queries, keys_old, keys_new),
        changes=changes,
    )


def _per_query(
    changes: tuple[PairChange, ...], unchanged: list[str], keys_old: np.ndarray, keys_new: np.ndarray
) -> tuple[QueryDiff, ...]:
    all_queries = set(split_key(keys_old)[0]) | set(split_key(keys_new)[0])
    added = Counter(c.query_id for c in changes if c.old is None)
    removed = Counter(c.query_id for c in changes if c.new is None)
    relabelled = Counter(c.query_id for c in changes if c.old is not None and c.new is not None)
    same = Counter(unchanged)
    return tuple(
        QueryDiff(q, added[q], removed[q], relabelled[q], same[q])
        for q in sorted(all_queries, key=lambda q: q.encode("utf-8"))
    )
