"""The demo's output folder: which folders it may replace, the labels it carries over, and the lock a running
``stagewise demo --serve`` holds on it.

The folder is written beside the target and swapped in whole (:mod:`stagewise.folders`, whose checks refuse
what ``--force`` must never replace). A folder is the demo's only when its ``pipeline.json`` says so: file names
such as ``qrels.txt`` or ``summary.md`` are too common to tell.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from stagewise import folders
from stagewise.errors import InputError

__all__ = ["LABELS_DB", "MADE_BY", "OWNED_FILES", "check_folder", "copy_labels", "serving_lock"]

MADE_BY = "stagewise demo"
RUN_FILES = ("bm25-stem.run", "bm25-plain.run", "dense.run", "rrf.run", "reranked.run")
LABELS_DB = ("labels.sqlite", "labels.rag.sqlite")
# SQLite's write-ahead log and shared memory beside each database (left behind when a server is killed)
LABELS_DB_SIDECARS = tuple(f"{name}-{suffix}" for name in LABELS_DB for suffix in ("wal", "shm", "journal"))
LOCK = ".serve.lock"
OWNED_FILES = frozenset(
    {
        *RUN_FILES,
        *LABELS_DB,
        *LABELS_DB_SIDECARS,
        LOCK,
        "corpus.jsonl",
        "queries.jsonl",
        "qrels.txt",
        "NOTICE.md",
        "LICENSE-Apache-2.0.txt",
        "rag.jsonl",
        "rag-labels.jsonl",
        "evaluation.json",
        "comparison.json",
        "pipeline.json",
        "summary.md",
        "report.html",
    }
)


def _not_ours(folder: Path) -> str | None:
    """A file of the folder that shows it is not a demo's (None when its pipeline.json says it is)."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads((folder / "pipeline.json").read_text(encoding="utf-8")).get("made_by") == MADE_BY:
            return None
    with contextlib.suppress(OSError):
        names = sorted(os.listdir(folder))
        return "pipeline.json" if "pipeline.json" in names else names[0] if names else None
    return None


def check_folder(target: Path, *, force: bool) -> None:
    """Refuse, before any work, a ``--out`` the demo must not write or replace (see the module docstring)."""
    shown = str(target)
    folders.check_target(
        target,
        owned=OWNED_FILES,
        force=force,
        parents=False,
        what="demo output",
        foreign_file=_not_ours,
        option="--out",
        parents_option=None,
    )
    if target.is_dir():
        with _locked(target, wait=False) as held:
            if not held:
                raise InputError(
                    shown,
                    "is being served by a running stagewise demo --serve, whose labels would be lost",
                    hint="stop that server (Ctrl-C), or choose another --out",
                )


def copy_labels(source_folder: Path, target_folder: Path) -> None:
    """Carry the label databases over, with SQLite's backup, so changes still in a write-ahead log (a server
    killed before it checkpointed) come along."""
    for name in LABELS_DB:
        source = source_folder / name
        if not source.is_file():
            continue
        try:
            src, dst = sqlite3.connect(source), sqlite3.connect(target_folder / name)
            with contextlib.closing(src), contextlib.closing(dst):
                src.backup(dst)
        except sqlite3.DatabaseError as exc:
            raise InputError(
                str(source),
                f"cannot be read as the label database of stagewise demo --serve ({exc})",
                hint="move it out of the folder (the demo then starts with no relabelling), or choose another --out",
            ) from None


@contextlib.contextmanager
def _locked(folder: Path, *, wait: bool) -> Iterator[bool]:
    """An exclusive lock on the folder's lock file while the block runs; yields whether it was taken (always
    True where the OS has no ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: nothing to lock with
        yield True
        return
    path = folder / LOCK
    try:  # only a server creates the lock file: a check leaves the folder as it is
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if wait else 0), 0o666)
    except OSError:  # no server has served it, or a read-only folder (the swap then fails with its own message)
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def serving_lock(folder: Path) -> Iterator[None]:
    """Held while ``stagewise demo --serve`` serves ``folder``: a demo run meanwhile refuses to replace it (the
    server would go on writing labels into a database that is no longer there). The OS drops the lock when the
    process ends, however it ends."""
    with _locked(folder, wait=True):
        yield
