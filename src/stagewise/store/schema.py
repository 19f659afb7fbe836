"""Which SQLite files are label databases, and how an older one is brought to the current schema.

A label database is marked in its header: ``PRAGMA application_id`` holds :data:`APPLICATION_ID` and
``PRAGMA user_version`` the schema version. The marker is read from the file's first 100 bytes before SQLite
opens it for writing, so another application's database (or any other file) is refused with not one byte changed
and no ``-wal``/``-shm`` created. A database written before the marker existed (schema 1: the tables ``meta``,
``labels`` and ``history`` and nothing else) is recognised by its exact schema, read without writing, and
migrated in place; every migration is one transaction that ends by setting the next version.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path

from stagewise.errors import InputError

__all__ = ["APPLICATION_ID", "CAMPAIGN_SCHEMA", "SCHEMA", "VERSION", "identify", "initialise", "migrate"]

APPLICATION_ID = 0x53545753  # "STWS"
VERSION = 3

# schema 1 (the tables of every version so far; version 2 added the header marker only)
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS labels (
    qid TEXT NOT NULL, docid TEXT NOT NULL, label INTEGER NOT NULL, PRIMARY KEY (qid, docid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    qid TEXT NOT NULL, docid TEXT NOT NULL,
    old INTEGER, new INTEGER,  -- NULL: unjudged
    time REAL NOT NULL, who TEXT NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0  -- 1 for a row undone, and for the row that records the undo
);
"""

