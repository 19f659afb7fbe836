"""How a BM25 index is kept: its arrays' layout on disk, writing it whole, and reading it back checked.

What is stored (one directory, ``meta.json`` beside numpy ``.npy`` arrays):

=================  =========================================================================================
``term_ptr``       int64 [V + 1]: term ``t``'s postings are ``term_ptr[t]:term_ptr[t + 1]``; df is its length
``post_docs``      int32 [P]: document index of each posting, ascending within a term
``post_tf``        uint16 (int32 when some tf >= 65,536) [P]: the term's count in that document
``doc_len``        int32 [N]: document length in terms, after analysis
``max_tf``         int32 [V], ``min_dl`` int32 [V]: per term, the largest tf and the shortest document that
                   contains it: inputs of a safe upper bound for dynamic pruning under any ``k1``, ``b``
``vocab_*``        the terms, sorted by UTF-8 bytes (offsets int64 [V + 1] + bytes)
``doc_ids_*``      the document ids in index order (offsets + bytes)
``meta.json``      format, variant and parameters, analyser settings, N, V, P, total length, avgdl, the
                   corpus checksum, and each array's dtype, length and CRC-32
=================  =========================================================================================

A saved index is untrusted input: :func:`read_index` checks every array's dtype, length and CRC-32 against the
metadata, and the offsets, ids and lengths against each other, and refuses a damaged index with an
:class:`~stagewise.errors.InputError` that says to rebuild it. :func:`save_index` replaces the folder in one
step (:mod:`stagewise.folders`). :class:`~stagewise.retrieval.BM25Index`'s ``save`` and ``load`` call them;
the in-memory build and the bounded-memory one (:mod:`stagewise.retrieval.ondisk`) share the layout here.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise._io import npy_header
from stagewise._json import deep_line
from stagewise.errors import InputError, StagewiseError
from stagewise.retrieval.analysis import Analyser
from stagewise.retrieval.variants import Scoring

if TYPE_CHECKING:
    from stagewise.retrieval.index import BM25Index

FORMAT = "stagewise-bm25-index"
FORMAT_VERSION = 2  # 2: per-array dtype, length and CRC-32 in meta.json (version 1 had none)
CHECKSUM_KIND = "stagewise-hash128-sum"
CHECKSUM_DEFINITION = (
    "sum modulo 2**128 over documents i (0-based, index order) of a 128-bit non-cryptographic hash of "
    "(i, UTF-8 doc id, UTF-8 text) (pre-tokenised input: the tokens joined with U+001F); it detects a changed "
    "or reordered corpus, and is additive, so an index grown by add() has the checksum of one built at once"
)
_ARRAYS = (
    "term_ptr",
    "post_docs",
    "post_tf",
    "doc_len",
    "max_tf",
    "min_dl",
    "vocab_offsets",
    "vocab_data",
    "doc_ids_offsets",
    "doc_ids_data",
)
# The dtype each array must have on disk ("tf" is post_tf's own, uint16 or int32, named in the metadata), and
# its length, in terms of N documents, V terms and P postings ("data": the last value of its offsets).
_LAYOUT = {
    "term_ptr": ("<i8", "V+1"),
    "post_docs": ("<i4", "P"),
    "post_tf": ("tf", "P"),
    "doc_len": ("<i4", "N"),
    "max_tf": ("<i4", "V"),
    "min_dl": ("<i4", "V"),
    "vocab_offsets": ("<i8", "V+1"),
    "vocab_data": ("|u1", "data"),
    "doc_ids_offsets": ("<i8", "N+1"),
    "doc_ids_data": ("|u1", "data"),
}
_TF_DTYPES = {"uint16": "<u2", "int32": "<i4"}
INDEX_FILES = frozenset([f"{name}.npy" for name in _ARRAYS] + ["meta.json"])


# ------------------------------------------------------------------------------------------- the arrays


def _strings_to_column(values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes as uint8) of ``values``: the data layer's string column, in the index's array types."""
    from stagewise.data.strings import StringColumn

    column = StringColumn.from_strings(values)
    return column.offsets, np.frombuffer(column.data, dtype=np.uint8)


