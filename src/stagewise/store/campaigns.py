"""Assessment campaigns in SQLite: the campaign, its assessors and their tokens, the topics and document texts they
read, each assessor's queue, their current judgements and every change as a history row.

The file is a label database (:mod:`stagewise.store.schema`, version 3 and up), opened through
:class:`~stagewise.store.labels.LabelStore`, so it has the same guarantees: only a database stagewise created is
opened, WAL with ``synchronous=FULL`` (a judgement is on disk when :meth:`CampaignStore.judge` returns; a
``kill -9`` loses nothing acknowledged), one writer per file.

A judgement is ``0..3`` (a label) or ``-1`` (skipped); in the history ``old`` is NULL when there was none. Each
history row records the assessor, the time (seconds since the epoch), the time spent on the item (seconds, as the
page measured it), whether a judge's pre-label was shown, and the request id the page sent: a request sent twice
(a retry after a lost answer) is recorded once. An undo is a history row too (``action`` ``undo``, old and new
swapped) and marks the row it takes back ``undone``.
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagewise.errors import InputError
from stagewise.store.labels import LabelStore

__all__ = ["SKIP", "Campaign", "CampaignStore"]

#: The judgement that records a skip.
SKIP = -1


@dataclass(frozen=True)
class Campaign:
    """A campaign as stored: its name, when it was made, its settings (``overlap``, ``seed``, ``blind``,
    ``prelabels``: the judge or None, ``show_prelabels``, the input files) and its assessors in order."""

    name: str
    created: float
    settings: dict[str, Any]
    assessors: tuple[str, ...]


class CampaignStore:
    """The campaigns of one SQLite file (see the module's docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        try:
            self._base = LabelStore(path)
        except InputError as exc:  # the label store's hint names serve's --db; here the file is a --store
            raise InputError(
                exc.source, exc.problem, line=exc.line, expected=exc.expected,
                hint="give --store a new file name, or a store written by stagewise campaign create",
            ) from None  # fmt: skip
        self.path = self._base.path
        self._db = self._base._db
        self._lock = self._base._lock

    def close(self) -> None:
        """Checkpoint and close (the database file alone then holds everything)."""
        self._base.close()

    def integrity(self) -> str:
        """SQLite's ``integrity_check``: ``ok`` for a sound file."""
        return self._base.integrity()

    # creating
    def create(
        self,
        name: str,
        *,
        items: Sequence[tuple[str, str, str]],
        queues: Mapping[str, Sequence[tuple[int, bool]]],
        tokens: Mapping[str, str],
        admin_token: str,
        topics: Mapping[str, tuple[str, str | None, str | None]],
        documents: Mapping[str, str | None],
        settings: Mapping[str, Any],
        prelabels: Sequence[int | None] | None = None,
    ) -> None:
        """Store a new campaign in one transaction: ``items`` (query, document, pool note) numbered from 0, each
        assessor's queue of ``(item, overlap)``, tokens, ``topics`` (title, description, narrative), the texts of
        the documents (None: not in the collection), settings and, optionally, one judge pre-label per item."""
        with self._base._transaction():
            if self._db.execute("SELECT 1 FROM campaigns WHERE name = ?", (name,)).fetchone():
                raise InputError(
                    os.fspath(self.path), f"already holds a campaign named {name!r}", hint="choose another --name"
                )
            self._db.execute(
                "INSERT INTO campaigns VALUES (?, ?, ?, ?)",
                (name, time.time(), json.dumps({**settings, "assessors": list(queues)}), admin_token),
            )
            self._db.executemany(
                "INSERT INTO campaign_assessors VALUES (?, ?, ?)", [(name, a, tokens[a]) for a in queues]
            )
            self._db.executemany(
                "INSERT INTO campaign_topics VALUES (?, ?, ?, ?, ?)", [(name, q, *t) for q, t in topics.items()]
            )
            self._db.executemany(
                "INSERT INTO campaign_documents VALUES (?, ?, ?)", [(name, d, t) for d, t in documents.items()]
            )
            marks = list(prelabels) if prelabels is not None else [None] * len(items)
            self._db.executemany(
                "INSERT INTO campaign_items VALUES (?, ?, ?, ?, ?, ?)",
                [(name, i, q, d, marks[i], note) for i, (q, d, note) in enumerate(items)],
            )
            self._db.executemany(
                "INSERT INTO campaign_queue VALUES (?, ?, ?, ?, ?)",
                [(name, a, pos, item, int(shared)) for a, q in queues.items() for pos, (item, shared) in enumerate(q)],
            )

    # reading
    def names(self) -> list[str]:
        """The campaigns' names, oldest first."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT name FROM campaigns ORDER BY created, name")]

    def campaign(self, name: str) -> Campaign:
        """The campaign ``name``, or an :class:`InputError` listing the campaigns there are."""
        with self._lock:
            row = self._db.execute("SELECT created, settings FROM campaigns WHERE name = ?", (name,)).fetchone()
        if row is None:
            there = ", ".join(self.names()) or "none"
            raise InputError(os.fspath(self.path), f"holds no campaign named {name!r}", hint=f"its campaigns: {there}")
        settings = json.loads(row[1])
        return Campaign(name, row[0], settings, tuple(settings.pop("assessors")))

    def tokens(self, name: str) -> dict[str, str]:
        """``{assessor: token}`` (for the administrator, who hands each assessor their address)."""
        with self._lock:
            rows = self._db.execute("SELECT name, token FROM campaign_assessors WHERE campaign = ?", (name,))
            return dict(rows.fetchall())

    def assessor_of(self, name: str, token: str) -> str | None:
        """The assessor whose token ``token`` is, compared in constant time; None for no assessor's."""
        found = None
        for assessor, known in self.tokens(name).items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = assessor
        return found

    def admin_token(self, name: str) -> str:
        """The campaign's administrator token (for the address ``stagewise campaign serve`` prints)."""
        with self._lock:
            return self._db.execute("SELECT admin_token FROM campaigns WHERE name = ?", (name,)).fetchone()[0]

    def is_admin(self, name: str, token: str) -> bool:
        """Whether ``token`` is the campaign's administrator token (constant-time comparison)."""
        with self._lock:
            row = self._db.execute("SELECT admin_token FROM campaigns WHERE name = ?", (name,)).fetchone()
        return row is not None and hmac.compare_digest(row[0].encode(), token.encode())

    def item(self, name: str, item: int) -> dict[str, Any]:
        """What an assessor reads for ``item``: query id, topic fields, document id, its text (None: missing from
        the collection), the pool's note and the judge's pre-label."""
        with self._lock:
            row = self._db.execute(
                "SELECT i.qid, i.docid, i.prelabel, i.pool, t.title, t.description, t.narrative, d.text "
                "FROM campaign_items i "
                "LEFT JOIN campaign_topics t ON t.campaign = i.campaign AND t.qid = i.qid "
                "LEFT JOIN campaign_documents d ON d.campaign = i.campaign AND d.docid = i.docid "
                "WHERE i.campaign = ? AND i.item = ?",
                (name, item),
            ).fetchone()
        keys = ("qid", "docid", "prelabel", "pool", "title", "description", "narrative", "text")
        return {"item": item, **dict(zip(keys, row, strict=True))}

    def queue(self, name: str, assessor: str) -> list[dict[str, Any]]:
        """The assessor's queue in order: ``item``, ``overlap`` and the current ``judgement`` (None, -1, 0..3)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT q.item, q.overlap, l.label FROM campaign_queue q LEFT JOIN campaign_labels l "
                "ON l.campaign = q.campaign AND l.assessor = q.assessor AND l.item = q.item "
                "WHERE q.campaign = ? AND q.assessor = ? ORDER BY q.position",
                (name, assessor),
            ).fetchall()
        return [{"item": i, "overlap": bool(o), "judgement": j} for i, o, j in rows]

    def progress(self, name: str) -> dict[str, dict[str, int]]:
        """Per assessor: ``total`` items in the queue, ``labelled``, ``skipped``, ``left`` (neither)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT q.assessor, COUNT(*), SUM(l.label >= 0), SUM(l.label = -1) FROM campaign_queue q "
                "LEFT JOIN campaign_labels l ON l.campaign = q.campaign AND l.assessor = q.assessor "
                "AND l.item = q.item WHERE q.campaign = ? GROUP BY q.assessor",
                (name,),
            ).fetchall()
        out = {}
        for assessor, total, labelled, skipped in rows:
            labelled, skipped = int(labelled or 0), int(skipped or 0)
            out[assessor] = {
                "total": total, "labelled": labelled, "skipped": skipped, "left": total - labelled - skipped,
            }  # fmt: skip
        return out

    def labels(self, name: str) -> dict[str, dict[str, dict[str, int]]]:
        """``{assessor: {qid: {docid: label}}}``, each assessor's current labels (skips left out), every assessor
        of the campaign present (an empty dict for one who has labelled nothing)."""
        out: dict[str, dict[str, dict[str, int]]] = {a: {} for a in self.campaign(name).assessors}
        with self._lock:
            rows = self._db.execute(
                "SELECT l.assessor, i.qid, i.docid, l.label FROM campaign_labels l JOIN campaign_items i "
                "ON i.campaign = l.campaign AND i.item = l.item WHERE l.campaign = ? AND l.label >= 0 "
                "ORDER BY l.assessor, i.qid, i.docid",
                (name,),
            ).fetchall()
        for assessor, qid, docid, label in rows:
            out[assessor].setdefault(qid, {})[docid] = label
        return out

    def history(self, name: str) -> list[dict[str, Any]]:
        """Every change in order: id, assessor, item, qid, docid, action, old, new, time, spent, prelabel_shown,
        request, undone."""
        with self._lock:
            rows = self._db.execute(
                "SELECT h.id, h.assessor, h.item, i.qid, i.docid, h.action, h.old, h.new, h.time, h.spent, "
                "h.prelabel_shown, h.request, h.undone FROM campaign_history h JOIN campaign_items i "
                "ON i.campaign = h.campaign AND i.item = h.item WHERE h.campaign = ? ORDER BY h.id",
                (name,),
            ).fetchall()
        keys = (
            "id", "assessor", "item", "qid", "docid", "action", "old", "new", "time", "spent", "prelabel_shown",
            "request", "undone",
        )  # fmt: skip
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # writing
    def judge(
        self,
        name: str,
        assessor: str,
        item: int,
        judgement: int,
        *,
        spent: float,
        prelabel_shown: bool = False,
        request: str | None = None,
    ) -> dict[str, Any]:
        """Record ``judgement`` (0..3, or :data:`SKIP`) of ``item`` by ``assessor``; returns ``{"old", "new",
        "repeated"}`` (``repeated``: the request id was seen before, nothing was written again). ``item`` must be
        in the assessor's queue (:class:`InputError` otherwise)."""
        with self._base._transaction():
            if request is not None:
                seen = self._db.execute(
                    "SELECT old, new, item FROM campaign_history WHERE campaign = ? AND assessor = ? AND request = ?",
                    (name, assessor, request),
                ).fetchone()
                if seen is not None:
                    if seen[2] != item:
                        raise InputError("request", f"id {request!r} was already used for another item")
                    return {"old": seen[0], "new": seen[1], "repeated": True}
            queued = self._db.execute(
                "SELECT 1 FROM campaign_queue WHERE campaign = ? AND assessor = ? AND item = ?", (name, assessor, item)
            ).fetchone()
            if queued is None:
                raise InputError("item", f"{item!r} is not in {assessor}'s queue", expected="an item of the queue")
            now = time.time()
            old = self._current(name, assessor, item)
            self._put(name, assessor, item, judgement, now, spent)
            self._db.execute(
                "INSERT INTO campaign_history (campaign, assessor, item, action, old, new, time, spent, "
                "prelabel_shown, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, assessor, item, "skip" if judgement == SKIP else "label", old, judgement, now, spent,
                 int(prelabel_shown), request),
            )  # fmt: skip
        return {"old": old, "new": judgement, "repeated": False}

    def _current(self, name: str, assessor: str, item: int) -> int | None:
        row = self._db.execute(
            "SELECT label FROM campaign_labels WHERE campaign = ? AND assessor = ? AND item = ?",
            (name, assessor, item),
        ).fetchone()
        return None if row is None else row[0]

    def _put(self, name: str, assessor: str, item: int, judgement: int | None, now: float, spent: float) -> None:
        if judgement is None:
            self._db.execute(
                "DELETE FROM campaign_labels WHERE campaign = ? AND assessor = ? AND item = ?", (name, assessor, item)
            )
        else:
            self._db.execute(
                "INSERT OR REPLACE INTO campaign_labels VALUES (?, ?, ?, ?, ?, ?)",
                (name, assessor, item, judgement, now, spent),
            )

    def undo(self, name: str, assessor: str) -> dict[str, Any] | None:
        """Take back the assessor's latest judgement not yet undone: the item's judgement before it is restored
        (with the time and time spent it was recorded with). Returns ``{"item", "old", "new"}`` (``new`` the
        restored judgement), or None when there is nothing to undo."""
        with self._base._transaction():
            row = self._db.execute(
                "SELECT id, item, old, new FROM campaign_history WHERE campaign = ? AND assessor = ? "
                "AND undone = 0 AND action != 'undo' ORDER BY id DESC LIMIT 1",
                (name, assessor),
            ).fetchone()
            if row is None:
                return None
            hid, item, old, new = row
            before = self._db.execute(
                "SELECT time, spent FROM campaign_history WHERE campaign = ? AND assessor = ? AND item = ? "
                "AND id < ? AND undone = 0 AND action != 'undo' ORDER BY id DESC LIMIT 1",
                (name, assessor, item, hid),
            ).fetchone()
            now = time.time()
            self._put(name, assessor, item, old, *(before or (now, 0.0)))
            self._db.execute("UPDATE campaign_history SET undone = 1 WHERE id = ?", (hid,))
            self._db.execute(
                "INSERT INTO campaign_history (campaign, assessor, item, action, old, new, time, spent, "
                "prelabel_shown, undone) VALUES (?, ?, ?, 'undo', ?, ?, ?, 0, 0, 1)",
                (name, assessor, item, new, old, now),
            )
        return {"item": item, "old": new, "new": old}


def open_campaigns(path: str | os.PathLike) -> CampaignStore:
    """An existing campaign store (a missing file is an :class:`InputError`, not a new empty store)."""
    if not Path(path).is_file():
        raise InputError(
            os.fspath(path), "no such campaign store", hint="make one with stagewise campaign create ... --store FILE"
        )
    try:
        return CampaignStore(path)
    except sqlite3.DatabaseError as exc:
        raise InputError(os.fspath(path), f"cannot be opened as a campaign store: {exc}") from None
