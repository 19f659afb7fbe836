"""What a dense index records about its own files, and the checks that hold a saved index to it on open.

A saved dense index is untrusted input, as a BM25 index is. ``meta.json`` (format version 2) holds, beside
the model's description, an ``arrays`` manifest written at save time:

- ``embeddings``: dtype, shape, the CRC-32 of each block of ``crc32_rows`` rows of the vectors' bytes (as
  stored, C order, little-endian), and the smallest and largest row norm;
- ``doc_ids``: the file's size in bytes and its CRC-32.

On open every file must be a regular file (a FIFO would block the read forever, a device never end) of the
size the manifest gives, the ``.npy`` header must say exactly the dtype and shape of the metadata, every row
must be finite with a squared norm that float32 can hold (a row of 1e38 overflows every score) and, when the
model normalises, unit length (a zero row has no cosine), the ids must be distinct strings, one a row, and
every checksum must match. Reading the vectors for the checks goes through ``os.pread``, block by block in
threads (zlib and numpy release the GIL), so it leaves no page of the index in the process's resident set.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stagewise._io import npy_header

CRC_BLOCK_BYTES = 1 << 22  # about 4 MiB of whole rows a block: blocks are checked in parallel
MAX_META_BYTES = 1 << 24  # meta.json is a few KB; its CRC list grows by 11 bytes per 4 MiB of vectors
MAX_ID_BYTES = 1 << 14  # per document on average: a doc_ids.json larger than that is not an id list
NORM_TOLERANCE = 1e-2  # unit vectors stored in float16 are within 5e-4 of norm 1
# A squared norm float32 cannot hold: the row's score against a query like it overflows.
F32_MAX = float(np.finfo(np.float32).max)


class Damaged(Exception):
    """One check failed: ``Damaged(problem, file)`` (the caller names the index and adds the rebuild hint)."""


def regular_file(path: Path) -> int:
    """The size of ``path``, which must be a regular file (a symlink to one is fine)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise Damaged("the file is missing", path) from None
    except OSError as exc:
        raise Damaged(f"cannot be read ({exc.strerror})", path) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device"
        raise Damaged(f"is {kind}, not a regular file", path)
    return info.st_size