def _column_values(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray | None = None) -> list[str]:
    raw = data.tobytes() if rows is None or len(rows) > 4096 else None
    if rows is None:
        rows = np.arange(len(offsets) - 1)
    starts, ends = offsets[rows].tolist(), offsets[np.asarray(rows) + 1].tolist()
    if raw is None:
        return [data[s:e].tobytes().decode("utf-8") for s, e in zip(starts, ends, strict=True)]
    return [raw[s:e].decode("utf-8") for s, e in zip(starts, ends, strict=True)]


def _take_column(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from stagewise.data.strings import StringColumn

    taken = StringColumn(np.ascontiguousarray(offsets, dtype=np.int64), np.ascontiguousarray(data)).take(rows)
    return np.asarray(taken.offsets, dtype=np.int64), np.frombuffer(taken.data, dtype=np.uint8)


def _narrow_tf(tf: np.ndarray) -> np.ndarray:
    if len(tf) == 0 or int(tf.max()) < 65536:
        return tf.astype(np.uint16, copy=False)
    return tf.astype(np.int32, copy=False)


# ------------------------------------------------------------------------------------------------ checks


CRC_BLOCK = 1 << 22  # bytes: one CRC-32 per 4 MiB block, so that blocks are checked in parallel


def _blocks(array: np.ndarray) -> list[memoryview]:
    raw = memoryview(np.ascontiguousarray(array).view(np.uint8))
    return [raw[at : at + CRC_BLOCK] for at in range(0, len(raw), CRC_BLOCK)]


def _crc(block: memoryview) -> str:
    return f"{zlib.crc32(block) & 0xFFFFFFFF:08x}"


def _crc32(array: np.ndarray) -> list[str]:
    """The CRC-32 of each 4 MiB block of the array's bytes (none for an empty array)."""
    return [_crc(block) for block in _blocks(array)]


def _file_blocks(array: np.ndarray) -> list[tuple[str, int, int]] | None:
    """(file, offset, size) of each 4 MiB block of a memory-mapped array's bytes; None for an array in memory."""
    if not isinstance(array, np.memmap) or array.filename is None:
        return None
    return [
        (array.filename, array.offset + at, min(CRC_BLOCK, array.nbytes - at))
        for at in range(0, array.nbytes, CRC_BLOCK)
    ]


def _crc_of(job: memoryview | tuple[str, int, int]) -> str:
    if isinstance(job, memoryview):
        return _crc(job)
    # a mapped array's block is read from its file, not through the map: the check then leaves no page of
    # the index in the process's resident set (a Dask worker's memory limit counts them)
    path, offset, size = job
    with open(path, "rb") as fh:
        return _crc(memoryview(os.pread(fh.fileno(), size, offset)))


def _release(array: np.ndarray) -> None:
    """Drop a mapped array's pages from this process's resident set (they stay in the page cache, and are
    mapped again on the next access)."""
    mapped = getattr(array, "_mmap", None)
    if mapped is not None and hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            mapped.madvise(mmap.MADV_DONTNEED)


def _verify_crcs(arrays: Mapping[str, np.ndarray], expected: Mapping[str, Any], folder: Path) -> None:
    """Every block of every array against its CRC-32, in threads (zlib releases the GIL): reading the bytes
    is the whole cost of opening an index, and it parallelises."""
    per_array: dict[str, list] = {name: _file_blocks(array) or _blocks(array) for name, array in arrays.items()}
    jobs = [block for blocks in per_array.values() for block in blocks]
    workers = min(8, os.cpu_count() or 1, len(jobs))
    if workers > 1 and sum(len(b) if isinstance(b, memoryview) else b[2] for b in jobs) > 2 * CRC_BLOCK:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(_crc_of, jobs))
    else:
        found = [_crc_of(block) for block in jobs]
    position = 0
    for name, blocks in per_array.items():
        if found[position : position + len(blocks)] != expected[name].get("crc32"):
            raise _Damaged(
                "its CRC-32 differs from the one written at build time (changed or corrupted)", folder / f"{name}.npy"
            )
        position += len(blocks)


