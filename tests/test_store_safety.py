"""The label store opens only databases it created (issue 25, item 1): anything else is refused untouched, byte for
byte and without a -wal or -shm; a database written before the marker existed is recognised by its exact schema and
migrated in place; ``stagewise labels backup`` writes one consistent file."""

from __future__ import annotations

import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from stagewise.errors import InputError
from stagewise.store import LabelStore, schema

STAGEWISE = str(Path(sys.executable).parent / "stagewise")

# the schema and the first fill exactly as stagewise wrote them before the marker (schema 1)
_V1_SCHEMA = """
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


def _v1_database(path: Path, close: bool = True) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(_V1_SCHEMA)
    db.execute("INSERT INTO labels VALUES ('q1', 'd1', 1)")
    db.execute("INSERT INTO meta VALUES ('initialised', '1')")
    db.execute("INSERT INTO history (qid, docid, old, new, time, who) VALUES ('q1', 'd2', NULL, 3, 1.0, 'web')")
    db.execute("INSERT INTO labels VALUES ('q1', 'd2', 3)")
    if close:
        db.close()
    return db


def _foreign(path: Path, *statements: str, wal: bool = False) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    for statement in statements:
        db.execute(statement)
    db.close()


FOREIGN = {
    "users": ("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users VALUES (1, 'ann')"),
    "own meta": ("CREATE TABLE meta (k TEXT, v BLOB)", "INSERT INTO meta VALUES ('x', 'y')"),
    "own labels": ("CREATE TABLE labels (a, b)",),
    "ours plus one": (
        *[s for s in _V1_SCHEMA.split(";") if s.strip()],
        "CREATE TABLE users (id INTEGER PRIMARY KEY)",
    ),
    "other app id": ("PRAGMA application_id = 1234", "CREATE TABLE t (x)"),
    "no tables": ("PRAGMA user_version = 0", "CREATE TABLE t (x)", "DROP TABLE t"),
}


@pytest.mark.parametrize("wal", [False, True], ids=["rollback", "wal"])
@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_database_is_refused_byte_identical(tmp_path, kind, wal):
    path = tmp_path / "app.db"
    _foreign(path, *FOREIGN[kind], wal=wal)
    before = path.read_bytes()
    with pytest.raises(InputError) as err:
        LabelStore(path, {"q1": {"d1": 1}})
    assert str(path) in str(err.value) and "--db a new file" in str(err.value)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()


def test_serve_refuses_a_foreign_database_untouched_as_a_user_runs_it(tmp_path):
    path = tmp_path / "app.db"
    _foreign(path, *FOREIGN["users"])
    before = path.read_bytes()
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d1 1\n")
    done = subprocess.run(
        [STAGEWISE, "serve", "--qrels", str(qrels), "--db", str(path), "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert str(path) in done.stderr and "users" in done.stderr
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "q.txt"]


@pytest.mark.parametrize("content", [b"hello, not a database\n" * 10, b"SQLite format 3\x00" + b"\x00" * 20])
def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path, content):
    path = tmp_path / "labels.sqlite"
    path.write_bytes(content)
    with pytest.raises(InputError, match="not an SQLite database"):
        LabelStore(path)
    assert path.read_bytes() == content and not Path(f"{path}-wal").exists()


def test_a_new_or_empty_file_is_initialised_with_the_marker(tmp_path):
    for path in (tmp_path / "new.sqlite", tmp_path / "empty.sqlite"):
        if path.name == "empty.sqlite":
            path.write_bytes(b"")
        store = LabelStore(path, {"q1": {"d1": 2}})
        assert store.labels() == {"q1": {"d1": 2}}
        store.close()
        header = path.read_bytes()[:100]
        assert struct.unpack(">I", header[68:72])[0] == schema.APPLICATION_ID
        assert struct.unpack(">I", header[60:64])[0] == schema.VERSION
        assert LabelStore(path).labels() == {"q1": {"d1": 2}}  # and it opens again


def test_a_database_of_schema_1_is_migrated_in_place_keeping_every_label(tmp_path):
    path = tmp_path / "labels.sqlite"
    _v1_database(path)
    store = LabelStore(path, {"q9": {"d9": 0}})  # the initial labels are not applied again
    assert store.labels() == {"q1": {"d1": 1, "d2": 3}}
    assert [(h["docid"], h["new"]) for h in store.history()] == [("d2", 3)]
    store.set("q1", "d1", 0)
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
    assert db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION
    db.close()


def test_a_schema_1_database_whose_labels_are_still_in_its_wal_is_recognised(tmp_path):
    """The old server stopped by SIGTERM left its labels in the -wal only; that pair still opens."""
    live = tmp_path / "live.sqlite"
    writer = _v1_database(live, close=False)  # open: nothing checkpointed yet
    copy = tmp_path / "copy.sqlite"
    for suffix in ("", "-wal"):
        Path(f"{copy}{suffix}").write_bytes(Path(f"{live}{suffix}").read_bytes())
    writer.close()
    store = LabelStore(copy)
    assert store.labels() == {"q1": {"d1": 1, "d2": 3}}
    store.close()


def test_a_database_of_a_newer_schema_is_refused_untouched(tmp_path):
    path = tmp_path / "labels.sqlite"
    LabelStore(path, {"q1": {"d1": 1}}).close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute(f"PRAGMA user_version = {schema.VERSION + 5}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(InputError, match="this stagewise reads schema"):
        LabelStore(path)
    assert path.read_bytes() == before


def test_every_older_version_has_a_migration():
    assert sorted(schema.MIGRATIONS) == list(range(1, schema.VERSION))


def test_labels_backup_copies_uncheckpointed_labels_into_one_file(tmp_path):
    db = tmp_path / "labels.sqlite"
    store = LabelStore(db, {"q1": {"d1": 1}})
    for n in range(50):
        store.set("q1", f"d{n}", n % 4)
    assert Path(f"{db}-wal").stat().st_size > 0  # the labels are (also) in the log: the copy must include it
    out = tmp_path / "backup" / "copy.sqlite"
    out.parent.mkdir()
    done = subprocess.run([STAGEWISE, "labels", "backup", str(db), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stderr and "50 labels" in done.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["copy.sqlite"]  # one file, nothing beside it
    copy = sqlite3.connect(f"file:{out}?immutable=1", uri=True)
    assert copy.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 50
    assert copy.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 50
    copy.close()
    assert LabelStore(out).labels() == store.labels()
    store.close()


def test_labels_backup_refuses_bad_outputs_and_foreign_files(tmp_path):
    db = tmp_path / "labels.sqlite"
    LabelStore(db, {"q1": {"d1": 1}}).close()
    foreign = tmp_path / "app.db"
    _foreign(foreign, *FOREIGN["users"])
    before = foreign.read_bytes()
    cases = [
        ([str(db), str(db)], "input"),
        ([str(db), str(tmp_path)], str(tmp_path)),
        ([str(db), str(tmp_path / "missing" / "x.sqlite")], "missing"),
        ([str(tmp_path / "none.sqlite"), str(tmp_path / "x.sqlite")], "no such label database"),
        ([str(foreign), str(tmp_path / "x.sqlite")], "users"),
    ]
    for args, message in cases:
        done = subprocess.run([STAGEWISE, "labels", "backup", *args], capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr
    assert foreign.read_bytes() == before and not (tmp_path / "x.sqlite").exists()
    assert not [p for p in tmp_path.iterdir() if "partial" in p.name]
