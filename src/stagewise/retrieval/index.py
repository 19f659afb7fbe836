"""A BM25 index: raw term statistics on disk, memory-mapped, scored at search time by any variant.

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

A saved index is untrusted input: :meth:`BM25Index.load` checks every array's dtype, length and CRC-32
against the metadata, and the offsets, ids and lengths against each other, and refuses a damaged index with
an :class:`~stagewise.errors.InputError` that says to rebuild it; the compiled search checks the term and
document ids it follows too, so a damaged index is an error, never a crash. Writing replaces the folder in
one step (:mod:`stagewise.folders`).

Because only tf, lengths and df are stored, ``k1``, ``b``, ``delta``, ``epsilon`` (and the variant) change at
search time with no re-indexing. Adding documents merges their postings into the arrays, giving exactly the
arrays a rebuild over all documents would give.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stagewise._io import npy_header
from stagewise._json import deep_line
from stagewise.errors import ConventionError, InputError, StagewiseError, parameter_error
from stagewise.retrieval import _kernels
from stagewise.retrieval.analysis import Analysed, Analyser, analysed_from_tokens
from stagewise.retrieval.variants import DEFAULT_VARIANT, Scoring

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
UB_SLACK = 1e-9  # relative margin on pruning upper bounds, far above the rounding error of a sum of terms

Progress = Callable[[int, int], None]


def _checksum_terms(ids: Sequence[str], texts: Sequence[str], start: int) -> int:
    try:
        return _kernels.checksum(ids, texts, start)
    except TypeError as exc:
        raise StagewiseError(f"documents: {exc}; documents must be strings") from None
    except UnicodeError as exc:  # a lone surrogate, which UTF-8 cannot encode
        raise StagewiseError(f"documents: text or id that is not valid Unicode ({exc.reason})") from None


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


@dataclass(frozen=True)
class TopK:
    """Raw search results: query ``i``'s results are rows ``offsets[i]:offsets[i + 1]``, best first."""

    query_ids: list[str]
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    scoring: Scoring
    empty_queries: int
    """Queries with no term in the index (they have no results)."""

    def to_run(self, index: BM25Index, name: str | None = None):
        """The results as a :class:`stagewise.data.run.Run` (document ids from ``index``)."""
        from stagewise.data.columns import pair_keys
        from stagewise.data.run import Run
        from stagewise.data.strings import StringColumn

        if len(self.docs) == 0:
            raise StagewiseError(
                f"no query matched any document ({len(self.query_ids)} queries, "
                f"{self.empty_queries} with no term in the index)"
            )
        counts = np.diff(self.offsets)
        with_results = np.flatnonzero(counts)
        first_seen = [self.query_ids[i] for i in with_results.tolist()]
        codes = np.repeat(np.arange(len(with_results), dtype=np.int32), counts[with_results])
        q_off, q_data = _strings_to_column(first_seen)
        query_per_row = StringColumn(q_off, q_data.tobytes()).take(codes.astype(np.int64))
        d_off, d_data = _take_column(index.doc_ids_offsets, index.doc_ids_data, self.docs.astype(np.int64))
        docs = StringColumn(d_off, d_data.tobytes())
        keys = pair_keys(query_per_row, docs)
        return Run.from_columns(
            first_seen,
            codes,
            docs,
            np.ascontiguousarray(self.scores, dtype=np.float64),
            None,
            keys,
            name=name or f"bm25-{self.scoring}",
        )


