"""Reading bytes from paths, gzip files and stdin; checking output paths; writing files atomically."""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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


# ---------------------------------------------------------------------------------------------------------
# Compressed input: streamed, with a limit on how far it may expand
# ---------------------------------------------------------------------------------------------------------

GZIP_MAGIC = b"\x1f\x8b"
#: An LZ4 frame (what ``lz4.frame`` and ranx's ``.lz4`` files hold); read with the ``lz4`` package.
LZ4_MAGIC = b"\x04\x22\x4d\x18"


def compression_of(head: bytes) -> str | None:
    """``"gzip"`` or ``"lz4"`` when ``head`` (a file's first bytes) starts a compressed stream, else ``None``.

    >>> compression_of(b"\\x1f\\x8b\\x08"), compression_of(b"\\x04\\x22\\x4d\\x18"), compression_of(b"q1 Q0")
    ('gzip', 'lz4', None)
    """
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    return "lz4" if head.startswith(LZ4_MAGIC) else None


RATIO_ENV = "STAGEWISE_MAX_EXPANSION_RATIO"
BYTES_ENV = "STAGEWISE_MAX_EXPANDED_BYTES"
#: Real TREC runs, qrels and JSONL records compress 3-12x; deflate cannot go past about 1030x (a file of zeros
#: or of one repeated line), so 100x leaves real files a wide margin and still stops a bomb in its first MBs.
DEFAULT_MAX_RATIO = 100.0
#: Far above any real run or qrels file (a few GiB), low enough that a bomb built to pass the ratio stops
#: before it takes the machine's memory.
DEFAULT_MAX_EXPANDED = 32 * 2**30
#: The ratio is judged only past this many expanded bytes: a small file of repeated lines (a test fixture)
#: may compress 500x and costs nothing.
RATIO_GRACE = 16 * 2**20
_READ_BYTES = 1 << 16  # compressed bytes read at a time
_OUT_BYTES = 1 << 20  # the most expanded bytes one step produces, so a limit is checked every MB


@dataclass(frozen=True)
class ExpansionLimits:
    """How far compressed input may expand: ``ratio`` (expanded bytes over the compressed bytes read so far,
    judged past :data:`RATIO_GRACE`) and ``max_bytes`` (expanded bytes in all); ``None`` is no limit."""

    ratio: float | None = DEFAULT_MAX_RATIO
    max_bytes: int | None = DEFAULT_MAX_EXPANDED


_limits: ExpansionLimits | None = None  # set by set_expansion_limits; None: the environment, else the defaults


def set_expansion_limits(limits: ExpansionLimits | None) -> ExpansionLimits | None:
    """Set the limits on decompressed input for this process (over ``$STAGEWISE_MAX_EXPANSION_RATIO`` and
    ``$STAGEWISE_MAX_EXPANDED_BYTES``); ``None`` goes back to those. Returns the setting it replaced, to restore:
    ``old = set_expansion_limits(dataclasses.replace(expansion_limits(), ratio=500))``."""
    global _limits
    previous, _limits = _limits, limits
    return previous


def expansion_limits() -> ExpansionLimits:
    """The limits in force: :func:`set_expansion_limits`'s, else the environment's, else the defaults."""
    if _limits is not None:
        return _limits
    ratio = os.environ.get(RATIO_ENV, "").strip()
    size = os.environ.get(BYTES_ENV, "").strip()
    return ExpansionLimits(
        ratio=_env_ratio(ratio) if ratio else DEFAULT_MAX_RATIO,
        max_bytes=_env_bytes(size) if size else DEFAULT_MAX_EXPANDED,
    )


_NO_LIMIT = ("0", "none", "off", "unlimited")
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _env_ratio(text: str) -> float | None:
    if text.lower() in _NO_LIMIT:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1 or value == float("inf"):
        raise InputError(
            f"${RATIO_ENV}", f"is {text!r}", expected="a ratio of 1 or more, such as 200, or 0 for no limit"
        )
    return value


