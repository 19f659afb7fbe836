"""An approximate dense index: faiss HNSW over a :class:`~stagewise.dense.index.DenseIndex`'s vectors
(``pip install 'stagewise[ann]'``), with its recall@k against the exact search measured when it is built.

Exact blocked search is the default and is fast up to a few million vectors on one machine; HNSW trades a
measured amount of recall for sub-linear search on larger corpora.

``hnsw.faiss`` is tied to the vectors it was built from: ``hnsw.json`` beside it records their count,
dimension, dtype and block CRC-32s (the dense index's own manifest entry) and the file's size and CRC-32. On
load the record must match the dense index's vectors and the file, the faiss index must be an inner-product
HNSW over exactly those vectors (its stored copy is compared with them) and its graph must point only at
rows that exist; anything else is an :class:`~stagewise.errors.InputError` that says to rebuild it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.dense import manifest
from stagewise.dense._deps import require
from stagewise.errors import InputError, StagewiseError

FILE = "hnsw.faiss"
RECORD = "hnsw.json"
RECORD_FORMAT = "stagewise-dense-hnsw"
RECORD_VERSION = 1


@dataclass(frozen=True)
class HNSWReport:
    """Recall of the approximate top-k against the exact one, with documents of the index as the queries (each
    finds itself in both, which lifts the figure a little above that of real queries)."""

    m: int
    ef_construction: int
    ef_search: int
    k: int
    sample: int
    recall: float
    build_seconds: float

    def __str__(self) -> str:
        return (
            f"HNSW(M={self.m}, efConstruction={self.ef_construction}, efSearch={self.ef_search}) "
            f"recall@{self.k} {self.recall:.4f} against exact search, {self.sample} indexed documents as queries "
            "(each finds itself); "
            f"built in {self.build_seconds:.2f} s"
        )


class HNSWIndex:
    """faiss ``IndexHNSWFlat`` with inner-product metric; rows are the dense index's rows."""

    def __init__(self, index: Any, report: HNSWReport | None = None, vectors: dict[str, Any] | None = None) -> None:
        self.index = index
        self.report = report
        self.vectors = vectors  # the manifest entry of the vectors it was built from

    @classmethod
    def build(
        cls, dense: Any, *, m: int = 32, ef_construction: int = 200, ef_search: int = 128, k: int = 10,
        sample: int = 200, seed: int = 0,
    ) -> HNSWIndex:  # fmt: skip
        """Build over ``dense.embeddings`` and measure recall@``k`` on ``sample`` documents used as queries
        (their own vectors, perturbed by nothing: each query's exact top-k is computed too)."""
        import time

        faiss = require("faiss")
        from stagewise.dense.index import exact_topk

        started = time.perf_counter()
        vectors = np.ascontiguousarray(dense.embeddings, dtype=np.float32)
        index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.add(vectors)
        index.hnsw.efSearch = ef_search
        built = time.perf_counter() - started
        rng = np.random.default_rng(seed)
        chosen = rng.choice(len(vectors), size=min(sample, len(vectors)), replace=False)
        queries = vectors[np.sort(chosen)]
        kk = min(k, len(vectors))
        exact, _ = exact_topk(queries, vectors, kk)
        _, approx = index.search(queries, kk)
        hits = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact, strict=True))
        report = HNSWReport(m, ef_construction, ef_search, kk, len(queries), hits / max(exact.size, 1), built)
        return cls(index, report, vectors_of(dense))

    def save(self, folder: str | Path) -> Path:
        """Write ``hnsw.faiss`` into the dense index folder with ``hnsw.json``, the record of the vectors it
        was built from and of the file (each atomically; a crash between the two leaves a record that does
        not match the file, which load refuses)."""
        faiss = require("faiss")
        from stagewise._io import atomic_path

        if self.vectors is None:
            raise StagewiseError("this HNSW index does not know the vectors it was built from: build it with build()")
        target = Path(folder) / FILE
        with atomic_path(target) as tmp:
            faiss.write_index(self.index, str(tmp))
            size, crcs = _file_crcs(tmp)
        record = {
            "format": RECORD_FORMAT,
            "format_version": RECORD_VERSION,
            "metric": "inner product",
            "vectors": self.vectors,
            "file": {"name": FILE, "bytes": size, "crc32": crcs},
        }
        if self.report is not None:
            record["report"] = {k: getattr(self.report, k) for k in ("m", "ef_construction", "ef_search", "recall")}
        with atomic_path(Path(folder) / RECORD) as tmp:
            tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, dense: Any) -> HNSWIndex:
        """The HNSW index saved beside ``dense`` (built by ``stagewise encode --hnsw``)."""
        faiss = require("faiss")
        cached = getattr(dense, "_hnsw", None)
        if cached is not None:
            return cached
        if dense.path is None or not (Path(dense.path) / FILE).exists():
            raise InputError(
                dense.path or "dense index", "has no approximate index", hint="build one with stagewise encode --hnsw"
            )
        folder = Path(dense.path)
        vectors = vectors_of(dense)
        try:
            out = cls(_read_checked(faiss, folder, vectors, dense.embeddings))
        except manifest.Damaged as exc:
            source = exc.args[1] if len(exc.args) > 1 else folder / FILE
            raise InputError(
                source, exc.args[0], hint=f"rebuild it: stagewise encode CORPUS -o {folder} --hnsw"
            ) from None
        out.vectors = vectors
        dense._hnsw = out
        return out

    def search(self, vectors: np.ndarray, k: int, *, ef_search: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` like :func:`~stagewise.dense.index.exact_topk` (rows of -1 are dropped by
        keeping the first ``min(k, N)``; HNSW returns that many when the graph is connected)."""
        if ef_search is not None:
            self.index.hnsw.efSearch = max(int(ef_search), k)
        elif self.index.hnsw.efSearch < k:
            self.index.hnsw.efSearch = k
        kk = min(int(k), self.index.ntotal)
        try:
            scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), kk)
        except RuntimeError as exc:  # faiss's own checks, as one line
            raise StagewiseError(f"the HNSW search failed: {_faiss_reason(exc)}") from None
        if (rows < 0).any():  # too few reachable neighbours: fill with nothing rather than row -1
            keep = rows >= 0
            width = int(keep.sum(axis=1).min())
            order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
            rows, scores = np.take_along_axis(rows, order, 1), np.take_along_axis(scores, order, 1)
        return rows.astype(np.int64), scores.astype(np.float32)


def vectors_of(dense: Any) -> dict[str, Any]:
    """The manifest entry of a dense index's vectors (count, dimension, dtype, block CRC-32s): the one checked
    on load for a saved index, else computed from the vectors in memory."""
    recorded = (dense.meta.get("arrays") or {}).get("embeddings") if isinstance(dense.meta, dict) else None
    if isinstance(recorded, dict) and "crc32" in recorded:
        return {k: recorded[k] for k in ("dtype", "shape", "crc32_rows", "crc32")}
    vectors = np.ascontiguousarray(dense.embeddings)
    dtype = vectors.dtype.newbyteorder("<")
    rows = manifest.rows_per_block(vectors.shape[1], dtype.itemsize)
    step = rows * vectors.shape[1] * dtype.itemsize
    raw = memoryview(vectors.astype(dtype, copy=False).view(np.uint8)).cast("B")
    crcs = [manifest.crc(raw[at : at + step]) for at in range(0, len(raw), step)]
    return {"dtype": dtype.str, "shape": list(vectors.shape), "crc32_rows": rows, "crc32": crcs}


def _faiss_reason(exc: RuntimeError) -> str:
    """The condition of a faiss error without its C++ location ("Error in void faiss::... at file:line")."""
    text = (str(exc).strip().splitlines() or ["unknown error"])[-1]
    return text.rpartition("failed: ")[2] if "failed: " in text else text.rpartition("Error: ")[2] or text


def _file_crcs(path: Path) -> tuple[int, list[str]]:
    """The size of a file and the CRC-32 of each 4 MiB block of it."""
    crcs = []
    with open(path, "rb") as fh:
        while block := fh.read(manifest.CRC_BLOCK_BYTES):
            crcs.append(manifest.crc(block))
    return os.path.getsize(path), crcs


def _read_record(folder: Path) -> dict[str, Any]:
    path = folder / RECORD
    if not path.exists():
        raise manifest.Damaged(
            f"there is no {RECORD} beside {FILE} (built by an older stagewise): nothing ties it to the index's "
            "vectors", folder / FILE,
        )  # fmt: skip
    record = manifest.parse_json(manifest.read_bounded(path, manifest.MAX_META_BYTES), path)
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise manifest.Damaged(f"not a stagewise HNSW record (format {_get(record, 'format')!r})", path)
    if record.get("format_version") != RECORD_VERSION:
        raise manifest.Damaged(f"HNSW record version {record.get('format_version')!r}, expected {RECORD_VERSION}", path)
    if not isinstance(record.get("vectors"), dict) or not isinstance(record.get("file"), dict):
        raise manifest.Damaged("the record has no 'vectors' or 'file' entry", path)
    return record


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else type(value).__name__


def _read_checked(faiss: Any, folder: Path, expected: dict[str, Any], vectors: np.ndarray) -> Any:
    """``hnsw.faiss`` read and checked against ``hnsw.json`` and the dense index's vectors."""
    record = _read_record(folder)
    path = folder / FILE
    built = record["vectors"]
    if built.get("shape") != expected["shape"] or built.get("dtype") != expected["dtype"]:
        raise manifest.Damaged(
            f"it was built over {_get(built, 'shape')!r} {_get(built, 'dtype')} vectors; the index has "
            f"{expected['shape']!r} {expected['dtype']}", path,
        )  # fmt: skip
    if built.get("crc32_rows") != expected["crc32_rows"] or built.get("crc32") != expected["crc32"]:
        raise manifest.Damaged("it was built over other vectors than the index's (their CRC-32s differ)", path)
    size = manifest.regular_file(path)
    if size != record["file"].get("bytes"):
        raise manifest.Damaged(f"{size} bytes, but {RECORD} recorded {record['file'].get('bytes')!r}", path)
    if _file_crcs(path)[1] != record["file"].get("crc32"):
        raise manifest.Damaged("its CRC-32 differs from the one written when it was built (changed or corrupted)", path)
    try:
        index = faiss.read_index(str(path))  # already its own class (a downcast copy would not own it)
    except RuntimeError as exc:
        raise manifest.Damaged(f"faiss cannot read it ({_faiss_reason(exc)})", path) from None
    if not isinstance(index, faiss.IndexHNSWFlat) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise manifest.Damaged(f"a faiss {type(index).__name__}, expected an inner-product IndexHNSWFlat", path)
    _check_graph(faiss, index, expected, vectors, path)
    return index


def _check_graph(faiss: Any, index: Any, expected: dict[str, Any], vectors: np.ndarray, path: Path) -> None:
    """The stored vectors are the dense index's, and every link of the graph points at a row that exists
    (faiss follows them unchecked: a bad one reads out of bounds)."""
    n, d = expected["shape"]
    if index.ntotal != n or index.d != d:
        raise manifest.Damaged(f"it holds {index.ntotal} x {index.d} vectors; the index has {n} x {d}", path)
    if n == 0:
        return
    storage = faiss.downcast_index(index.storage)
    if not isinstance(storage, faiss.IndexFlat) or storage.ntotal != n:
        raise manifest.Damaged("its vector storage is not a flat copy of the index's vectors", path)
    stored = faiss.rev_swig_ptr(storage.get_xb(), n * d).reshape(n, d)
    rows = manifest.rows_per_block(d, 4)
    for r0 in range(0, n, rows):  # equal as the float32 rows faiss was given (float16 vectors were widened)
        if not np.array_equal(stored[r0 : r0 + rows], np.asarray(vectors[r0 : r0 + rows], dtype=np.float32)):
            raise manifest.Damaged(f"its stored vectors are not the index's (from row {r0} on)", path)
    hnsw = index.hnsw
    neighbors = faiss.vector_to_array(hnsw.neighbors)
    offsets = faiss.vector_to_array(hnsw.offsets)
    levels = faiss.vector_to_array(hnsw.levels)
    ok = (
        len(levels) == n and len(offsets) == n + 1 and offsets[0] == 0 and int(offsets[-1]) == len(neighbors)
        and bool(np.all(np.diff(offsets) >= 0)) and (len(neighbors) == 0 or int(neighbors.max()) < n)
        and (len(neighbors) == 0 or int(neighbors.min()) >= -1) and 0 <= hnsw.entry_point < n
        and int(levels.min()) >= 1 and int(levels.max()) == hnsw.max_level + 1
    )  # fmt: skip
    if not ok:
        raise manifest.Damaged("its graph links rows that do not exist (damaged)", path)
