"""One writer per label database: an exclusive lock on a sidecar file, ``DB.lock``, holding the server's address.

Two servers on one database would each keep metrics in memory that the other's writes make wrong, so the second
is refused at start, told where the first one listens. The lock is ``fcntl.flock``'s: the operating system
releases it when its process ends, however it ends (``kill -9`` included), so a stale lock file never blocks a
start; the file's content is trusted only while its lock is held. Where ``fcntl`` does not exist (Windows) the
lock degrades to a note: nothing stops a second server there.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from stagewise.errors import InputError

__all__ = ["WriterLock", "lock_path", "writer_lock"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_HELD: dict[str, WriterLock] = {}


def lock_path(db: Path) -> Path:
    """The sidecar lock file of ``db``: ``labels.sqlite`` -> ``labels.sqlite.lock``."""
    return db.with_name(db.name + ".lock")


class WriterLock:
    """The lock of one database, held by this process from :meth:`acquire` until :meth:`release`."""

    def __init__(self, db: Path) -> None:
        self.db = Path(db)
        self.path = lock_path(self.db)
        self._fd: int | None = None
        self.supported = fcntl is not None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`InputError` naming the process (and address) that holds it."""
        if not self.supported:
            return
        while True:
            try:
                # not through a symlink: the truncation below would empty whatever it points at
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as exc:
                raise InputError(
                    str(self.path), f"cannot open the database's lock file ({exc.strerror})", hint="check --db's folder"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # held: EWOULDBLOCK; any other error is a file system without locks
                holder = _read(fd)
                os.close(fd)
                raise InputError(
                    str(self.db),
                    f"is served by another stagewise serve ({holder}); one server per database",
                    hint="open that server's address, stop it first, or give --db another file",
                ) from None
            except OSError:  # ENOLCK, EOPNOTSUPP: a file system without locks (some NFS and FUSE mounts)
                os.close(fd)
                self.supported = False  # the caller says nothing stops a second server here
                return
            # the file may have been removed (a clean stop) between our open and our lock: lock the new one
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                self.write(f"pid {os.getpid()}, starting")
                return
            os.close(fd)

    def write(self, where: str) -> None:
        """Record who holds the lock (a second server's error shows it)."""
        if self._fd is None:
            return
        data = json.dumps({"pid": os.getpid(), "address": where}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Remove the lock file and let the lock go (removed first, while held, so no other process locks the
        file being removed)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None
        _HELD.pop(str(self.db.resolve()), None)


def _read(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode())
        return f"{data['address']}, pid {data['pid']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its address unknown"


def writer_lock(db: Path) -> WriterLock:
    """The lock of ``db`` held by this process: taken now, or the one taken earlier (the CLI takes it before it
    opens the database, the server holds it while it serves)."""
    key = str(Path(db).resolve())
    if key not in _HELD:
        lock = WriterLock(Path(db))
        lock.acquire()
        _HELD[key] = lock
    return _HELD[key]
