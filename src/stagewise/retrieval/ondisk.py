"""Building a BM25 index in bounded memory: batches of documents spilled to disk as sorted runs, then merged.

The in-memory build (:meth:`BM25Index.build`) holds every text, token and posting at once; at MS MARCO's
8.8M passages that is tens of GB. This build reads the corpus in batches (:func:`iter_corpus`), and for each
batch analyses the texts and writes its postings as a *run*: the batch's own sorted vocabulary, and its
postings grouped by term (``term_ptr``, ``docs``, ``tf``), in a work folder beside the index. Only the
per-document arrays (lengths, ids) and the vocabulary stay in memory.

The merge then walks the final, sorted vocabulary in ranges of terms holding at most ``merge_postings``
postings. Every run's terms map to increasing global term ids, so a range's postings are one contiguous slice
of each run; the slices are scattered into one buffer (each term's postings run after run, so documents stay
ascending, the batches being in document order) and the buffer is appended to ``post_docs.npy`` and
``post_tf.npy``, with the CRC-32 of each 4 MiB block computed on the way. Peak memory is one batch's
analysis or one merge buffer, whichever is larger, plus the per-document arrays and the vocabulary: it does
not grow with the number of postings.

The arrays, the metadata and so every byte of the index folder are those :meth:`BM25Index.save` writes for
the same corpus built in memory (the tests compare them), and the folder is swapped in the same way.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.errors import InputError, StagewiseError
from stagewise.retrieval import _kernels
from stagewise.retrieval.analysis import Analyser
from stagewise.retrieval.index import BM25Index, _check_ids, _checksum_terms, _documents
from stagewise.retrieval.storage import (
    _ARRAYS,
    CRC_BLOCK,
    INDEX_FILES,
    _column_values,
    _crc32,
    _strings_to_column,
    foreign_meta,
    index_metadata,
)
from stagewise.retrieval.variants import DEFAULT_VARIANT, Scoring

RUNS = "stagewise-index-runs"
RUN_FILES = frozenset(
    f"{name}.npy" for name in ("vocab_offsets", "vocab_data", "term_ptr", "docs", "tf", "max_tf", "min_dl", "gmap")
)
MERGE_POSTINGS = 1 << 24

Progress = Callable[[int, int], None]


class _NpyWriter:
    """A 1-D ``.npy`` file of known dtype and length written piece by piece, with the same header
    :func:`numpy.save` writes and the CRC-32 of every ``CRC_BLOCK`` bytes of its data."""

    def __init__(self, path: Path, dtype: np.dtype, length: int) -> None:
        from numpy.lib import format as npy

        self.dtype, self.length, self.written = np.dtype(dtype), length, 0
        self.fh = path.open("wb")
        header = {"descr": npy.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)}
        npy.write_array_header_1_0(self.fh, header)
        self.crcs: list[str] = []
        self._crc, self._in_block = 0, 0

    def write(self, array: np.ndarray) -> None:
        raw = memoryview(np.ascontiguousarray(array, dtype=self.dtype).view(np.uint8))
        self.fh.write(raw)
        self.written += len(array)
        at = 0
        while at < len(raw):
            take = min(CRC_BLOCK - self._in_block, len(raw) - at)
            self._crc = zlib.crc32(raw[at : at + take], self._crc)
            self._in_block += take
            at += take
            if self._in_block == CRC_BLOCK:
                self._flush_block()

    def _flush_block(self) -> None:
        self.crcs.append(f"{self._crc & 0xFFFFFFFF:08x}")
        self._crc, self._in_block = 0, 0

    def close(self) -> dict[str, Any]:
        if self._in_block:
            self._flush_block()
        self.fh.close()
        if self.written != self.length:  # a bug here, never the user's input
            raise AssertionError(f"{self.fh.name}: wrote {self.written} values, expected {self.length}")
        return {"dtype": self.dtype.str, "length": self.length, "crc32": self.crcs, "crc32_block": CRC_BLOCK}


class _RunFiles:
    """Slices of a run's ``.npy`` files, read with plain reads (the header of each parsed once)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.layout: dict[str, tuple[int, np.dtype]] = {}

    def read(self, name: str, start: int, stop: int) -> np.ndarray:
        path = self.folder / f"{name}.npy"
        with path.open("rb") as fh:
            if name not in self.layout:
                from numpy.lib import format as npy

                npy.read_magic(fh)
                _, _, dtype = npy.read_array_header_1_0(fh)
                self.layout[name] = (fh.tell(), dtype)
            offset, dtype = self.layout[name]
            fh.seek(offset + start * dtype.itemsize)
            return np.fromfile(fh, dtype=dtype, count=stop - start)