def _env_bytes(text: str) -> int | None:
    if text.lower() in _NO_LIMIT:
        return None
    match = re.fullmatch(r"(\d+)\s*([kmgt]?)(?:i?b)?", text.lower())
    if match is None or int(match.group(1)) == 0:
        raise InputError(
            f"${BYTES_ENV}", f"is {text!r}", expected="a size such as 64G, 500M or 1048576 (bytes), or 0 for no limit"
        )
    return int(match.group(1)) * _UNITS[match.group(2)]


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def _check_expansion(source: str, limits: ExpansionLimits, expanded: int, consumed: int, kind: str = "gzip") -> None:
    """Refuse input that expanded past a limit, before it takes more memory or time."""
    fix = "or decompress it yourself first (plain files have no limit)"
    if limits.max_bytes is not None and expanded > limits.max_bytes:
        raise InputError(
            source,
            f"expands to more than {_size(limits.max_bytes)} (the limit on decompressed input) from "
            f"{_size(consumed)} of {kind} data",
            hint=f"if the file is genuine, raise the limit with {BYTES_ENV}=SIZE (0: no limit) {fix}",
        )
    if limits.ratio is not None and expanded > RATIO_GRACE and expanded > limits.ratio * consumed:
        raise InputError(
            source,
            f"expands more than {limits.ratio:g} times its compressed size ({_size(expanded)} from "
            f"{_size(consumed)} of {kind} data so far): a decompression bomb, or a file far more repetitive "
            "than real data",
            hint=f"if the file is genuine, raise the limit with {RATIO_ENV}=N (0: no limit) {fix}",
        )


def _inflate(raw: IO[bytes], source: str, first: bytes = b"") -> Iterator[bytes]:
    """The decompressed content of a gzip stream (``first``: bytes already read from it), in pieces of at
    most 1 MiB, every gzip member in turn (``cat a.gz b.gz`` is one file), under :func:`expansion_limits`."""
    limits = expansion_limits()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the gzip wrapper: header, CRC and length checked
    data, read, expanded, inside = first, len(first), 0, True
    while True:
        if not data:
            data = raw.read(_READ_BYTES)
            if not data:
                break
            read += len(data)
        if not inside:  # between members: zero padding is allowed (gzip.decompress skips it too)
            data = data.lstrip(b"\0")
            if len(data) < 2:
                more = raw.read(_READ_BYTES)
                read += len(more)
                data += more
                if not more and data:
                    raise InputError(source, "corrupt gzip data (trailing bytes after the last member)")
                continue
            if data[:2] != GZIP_MAGIC:
                raise InputError(source, "corrupt gzip data (trailing bytes after the last member)")
            inflater, inside = zlib.decompressobj(16 + zlib.MAX_WBITS), True
        try:
            out = inflater.decompress(data, _OUT_BYTES)
        except zlib.error as exc:  # a damaged deflate stream, a wrong CRC or length
            raise InputError(source, f"corrupt gzip data ({exc})") from None
        if inflater.eof:
            data, inside = inflater.unused_data, False
        else:
            data = inflater.unconsumed_tail
        if out:
            expanded += len(out)
            _check_expansion(source, limits, expanded, read - len(data))
            yield out
    if inside:
        raise InputError(source, "corrupt gzip data (the file ends inside a gzip member: truncated)")


