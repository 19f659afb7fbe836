"""Reading bytes from paths, gzip files and stdin; writing files atomically."""

from __future__ import annotations

import contextlib
import gzip
import os
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from stagewise.errors import InputError

PathLike = str | os.PathLike[str]


def display_name(source: PathLike) -> str:
    """The name a message uses for a source: ``<stdin>`` for ``-``, else the path as given."""
    return "<stdin>" if str(source) == "-" else str(source)


def read_bytes(source: PathLike) -> bytes:
    """The whole content of a file, a ``.gz`` file (detected by its magic bytes) or stdin (``-``)."""
    if str(source) == "-":
        data = sys.stdin.buffer.read()
    else:
        path = Path(source)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise InputError(source, "no such file", hint="check the path") from None
        except IsADirectoryError:
            raise InputError(source, "is a directory, not a file") from None
        except PermissionError:
            raise InputError(source, "permission denied") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
            raise InputError(source, f"corrupt gzip data ({exc})") from None
    return data


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it over ``path`` only on success.

    A reader never sees a half-written file, and a failure leaves any earlier file untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else "") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` for writers that want a file name; renamed over it on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
