"""Reading bytes from paths, gzip files and stdin; checking output paths; writing files atomically."""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from stagewise.errors import InputError

PathLike = str | os.PathLike[str]


def display_name(source: PathLike) -> str:
    """The name a message uses for a source: ``<stdin>`` for ``-``, else the path as given."""
    return "<stdin>" if str(source) == "-" else str(source)


@contextlib.contextmanager
def input_errors(source: PathLike) -> Iterator[None]:
    """Opening or reading an input file: a missing file, a folder or a permission problem is an InputError
    naming ``source``, the same words for every reader."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(source, "no such file", hint="check the path") from None
    except IsADirectoryError:
        raise InputError(source, "is a directory, not a file") from None
    except PermissionError:
        raise InputError(source, "permission denied") from None


def read_bytes(source: PathLike) -> bytes:
    """The whole content of a file, a ``.gz`` file (detected by its magic bytes) or stdin (``-``)."""
    if str(source) == "-":
        data = sys.stdin.buffer.read()
    else:
        with input_errors(source):
            data = Path(source).read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
            raise InputError(source, f"corrupt gzip data ({exc})") from None
    return data


# ---------------------------------------------------------------------------------------------------------
# Output paths: checked before the work starts
# ---------------------------------------------------------------------------------------------------------


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


_SPECIAL_HINT = "stagewise writes regular files only; leave out -o and redirect stdout to write elsewhere"


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _stat(path: str) -> os.stat_result | None:
    """``os.stat`` (through symlinks), or None where nothing is there or it cannot be looked at (an input's own
    reader reports that)."""
    try:
        return os.stat(path)
    except OSError:
        return None


def _can(path: PathLike, mode: int) -> bool:
    """``os.access`` for the effective user (who will write), where the platform can ask for it."""
    if os.access in os.supports_effective_ids:
        return os.access(path, mode, effective_ids=True)
    return os.access(path, mode)


def _file_above(path: Path) -> Path | None:
    """The nearest ancestor of ``path`` that exists, when it is not a folder (``out.run/x`` under a file)."""
    for parent in path.parents:
        if os.path.lexists(parent):
            return parent if not os.path.isdir(parent) else None
    return None


def user_cache_folder() -> Path:
    """stagewise's folder in the user's cache (``$XDG_CACHE_HOME/stagewise``, else ``~/.cache/stagewise``):
    ONNX exports and the rerankers' default score cache."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stagewise"