def _unlz4(raw: IO[bytes], source: str, first: bytes = b"") -> Iterator[bytes]:
    """The decompressed content of LZ4 frames (one or several in a row), in pieces of at most 1 MiB, under
    :func:`expansion_limits`, as :func:`_inflate` reads gzip."""
    try:
        import lz4.frame
    except ImportError:
        raise InputError(
            source, "is LZ4-compressed, which needs the lz4 package", hint="pip install 'stagewise[lz4]' (or lz4)"
        ) from None
    limits = expansion_limits()
    decoder, inside = lz4.frame.LZ4FrameDecompressor(), True
    data, read, expanded = first, len(first), 0
    while True:
        if not inside:  # between frames: another frame, or the end
            if len(data) < 4:
                more = raw.read(_READ_BYTES)
                read += len(more)
                data += more
            if not data:
                return
            if data[:4] != LZ4_MAGIC:
                raise InputError(source, "corrupt LZ4 data (trailing bytes after the last frame)")
            decoder, inside = lz4.frame.LZ4FrameDecompressor(), True
        chunk = b""
        if decoder.needs_input:  # else it still holds input past the last max_length
            if not data:
                data = raw.read(_READ_BYTES)
                read += len(data)
                if not data:
                    raise InputError(source, "corrupt LZ4 data (the file ends inside a frame: truncated)")
            chunk, data = data, b""
        try:
            out = decoder.decompress(chunk, max_length=_OUT_BYTES)
        except RuntimeError as exc:  # lz4 reports a damaged frame as a RuntimeError
            raise InputError(source, f"corrupt LZ4 data ({exc})") from None
        if decoder.eof:
            data, inside = (decoder.unused_data or b"") + data, False
        if out:
            expanded += len(out)
            _check_expansion(source, limits, expanded, read - len(data), "lz4")
            yield out


def _plain_chunks(raw: IO[bytes], first: bytes) -> Iterator[bytes]:
    if first:
        yield first
    while chunk := raw.read(_OUT_BYTES):
        yield chunk


class _ChunkStream(io.RawIOBase):
    """A readable stream over an iterator of byte strings."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = memoryview(chunk)
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


@contextlib.contextmanager
def _raw_input(source: PathLike) -> Iterator[IO[bytes]]:
    if str(source) == "-":
        yield sys.stdin.buffer
        return
    with input_errors(source), open(source, "rb") as fh:
        yield fh


def _sniff(raw: IO[bytes]) -> tuple[str | None, bytes]:
    """How the stream is compressed (:func:`compression_of`: gzip, lz4 or ``None``), and the bytes read from it
    to tell (none where it could seek back or peek)."""
    if raw.seekable():
        head = raw.read(4)
        raw.seek(-len(head), os.SEEK_CUR)
        return compression_of(head), b""
    peek = getattr(raw, "peek", None)
    if peek is not None:
        head = peek(4)[:4]
        if len(head) == 4 or not head:
            return compression_of(head), b""
    head = raw.read(4)
    return compression_of(head), head


def _expanded(raw: IO[bytes], name: str, kind: str | None, first: bytes) -> Iterator[bytes]:
    """The decompressed pieces of a ``kind`` stream (``first``: bytes already read from it)."""
    return _inflate(raw, name, first) if kind == "gzip" else _unlz4(raw, name, first)


@contextlib.contextmanager
def open_input(source: PathLike) -> Iterator[IO[bytes]]:
    """A file or stdin (``-``) as a binary stream; gzip and LZ4 (told by their magic bytes, whatever the name)
    are decompressed as they are read, under :func:`expansion_limits`. Every reader of user input opens it here."""
    with _raw_input(source) as raw:
        kind, first = _sniff(raw)
        if not kind and not first:
            yield raw
            return
        chunks = _expanded(raw, display_name(source), kind, first) if kind else _plain_chunks(raw, first)
        yield io.BufferedReader(_ChunkStream(chunks), buffer_size=_READ_BYTES)


def decompressed(data: bytes, source: str) -> bytes:
    """``data`` itself, or, when it is a gzip or LZ4 stream (ranx compresses its ``.lz4`` files twice), what it
    expands to, under :func:`expansion_limits`."""
    kind = compression_of(data[:4])
    if kind is None:
        return data
    return b"".join(_expanded(io.BytesIO(data), source, kind, b""))


def read_bytes(source: PathLike) -> bytes:
    """The whole content of a file, a gzip or LZ4 file (detected by its magic bytes) or stdin (``-``). Either is
    decompressed in steps under :func:`expansion_limits`, into one buffer that grows in place: memory is the
    expanded size (and a little), not two or three copies of it."""
    name = display_name(source)
    with _raw_input(source) as raw, input_errors(source):
        kind, first = _sniff(raw)
        if not kind:
            return first + raw.read() if first else raw.read()
        out = io.BytesIO()
        try:
            for chunk in _expanded(raw, name, kind, first):
                out.write(chunk)
        except MemoryError:
            size = _size(out.tell())
            out = io.BytesIO()  # free it before the message is built
            raise InputError(
                name, f"does not fit in memory once decompressed ({size} so far)", hint="decompress it first"
            ) from None
        return out.getvalue()  # BytesIO hands over its own buffer here: no copy


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
    _check_spelling(text, option, folder)
    target = _followed(text)
    st = _stat_output(target, text, option)
    if st is not None:
        _check_existing(st, target, text, option, folder)
        where = target.parent
    else:
        where = _check_new(target, text, option, parents, parents_option)
    if not _can(where, os.W_OK | os.X_OK):
        raise InputError(
            text, f"cannot create files in folder {where}: permission denied", hint=f"choose another {option}"
        )
    resolved = os.path.realpath(target)
    _check_not_an_input(st, resolved, text, option, folder, inputs)
    _check_input_folders(st, resolved, text, option, input_folders)
    _check_other_outputs(st, resolved, text, option, outputs or {})
    return target


# The checks of check_output, in its order: the path as typed, what is there, where a new one goes, then the
# inputs and the other outputs it must not be.


def _check_spelling(text: str, option: str, folder: bool) -> None:
    """Refuse an output path that is empty, ``-``, a folder's name where a file is wanted, or an unexpanded ``~``."""
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


