"""Labels in SQLite: the current label of every (query, doc) pair, and every change as a history row.

Only a database this module created is opened (see :mod:`stagewise.store.schema`: a header marker and a schema
version, checked before any write). The database is opened in WAL mode with ``synchronous=FULL``: a change is
on disk when ``set`` returns, and a process killed at any moment (``kill -9``), or a machine losing power,
leaves the last committed state, which the next open reads; :meth:`LabelStore.close` checkpoints, so after a
clean stop the database file alone holds everything. The original qrels are copied in once, when the database
is new; the qrels file itself is never written.

Concurrent changes are committed together (group commit): a ``set`` that arrives while another transaction is
being written waits for it, and the first waiter then writes every change queued meanwhile in one transaction,
with one ``fsync``. Each ``set`` still returns only once its own change is on disk, and changes are written
(and logged in the history) in the order they arrived; what is shared is the wait for the disk, which otherwise
caps a busy server at one relabel per ``fsync``. Reads go through a second connection, so a read does not wait
for a write's ``fsync`` (WAL lets readers see the last committed state while a writer works).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from stagewise.errors import InputError
from stagewise.store import schema

__all__ = ["LABELS", "LabelStore"]

LABELS = (0, 1, 2, 3)


@dataclasses.dataclass
class _Change:
    """One ``set`` waiting to be committed, and what became of it."""

    qid: str
    docid: str
    label: int | None
    who: str
    time: float
    old: int | None = None
    done: bool = False
    error: BaseException | None = None


class LabelStore:
    """The current labels and their history, in one SQLite file.

    ``initial`` (``{qid: {docid: label}}``) fills a new database; an existing one keeps its labels, so a
    restart shows the last state. Changes that arrive together are written in one transaction (see the
    module's docstring); a lock serialises writers in this process and SQLite's own lock those of other
    processes.
    """

    def __init__(self, path: str | os.PathLike, initial: Mapping[str, Mapping[str, int]] | None = None) -> None:
        self.path = Path(path)
        version = schema.identify(self.path)  # before any write: a file not ours is refused untouched
        self._db = sqlite3.connect(os.fspath(self.path), check_same_thread=False, timeout=30, isolation_level=None)
        try:
            if version is None:
                schema.initialise(self._db)
            schema.migrate(self._db, self.path)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        except sqlite3.DatabaseError as err:
            self._db.close()
            raise InputError(
                os.fspath(path),
                f"cannot open as a label database: {err}",
                hint="give --db a new file name or a database written by stagewise serve",
            ) from None
        except BaseException:
            self._db.close()
            raise
        self._lock = threading.Lock()  # held by whoever uses self._db
        self._queued: list[_Change] = []  # sets waiting for the next transaction
        self._queue_lock = threading.Lock()
        self._closed = False
        with self._transaction():
            done = self._db.execute("SELECT value FROM meta WHERE key = 'initialised'").fetchone()
            if done is None:
                rows = [(str(q), str(d), int(lab)) for q, docs in (initial or {}).items() for d, lab in docs.items()]
                self._db.executemany("INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", rows)
                self._db.execute("INSERT INTO meta VALUES ('initialised', ?)", (str(time.time()),))
                self._db.execute("INSERT INTO meta VALUES ('initial_digest', ?)", (_digest(initial or {}),))
        # reads on their own connection (and lock): WAL serves them the last commit while a write is on its way
        try:
            self._reader = sqlite3.connect(
                os.fspath(self.path), check_same_thread=False, timeout=30, isolation_level=None
            )
        except BaseException:
            self._db.close()
            raise
        self._read_lock = threading.Lock()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, serialised with this process's other writers: committed when the block ends,
        rolled back when it raises."""
        with self._lock, self._written():
            yield

    @contextlib.contextmanager
    def _written(self) -> Iterator[None]:
        """One write transaction on ``self._db`` (the caller holds ``self._lock``)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # a failed COMMIT may have ended the transaction already
                self._db.execute("ROLLBACK")
            raise

    def made_from(self, initial: Mapping[str, Mapping[str, int]]) -> bool | None:
        """Whether this database was first filled from ``initial`` (None: a database older than that record)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'initial_digest'").fetchone()
        return None if row is None else row[0] == _digest(initial)

    def checkpoint(self) -> None:
        """Move every committed change from the write-ahead log into the database file and empty the log, so
        that the file alone (as a user copies it) holds every label."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Checkpoint (see :meth:`checkpoint`) and close; a second close does nothing."""
        if self._closed:
            return
        with self._read_lock:
            self._reader.close()  # before the checkpoint, which a reader of this process would hold back
        with contextlib.suppress(sqlite3.Error):  # another process still reading: its last close checkpoints
            self.checkpoint()
        self._closed = True
        self._db.close()

    def labels(self, qid: str | None = None) -> dict[str, dict[str, int]]:
        """``{qid: {docid: label}}``, for every query or one: every change committed so far."""
        with self._read_lock:
            if qid is not None:  # the web app's question after each relabel
                rows = self._reader.execute(
                    "SELECT docid, label FROM labels WHERE qid = ? ORDER BY docid", (qid,)
                ).fetchall()
                return {qid: dict(rows)} if rows else {}
            rows = self._reader.execute("SELECT qid, docid, label FROM labels ORDER BY qid, docid").fetchall()
        out: dict[str, dict[str, int]] = {}
        for q, d, lab in rows:
            out.setdefault(q, {})[d] = lab
        return out

    def get(self, qid: str, docid: str) -> int | None:
        with self._read_lock:
            row = self._reader.execute("SELECT label FROM labels WHERE qid = ? AND docid = ?", (qid, docid)).fetchone()
        return None if row is None else row[0]

    def _get(self, qid: str, docid: str) -> int | None:
        row = self._db.execute("SELECT label FROM labels WHERE qid = ? AND docid = ?", (qid, docid)).fetchone()
        return None if row is None else row[0]

    def set(self, qid: str, docid: str, label: int | None, who: str = "") -> int | None:
        """Set (or, with ``None``, clear) one label and record the change; returns the old label once the change
        is committed (with the others queued at the same time: see the module's docstring)."""
        return self.set_many([(qid, docid, label, who)])[0]

    def set_many(self, changes: Sequence[tuple[str, str, int | None, str]]) -> list[int | None]:
        """Several sets (``(qid, docid, label or None, who)``, applied in order) in one transaction; returns each
        one's old label once all are committed. All of them are written, or, when the transaction fails, none."""
        for _, _, label, _ in changes:
            if label is not None and (isinstance(label, bool) or label not in LABELS):
                raise InputError("label", f"{label!r} is not a label", expected="an integer from 0 to 3")
        now = time.time()
        batch = [_Change(qid, docid, label, who, now) for qid, docid, label, who in changes]
        with self._queue_lock:
            self._queued.extend(batch)
        with self._lock:
            if not all(change.done for change in batch):  # else a transaction that began meanwhile wrote them
                self._commit_queued()
        for change in batch:
            if change.error is not None:
                raise change.error
        return [change.old for change in batch]

    def _commit_queued(self) -> None:
        """Write every queued change, in arrival order, in one transaction (the caller holds ``self._lock``);
        each change learns its old label, or the error that kept the whole transaction from committing."""
        with self._queue_lock:
            batch, self._queued = self._queued, []
        if not batch:
            return
        try:
            with self._written():
                for change in batch:
                    change.old = self._get(change.qid, change.docid)
                    self._write(change.qid, change.docid, change.label)
                self._db.executemany(
                    "INSERT INTO history (qid, docid, old, new, time, who) VALUES (?, ?, ?, ?, ?, ?)",
                    [(c.qid, c.docid, c.old, c.label, c.time, c.who) for c in batch],
                )
        except BaseException as err:  # nothing of the batch was written: every one of its callers is told
            for change in batch:
                change.error = err
        for change in batch:
            change.done = True

    def _write(self, qid: str, docid: str, label: int | None) -> None:
        if label is None:
            self._db.execute("DELETE FROM labels WHERE qid = ? AND docid = ?", (qid, docid))
        else:
            self._db.execute("INSERT OR REPLACE INTO labels VALUES (?, ?, ?)", (qid, docid, label))

    def undo(self, who: str = "") -> dict[str, object] | None:
        """Take back the latest change not yet undone; returns it, or None when there is nothing to undo.

        The undo is itself a history row (old and new swapped), so the history stays a complete log.
        """
        with self._lock:
            self._commit_queued()  # changes that arrived first are written first: the undo may take one back
        with self._transaction():
            row = self._db.execute(
                "SELECT id, qid, docid, old, new FROM history WHERE undone = 0 ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            hid, qid, docid, old, new = row
            self._write(qid, docid, old)
            self._db.execute("UPDATE history SET undone = 1 WHERE id = ?", (hid,))
            self._db.execute(
                "INSERT INTO history (qid, docid, old, new, time, who, undone) VALUES (?, ?, ?, ?, ?, ?, 1)",
                (qid, docid, new, old, time.time(), who),
            )
        return {"qid": qid, "docid": docid, "label": old, "undone": new}

    def history(self) -> list[dict[str, object]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, qid, docid, old, new, time, who, undone FROM history ORDER BY id"
            ).fetchall()
        keys = ("id", "qid", "docid", "old", "new", "time", "who", "undone")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def integrity(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0]

    def qrels_text(self) -> str:
        """The current labels as TREC qrels lines (``qid 0 docid label``)."""
        return "".join(f"{q} 0 {d} {lab}\n" for q, docs in self.labels().items() for d, lab in docs.items())


def _digest(labels: Mapping[str, Mapping[str, int]]) -> str:
    """What identifies a set of judgements, whatever their order: SHA-256 of the sorted (query, doc, label)."""
    rows = sorted((str(q), str(d), int(lab)) for q, docs in labels.items() for d, lab in docs.items())
    return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest()


def backup(path: str | os.PathLike, target: str | os.PathLike) -> dict[str, int]:
    """Copy the label database at ``path`` into ``target`` (a new file) with SQLite's backup API: one consistent
    snapshot, the changes still in the write-ahead log included, while a server may keep writing. The copy is a
    single file (rollback journal, no ``-wal``) and passes ``integrity_check``; returns its row counts."""
    source_path = Path(path)
    if schema.identify(source_path) is None:
        raise InputError(os.fspath(path), "is empty, not a label database", hint="give the file stagewise serve wrote")
    source = sqlite3.connect(os.fspath(source_path), timeout=30)
    try:
        copy = sqlite3.connect(os.fspath(target), isolation_level=None)
        try:
            source.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")
            check = copy.execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                raise InputError(os.fspath(path), f"its copy fails SQLite's integrity check: {check}")
            counts = {t: copy.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("labels", "history")}
        finally:
            copy.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(os.fspath(path), f"cannot be copied: {exc}") from None
    finally:
        source.close()
    return counts
