"""Writing an index folder safely: refuse folders we must not replace, and replace the rest atomically.

An index is a folder of files, so the one-file tricks of :mod:`stagewise._io` (write beside, rename over) do
not apply as they are: renaming a folder over a non-empty folder fails, and "rename the old one away, rename
the new one in" leaves a moment with no index at all. Linux swaps two folders in one step
(``renameat2(RENAME_EXCHANGE)``); the new index is built in a temporary folder beside the target, the two are
exchanged, and the temporary folder, which then holds the old index, is deleted. A process killed at any
moment leaves either the old index whole or the new one whole at the target, and at worst a temporary folder
whose name says what it is (``.NAME.stagewise-partial-index-PID-XXXX``); the next build of the same target
deletes it once its process is gone. Where the exchange is not available (another OS, a file system without
it) the swap is two renames, and a crash between them leaves the previous index in
``.NAME.stagewise-previous-index-PID-XXXX``: the message on opening the missing folder points there.

Nothing here deletes a folder it did not create, except a non-empty folder that is not an index when the
caller forces it; the current folder, a folder that holds it, and a folder that holds one of the inputs are
refused even then.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from stagewise._io import check_output
from stagewise.errors import InputError

PARTIAL = "stagewise-partial-index"
PREVIOUS = "stagewise-previous-index"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _temp_name(target: Path, what: str) -> Path:
    return target.parent / f".{target.name}.{what}-{os.getpid()}-{secrets.token_hex(3)}"


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there: never judge a folder stale
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _only_owned(folder: Path, owned: frozenset[str]) -> bool:
    try:  # an owned name may be a folder of ours (a dense index's onnx/), never a link
        return all(entry.name in owned and not entry.is_symlink() for entry in os.scandir(folder))
    except OSError:
        return False


def stale_folders(target: Path, owned: frozenset[str]) -> list[Path]:
    """Temporary folders left beside ``target`` by killed builds: our name pattern, a process that is gone, and
    nothing inside but index files."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(?:{PARTIAL}|{PREVIOUS})-(\d+)-[0-9a-f]+")
    found = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _pid_alive(pid) and _only_owned(Path(entry.path), owned):
            found.append(Path(entry.path))
    return found


def check_target(
    target: Path,
    *,
    owned: frozenset[str],
    force: bool = False,
    parents: bool = True,
    inputs: Iterable[Path] = (),
    what: str = "index",
    foreign_file: Callable[[Path], str | None] = lambda folder: None,
    option: str = "-o",
    parents_option: str | None = "--parents",
) -> None:
    """Refuse, before any work, an output folder that cannot or must not be replaced.

    ``owned`` are the names a folder of ours holds: a non-empty folder with any other entry needs ``force``,
    and so does one where ``foreign_file(folder)`` names a file of an owned name that is someone else's. Even
    with ``force`` these are refused: the current folder, a folder holding it, a folder holding one of
    ``inputs``, the home folder, and a folder holding a folder we do not own (``force`` replaces a folder of
    files, never a tree). ``parents=False`` refuses a missing parent folder. ``option`` and ``parents_option``
    are the names the hints give (a library call has no options: the CLI's are the default).
    """
    shown = str(target)
    if target.is_symlink():
        raise InputError(shown, "is a symbolic link", expected=f"a real folder for the {what}")
    real = _resolved(target)
    cwd = _resolved(Path.cwd())
    if cwd == real or cwd.is_relative_to(real):
        problem = "is the current folder" if cwd == real else "holds the current folder"
        raise InputError(shown, f"{problem}; writing the {what} there would replace it", hint="choose a new folder")
    for source in inputs:
        if str(source) == "-":
            continue
        source_real = _resolved(source)
        if source_real == real or source_real.is_relative_to(real):
            problem = "is an input" if source_real == real else f"holds an input ({source})"
            raise InputError(
                shown, f"{problem}; writing the {what} there would replace it", hint="choose a new folder"
            )
    if target.is_dir():
        try:
            entries = sorted(os.listdir(target))
        except OSError as exc:
            raise InputError(shown, f"cannot list the folder ({exc.strerror})") from None
        foreign = [name for name in entries if name not in owned]
        if not foreign and entries:
            foreign = [name] if (name := foreign_file(target)) else []
        if foreign and not force:
            listed = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise InputError(
                shown,
                f"is a non-empty folder that is not a stagewise {what} (it holds {listed})",
                hint="choose a new folder, or pass --force to replace it and everything in it",
            )
        if foreign and force:
            if real == _resolved(Path.home()):
                raise InputError(shown, "is the home folder", hint=f"choose a new folder for {option}")
            tree = next((n for n in foreign if (target / n).is_dir() and not (target / n).is_symlink()), None)
            if tree is not None:
                raise InputError(
                    shown,
                    f"holds a folder ({tree}); --force replaces a folder of files, never a tree",
                    hint=f"choose a new folder for {option}",
                )
    # What every output shares (a file in the way, a path under a file, a missing parent, no write permission):
    # the one check of stagewise._io.
    check_output(target, folder=True, parents=parents, option=option, parents_option=parents_option)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2``); False where the OS or file system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, TypeError):  # not Linux / glibc >= 2.28
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def replace_folder(target: Path, write: Callable[[Path], None], *, owned: frozenset[str]) -> None:
    """Build the folder's new content with ``write(tmp)`` in a temporary folder beside ``target``, then put it
    at ``target`` in one step (see the module docstring). Folders and files get the user's umask."""
    tmp = _temp_name(target, PARTIAL)
    os.mkdir(tmp)  # mode 0o777 & ~umask, unlike tempfile.mkdtemp's 0o700
    try:
        write(tmp)
        if not target.exists():
            os.rename(tmp, target)
            return
        if not _exchange(tmp, target):
            previous = _temp_name(target, PREVIOUS)
            os.rename(target, previous)
            os.rename(tmp, target)
            tmp = previous
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)  # open memory maps of the old files stay valid
    for stale in stale_folders(target, owned):  # only now: a previous index may be the only copy until here
        shutil.rmtree(stale, ignore_errors=True)


def previous_of(target: Path) -> Sequence[Path]:
    """Where a crash between the two renames of the fallback swap left the previous index, if it did."""
    with contextlib.suppress(OSError):
        prefix = f".{target.name}.{PREVIOUS}-"
        return sorted(p for p in target.parent.iterdir() if p.name.startswith(prefix) and p.is_dir())
    return []