def _followed(text: str) -> Path:
    """The path written for ``text``: a symlink's target (a dangling link's too: it is created), else itself."""
    given = Path(text)
    if not os.path.islink(given):
        return given
    try:
        os.stat(given)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # a dangling link: its target is created
            raise InputError(text, f"is a symlink that cannot be followed ({exc.strerror})") from None
    return Path(os.path.realpath(given))


def _stat_output(target: Path, text: str, option: str) -> os.stat_result | None:
    """``os.stat`` of the output, None when nothing is there yet."""
    try:
        return os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError:
        raise InputError(text, "cannot be looked at: permission denied", hint=f"choose another {option}") from None


def _check_existing(st: os.stat_result, target: Path, text: str, option: str, folder: bool) -> None:
    """Refuse what is there when it is of the wrong kind (a folder, a file, a device) or read-only."""
    what = "folder" if folder else "file"
    if stat.S_ISDIR(st.st_mode):
        if not folder:
            raise InputError(
                text, "is a folder, not a file", hint=f"give {option} a file name, such as {Path(text) / 'NAME'}"
            )
    elif not stat.S_ISREG(st.st_mode):
        raise InputError(text, f"is {_kind(st.st_mode)}, not a regular {what}", hint=_SPECIAL_HINT)
    elif folder:
        raise InputError(text, "is a file, not a folder", hint=f"choose another {option}, or remove the file")
    if not _can(target, os.W_OK):
        raise InputError(text, "is read-only", hint=f"make it writable with chmod u+w, or choose another {option}")


def _check_new(target: Path, text: str, option: str, parents: bool, parents_option: str | None) -> Path:
    """The folder a new output is created in (the nearest existing one with ``parents``); refused when the path
    lies under a file or its folder is missing."""
    above = _file_above(target)
    if above is not None:
        raise InputError(text, f"lies under {above}, which is a file, not a folder", hint=f"choose another {option}")
    where = target.parent
    if os.path.isdir(where):
        return where
    if not parents:
        also = f", pass {parents_option}" if parents_option else ""
        raise InputError(
            text,
            f"folder {where} does not exist",
            hint=f"create it first with mkdir -p {where}{also}, or correct {option}",
        )
    return next(p for p in where.parents if os.path.isdir(p))


def _check_not_an_input(
    st: os.stat_result | None,
    resolved: str,
    text: str,
    option: str,
    folder: bool,
    inputs: Iterable[PathLike | None],
) -> None:
    """Refuse an output that is one of the inputs (the same file), or a folder replaced whole that holds one."""
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