def _save(folder: Path, name: str, array: np.ndarray) -> dict[str, Any]:
    np.save(folder / f"{name}.npy", array, allow_pickle=False)
    return {"dtype": array.dtype.str, "length": len(array), "crc32": _crc32(array), "crc32_block": CRC_BLOCK}


class _Spill:
    """The runs written so far, and what the merge needs to keep from them."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.runs: list[tuple[Path, int]] = []  # (folder, first document)
        self.terms: set[str] = set()
        self.doc_len: list[np.ndarray] = []
        self.id_offsets: list[np.ndarray] = []
        self.id_data: list[np.ndarray] = []
        self.id_hashes: list[np.ndarray] = []
        self.n_docs = 0
        self.max_tf = 0
        self.checksum = 0

    def add(self, ids: list[str], texts: list, analyser: Analyser) -> None:
        analysed = analyser.analyse_many(texts, source="documents", keep_dropped=True)
        postings = _kernels.build_postings(analysed.offsets, analysed.term_ids, len(analysed.terms))
        run = self.work / f"run-{len(self.runs):05d}"
        run.mkdir()
        vocab_offsets, vocab_data = _strings_to_column(analysed.terms)
        for name, array in (
            ("vocab_offsets", vocab_offsets),
            ("vocab_data", vocab_data),
            ("term_ptr", postings.term_ptr),
            ("docs", postings.docs),
            ("tf", postings.tf),
            ("max_tf", postings.max_tf),
            ("min_dl", postings.min_dl),
        ):
            np.save(run / f"{name}.npy", array, allow_pickle=False)
        self.runs.append((run, self.n_docs))
        self.terms.update(analysed.terms)
        self.doc_len.append(np.asarray(postings.doc_len, dtype=np.int32))
        offsets, data = _strings_to_column(ids)
        self.id_offsets.append(offsets[1:] + (self.id_offsets[-1][-1] if self.id_offsets else 0))
        self.id_data.append(data)
        # 64-bit hashes find duplicate ids without a set of every id (the strings are compared on a match)
        self.id_hashes.append(np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)))
        if len(postings.tf):
            self.max_tf = max(self.max_tf, int(postings.max_tf.max()))
        self.checksum = (self.checksum + _checksum_terms(ids, texts, self.n_docs)) % (1 << 128)
        self.n_docs += len(ids)

    def doc_ids(self) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.concatenate([np.zeros(1, dtype=np.int64), *self.id_offsets])
        data = np.concatenate(self.id_data) if self.id_data else np.zeros(0, dtype=np.uint8)
        return offsets, data

    def check_unique_ids(self, offsets: np.ndarray, data: np.ndarray) -> None:
        """The in-memory build's check: the first position whose id was seen before, reported the same way."""
        if not self.id_hashes:
            return
        hashes = np.concatenate(self.id_hashes)
        order = np.argsort(hashes, kind="stable")
        same = np.flatnonzero(hashes[order][1:] == hashes[order][:-1])
        if not len(same):
            return
        raw = data.tobytes()
        first_seen: dict[bytes, int] = {}
        second = None
        # candidates: every position in a run of equal hashes; positions ascend within a run (stable sort)
        candidates = np.unique(np.concatenate([order[same], order[same + 1]]))
        for position in candidates.tolist():
            value = raw[offsets[position] : offsets[position + 1]]
            if value in first_seen:
                second = position if second is None else min(second, position)
            else:
                first_seen[value] = position
        if second is not None:
            value = raw[offsets[second] : offsets[second + 1]].decode("utf-8")
            raise InputError("documents", f"id {value!r} appears twice (second at position {second})")


