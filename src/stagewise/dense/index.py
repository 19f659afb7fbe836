"""A dense index: document vectors memory-mapped from disk, with what made them, searched exactly in blocks.

Layout of an index folder::

    meta.json        format, model name and path, backend, dimension, normalisation, dtype, corpus checksum,
                     truncation count, similarity, and the manifest of the files (dtype, shape, row norms and
                     CRC-32s of the vectors; size and CRC-32 of the ids: see :mod:`stagewise.dense.manifest`)
    embeddings.npy   [documents, dimension] float32 or float16, memory-mapped when searched
    doc_ids.json     document ids, in row order
    onnx/            an ONNX export of the model, made the first time the onnx backend needs one
    hnsw.faiss       an approximate (HNSW) index, when built (see :mod:`stagewise.dense.approx`), with
    hnsw.json        the count and checksums of the vectors it was built from, and its own size and CRC-32

Scores are inner products of float32 vectors (cosine when the model normalises). Exact top-k multiplies a
block of queries by a block of documents at a time, so memory stays bounded whatever the corpus size; ties in
score keep the document indexed first (as BM25 search does).

A saved index is untrusted input: :meth:`DenseIndex.load` checks every file against the manifest before use
and refuses a damaged one with an :class:`~stagewise.errors.InputError` naming the file, with a rebuild hint.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.errors import ConventionError, InputError, StagewiseError

FORMAT = "stagewise-dense"
# What a dense index folder holds (hnsw.faiss from encode --hnsw, onnx/ the exported model).
OWNED_FILES = frozenset({"embeddings.npy", "doc_ids.json", "meta.json", "hnsw.faiss", "hnsw.json", "onnx"})
FORMAT_VERSION = 2  # 2: the manifest of the files (dtypes, shapes, norms, CRC-32s) in meta.json; 1 had none
DTYPES = ("float32", "float16")
CHECKSUM_DEFINITION = (
    "sha256 over the documents in index order, each as its id and its text in UTF-8, each preceded by its "
    "byte length (8 bytes, little-endian)"
)
Progress = Callable[[int, int], None]


def corpus_checksum(ids: Sequence[str], texts: Sequence[str]) -> str:
    """``sha256:<hex>`` of the documents (see :data:`CHECKSUM_DEFINITION`)."""
    digest = hashlib.sha256()
    for doc_id, text in zip(ids, texts, strict=True):
        for part in (str(doc_id).encode("utf-8"), str(text).encode("utf-8")):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return f"sha256:{digest.hexdigest()}"


def _select(scores: np.ndarray, rows: np.ndarray, kk: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``kk`` best columns of each row, ties at the cut decided by document row ascending."""
    if scores.shape[1] <= kk:
        return scores, rows
    part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
    kept = np.take_along_axis(scores, part, axis=1)
    kth = kept.min(axis=1, keepdims=True)
    if ((scores >= kth).sum(axis=1) > kk).any():  # equal scores straddle the cut: the lower row wins
        order = np.lexsort((rows, -scores), axis=-1)[:, :kk]
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)
    return kept, np.take_along_axis(rows, part, axis=1)