def check_output(
    path: PathLike,
    *,
    inputs: Iterable[PathLike | None] = (),
    outputs: Mapping[str, PathLike | None] | None = None,
    input_folders: Iterable[PathLike] = (),
    option: str = "--output",
    folder: bool = False,
    parents: bool = False,
    parents_option: str | None = None,
) -> Path:
    """Refuse, before any work is done, an output path that cannot or must not be written.

    Raises :class:`InputError` (one line, with a hint in the CLI's terms) when ``path``

    - is empty, ends with ``/`` when a file is wanted, or starts with an unexpanded ``~/``;
    - is a folder (when a file is wanted) or a file (when ``folder=True``), a device, FIFO or socket;
    - lies under a regular file (``out.run/x``), or in a folder that does not exist (unless ``parents=True``:
      the caller was asked to create it; ``parents_option`` names the option that asks, for the hint);
    - is read-only, or lies in a folder where this user cannot create files;
    - is the same file as one of ``inputs`` (``os.stat``'s device and inode, so a hard link or a symlink to an
      input counts; ``-`` and ``None`` are skipped), or, with ``folder=True``, holds an input inside it;
    - is an existing file inside one of ``input_folders``, folders read whole such as a BM25 index (a new
      file there is fine);
    - is the same path as another output of the command (``outputs``: option name -> path).

    A symlink is followed: the file written is its target, and the link is kept. Returns the path that
    will be replaced (the link's target for a symlink), for messages. Checks cannot rule out a race with
    another process; they catch the mistakes a person makes at the command line.
    """
    text = os.fspath(path)
    what = "folder" if folder else "file"
    if text == "":
        raise InputError("<output>", f"{option} is empty", hint=f"give {option} a {what} name")
    if text == "-":  # a file named '-' is never what was meant: '-' reads stdin elsewhere in this CLI
        stdout = option in ("--output", "-o") and not folder
        hint = f"leave out {option} to write to stdout" if stdout else f"give {option} a {what} name"
        raise InputError("-", f"is not a {what} name for {option}", hint=hint)
    if not folder and text.endswith(("/", os.sep)):
        raise InputError(text, "ends with '/', so it names a folder", hint=f"give {option} a file name")
    if text == "~" or text.startswith(("~/", "~" + os.sep)):  # quoted, or from a script: no shell expanded it
        raise InputError(text, "starts with ~, which no shell expanded", hint="write the home folder's path out")
    given = Path(text)
    if os.path.islink(given):
        try:
            os.stat(given)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # a dangling link: its target is created
                raise InputError(text, f"is a symlink that cannot be followed ({exc.strerror})") from None
        target = Path(os.path.realpath(given))
    else:
        target = given
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except PermissionError:
        raise InputError(text, "cannot be looked at: permission denied", hint=f"choose another {option}") from None
    where = target.parent
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            if not folder:
                raise InputError(
                    text, "is a folder, not a file", hint=f"give {option} a file name, such as {given / 'NAME'}"
                )
        elif not stat.S_ISREG(st.st_mode):
            raise InputError(text, f"is {_kind(st.st_mode)}, not a regular {what}", hint=_SPECIAL_HINT)
        elif folder:
            raise InputError(text, "is a file, not a folder", hint=f"choose another {option}, or remove the file")
        if not _can(target, os.W_OK):
            raise InputError(text, "is read-only", hint=f"make it writable with chmod u+w, or choose another {option}")
    else:
        above = _file_above(target)
        if above is not None:
            raise InputError(
                text, f"lies under {above}, which is a file, not a folder", hint=f"choose another {option}"
            )
        if not os.path.isdir(where):
            missing = where
            if not parents:
                also = f", pass {parents_option}" if parents_option else ""
                raise InputError(
                    text,
                    f"folder {missing} does not exist",
                    hint=f"create it first with mkdir -p {missing}{also}, or correct {option}",
                )
            where = next(p for p in where.parents if os.path.isdir(p))
    if not _can(where, os.W_OK | os.X_OK):
        raise InputError(
            text, f"cannot create files in folder {where}: permission denied", hint=f"choose another {option}"
        )
    resolved = os.path.realpath(target)
    for source in inputs:
        if source is None or os.fspath(source) in ("-", ""):
            continue
        source_stat = _stat(os.fspath(source))
        if source_stat is None:
            continue
        if st is not None and _same_file(st, source_stat):
            raise InputError(
                text,
                f"is the input {os.fspath(source)}; writing would destroy it",
                hint=f"choose another {option}",
            )
        if folder and st is not None and _inside(os.path.realpath(source), resolved):
            raise InputError(
                text,
                f"holds the input {os.fspath(source)}; replacing the folder would destroy it",
                hint=f"choose another {option}",
            )
    for source in input_folders:
        if st is not None and os.path.isdir(source) and _inside(resolved, os.path.realpath(source)):
            raise InputError(
                text,
                f"is a file of the input folder {os.fspath(source)}; writing would change that input",
                hint=f"choose another {option}",
            )
    for name, other in (outputs or {}).items():
        if other is None:
            continue
        other_stat = _stat(os.fspath(other))
        same = (
            _same_file(st, other_stat)
            if st is not None and other_stat is not None
            else resolved == os.path.realpath(other)
        )
        if same:
            raise InputError(text, f"is also the {name} file", hint=f"give {option} and {name} different paths")
    return target


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


# ---------------------------------------------------------------------------------------------------------
# Temporary files: named for what they are, removed on SIGINT, SIGTERM and SIGHUP
# ---------------------------------------------------------------------------------------------------------

PARTIAL_MARK = ".stagewise-partial."


def partial_prefix(target: PathLike) -> str:
    """The name prefix of a temporary file or folder written beside ``target``: ``.NAME.stagewise-partial.``
    (a kill -9 cannot be caught; the name tells a person what the leftover is and that it can go)."""
    return f".{Path(target).name}{PARTIAL_MARK}"


_live: set[str] = set()  # partial files and folders that a terminating signal must remove
_lock = threading.RLock()
_depth = 0
_installed: dict[int, object] = {}
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _on_signal(signum: int, frame: object) -> None:
    # Remove the partial files first (whatever the code below us does with the exception), then exit as the
    # signal would have, with the shell's 128 + N status; `finally` blocks still run on the way out.
    with _lock:
        for path in list(_live):
            _remove(path)
        _live.clear()
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def removed_on_signal(path: PathLike) -> Iterator[None]:
    """Remove ``path`` (a partial file or folder) if SIGTERM or SIGHUP ends the process while it exists.

    SIGINT needs nothing: it raises KeyboardInterrupt, which the writers' own cleanup handles. The handlers
    are installed only from the main thread and only over the default action, so a program that handles
    these signals itself keeps its handlers (and its own cleanup duty).
    """
    global _depth
    key = os.fspath(path)
    with _lock:
        _live.add(key)
        if _depth == 0 and threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    _installed[sig] = signal.signal(sig, _on_signal)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _live.discard(key)
            _depth -= 1
            if _depth == 0 and threading.current_thread() is threading.main_thread():
                for sig, previous in _installed.items():
                    if signal.getsignal(sig) is _on_signal:
                        signal.signal(sig, previous)  # type: ignore[arg-type]
                _installed.clear()


# ---------------------------------------------------------------------------------------------------------
# Atomic writes
# ---------------------------------------------------------------------------------------------------------