# schema 3 added assessment campaigns (stagewise.store.campaigns). A judgement is -1 (skipped), 0..3 (a label)
# or, in the history, NULL (none yet)
CAMPAIGN_SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (
    name TEXT PRIMARY KEY, created REAL NOT NULL, settings TEXT NOT NULL, admin_token TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_assessors (
    campaign TEXT NOT NULL, name TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (campaign, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_topics (
    campaign TEXT NOT NULL, qid TEXT NOT NULL, title TEXT NOT NULL, description TEXT, narrative TEXT,
    PRIMARY KEY (campaign, qid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_documents (
    campaign TEXT NOT NULL, docid TEXT NOT NULL, text TEXT, PRIMARY KEY (campaign, docid)  -- text NULL: missing
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_items (
    campaign TEXT NOT NULL, item INTEGER NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
    prelabel INTEGER, pool TEXT NOT NULL, PRIMARY KEY (campaign, item)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_queue (
    campaign TEXT NOT NULL, assessor TEXT NOT NULL, position INTEGER NOT NULL, item INTEGER NOT NULL,
    overlap INTEGER NOT NULL, PRIMARY KEY (campaign, assessor, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_labels (
    campaign TEXT NOT NULL, assessor TEXT NOT NULL, item INTEGER NOT NULL, label INTEGER NOT NULL,
    time REAL NOT NULL, spent REAL NOT NULL, PRIMARY KEY (campaign, assessor, item)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS campaign_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    campaign TEXT NOT NULL, assessor TEXT NOT NULL, item INTEGER NOT NULL, action TEXT NOT NULL,
    old INTEGER, new INTEGER, time REAL NOT NULL, spent REAL NOT NULL, prelabel_shown INTEGER NOT NULL,
    request TEXT, undone INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS campaign_requests ON campaign_history (campaign, assessor, request)
"""

_MAGIC = b"SQLite format 3\x00"
_HINT = "give --db a new file name (stagewise writes only label databases it created)"


def identify(path: Path) -> int | None:
    """The schema version of the label database at ``path``, or None for a new (missing or empty) file.

    Raises :class:`InputError`, naming the file, for anything else: not SQLite, another application's
    database, a label database of a newer stagewise. Nothing is written, and no SQLite sidecar is created.
    """
    name = os.fspath(path)
    if path.exists() and not path.is_file():  # before open: a FIFO would block it forever
        raise InputError(name, "is not a regular file", hint=_HINT)
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(name, f"cannot be read ({exc.strerror})", hint=_HINT) from None
    if not header:
        return None
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise InputError(name, "is not an SQLite database", hint=_HINT)
    (version,) = struct.unpack(">I", header[60:64])
    (app,) = struct.unpack(">I", header[68:72])
    if app == APPLICATION_ID:
        return version  # the header's version may lag a write still in the WAL; migrate() reads SQLite's own
    if app != 0 or version != 0:
        raise InputError(name, "is another application's SQLite database (its header says so)", hint=_HINT)
    tables = _schema_of(path)
    if not legacy_matches(tables):
        names = sorted(n for kind, n, _ in tables if kind == "table" and not n.startswith("sqlite_"))
        what = f"tables {', '.join(names)}" if names else "no tables"
        raise InputError(
            name,
            f"is not a label database of stagewise (it holds {what})",
            hint=_HINT
            + ("; a copy of a label database taken without its -wal file lacks its labels" if not names else ""),
        )
    return 1


def _schema_of(path: Path) -> set[tuple[str, str, str]]:
    """The schema entries of a database, read without writing: ``immutable`` when no WAL lies beside it (SQLite
    then neither locks nor creates sidecars), read-only through the WAL when there is one (its labels may be only
    there)."""
    wal = Path(os.fspath(path) + "-wal").exists()
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if wal else "?immutable=1")
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            rows = db.execute("SELECT type, name, COALESCE(sql, '') FROM sqlite_master").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(os.fspath(path), f"cannot be read as an SQLite database ({exc})", hint=_HINT) from None
    return {(kind, name, " ".join(sql.split())) for kind, name, sql in rows}


_LEGACY: set[tuple[str, str, str]] = set()


def _legacy_schema() -> set[tuple[str, str, str]]:
    """What schema 1 looks like in ``sqlite_master``: made by SQLite itself from :data:`SCHEMA`, so the
    comparison is exact, not a guess at SQLite's formatting."""
    if not _LEGACY:
        db = sqlite3.connect(":memory:")
        for statement in _statements():
            db.execute(statement)
        db.execute("INSERT INTO history (qid, docid, time, who) VALUES ('', '', 0, '')")  # makes sqlite_sequence
        rows = db.execute("SELECT type, name, COALESCE(sql, '') FROM sqlite_master").fetchall()
        db.close()
        _LEGACY.update((kind, name, " ".join(sql.split())) for kind, name, sql in rows)
    return _LEGACY


def legacy_matches(tables: set[tuple[str, str, str]]) -> bool:
    """Schema 1, with or without ``sqlite_sequence`` (it appears with the first history row)."""
    return tables == _legacy_schema() or tables == {t for t in _legacy_schema() if t[1] != "sqlite_sequence"}


def _statements(text: str = SCHEMA) -> list[str]:
    """:data:`SCHEMA` one statement at a time (``executescript`` would commit the transaction it runs in)."""
    return [s.strip() for s in text.split(";\n") if s.strip()]


def initialise(db: sqlite3.Connection) -> None:
    """A new database: marker, version and tables in one transaction (a crash leaves an empty file)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {VERSION}")
        for statement in _statements() + _statements(CAMPAIGN_SCHEMA):
            db.execute(statement)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _v2_to_v3(db: sqlite3.Connection) -> None:
    for statement in _statements(CAMPAIGN_SCHEMA):
        db.execute(statement)


def _v1_to_v2(db: sqlite3.Connection) -> None:
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


# version -> the step to the next one; each runs in its own transaction, which also sets the new version
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring an opened label database to :data:`VERSION`, one versioned step at a time."""
    while True:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if db.execute("PRAGMA application_id").fetchone()[0] == 0:
            version = 1  # schema 1 had no marker
        if version == VERSION:
            return
        if version > VERSION or version not in MIGRATIONS:
            raise InputError(
                os.fspath(path),
                f"is a label database of schema {version}; this stagewise reads schema {VERSION} and older",
                hint="open it with the stagewise that wrote it, or upgrade stagewise",
            )
        db.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