def exact_topk(
    queries: np.ndarray, documents: np.ndarray, k: int, *, query_block: int = 256, doc_block: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` documents by inner product for each query: ``(rows, scores)``, each ``[queries, min(k, N)]``,
    best first, ties broken by document row ascending. Float32 arithmetic; ``documents`` may be float16 or
    memory-mapped (it is read one block at a time, so memory stays ``query_block x doc_block`` floats)."""
    n_docs = len(documents)
    kk = min(int(k), n_docs)
    n_q = len(queries)
    rows_out = np.zeros((n_q, kk), dtype=np.int64)
    scores_out = np.zeros((n_q, kk), dtype=np.float32)
    if kk == 0 or n_q == 0:
        return rows_out, scores_out
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    for q0 in range(0, n_q, query_block):
        q = queries[q0 : q0 + query_block]
        best_s = np.zeros((len(q), 0), dtype=np.float32)
        best_r = np.zeros((len(q), 0), dtype=np.int64)
        for d0 in range(0, n_docs, doc_block):
            block = np.asarray(documents[d0 : d0 + doc_block], dtype=np.float32)
            scores = q @ block.T
            rows = np.broadcast_to(np.arange(d0, d0 + len(block), dtype=np.int64), scores.shape)
            scores, rows = _select(scores, rows, kk)
            best_s, best_r = _select(
                np.concatenate([best_s, scores], axis=1), np.concatenate([best_r, rows], axis=1), kk
            )
        order = np.lexsort((best_r, -best_s), axis=-1)
        rows_out[q0 : q0 + len(q)] = np.take_along_axis(best_r, order, axis=1)
        scores_out[q0 : q0 + len(q)] = np.take_along_axis(best_s, order, axis=1)
    return rows_out, scores_out


def _texts(documents: Any, ids: Sequence[str] | None, what: str) -> tuple[list[str], list[str]]:
    if hasattr(documents, "ids") and hasattr(documents, "texts"):
        return [str(i) for i in documents.ids], [str(t) for t in documents.texts]
    if isinstance(documents, Mapping):
        return [str(i) for i in documents], [str(t) for t in documents.values()]
    if isinstance(documents, str):
        raise ConventionError(f"{what} must be a sequence or mapping of texts, not one string")
    texts = [str(t) for t in documents]
    ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(texts))]
    if len(ids) != len(texts):
        raise InputError(what, f"{len(texts)} texts but {len(ids)} ids")
    return ids, texts


def runs_from_topk(query_ids: Sequence[str], doc_ids: Sequence[str], rows: np.ndarray, scores: np.ndarray, name: str):
    """A :class:`~stagewise.data.run.Run` from top-k rows (document rows index ``doc_ids``)."""
    import polars as pl

    from stagewise.data.run import Run

    width = rows.shape[1]
    if width == 0 or len(query_ids) == 0:
        raise StagewiseError("the search returned no results (an empty index or no queries)")
    ids = np.asarray(doc_ids, dtype=object)
    frame = pl.DataFrame(
        {
            "query_id": np.repeat(np.asarray(query_ids, dtype=object), width).tolist(),
            "doc_id": ids[rows.ravel()].tolist(),
            "score": scores.ravel().astype(np.float64),
        }
    )
    return Run.from_frame(frame, name=name)


class DenseIndex:
    """Document vectors with their metadata. Build with :meth:`build`, write with :meth:`save`, open with
    :meth:`load` (memory-mapped), search with :meth:`search`.

    >>> import numpy as np
    >>> class Letters:  # any object with name, dimension, normalized and encode() is an encoder
    ...     name, dimension, normalized = "letters", 3, False
    ...     def encode(self, texts):
    ...         return np.array([[t.count(c) for c in "abc"] for t in texts], dtype=np.float32)
    >>> index = DenseIndex.build({"d1": "aab", "d2": "ccc"}, Letters())
    >>> index.search({"q1": "a"}, k=1).to_polars()["doc_id"].to_list()
    ['d1']
    """

    def __init__(
        self, embeddings: np.ndarray, doc_ids: list[str], meta: dict[str, Any], *, path: Path | None = None,
        encoder: Any = None,
    ) -> None:  # fmt: skip
        self.embeddings = embeddings
        self.doc_ids = doc_ids
        self.meta = meta
        self.path = path
        self._encoders: dict[str, Any] = {}
        if encoder is not None:
            self._encoders[meta.get("backend", "given")] = encoder

    # ---------------------------------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        documents: Any,
        encoder: Any = None,
        *,
        ids: Sequence[str] | None = None,
        dtype: str = "float32",
        batch_size: int | None = None,
        progress: Progress | None = None,
    ) -> DenseIndex:
        """Encode ``documents`` (a mapping id -> text, an object with ``ids`` and ``texts``, or texts with
        ``ids``) with ``encoder`` (default: the packaged MiniLM in torch) and keep the vectors as ``dtype``
        (``float16`` halves the disk and memory; scores are still computed in float32)."""
        if dtype not in DTYPES:
            raise ConventionError(f"unknown embedding dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
        doc_ids, texts = _texts(documents, ids, "documents")
        if len(set(doc_ids)) != len(doc_ids):
            seen: set[str] = set()
            for position, value in enumerate(doc_ids):
                if value in seen:
                    raise InputError("documents", f"id {value!r} appears twice (second at position {position})")
                seen.add(value)
        if encoder is None:
            from stagewise.dense.encoders import load_encoder

            encoder = load_encoder()
        started = time.perf_counter()
        kwargs: dict[str, Any] = {}
        if progress is not None and hasattr(encoder, "last_report"):
            kwargs["progress"] = progress
        if batch_size is not None and hasattr(encoder, "last_report"):
            kwargs["batch_size"] = batch_size
        vectors = np.asarray(encoder.encode(texts, **kwargs), dtype=np.float32)
        if vectors.shape != (len(texts), encoder.dimension):
            raise StagewiseError(
                f"encoder {encoder.name!r} returned shape {vectors.shape}, not ({len(texts)}, {encoder.dimension})"
            )
        _check_rows(vectors.astype(dtype, copy=False), bool(encoder.normalized), doc_ids, encoder.name)
        report = getattr(encoder, "last_report", None)
        from stagewise import __version__

        described = encoder.describe() if hasattr(encoder, "describe") else {}
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_by": f"stagewise {__version__}",
            "model": encoder.name,
            "model_path": described.get("model_path"),
            "backend": described.get("backend", type(encoder).__name__),
            "precision": described.get("precision"),
            "dimension": int(encoder.dimension),
            "normalized": bool(encoder.normalized),
            "similarity": "cosine (inner product of unit vectors)" if encoder.normalized else "inner product",
            "dtype": dtype,
            "max_length": described.get("max_length"),
            "truncated": None if report is None else report.truncated,
            "documents": len(doc_ids),
            "checksum": corpus_checksum(doc_ids, texts),
            "checksum_definition": CHECKSUM_DEFINITION,
            "encode_seconds": round(time.perf_counter() - started, 3),
        }
        return cls(vectors.astype(dtype, copy=False), doc_ids, meta, encoder=encoder)

    # ----------------------------------------------------------------------------------------- storage

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write the index to folder ``path``: built in a temporary folder beside it and swapped in at once, so a
        crash leaves the old index or the new one whole. A non-empty folder that is not a dense index is
        refused unless ``force`` (see :mod:`stagewise.folders`); an ONNX export of the same model (and weights)
        already in the old folder is kept, an approximate index never (its vectors may have changed)."""
        from stagewise import folders

        target = Path(path)
        folders.check_target(target, owned=OWNED_FILES, force=force, what="dense index", foreign_file=foreign_meta)

        from stagewise.dense import manifest

        kind = self.meta.get("dtype") if self.meta.get("dtype") in DTYPES else "float32"
        vectors = np.ascontiguousarray(self.embeddings, dtype=np.dtype(kind).newbyteorder("<"))
        ids = json.dumps(self.doc_ids, ensure_ascii=False).encode("utf-8")
        try:
            scanned = manifest.scan_vectors(
                vectors, vectors.shape, vectors.dtype, normalized=bool(self.meta.get("normalized"))
            )
        except manifest.Damaged as exc:  # vectors changed in memory since build: an index that would not open
            raise StagewiseError(f"the index's vectors cannot be saved: {exc.args[0]}") from None
        meta = {**self.meta, "arrays": {"embeddings": scanned, "doc_ids": manifest.doc_ids_record(ids)}}

        def write(tmp: Path) -> None:
            np.save(tmp / "embeddings.npy", vectors, allow_pickle=False)
            (tmp / "doc_ids.json").write_bytes(ids)
            # written last: a folder with meta.json has all its files
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            old_onnx = target / "onnx"
            made = self._encoders.get("onnx")
            made_folder = getattr(made, "folder", None)
            if made_folder is not None and getattr(made, "source", None) and Path(made_folder).is_dir():
                shutil.copytree(made_folder, tmp / "onnx")  # an export made for this index travels with it
            elif old_onnx.is_dir() and self._export_is_ours(old_onnx):
                shutil.copytree(old_onnx, tmp / "onnx")

        folders.replace_folder(target, write, owned=OWNED_FILES)
        self.meta, self.path = meta, target
        self.__dict__.pop("_hnsw", None)  # the folder's approximate index is gone with the old files
        return target

    def _export_is_ours(self, folder: Path) -> bool:
        """Whether ``folder`` holds an ONNX export of this index's model, as its weights are now."""
        from stagewise.dense._deps import PACKAGED_MODEL
        from stagewise.dense.encoders import is_export_of
        from stagewise.errors import StagewiseError

        model = None if self.meta.get("model") == PACKAGED_MODEL else self.meta.get("model_path")
        try:
            return is_export_of(folder, model)
        except StagewiseError:  # the model's folder is gone: nothing to match the export against
            return False

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True) -> DenseIndex:
        """Open an index folder; the vectors are memory-mapped read-only unless ``mmap=False``.

        Every file is checked first (see :mod:`stagewise.dense.manifest`): regular files of the recorded
        sizes, the vectors' dtype and shape as meta.json says, every row finite and (for a normalising model)
        unit length, the ids distinct strings, one a row, and every CRC-32 as written at build time. A failed
        check raises :class:`~stagewise.errors.InputError` naming the file, with a hint to rebuild."""
        from stagewise.dense import manifest

        folder = Path(path)
        rebuild = f"rebuild it: stagewise encode CORPUS -o {folder}"
        meta = _read_meta(folder, hint=rebuild)
        if not meta:
            if not folder.is_dir():
                raise InputError(folder, "no such index folder", hint="check the path")
            raise InputError(
                folder, "is not a stagewise dense index (no meta.json)", hint="build one with `stagewise encode`"
            )
        if meta.get("format") == "stagewise-bm25-index":
            raise InputError(
                folder, "is a BM25 index (from stagewise index), not a dense index", hint="give it where BM25 goes"
            )
        version = meta.get("format_version")
        if meta.get("format") != FORMAT or version != FORMAT_VERSION:
            problem = (
                "built by an older stagewise (index format version 1): the checksums of its files are missing, so "
                "it cannot be checked"
                if meta.get("format") == FORMAT and version == 1
                else f"index format {meta.get('format')!r} version {version!r}"
            )
            raise InputError(
                folder / "meta.json", problem, expected=f"{FORMAT!r} version {FORMAT_VERSION}", hint=rebuild
            )
        try:
            embeddings, doc_ids = _load_checked(folder, meta, mmap)
        except manifest.Damaged as exc:
            source = exc.args[1] if len(exc.args) > 1 else folder / "meta.json"
            problem = exc.args[0] if len(exc.args) > 1 else f"damaged index metadata: {exc.args[0]}"
            raise InputError(source, problem, hint=rebuild) from None
        return cls(embeddings, doc_ids, meta, path=folder)

    # ------------------------------------------------------------------------------------------- search

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __repr__(self) -> str:
        return (
            f"DenseIndex({len(self):,} documents, {self.meta['model']!r}, {self.meta['dimension']} dims, "
            f"{self.meta['dtype']}, {'normalized' if self.meta['normalized'] else 'not normalized'})"
        )

    @property
    def dimension(self) -> int:
        return int(self.meta["dimension"])

    @property
    def name(self) -> str:
        """The retriever's name, the default name of its runs: ``dense-<model>``."""
        return f"dense-{self.meta['model']}"

    def describe(self) -> dict[str, Any]:
        """What this retriever is (:class:`stagewise.protocols.Retriever`'s provenance): the model, the vectors'
        shape and type, and the folder it was opened from."""
        return {
            "retriever": "dense",
            "name": self.name,
            "model": self.meta["model"],
            "documents": len(self),
            "dimension": self.dimension,
            "dtype": self.meta["dtype"],
            "normalized": self.meta["normalized"],
            "path": None if self.path is None else str(self.path),
        }

    def encoder(self, backend: str | None = None) -> Any:
        """The index's own encoder (the model that made its vectors), loaded once; ``backend="onnx"`` uses
        (or makes) an export in the index folder's ``onnx/``."""
        backend = backend or self.meta.get("backend") or "torch"
        if backend in self._encoders:
            return self._encoders[backend]
        from stagewise.dense._deps import PACKAGED_MODEL
        from stagewise.dense.encoders import ONNX_FILE, load_encoder

        model: Any = None if self.meta.get("model") == PACKAGED_MODEL else self.meta.get("model_path")
        if model is not None and not Path(model).is_dir():
            raise InputError(
                model, "the index's model folder is gone", hint="pass --model with the folder the index was built with"
            )
        cache = None
        if backend == "onnx":
            if model is not None and (Path(model) / ONNX_FILE).is_file():
                cache = None
            elif self.path is not None:
                cache = self.path / "onnx"
        # Queries in the arithmetic the documents were encoded in: an index from before precision was recorded
        # was float32; onnx is float32 whatever the index says.
        precision = (self.meta.get("precision") or "float32") if backend == "torch" else "auto"
        encoder = load_encoder(model, backend=backend, onnx_cache=cache, precision=precision)
        self._encoders[backend] = encoder
        return encoder

    def check_encoder(self, encoder: Any) -> None:
        """Refuse a query encoder that is not the index's model (other vectors live in another space)."""
        if int(encoder.dimension) != self.dimension:
            raise ConventionError(
                f"the query encoder {encoder.name!r} gives {encoder.dimension} dimensions; the index has "
                f"{self.dimension} ({self.meta['model']!r})"
            )
        if encoder.name != self.meta["model"]:
            raise ConventionError(
                f"the query encoder is {encoder.name!r} but the index was built with {self.meta['model']!r}; "
                "queries must be encoded with the documents' model"
            )

    def topk(
        self, vectors: np.ndarray, k: int = 1000, *, approximate: bool = False, ef_search: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` of the top ``k`` documents of each query vector (exact unless ``approximate``)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConventionError(f"The 'k' parameter of search must be an int >= 1. Got {k!r} instead.")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise ConventionError(f"query vectors have shape {vectors.shape}; expected (n, {self.dimension})")
        if not np.isfinite(vectors).all():  # a NaN query scores NaN against every document: no ranking
            row = int(np.argmax(~np.isfinite(vectors).all(axis=1)))
            raise StagewiseError(f"query vector {row} is not finite (NaN or infinity): the encoder failed on it")
        if approximate:
            from stagewise.dense.approx import HNSWIndex

            return HNSWIndex.load(self).search(vectors, k, ef_search=ef_search)
        return exact_topk(vectors, self.embeddings, k)

    def search(
        self,
        queries: Any,
        ids: Sequence[str] | None = None,
        *,
        k: int = 1000,
        encoder: Any = None,
        backend: str | None = None,
        approximate: bool = False,
        ef_search: int | None = None,
        name: str | None = None,
    ):
        """Rank documents for each query; returns a :class:`~stagewise.data.run.Run` named
        ``dense-<model>`` (``dense-hnsw-<model>`` when approximate) unless ``name`` is given.

        ``queries`` is a mapping id -> text, an object with ``ids`` and ``texts``, or texts with ``ids``. They
        are encoded with ``encoder`` (default: the index's own model, ``backend`` torch or onnx). Each query
        gets ``min(k, documents)`` results.
        """
        query_ids, texts = _texts(queries, ids, "queries")
        if approximate:  # checked before the model is loaded and the queries encoded
            from stagewise.dense.approx import HNSWIndex

            HNSWIndex.load(self)
        encoder = encoder or self.encoder(backend)
        self.check_encoder(encoder)
        vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
        rows, scores = self.topk(vectors, k, approximate=approximate, ef_search=ef_search)
        default = f"dense-{'hnsw-' if approximate else ''}{self.meta['model']}"
        return runs_from_topk(query_ids, self.doc_ids, rows, scores, name or default)


def _read_meta(folder: Path, *, hint: str | None = None) -> dict[str, Any]:
    """The folder's meta.json as a dict; ``{}`` when there is none (or it is not a regular file)."""
    from stagewise.dense import manifest

    meta_path = folder / "meta.json"
    if not meta_path.is_file():  # a FIFO or a device is no index's metadata
        return {}
    try:
        meta = manifest.parse_json(manifest.read_bounded(meta_path, manifest.MAX_META_BYTES), meta_path)
    except manifest.Damaged as exc:
        raise InputError(meta_path, f"unreadable index metadata ({exc.args[0]})", hint=hint) from None
    if not isinstance(meta, dict):
        raise InputError(meta_path, f"unreadable index metadata (a JSON {manifest.json_kind(meta)})", hint=hint)
    return meta


def _check_rows(vectors: np.ndarray, normalized: bool, doc_ids: Sequence[str], model: str) -> None:
    """Refuse at build time what a saved index is refused for on open: a row not finite, too large for
    float32 scores, or (normalising model) not unit length."""
    from stagewise.dense import manifest

    try:
        manifest.scan_vectors(
            vectors, vectors.shape, vectors.dtype, normalized=normalized,
            describe_row=lambda row: f"the vector of document {doc_ids[row]!r} (row {row})",
        )  # fmt: skip
    except manifest.Damaged as exc:
        raise StagewiseError(f"encoder {model!r} gave a bad vector: {exc.args[0]}") from None


def _load_checked(folder: Path, meta: dict[str, Any], mmap: bool) -> tuple[np.ndarray, list[str]]:
    """The vectors and ids of a saved index, each checked against meta.json (raises ``manifest.Damaged``)."""
    from stagewise.dense import manifest

    n = manifest.count_field(meta, "documents", 0, 2**40)
    d = manifest.count_field(meta, "dimension", 1, 1 << 16)
    kind = manifest.typed_field(meta, "dtype", (str,), f"one of {', '.join(DTYPES)}")
    if kind not in DTYPES:
        raise manifest.Damaged(f"'dtype' is {kind!r}, expected one of {', '.join(DTYPES)}")
    normalized = manifest.typed_field(meta, "normalized", (bool,), "true or false")
    manifest.typed_field(meta, "model", (str,), "the model's name")
    for key in ("model_path", "backend", "precision"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise manifest.Damaged(f"{key!r} is {meta[key]!r}, expected a string or null")
    vectors_entry = manifest.entry(meta, "embeddings", ("dtype", "shape", "crc32_rows", "crc32"))
    ids_entry = manifest.entry(meta, "doc_ids", ("bytes", "crc32"))
    dtype = np.dtype(kind).newbyteorder("<")
    if vectors_entry["dtype"] != dtype.str or vectors_entry["shape"] != [n, d]:
        raise manifest.Damaged(
            f"metadata disagrees with its manifest: {dtype.str!r} x {[n, d]} vectors, the manifest lists "
            f"{vectors_entry['dtype']!r} x {vectors_entry['shape']!r} (a partly copied index?)"
        )
    ids_path = folder / "doc_ids.json"
    size = ids_entry["bytes"]
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 2 + n * manifest.MAX_ID_BYTES:
        raise manifest.Damaged(f"the manifest gives doc_ids.json {size!r} bytes for {n} documents")
    data = manifest.read_bounded(ids_path, size, size=size)
    doc_ids = manifest.parse_doc_ids(data, ids_path, n)
    if manifest.crc(data) != ids_entry["crc32"]:
        raise manifest.Damaged("its CRC-32 differs from the one written at build time (changed or corrupted)", ids_path)
    path = folder / "embeddings.npy"
    offset = manifest.check_vectors_header(path, dtype, (n, d))
    if vectors_entry["crc32_rows"] != manifest.rows_per_block(d, dtype.itemsize):
        raise manifest.Damaged(f"the manifest's CRC-32 blocks are {vectors_entry['crc32_rows']!r} rows")
    try:
        found = manifest.scan_vectors(
            (path, offset), (n, d), dtype, normalized=normalized,
            describe_row=lambda row: f"row {row} (document {doc_ids[row]!r})",
        )  # fmt: skip
    except manifest.Damaged as exc:
        raise manifest.Damaged(exc.args[0], path) from None
    if found["crc32"] != vectors_entry["crc32"]:
        raise manifest.Damaged("its CRC-32 differs from the one written at build time (changed or corrupted)", path)
    manifest.check_norms(vectors_entry, found, path)
    if n == 0:
        return np.zeros((0, d), dtype=dtype), doc_ids
    if mmap:
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(n, d)), doc_ids
    with open(path, "rb") as fh:
        fh.seek(offset)
        return np.fromfile(fh, dtype=dtype, count=n * d).reshape(n, d), doc_ids


def foreign_meta(folder: Path) -> str | None:
    """``meta.json`` when the folder's meta.json is another tool's (not a dense index's): it is not ours to
    replace without --force."""
    try:
        meta = _read_meta(folder)
    except InputError:
        return "meta.json"
    return None if isinstance(meta, dict) and meta.get("format") == FORMAT else "meta.json"


def is_dense_index(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a dense index (its meta.json says so)."""
    try:
        meta = _read_meta(Path(folder))
    except InputError:
        # a damaged meta.json beside a dense index's files is that index's (its error says to re-encode);
        # elsewhere it is the BM25 loader's
        return all(os.path.lexists(Path(folder) / name) for name in ("embeddings.npy", "doc_ids.json"))
    return isinstance(meta, dict) and meta.get("format") == FORMAT