def _max_doc(post_docs: np.ndarray) -> int:
    """The largest document id (as unsigned, so a negative one is out of range too), read in chunks whose
    pages are released after each: checking a mapped index does not make all of it resident."""
    top = 0
    view = post_docs.view(np.uint32)
    step = 1 << 24
    for at in range(0, len(view), step):
        top = max(top, int(view[at : at + step].max()))
        _release(post_docs)
    return top


class _Damaged(Exception):
    """One check of a saved index failed (turned into an InputError naming the index and the file)."""


def _read_npy(path: Path, dtype: np.dtype, length: int, mmap: bool) -> np.ndarray:
    """A 1-D ``.npy`` array of exactly ``dtype`` and ``length``, checked against the file's header and size
    before any byte is mapped (numpy would map past the end of a truncated file, or read a pickle)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            shape, _, found = npy_header(fh)
            offset = fh.tell()
            if found != dtype:
                raise _Damaged(f"dtype {found.str}, expected {dtype.str}")
            if tuple(shape) != (length,):
                raise _Damaged(f"shape {tuple(shape)}, expected ({length},)")
            if size != offset + length * dtype.itemsize:
                raise _Damaged(f"{size} bytes, expected {offset + length * dtype.itemsize} (truncated or padded)")
            if length == 0:
                return np.zeros(0, dtype=dtype)
            if not mmap:
                return np.fromfile(fh, dtype=dtype, count=length)
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(length,))
    except _Damaged:
        raise
    except (OSError, ValueError, EOFError, SyntaxError, TypeError) as exc:  # what numpy's header parser raises
        detail = str(exc) if len(str(exc)) <= 80 else f"{str(exc)[:77]}..."
        raise _Damaged(f"not a readable .npy file ({detail})") from None


def _check_offsets(offsets: np.ndarray, end: int, what: str) -> None:
    if offsets[0] != 0 or offsets[-1] != end:
        raise _Damaged(f"{what} run from {int(offsets[0])} to {int(offsets[-1])}, expected 0 to {end}")
    if len(offsets) > 1 and not bool(np.all(offsets[1:] >= offsets[:-1])):
        raise _Damaged(f"{what} decrease at position {int(np.argmax(offsets[1:] < offsets[:-1])) + 1}")


def _meta_count(meta: dict, key: str) -> int:
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value >= 2**62:
        raise _Damaged(f"{key!r} is {value!r}, expected a count")
    return value


def foreign_meta(folder: Path) -> str | None:
    """``meta.json`` when the one in ``folder`` is valid JSON but not an index's (another tool's file); an
    unreadable one is taken for a damaged index, which a rebuild may replace."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return None if isinstance(meta, dict) and meta.get("format") == FORMAT else "meta.json"


def index_metadata(
    *,
    scoring: Scoring,
    analyser: Analyser | None,
    n_docs: int,
    n_terms: int,
    n_postings: int,
    total_length: int,
    tf_dtype: str,
    checksum: int,
) -> dict[str, Any]:
    """``meta.json``'s content, less the arrays' descriptions (shared by the in-memory and on-disk builds)."""
    from stagewise._version import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_by": f"stagewise {__version__}",
        "scoring": {"variant": scoring.variant, **scoring.params()},
        "scoring_name": str(scoring),
        "idf": scoring.spec.formula,
        "analyser": None if analyser is None else analyser.settings(),
        "pretokenised": analyser is None,
        "documents": n_docs,
        "terms": n_terms,
        "postings": n_postings,
        "total_length": total_length,
        "avgdl": total_length / n_docs if n_docs else 0.0,
        "tf_dtype": tf_dtype,
        "checksum": f"{CHECKSUM_KIND}:{checksum:032x}",
        "checksum_definition": CHECKSUM_DEFINITION,
    }


# ------------------------------------------------------------------------------------------------ helpers