def _remove_stale_runs(parent: Path, name: str) -> None:
    """Delete the run folders a killed build of the same index left: our name, a process that is gone, and
    nothing inside but run folders of run files."""
    import re
    import shutil

    from stagewise.folders import _pid_alive

    pattern = re.compile(rf"\.{re.escape(name)}\.{RUNS}-(\d+)-\w+")
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False) or int(match.group(1)) == os.getpid():
            continue
        if _pid_alive(int(match.group(1))):
            continue
        try:
            runs = list(os.scandir(entry.path))
            ours = all(
                re.fullmatch(r"run-\d+", run.name)
                and run.is_dir(follow_symlinks=False)
                and all(f.name in RUN_FILES and f.is_file(follow_symlinks=False) for f in os.scandir(run.path))
                for run in runs
            )
        except OSError:
            continue
        if ours:
            shutil.rmtree(entry.path, ignore_errors=True)


def build_on_disk(
    batches: Iterable[Any],
    path: str | os.PathLike[str],
    *,
    analyser: Analyser | None = None,
    variant: str = DEFAULT_VARIANT,
    k1: float | None = None,
    b: float | None = None,
    delta: float | None = None,
    epsilon: float | None = None,
    force: bool = False,
    progress: Progress | None = None,
    merge_postings: int = MERGE_POSTINGS,
    work_dir: str | os.PathLike[str] | None = None,
) -> BM25Index:
    """Index a corpus given in batches (each a :class:`~stagewise.retrieval.collections.Documents`, a mapping
    of id to text, or a sequence of texts, numbered on from the previous batches) into folder ``path``, in
    bounded memory, and return it opened (memory-mapped). The folder gets exactly the bytes
    ``BM25Index.build(whole corpus).save(path)`` writes.

    ``progress(documents done, 0)`` is called after each batch and ``progress(terms merged, terms)`` during
    the merge. The runs go to a temporary folder in ``work_dir`` (default: beside ``path``, on the same disk),
    deleted at the end; they take about the size of the index. What a killed build left there is deleted by
    the next build of the same index.
    """
    from stagewise import folders

    scoring = Scoring.of(variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
    analyser = analyser or Analyser()
    if not isinstance(merge_postings, int) or merge_postings < 1:
        raise StagewiseError(f"merge_postings must be an int >= 1, got {merge_postings!r}")
    target = Path(path)
    folders.check_target(target, owned=INDEX_FILES, force=force, parents=True, foreign_file=foreign_meta)
    target.parent.mkdir(parents=True, exist_ok=True)
    parent = Path(work_dir) if work_dir is not None else target.parent
    _remove_stale_runs(parent, target.name)
    prefix = f".{target.name}.{RUNS}-{os.getpid()}-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as work:
        spill = _Spill(Path(work))
        for batch in batches:
            ids, texts = _documents(batch, None, start=spill.n_docs)
            _check_ids(ids, "documents")
            spill.add(ids, texts, analyser)
            if progress is not None:
                progress(spill.n_docs, 0)
        id_offsets, id_data = spill.doc_ids()
        spill.check_unique_ids(id_offsets, id_data)

        def write(folder: Path) -> None:
            _merge(spill, folder, scoring, analyser, id_offsets, id_data, merge_postings, progress)

        folders.replace_folder(target, write, owned=INDEX_FILES)
    return BM25Index.load(target)


def _merge(
    spill: _Spill,
    folder: Path,
    scoring: Scoring,
    analyser: Analyser,
    id_offsets: np.ndarray,
    id_data: np.ndarray,
    merge_postings: int,
    progress: Progress | None,
) -> None:
    terms = sorted(spill.terms)
    spill.terms = set()  # the sorted list replaces it
    n_terms = len(terms)
    vocab_offsets, vocab_data = _strings_to_column(terms)
    del terms
    df = np.zeros(n_terms, dtype=np.int64)
    max_tf = np.zeros(n_terms, dtype=np.int32)
    min_dl = np.full(n_terms, np.iinfo(np.int32).max, dtype=np.int32)
    for run, _ in spill.runs:
        local = _column_values(np.load(run / "vocab_offsets.npy"), np.load(run / "vocab_data.npy"))
        gmap = np.asarray(_kernels.find_terms(vocab_offsets, vocab_data, local), dtype=np.int64)
        np.save(run / "gmap.npy", gmap, allow_pickle=False)
        df[gmap] += np.diff(np.load(run / "term_ptr.npy"))
        np.maximum.at(max_tf, gmap, np.load(run / "max_tf.npy"))
        np.minimum.at(min_dl, gmap, np.load(run / "min_dl.npy"))
    term_ptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=term_ptr[1:])
    del df
    n_postings = int(term_ptr[-1])
    tf_dtype = np.dtype(np.uint16 if spill.max_tf < 65536 else np.int32)
    doc_len = np.concatenate(spill.doc_len) if spill.doc_len else np.zeros(0, dtype=np.int32)
    listed: dict[str, dict[str, Any]] = {}
    docs_out = _NpyWriter(folder / "post_docs.npy", np.dtype("<i4"), n_postings)
    tf_out = _NpyWriter(folder / "post_tf.npy", tf_dtype.newbyteorder("<"), n_postings)
    # The ranges of terms merged at a time: the longest within the budget, at least one term (whose postings
    # are at most N). Each run's slice of each range is found now, from its map, so that the merge reads
    # only slices of the runs' files (plain reads: mapped run files would count in the resident set).
    ranges = [0]
    while ranges[-1] < n_terms:
        t0 = ranges[-1]
        t1 = max(t0 + 1, int(np.searchsorted(term_ptr, term_ptr[t0] + merge_postings, "right")) - 1)
        ranges.append(min(t1, n_terms))
    runs = [
        (_RunFiles(run), np.searchsorted(np.load(run / "gmap.npy"), ranges).tolist(), np.int32(first))
        for run, first in spill.runs
    ]
    for r, (t0, t1) in enumerate(itertools.pairwise(ranges)):
        base = term_ptr[t0]
        size = int(term_ptr[t1] - base)
        buf_docs = np.empty(size, dtype=np.int32)
        buf_tf = np.empty(size, dtype=tf_dtype)
        fill = term_ptr[t0:t1] - base  # where each term's next posting goes in the buffer
        for files, cuts, first in runs:
            lo, hi = cuts[r], cuts[r + 1]
            if lo == hi:
                continue
            local_ptr = files.read("term_ptr", lo, hi + 1)
            a, e = int(local_ptr[0]), int(local_ptr[-1])
            lengths = np.diff(local_ptr)
            g = files.read("gmap", lo, hi) - t0
            dest = np.repeat(fill[g] - (local_ptr[:-1] - a), lengths) + np.arange(e - a, dtype=np.int64)
            buf_docs[dest] = files.read("docs", a, e) + first
            buf_tf[dest] = files.read("tf", a, e)
            fill[g] += lengths
        docs_out.write(buf_docs)
        tf_out.write(buf_tf)
        del buf_docs, buf_tf, fill
        if progress is not None:
            progress(t1, n_terms)
    del runs
    listed["post_docs"] = docs_out.close()
    listed["post_tf"] = tf_out.close()
    for name, array in (
        ("term_ptr", term_ptr),
        ("doc_len", doc_len),
        ("max_tf", max_tf),
        ("min_dl", min_dl),
        ("vocab_offsets", vocab_offsets),
        ("vocab_data", vocab_data),
        ("doc_ids_offsets", id_offsets),
        ("doc_ids_data", id_data),
    ):
        listed[name] = _save(folder, name, array)
    meta = index_metadata(
        scoring=scoring,
        analyser=analyser,
        n_docs=spill.n_docs,
        n_terms=n_terms,
        n_postings=n_postings,
        total_length=int(doc_len.sum(dtype=np.int64)),
        tf_dtype=str(tf_dtype),
        checksum=spill.checksum,
    )
    meta["arrays"] = {name: listed[name] for name in _ARRAYS}
    import json

    # written last: a folder with meta.json has all its arrays
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