def current_umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``); elsewhere set
    and restored at once (os.umask is the only portable reader)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def new_file_mode(target: PathLike, *, folder: bool = False) -> int:
    """The permission bits a written file gets: an existing file's own (replacing a file keeps its mode, as a
    shell's ``>`` does), else ``0o666`` less the umask (0644 under umask 022, 0664 under 002), as ``open``
    would give; never mkstemp's 0600. ``folder=True``: the same for a folder written whole (mkdtemp's 0700
    replaced by an existing folder's mode, or ``0o777`` less the umask)."""
    try:
        st = os.stat(target)
    except OSError:
        st = None
    if st is not None and (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)):
        return stat.S_IMODE(st.st_mode)
    return (0o777 if folder else 0o666) & ~current_umask()


def _write_target(path: PathLike, parents: bool) -> Path:
    """The file to replace for ``path``: a symlink's target (the link is kept), refusing special files."""
    given = Path(path)
    target = Path(os.path.realpath(given)) if os.path.islink(given) else given
    st = _stat(os.fspath(target))
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise InputError(path, f"is {_kind(st.st_mode)}, not a regular file", hint=_SPECIAL_HINT)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    return target


@contextlib.contextmanager
def atomic_paths(paths: Sequence[PathLike], *, parents: bool = True) -> Iterator[list[Path]]:
    """Temporary paths beside each of ``paths``; all are renamed over their targets only when the block
    succeeded, and together: if one rename fails, the files already replaced get their old content back.

    - a symlink is written through: its target is replaced and the link kept;
    - a device, FIFO or socket is refused (:class:`InputError`);
    - the new file gets :func:`new_file_mode` (a replaced file keeps its mode; a new one follows the umask);
    - the temporary files are named ``.NAME.stagewise-partial.XXXXXXXX`` and removed on any exception,
      KeyboardInterrupt included, and on SIGTERM or SIGHUP (see :func:`removed_on_signal`);
    - ``parents=True`` creates missing parent folders (the library's default; the CLI refuses them first
      with :func:`check_output`).

    A path that is itself a partial file of an enclosing write (``write_run`` into a temporary path that
    ``atomic_paths`` gave out) is written in place: the enclosing write already publishes it.
    """
    targets = [_write_target(p, parents) for p in paths]
    if len({os.path.realpath(t) for t in targets}) != len(targets):
        raise InputError(os.fspath(paths[0]), "is given twice as an output", hint="give each output its own path")
    with _lock:
        nested = [os.fspath(t) in _live for t in targets]
    if all(nested):
        yield targets
        return
    if any(nested):
        raise ValueError("atomic_paths: mixing partial files of an enclosing write with new targets")
    temps: list[str] = []
    with contextlib.ExitStack() as guards:
        try:
            for target in targets:
                fd, tmp = tempfile.mkstemp(prefix=partial_prefix(target), suffix="", dir=target.parent)
                os.close(fd)
                guards.enter_context(removed_on_signal(tmp))
                temps.append(tmp)
            yield [Path(t) for t in temps]
            for tmp, target in zip(temps, targets, strict=True):
                os.chmod(tmp, new_file_mode(target))
            _publish(temps, targets)
        except BaseException:
            for tmp in temps:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            raise


def _publish(temps: list[str], targets: list[Path]) -> None:
    """Rename each temporary file over its target; one rename failing undoes the others."""
    if len(targets) == 1:
        os.replace(temps[0], targets[0])
        return
    # Keep the old files reachable (a hard link costs nothing) until every rename is done.
    backups: list[str | None] = [_backup(t) for t in targets]
    done: list[int] = []
    try:
        for i, (tmp, target) in enumerate(zip(temps, targets, strict=True)):
            os.replace(tmp, target)
            done.append(i)
    except BaseException:
        for i in reversed(done):
            backup = backups[i]
            with contextlib.suppress(OSError):
                if backup is None:
                    os.unlink(targets[i])
                else:
                    os.replace(backup, targets[i])
                    backups[i] = None
        raise
    finally:
        for backup in backups:
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)


def _backup(target: Path) -> str | None:
    if not os.path.isfile(target):
        return None
    backup = os.path.join(target.parent, f".{target.name}.stagewise-backup.{secrets.token_hex(4)}")
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links
        shutil.copy2(target, backup)
    return backup


@contextlib.contextmanager
def atomic_path(path: PathLike, *, parents: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` for writers that want a file name; renamed over it on success
    (see :func:`atomic_paths` for symlinks, modes and signals)."""
    with atomic_paths([path], parents=parents) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_write(
    path: PathLike, mode: str = "w", encoding: str | None = "utf-8", *, parents: bool = True
) -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` only on success.

    A reader never sees a half-written file, and a failure leaves any earlier file untouched (see
    :func:`atomic_paths` for symlinks, modes and signals).
    """
    binary = "b" in mode
    with (
        atomic_path(path, parents=parents) as tmp,
        open(tmp, mode, encoding=None if binary else encoding, newline=None if binary else "") as fh,
    ):
        yield fh


@contextlib.contextmanager
def write_errors(path: PathLike) -> Iterator[None]:
    """Turn an operating-system failure while writing ``path`` (disk full, permission lost, a folder where the
    file should go) into one :class:`InputError` line for the CLI."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(path, f"cannot write: {reason}", hint="nothing was replaced") from None