# ------------------------------------------------------------------------------------------ write, read


def save_index(index: BM25Index, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """:meth:`BM25Index.save`: write ``index`` to folder ``path``, replacing an index there in one step (a
    crash at any moment leaves the old index or the new one, whole). A non-empty folder that is not an index is
    refused unless ``force``; the current folder (or one that holds it) always is. Folders and files get the
    umask."""
    from stagewise import folders

    target = Path(path)
    folders.check_target(target, owned=INDEX_FILES, force=force, parents=True, foreign_file=foreign_meta)
    target.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: _array_to_save(index, name) for name in _ARRAYS}
    meta = index.metadata()
    meta["arrays"] = {
        name: {"dtype": array.dtype.str, "length": len(array), "crc32": _crc32(array), "crc32_block": CRC_BLOCK}
        for name, array in arrays.items()
    }

    def write(folder: Path) -> None:
        for name, array in arrays.items():
            np.save(folder / f"{name}.npy", array, allow_pickle=False)
        # written last: a folder with meta.json has all its arrays
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    folders.replace_folder(target, write, owned=INDEX_FILES)
    index.path = target
    return target


def _array_to_save(index: BM25Index, name: str) -> np.ndarray:
    kind = _LAYOUT[name][0]
    dtype = _TF_DTYPES[str(index.post_tf.dtype)] if kind == "tf" else kind
    return np.ascontiguousarray(getattr(index, name), dtype=dtype)