def read_bounded(path: Path, limit: int, *, size: int | None = None) -> bytes:
    """The bytes of regular file ``path``, refused unread when larger than ``limit`` (or not ``size``)."""
    found = regular_file(path)
    if size is not None and found != size:
        raise Damaged(f"{found} bytes, but the index recorded {size} (changed or truncated)", path)
    if found > limit:
        raise Damaged(f"{found} bytes, more than such a file can hold here ({limit})", path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise Damaged(f"cannot be read ({exc.strerror})", path) from None
    if len(data) > limit:  # grew between stat and read
        raise Damaged(f"more than {limit} bytes", path)
    return data


def parse_json(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Damaged(f"invalid UTF-8 at byte {exc.start}", path) from None
    except RecursionError:
        raise Damaged("JSON nested too deeply", path) from None
    except ValueError as exc:
        raise Damaged(f"not valid JSON ({exc})", path) from None


def crc(data: bytes | memoryview) -> str:
    return f"{zlib.crc32(data) & 0xFFFFFFFF:08x}"


# ------------------------------------------------------------------------------------------- vectors


def rows_per_block(dimension: int, itemsize: int) -> int:
    return max(1, CRC_BLOCK_BYTES // max(1, dimension * itemsize))


def _scan_block(raw: bytes | memoryview, dtype: np.dtype, dimension: int, normalized: bool) -> tuple:
    """``(crc, smallest squared norm, largest, first bad row in the block or -1, why)`` of one block."""
    block = np.frombuffer(raw, dtype=dtype).reshape(-1, dimension).astype(np.float32, copy=False)
    # a square is never negative, so a NaN or infinite element makes its row's sum NaN or infinite
    with np.errstate(over="ignore", invalid="ignore"):
        squares = np.einsum("ij,ij->i", block, block)
    bad = ~np.isfinite(squares)
    if normalized:
        bad |= (squares < (1 - NORM_TOLERANCE) ** 2) | (squares > (1 + NORM_TOLERANCE) ** 2)
    first, why = -1, ""
    if bad.any():
        first = int(np.argmax(bad))
        if not np.isfinite(block[first]).all():
            why = "is not finite (NaN or infinity)"
        elif not np.isfinite(squares[first]):
            why = "has a norm too large for float32 scores"
        else:
            why = f"has norm {float(np.sqrt(squares[first])):.6g}, but the model's vectors are unit length (cosine)"
    good = squares[~bad] if first >= 0 else squares
    low = float(good.min()) if len(good) else 0.0
    high = float(good.max()) if len(good) else 0.0
    return crc(raw), low, high, first, why


def _file_block(path: str, offset: int, size: int) -> Callable[[], bytes]:
    def read() -> bytes:
        # read from the file, not through a memory map: the check leaves no page of the index resident
        with open(path, "rb") as fh:
            data = os.pread(fh.fileno(), size, offset)
        if len(data) != size:
            raise Damaged(f"ended early ({len(data)} of {size} bytes at offset {offset})", Path(path))
        return data

    return read


def scan_vectors(
    source: np.ndarray | tuple[Path, int],
    shape: tuple[int, int],
    dtype: np.dtype,
    *,
    normalized: bool,
    describe_row: Callable[[int], str] = lambda row: f"row {row}",
) -> dict[str, Any]:
    """The manifest entry of the vectors (``source``: an array in memory, or a ``.npy`` file and the offset
    of its data); raises ``Damaged(problem)`` for the first row that is not finite, overflows, or is not
    unit length under a normalising model."""
    n, d = shape
    step = rows_per_block(d, dtype.itemsize)
    row_bytes = d * dtype.itemsize
    jobs: list[Callable[[], bytes | memoryview]] = []
    if isinstance(source, tuple):
        path, offset = source
        for r0 in range(0, n, step):
            jobs.append(_file_block(str(path), offset + r0 * row_bytes, (min(n, r0 + step) - r0) * row_bytes))
    else:
        raw = memoryview(np.ascontiguousarray(source, dtype=dtype).view(np.uint8)).cast("B")
        for r0 in range(0, n, step):
            jobs.append((lambda a, b: lambda: raw[a:b])(r0 * row_bytes, min(n, r0 + step) * row_bytes))

    def run(job: Callable[[], bytes | memoryview]) -> tuple:
        return _scan_block(job(), dtype, d, normalized)

    workers = min(8, os.cpu_count() or 1, len(jobs))
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(run, jobs))
    else:
        found = [run(job) for job in jobs]
    for block, (_, _, _, first, why) in enumerate(found):
        if first >= 0:
            raise Damaged(f"{describe_row(block * step + first)} {why}")
    lows = [f[1] for f in found]
    highs = [f[2] for f in found]
    return {
        "file": "embeddings.npy",
        "dtype": dtype.str,
        "shape": [n, d],
        "crc32_rows": step,
        "crc32": [f[0] for f in found],
        "norm_min": float(np.sqrt(min(lows))) if lows else 0.0,
        "norm_max": float(np.sqrt(max(highs))) if highs else 0.0,
    }


def read_npy_header(path: Path) -> tuple[np.dtype, tuple[int, ...], bool, int, int]:
    """``(dtype, shape, fortran_order, data offset, file size)`` of a ``.npy`` file, read without numpy's
    loader (which would unpickle an object array, or map past the end of a truncated file)."""
    size = regular_file(path)
    if size == 0:
        raise Damaged("an empty file, not a .npy array", path)
    try:
        with open(path, "rb") as fh:
            shape, fortran, dtype = npy_header(fh)
            return dtype, shape, fortran, fh.tell(), size
    except (OSError, ValueError, EOFError, SyntaxError, TypeError) as exc:  # what numpy's header parser raises
        detail = str(exc) if len(str(exc)) <= 80 else f"{str(exc)[:77]}..."
        raise Damaged(f"not a readable .npy file ({detail or 'empty'})", path) from None


def check_vectors_header(path: Path, dtype: np.dtype, shape: tuple[int, int]) -> int:
    """The data offset of ``embeddings.npy``, whose header must give exactly ``dtype`` and ``shape``."""
    found, found_shape, fortran, offset, size = read_npy_header(path)
    if found != dtype:
        raise Damaged(f"dtype {found.str if found.fields is None else 'structured ' + str(found)}, "
                      f"but meta.json says {dtype.name} ({dtype.str})", path)  # fmt: skip
    if found_shape != shape:
        raise Damaged(f"shape {found_shape}, but meta.json says {shape}", path)
    if fortran and shape[0] > 1 and shape[1] > 1:
        raise Damaged("Fortran (column-major) order; the index stores rows", path)
    expected = offset + shape[0] * shape[1] * dtype.itemsize
    if size != expected:
        raise Damaged(f"{size} bytes, expected {expected} (truncated or padded)", path)
    return offset


def check_norms(record: dict[str, Any], found: dict[str, Any], path: Path) -> None:
    """The norms found within those recorded at build time (float rounding aside)."""
    low, high = record.get("norm_min"), record.get("norm_max")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
        raise Damaged("the manifest's norm_min and norm_max are not numbers", path)
    slack = 1e-3 * max(1.0, abs(float(high)))
    if found["norm_min"] < float(low) - slack or found["norm_max"] > float(high) + slack:
        raise Damaged(
            f"row norms run from {found['norm_min']:.6g} to {found['norm_max']:.6g}, but the index was built with "
            f"{float(low):.6g} to {float(high):.6g}",
            path,
        )


# ------------------------------------------------------------------------------------------- doc ids


def doc_ids_record(data: bytes) -> dict[str, Any]:
    return {"file": "doc_ids.json", "bytes": len(data), "crc32": crc(data)}


def parse_doc_ids(data: bytes, path: Path, count: int) -> list[str]:
    """The ids of ``doc_ids.json``: a JSON list of ``count`` distinct strings, each valid UTF-8."""
    ids = parse_json(data, path)
    if not isinstance(ids, list):
        raise Damaged(f"a JSON {json_kind(ids)}, expected a list of document ids", path)
    for position, value in enumerate(ids):
        if not isinstance(value, str):
            raise Damaged(f"id {position} is a JSON {json_kind(value)} ({_short(value)}), expected a string", path)
    if len(ids) != count:
        raise Damaged(f"{len(ids)} ids, but meta.json says {count} documents", path)
    try:
        "".join(ids).encode("utf-8")
    except UnicodeEncodeError:
        bad = next(i for i, v in enumerate(ids) if not _encodes(v))
        raise Damaged(f"id {bad} holds a lone surrogate (not valid Unicode)", path) from None
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for position, value in enumerate(ids):
            if value in seen:
                raise Damaged(f"id {_short(value)} appears twice (second at position {position})", path)
            seen.add(value)
    return ids


def json_kind(value: Any) -> str:
    """What JSON calls the kind of a parsed value."""
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def _encodes(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


# ------------------------------------------------------------------------------------------- metadata


def count_field(meta: dict[str, Any], key: str, low: int, high: int) -> int:
    value = meta.get(key)
    if key not in meta:
        raise Damaged(f"no {key!r} field")
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise Damaged(f"{key!r} is {_short(value)}, expected a whole number from {low} to {high}")
    return value


def typed_field(meta: dict[str, Any], key: str, types: tuple[type, ...], what: str) -> Any:
    if key not in meta:
        raise Damaged(f"no {key!r} field")
    value = meta[key]
    if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
        raise Damaged(f"{key!r} is {_short(value)}, expected {what}")
    return value


def entry(meta: dict[str, Any], name: str, keys: Sequence[str]) -> dict[str, Any]:
    arrays = meta.get("arrays")
    if not isinstance(arrays, dict) or not isinstance(arrays.get(name), dict):
        raise Damaged(f"the 'arrays' manifest does not describe {name}")
    found = arrays[name]
    missing = [k for k in keys if k not in found]
    if missing:
        raise Damaged(f"the manifest of {name} has no {', '.join(map(repr, missing))}")
    return found