class BM25Index:
    """BM25 over an analysed corpus. Build with :meth:`build` (or :meth:`from_tokens`), grow with :meth:`add`,
    keep with :meth:`save` / :meth:`load`, query with :meth:`search`.

    Examples
    --------
    >>> index = BM25Index.build(["wing lift in a slipstream", "lift of a flat plate", "heat transfer"],
    ...                         ids=["d1", "d2", "d3"])
    >>> run = index.search({"q1": "lift of wings"}, k=10)
    >>> run.to_polars()["doc_id"].to_list()
    ['d1', 'd2']
    >>> index.search({"q1": "lift of wings"}, k=10, k1=0.9, b=0.4).name   # no re-indexing
    'bm25-lucene(k1=0.9,b=0.4)'
    """

    def __init__(
        self,
        arrays: Mapping[str, np.ndarray],
        *,
        analyser: Analyser | None,
        scoring: Scoring,
        checksum: int,
        path: Path | None = None,
    ) -> None:
        for name in _ARRAYS:
            setattr(self, name, arrays[name])
        self.analyser = analyser
        self.scoring = scoring
        self.checksum = checksum
        self.path = path
        self.n_docs = len(self.doc_len)
        self.n_terms = len(self.term_ptr) - 1
        self.total_length = int(self.doc_len.sum(dtype=np.int64))
        self.avgdl = self.total_length / self.n_docs if self.n_docs else 0.0
        self._cache: dict[tuple, np.ndarray] = {}

    # ----------------------------------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        documents: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        analyser: Analyser | None = None,
        variant: str = DEFAULT_VARIANT,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        progress: Progress | None = None,
    ) -> BM25Index:
        """Index ``documents``: a sequence of texts (with ``ids``, default ``"0"``, ``"1"``, ...), a mapping of
        id to text, or an object with ``ids`` and ``texts`` (a :class:`stagewise.data.collections.Documents`).

        The variant and parameters given become the index's defaults (stored in its metadata); any of them can
        be overridden at search time.
        """
        scoring = Scoring.of(variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
        analyser = analyser or Analyser()
        ids, texts = _documents(documents, ids)
        _check_ids(ids, "documents")
        analysed = analyser.analyse_many(texts, source="documents", progress=progress, keep_dropped=True)
        index = cls._from_analysed(analysed, ids, analyser=analyser, scoring=scoring)
        index.checksum = _checksum_terms(ids, texts, 0)
        return index

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[Sequence[str]],
        ids: Sequence[str] | None = None,
        *,
        variant: str = DEFAULT_VARIANT,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> BM25Index:
        """Index documents that are already lists of terms (used as given; queries must then be term lists)."""
        scoring = Scoring.of(variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
        ids = [str(i) for i in range(len(tokens))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(tokens):
            raise InputError("documents", f"{len(tokens)} documents but {len(ids)} ids")
        _check_ids(ids, "documents")
        index = cls._from_analysed(analysed_from_tokens(tokens), ids, analyser=None, scoring=scoring)
        index.checksum = _checksum_terms(ids, ["\x1f".join(t) for t in tokens], 0)
        return index

    @classmethod
    def _from_analysed(
        cls, analysed: Analysed, ids: list[str], *, analyser: Analyser | None, scoring: Scoring
    ) -> BM25Index:
        postings = _kernels.build_postings(analysed.offsets, analysed.term_ids, len(analysed.terms))
        vocab_offsets, vocab_data = _strings_to_column(analysed.terms)
        doc_offsets, doc_data = _strings_to_column(ids)
        arrays = {
            "term_ptr": postings.term_ptr,
            "post_docs": postings.docs,
            "post_tf": _narrow_tf(postings.tf),
            "doc_len": postings.doc_len,
            "max_tf": postings.max_tf,
            "min_dl": postings.min_dl,
            "vocab_offsets": vocab_offsets,
            "vocab_data": vocab_data,
            "doc_ids_offsets": doc_offsets,
            "doc_ids_data": doc_data,
        }
        return cls(arrays, analyser=analyser, scoring=scoring, checksum=0)

    def add(
        self,
        documents: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        progress: Progress | None = None,
    ) -> BM25Index:
        """A new index with ``documents`` appended (after the current ones). Only the new documents are
        analysed; their postings are merged into the existing arrays, which come out exactly as a rebuild over
        all the documents would make them. Call :meth:`save` to keep it."""
        if self.analyser is None:
            raise StagewiseError("this index was built from tokens; add tokens with add_tokens()")
        new_ids, texts = _documents(documents, ids, start=self.n_docs)
        self._check_new_ids(new_ids)
        analysed = self.analyser.analyse_many(texts, source="documents", progress=progress, keep_dropped=True)
        merged = self._merged(analysed, new_ids)
        merged.checksum = (self.checksum + _checksum_terms(new_ids, texts, self.n_docs)) % (1 << 128)
        return merged

    def add_tokens(self, tokens: Sequence[Sequence[str]], ids: Sequence[str] | None = None) -> BM25Index:
        """:meth:`add` for an index built with :meth:`from_tokens`."""
        new_ids = [str(self.n_docs + i) for i in range(len(tokens))] if ids is None else [str(i) for i in ids]
        self._check_new_ids(new_ids)
        merged = self._merged(analysed_from_tokens(tokens), new_ids)
        joined = ["\x1f".join(t) for t in tokens]
        merged.checksum = (self.checksum + _checksum_terms(new_ids, joined, self.n_docs)) % (1 << 128)
        return merged

    def _check_new_ids(self, new_ids: list[str]) -> None:
        _check_ids(new_ids, "documents")
        existing = set(self.doc_ids())
        clash = next((i for i in new_ids if i in existing), None)
        if clash is not None:
            raise InputError("documents", f"document id {clash!r} is already in the index", expected="new ids")

    def _merged(self, analysed: Analysed, new_ids: list[str]) -> BM25Index:
        new = _kernels.build_postings(analysed.offsets, analysed.term_ids, len(analysed.terms))
        # Union of the two sorted vocabularies: where each new term sits in the old one.
        found = _kernels.find_terms(self.vocab_offsets, self.vocab_data, analysed.terms)
        absent = found < 0
        insert_at = np.where(absent, -found.astype(np.int64) - 1, found)
        n_old, n_added = self.n_terms, int(absent.sum())
        # old term i moves up by the number of absent new terms inserted at or before it
        old_map = np.arange(n_old, dtype=np.int64) + np.searchsorted(insert_at[absent], np.arange(n_old), "right")
        new_map = np.empty(len(analysed.terms), dtype=np.int64)
        new_map[~absent] = old_map[found[~absent]]
        new_map[absent] = insert_at[absent] + np.arange(n_added)
        n_union = n_old + n_added
        # vocabulary bytes in union order
        source_rows = np.empty(n_union, dtype=np.int64)
        source_rows[old_map] = np.arange(n_old)
        source_rows[new_map[absent]] = n_old + np.arange(n_added)
        added_off, added_data = _strings_to_column(
            [t for t, a in zip(analysed.terms, absent.tolist(), strict=True) if a]
        )
        both_off = np.concatenate([self.vocab_offsets, added_off[1:] + self.vocab_offsets[-1]])
        both_data = np.concatenate([np.asarray(self.vocab_data), added_data])
        vocab_offsets, vocab_data = _take_column(both_off, both_data, source_rows)
        # postings: each term's old postings, then its new ones (documents after the old ones)
        old_df, new_df = np.diff(self.term_ptr), np.diff(new.term_ptr)
        df = np.zeros(n_union, dtype=np.int64)
        df[old_map] += old_df
        df[new_map] += new_df
        ptr = np.zeros(n_union + 1, dtype=np.int64)
        np.cumsum(df, out=ptr[1:])
        old_dest = _scatter_positions(self.term_ptr, ptr[old_map])
        old_in_union = np.zeros(n_union, dtype=np.int64)
        old_in_union[old_map] = old_df
        new_dest = _scatter_positions(new.term_ptr, ptr[new_map] + old_in_union[new_map])
        n_post = int(ptr[-1])
        docs = np.empty(n_post, dtype=np.int32)
        docs[old_dest] = self.post_docs
        docs[new_dest] = new.docs + np.int32(self.n_docs)
        tf_dtype = np.result_type(self.post_tf.dtype, _narrow_tf(new.tf).dtype)
        tf = np.empty(n_post, dtype=tf_dtype)
        tf[old_dest] = self.post_tf
        tf[new_dest] = new.tf
        max_tf = np.zeros(n_union, dtype=np.int32)
        max_tf[old_map] = self.max_tf
        max_tf[new_map] = np.maximum(max_tf[new_map], new.max_tf)
        min_dl = np.full(n_union, np.iinfo(np.int32).max, dtype=np.int32)
        min_dl[old_map] = self.min_dl
        min_dl[new_map] = np.minimum(min_dl[new_map], new.min_dl)
        ids_off, ids_data = _strings_to_column(new_ids)
        arrays = {
            "term_ptr": ptr,
            "post_docs": docs,
            "post_tf": _narrow_tf(tf),
            "doc_len": np.concatenate([np.asarray(self.doc_len), new.doc_len]).astype(np.int32),
            "max_tf": max_tf,
            "min_dl": min_dl,
            "vocab_offsets": vocab_offsets,
            "vocab_data": vocab_data,
            "doc_ids_offsets": np.concatenate([self.doc_ids_offsets, ids_off[1:] + self.doc_ids_offsets[-1]]),
            "doc_ids_data": np.concatenate([np.asarray(self.doc_ids_data), ids_data]),
        }
        return BM25Index(arrays, analyser=self.analyser, scoring=self.scoring, checksum=self.checksum)

    # ------------------------------------------------------------------------------------------ storage

    def metadata(self) -> dict[str, Any]:
        return index_metadata(
            scoring=self.scoring,
            analyser=self.analyser,
            n_docs=self.n_docs,
            n_terms=self.n_terms,
            n_postings=int(self.term_ptr[-1]),
            total_length=self.total_length,
            tf_dtype=str(self.post_tf.dtype),
            checksum=self.checksum,
        )

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write the index to folder ``path``, replacing an index there in one step (a crash at any moment
        leaves the old index or the new one, whole). A non-empty folder that is not an index is refused unless
        ``force``; the current folder (or one that holds it) always is. Folders and files get the umask."""
        from stagewise import folders

        target = Path(path)
        folders.check_target(target, owned=INDEX_FILES, force=force, parents=True, foreign_file=foreign_meta)
        target.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: self._array_to_save(name) for name in _ARRAYS}
        meta = self.metadata()
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
        self.path = target
        return target

    def _array_to_save(self, name: str) -> np.ndarray:
        kind = _LAYOUT[name][0]
        dtype = _TF_DTYPES[str(self.post_tf.dtype)] if kind == "tf" else kind
        return np.ascontiguousarray(getattr(self, name), dtype=dtype)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True) -> BM25Index:
        """Open a saved index; arrays are memory-mapped (read-only) unless ``mmap=False``.

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
            arrays = cls._load_arrays(folder, meta, mmap)
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
        return cls(arrays, analyser=analyser, scoring=scoring, checksum=checksum, path=folder)

    @staticmethod
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

    # ---------------------------------------------------------------------------------------- inspection

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        analysis = "pre-tokenised" if self.analyser is None else self.analyser.describe()
        return (
            f"BM25Index({self.n_docs:,} documents, {self.n_terms:,} terms, {int(self.term_ptr[-1]):,} postings, "
            f"{self.scoring}; {analysis})"
        )

    @property
    def name(self) -> str:
        """The retriever's name, the default name of its runs: ``bm25-<variant>(<parameters>)``."""
        return f"bm25-{self.scoring}"

    def describe(self) -> dict[str, Any]:
        """What this retriever is (:class:`stagewise.protocols.Retriever`'s provenance): the scoring, the
        analyser, the sizes and the folder it was opened from."""
        return {
            "retriever": "bm25",
            "name": self.name,
            "scoring": str(self.scoring),
            "analyser": None if self.analyser is None else self.analyser.describe(),
            "documents": self.n_docs,
            "terms": self.n_terms,
            "postings": int(self.term_ptr[-1]),
            "path": None if self.path is None else str(self.path),
        }

    def doc_ids(self, rows: np.ndarray | None = None) -> list[str]:
        return _column_values(self.doc_ids_offsets, self.doc_ids_data, rows)

    def terms(self, rows: np.ndarray | None = None) -> list[str]:
        return _column_values(self.vocab_offsets, self.vocab_data, rows)

    def document_frequency(self, terms: Sequence[str]) -> np.ndarray:
        """df of each (already analysed) term; 0 when it is not in the index."""
        found = _kernels.find_terms(self.vocab_offsets, self.vocab_data, list(terms))
        df = np.diff(self.term_ptr)
        return np.where(found >= 0, df[np.maximum(found, 0)], 0)

    # ------------------------------------------------------------------------------------------- search

    @contextlib.contextmanager
    def _damage_is_input_error(self) -> Iterator[None]:
        """The search kernels' own bounds checks (an index changed in memory, or one that passed its checks
        on disk and was damaged after) as a user error that says to rebuild."""
        try:
            yield
        except ValueError as exc:
            if not str(exc).startswith("damaged index"):
                raise
            where = self.path if self.path is not None else "index"
            raise InputError(where, str(exc), hint=f"rebuild it: stagewise index CORPUS -o {where}") from None

    def _scoring(self, variant, k1, b, delta, epsilon) -> Scoring:
        return self.scoring.with_params(variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon)

    def _idf(self, scoring: Scoring) -> np.ndarray:
        key = ("idf", scoring.variant, scoring.epsilon)
        if key not in self._cache:
            df = np.diff(self.term_ptr).astype(np.float64)
            self._cache[key] = np.asarray(scoring.idf(df, self.n_docs), dtype=np.float64)
        return self._cache[key]

    def _norm(self, b: float) -> np.ndarray:
        key = ("norm", b)
        if key not in self._cache:
            self._cache = {k: v for k, v in self._cache.items() if k[0] != "norm"}
            avgdl = self.avgdl or 1.0  # every document empty: there are no postings to score
            self._cache[key] = 1 - b + b * np.asarray(self.doc_len) / avgdl
        return self._cache[key]

    def _query_terms(self, queries: Sequence[str] | Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Each query's index term ids (offsets, ids), in query order, absent terms dropped."""
        if queries and all(isinstance(q, str) for q in queries):
            if self.analyser is None:
                raise StagewiseError("this index was built from tokens: give each query as a list of terms")
            analysed = self.analyser.analyse_many(list(queries), source="queries")
        elif all(isinstance(q, list | tuple) for q in queries):
            analysed = analysed_from_tokens(queries)
        else:
            raise StagewiseError("queries must all be strings, or all be lists of terms")
        with self._damage_is_input_error():
            found = _kernels.find_terms(self.vocab_offsets, self.vocab_data, analysed.terms)
        ids = found[analysed.term_ids] if len(analysed.term_ids) else np.zeros(0, dtype=np.int32)
        keep = ids >= 0
        n = len(analysed)
        text_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(analysed.offsets))
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(text_of[keep], minlength=n), out=offsets[1:])
        return offsets, ids[keep]

    def topk(
        self,
        queries: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        k: int = 1000,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        all_documents: bool = False,
        workers: int = 1,
        progress: Progress | None = None,
        exhaustive: bool = False,
    ) -> TopK:
        """The top ``k`` documents of each query, as arrays (:meth:`search` wraps them in a Run; the parameters
        are the same). ``exhaustive=True`` scores every posting instead of pruning (the results are identical;
        it is there for tests and timing)."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise parameter_error("k", "search", "an int >= 1", k)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise parameter_error("workers", "search", "an int >= 1", workers)
        scoring = self._scoring(variant, k1, b, delta, epsilon)
        query_ids, texts = _queries(queries, ids)
        _check_ids(query_ids, "queries")
        q_offsets, q_terms = self._query_terms(texts)
        n_queries = len(query_ids)
        # one entry per distinct (query, term), weighted by the term's count in the query
        q_of = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(q_offsets))
        keys, counts = np.unique(q_of * max(self.n_terms, 1) + q_terms, return_counts=True)
        uq, ut = keys // max(self.n_terms, 1), (keys % max(self.n_terms, 1)).astype(np.int32)
        ptr = np.zeros(n_queries + 1, dtype=np.int64)
        np.cumsum(np.bincount(uq, minlength=n_queries), out=ptr[1:])
        weights = counts * self._idf(scoring)[ut]
        bound = scoring.tf(self.max_tf[ut].astype(np.float64), self.min_dl[ut].astype(np.float64), self.avgdl)
        ub = weights * bound * (1 + UB_SLACK)
        empty = int(np.count_nonzero(np.diff(ptr) == 0))
        if all_documents:
            strategy = _kernels.STRATEGY_ALL_DOCS
        elif exhaustive:
            strategy = _kernels.STRATEGY_EXHAUSTIVE
        else:
            strategy = _kernels.STRATEGY_MAXSCORE
        postings = _kernels.Postings(
            self.term_ptr, self.post_docs, self.post_tf, self.doc_len, self.max_tf, self.min_dl
        )
        norm = self._norm(scoring.b)
        mode, delta_value = scoring.spec.kernel_mode, scoring.delta or 0.0

        def run_chunk(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            a, e = ptr[lo], ptr[hi]
            with self._damage_is_input_error():
                return _kernels.search(
                    postings, norm, ptr[lo : hi + 1] - a, ut[a:e], weights[a:e], ub[a:e], k, mode, scoring.k1,
                    delta_value, strategy,
                )  # fmt: skip

        chunk = max(16, min(2000, -(-n_queries // (workers * 8)))) if n_queries else 1
        bounds = [(lo, min(lo + chunk, n_queries)) for lo in range(0, n_queries, chunk)]
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if workers == 1 or len(bounds) <= 1:
            for lo, hi in bounds:
                parts.append(run_chunk(lo, hi))
                if progress is not None:
                    progress(hi, n_queries)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as pool:  # the kernel releases the GIL
                for (_, hi), part in zip(bounds, pool.map(lambda bound: run_chunk(*bound), bounds), strict=True):
                    parts.append(part)
                    if progress is not None:
                        progress(hi, n_queries)
        if progress is not None and not bounds:
            progress(0, 0)
        res_offsets = np.zeros(n_queries + 1, dtype=np.int64)
        if parts:
            res_offsets[1:] = np.cumsum(np.concatenate([np.diff(p[0]) for p in parts]))
            docs = np.concatenate([p[1] for p in parts])
            scores = np.concatenate([p[2] for p in parts])
        else:
            docs, scores = np.zeros(0, dtype=np.int32), np.zeros(0)
        return TopK(query_ids, res_offsets, docs, scores, scoring, empty)

    def search(
        self,
        queries: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        k: int = 1000,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        all_documents: bool = False,
        workers: int = 1,
        progress: Progress | None = None,
        name: str | None = None,
    ):
        """Rank documents for each query; returns a :class:`stagewise.data.run.Run`.

        Parameters
        ----------
        queries : sequence of str, mapping of id to str, or an object with ``ids`` and ``texts``
            Query texts (analysed like the documents), or lists of terms (used as given).
        ids : sequence of str, optional
            Query ids for a plain sequence of queries (default ``"0"``, ``"1"``, ...).
        k : int, default=1000
            Results per query. A query gets at most ``k`` of the documents that contain one of its terms
            (fewer when fewer match; ``k`` above the corpus size is not an error). Ties in score keep the
            document indexed first.
        variant, k1, b, delta, epsilon : optional
            Override the index's scoring for this search (no re-indexing is needed).
        all_documents : bool, default=False
            Also rank documents that contain no query term (score 0, in index order), as bm25s and rank_bm25
            do; every query then gets ``min(k, N)`` results, the whole corpus when ``k >= N``.
        workers : int, default=1
            Threads searching query batches in parallel (the compiled kernel releases the GIL and all threads
            share the memory-mapped index).
        progress : callable(done, total), optional
            Called after each batch of queries.
        name : str, optional
            The run's name (default ``bm25-<variant>(<parameters>)``).
        """
        top = self.topk(
            queries,
            ids,
            k=k,
            variant=variant,
            k1=k1,
            b=b,
            delta=delta,
            epsilon=epsilon,
            all_documents=all_documents,
            workers=workers,
            progress=progress,
        )
        return top.to_run(self, name=name)

    def score(
        self,
        query: str | Sequence[str],
        *,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> np.ndarray:
        """Every document's score for one query (0 where no query term occurs), in index order."""
        query = query if isinstance(query, str) else list(query)
        top = self.topk(
            [query], k=max(self.n_docs, 1), variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon,
            all_documents=True,
        )  # fmt: skip
        dense = np.zeros(self.n_docs)
        dense[top.docs] = top.scores
        return dense


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


def _narrow_tf(tf: np.ndarray) -> np.ndarray:
    if len(tf) == 0 or int(tf.max()) < 65536:
        return tf.astype(np.uint16, copy=False)
    return tf.astype(np.int32, copy=False)


def _scatter_positions(src_ptr: np.ndarray, dest_start: np.ndarray) -> np.ndarray:
    """Destination of every posting of a CSR whose term ``t`` block moves to start at ``dest_start[t]``."""
    lengths = np.diff(src_ptr)
    within = np.arange(int(src_ptr[-1]), dtype=np.int64) - np.repeat(src_ptr[:-1], lengths)
    return np.repeat(dest_start, lengths) + within


def _check_ids(ids: Sequence[str], what: str) -> None:
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for position, value in enumerate(ids):
            if value in seen:
                raise InputError(what, f"id {value!r} appears twice (second at position {position})")
            seen.add(value)


def _documents(documents: Any, ids: Sequence[str] | None, start: int = 0) -> tuple[list[str], list]:
    if hasattr(documents, "ids") and hasattr(documents, "texts"):
        if ids is not None:
            raise ConventionError("give ids either inside the documents object or as ids=, not both")
        return [str(i) for i in documents.ids], list(documents.texts)
    if isinstance(documents, Mapping):
        if ids is not None:
            raise ConventionError("give ids either as the mapping's keys or as ids=, not both")
        return [str(i) for i in documents], list(documents.values())
    if isinstance(documents, str):
        raise ConventionError("documents must be a sequence of texts, not one string")
    texts = list(documents)
    if ids is None:
        return [str(start + i) for i in range(len(texts))], texts
    ids = [str(i) for i in ids]
    if len(ids) != len(texts):
        raise InputError("documents", f"{len(texts)} documents but {len(ids)} ids")
    return ids, texts


def _queries(queries: Any, ids: Sequence[str] | None) -> tuple[list[str], list]:
    if isinstance(queries, str):
        raise ConventionError("queries must be a sequence or mapping of queries, not one string")
    return _documents(queries, ids)