def read_index(path: str | os.PathLike[str], *, mmap: bool = True) -> tuple[dict[str, np.ndarray], Any, Any, int]:
    """What :meth:`BM25Index.load` opens: (arrays, analyser, scoring, checksum) of the index in folder ``path``;
    arrays are memory-mapped (read-only) unless ``mmap=False``.

    The index is checked before use: each array's dtype, length and CRC-32 against the metadata, offsets
    ascending and ending at their data, document ids in range, lengths adding up to the metadata's total.
    A failed check raises :class:`~stagewise.errors.InputError` naming the file, with a hint to rebuild.
    """
    folder = Path(path)
    rebuild = f"rebuild it: stagewise index CORPUS -o {folder}"
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        if not folder.exists():
            from stagewise.folders import previous_of

            left = previous_of(folder)
            hint = f"an interrupted build left the previous index in {left[-1]}" if left else "check the path"
            raise InputError(folder, "no such index folder", hint=hint)
        raise InputError(
            folder, "is not a stagewise BM25 index (no meta.json)", hint="build one with `stagewise index`"
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        line = getattr(exc, "lineno", None)
        raise InputError(meta_path, f"unreadable index metadata ({exc})", line=line, hint=rebuild) from None
    except RecursionError:  # nested deeper than the parser goes: no index writes that
        raise InputError(
            meta_path,
            "unreadable index metadata (JSON nested too deeply to read)",
            line=deep_line(meta_path.read_text(encoding="utf-8")),
            hint=rebuild,
        ) from None
    if not isinstance(meta, dict):
        raise InputError(meta_path, "is not stagewise BM25 index metadata (not a JSON object)", hint=rebuild)
    if meta.get("format") == "stagewise-dense":  # the two kinds given the wrong way round: no rebuild over it
        raise InputError(
            folder, "is a dense index (from stagewise encode), not a BM25 index", hint="give it where dense goes"
        )
    if meta.get("format") != FORMAT:
        raise InputError(meta_path, f"index format {meta.get('format')!r}", expected=repr(FORMAT), hint=rebuild)
    if meta.get("format_version") != FORMAT_VERSION:
        version = meta.get("format_version")
        problem = (
            "index format version 1 has no checksums of its arrays, so it cannot be checked"
            if version == 1
            else f"index format version {version!r}"
        )
        raise InputError(meta_path, problem, expected=f"version {FORMAT_VERSION}", hint=rebuild)
    source = meta_path
    try:
        arrays = _load_arrays(folder, meta, mmap)
        scoring_meta = dict(meta["scoring"])
        scoring = Scoring.of(scoring_meta.pop("variant"), **scoring_meta)
        analyser = None if meta.get("analyser") is None else Analyser.from_settings(meta["analyser"])
        kind, _, digits = str(meta["checksum"]).partition(":")
        if kind != CHECKSUM_KIND:
            raise _Damaged(f"checksum kind {kind!r}, expected {CHECKSUM_KIND!r}")
        checksum = int(digits, 16)
    except _Damaged as exc:
        source = exc.args[1] if len(exc.args) > 1 else meta_path
        raise InputError(source, f"damaged index: {exc.args[0]}", hint=rebuild) from None
    except (KeyError, TypeError, ValueError, AttributeError, StagewiseError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(meta_path, f"damaged index metadata ({detail})", hint=rebuild) from None
    return arrays, analyser, scoring, checksum


def _load_arrays(folder: Path, meta: dict, mmap: bool) -> dict[str, np.ndarray]:
    """Every array, each checked against the metadata and the others (raises ``_Damaged(problem, file)``)."""
    meta_path = folder / "meta.json"
    try:
        counts = {k: _meta_count(meta, key) for k, key in (("N", "documents"), ("V", "terms"), ("P", "postings"))}
        total_length = _meta_count(meta, "total_length")
        tf_dtype = _TF_DTYPES.get(meta.get("tf_dtype"))
        if tf_dtype is None:
            raise _Damaged(f"'tf_dtype' is {meta.get('tf_dtype')!r}, expected uint16 or int32")
        listed = meta.get("arrays")
        if not isinstance(listed, dict) or any(not isinstance(listed.get(n), dict) for n in _ARRAYS):
            raise _Damaged("'arrays' does not describe every array")
    except _Damaged as exc:
        raise _Damaged(exc.args[0], meta_path) from None
    arrays: dict[str, np.ndarray] = {}
    for name in _ARRAYS:
        file = folder / f"{name}.npy"
        try:
            kind, size = _LAYOUT[name]
            dtype = np.dtype(tf_dtype if kind == "tf" else kind)
            if size == "data":
                length = int(arrays[name.replace("_data", "_offsets")][-1])
            elif size.endswith("+1"):
                length = counts[size[0]] + 1
            else:
                length = counts[size]
            entry = listed[name]
            if entry.get("crc32_block") != CRC_BLOCK:
                raise _Damaged(f"CRC-32 blocks of {entry.get('crc32_block')!r} bytes, expected {CRC_BLOCK}")
            if entry.get("dtype") != dtype.str or entry.get("length") != length:
                raise _Damaged(
                    f"the metadata lists {entry.get('dtype')!r} x {entry.get('length')!r}, "
                    f"expected {dtype.str!r} x {length}"
                )
            if not file.is_file():
                raise _Damaged("the file is missing")
            array = _read_npy(file, dtype, length, mmap)
            if name == "term_ptr":
                _check_offsets(array, counts["P"], "posting offsets")
            elif name.endswith("_offsets"):
                # the data's length is the last offset, so this bounds every string in the data
                _check_offsets(array, int(array[-1]), "string offsets")
            elif name == "post_docs" and len(array) and _max_doc(array) >= counts["N"]:
                raise _Damaged(f"a document id is outside 0..{counts['N'] - 1}")
            elif name == "doc_len":
                if len(array) and int(array.min()) < 0:
                    raise _Damaged("a negative document length")
                if int(array.sum(dtype=np.int64)) != total_length:
                    raise _Damaged(f"lengths add up to {int(array.sum(dtype=np.int64))}, not {total_length}")
            elif name in ("max_tf", "min_dl") and len(array) and int(array.min()) < 0:
                raise _Damaged("a negative value")
            elif name.endswith("_data"):
                try:
                    array.tobytes().decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _Damaged(f"invalid UTF-8 at byte {exc.start}") from None
            arrays[name] = array
        except _Damaged as exc:
            raise _Damaged(exc.args[0], file) from None
    _verify_crcs(arrays, listed, folder)
    return arrays