def _check_input_folders(
    st: os.stat_result | None, resolved: str, text: str, option: str, input_folders: Iterable[PathLike]
) -> None:
    """Refuse an existing file inside a folder read whole as an input (a BM25 index)."""
    for source in input_folders:
        if st is not None and os.path.isdir(source) and _inside(resolved, os.path.realpath(source)):
            raise InputError(
                text,
                f"is a file of the input folder {os.fspath(source)}; writing would change that input",
                hint=f"choose another {option}",
            )


def _check_other_outputs(
    st: os.stat_result | None, resolved: str, text: str, option: str, outputs: Mapping[str, PathLike | None]
) -> None:
    """Refuse an output that is also another output of the command (``outputs``: option name -> path)."""
    for name, other in outputs.items():
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


@functools.cache  # asked for every partial file of every write; the machine's name does not change
def _host_tag() -> str:
    """Eight hex digits naming this machine, so that a partial file in a folder shared by several machines is
    judged only by the machine whose process table holds its writer."""
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')):08x}"


def _owner_prefix(target: PathLike) -> str:
    """:func:`partial_prefix` followed by the writer's pid and machine: ``.NAME.stagewise-partial.PID-HOST.``"""
    return f"{partial_prefix(target)}{os.getpid()}-{_host_tag()}."


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would end the process there: never judge a file stale
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # someone else's live process; a pid no kernel gives out
        return True
    return True


def remove_stale_partials(target: PathLike) -> list[str]:
    """Remove the partial files of ``target`` that an earlier writer, killed where no handler runs (kill -9, a
    crash, the machine stopping), left beside it: only those whose name holds a pid of this machine that is no
    longer running, so a writer still at work is never touched. Each removal is said on stderr; a partial file
    whose name holds no pid (an older stagewise's) is named there and kept. Returns the paths removed."""
    folder = Path(target).parent
    prefix = partial_prefix(target)
    owned = re.compile(rf"{re.escape(prefix)}(\d+)-([0-9a-f]{{8}})\.")
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in entries:
        shown = os.fspath(folder / entry.name)  # as the target was given: no ./ for a bare name
        match = owned.match(entry.name)
        if match is None:
            print(
                f"stagewise: note: {shown} looks like a partial file of an earlier write of {target}; its name"
                " does not say which process wrote it, so it is kept (remove it if no stagewise is writing there)",
                file=sys.stderr,
            )
            continue
        pid = int(match.group(1))
        if match.group(2) != _host_tag() or pid == os.getpid() or _pid_alive(pid):
            continue
        try:
            size = entry.stat(follow_symlinks=False).st_size
            _remove(entry.path)
        except OSError:
            continue  # gone already (another writer cleaned it), or not ours to remove
        removed.append(entry.path)
        print(
            f"stagewise: removed {shown} ({_size(size)}), a partial file left by process {pid}, which is no "
            "longer running",
            file=sys.stderr,
        )
    return removed


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
    - the temporary files are named ``.NAME.stagewise-partial.PID-HOST.XXXXXXXX`` and removed on any exception,
      KeyboardInterrupt included, and on SIGTERM or SIGHUP (see :func:`removed_on_signal`); those a kill -9
      left are removed by the next write of the same target, once their process is gone
      (:func:`remove_stale_partials`);
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
                remove_stale_partials(target)  # before writing: a 600 MB leftover can be what fills the disk
                fd, tmp = tempfile.mkstemp(prefix=_owner_prefix(target), suffix="", dir=target.parent)
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


def npy_header(fh: IO[bytes]) -> tuple[tuple[int, ...], bool, Any]:
    """``(shape, fortran_order, dtype)`` from the header of the ``.npy`` file open at its start, the file left at
    the data; a ValueError for a version numpy's reader does not know. Read without numpy's loader, which would
    unpickle an object array or map past the end of a truncated file (the indexes check both themselves)."""
    from numpy.lib import format as npy

    version = npy.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = npy.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = npy.read_array_header_2_0(fh)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    return tuple(shape), bool(fortran), dtype
