"""A dense index: document vectors memory-mapped from disk, with what made them, searched exactly in blocks.

Layout of an index folder::

    meta.json        format, model name and path, backend, dimension, normalisation, dtype, corpus checksum,
                     truncation count, similarity
    embeddings.npy   [documents, dimension] float32 or float16, memory-mapped when searched
    doc_ids.json     document ids, in row order
    onnx/            an ONNX export of the model, made the first time the onnx backend needs one
    hnsw.faiss       an approximate (HNSW) index, when built (see :mod:`stagewise.dense.approx`)

Scores are inner products of float32 vectors (cosine when the model normalises). Exact top-k multiplies a
block of queries by a block of documents at a time, so memory stays bounded whatever the corpus size; ties in
score keep the document indexed first (as BM25 search does).
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
OWNED_FILES = frozenset({"embeddings.npy", "doc_ids.json", "meta.json", "hnsw.faiss", "onnx"})
FORMAT_VERSION = 1
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
        refused unless ``force`` (see :mod:`stagewise._folder`); an ONNX export of the same model (and weights)
        already in the old folder is kept, an approximate index never (its vectors may have changed)."""
        from stagewise import _folder

        target = Path(path)
        _folder.check_target(target, owned=OWNED_FILES, force=force, what="dense index", foreign_file=_foreign_meta)

        def write(tmp: Path) -> None:
            np.save(tmp / "embeddings.npy", np.ascontiguousarray(self.embeddings), allow_pickle=False)
            (tmp / "doc_ids.json").write_text(json.dumps(self.doc_ids, ensure_ascii=False), encoding="utf-8")
            (tmp / "meta.json").write_text(json.dumps(self.meta, indent=2) + "\n", encoding="utf-8")
            old_onnx = target / "onnx"
            made = self._encoders.get("onnx")
            made_folder = getattr(made, "folder", None)
            if made_folder is not None and getattr(made, "source", None) and Path(made_folder).is_dir():
                shutil.copytree(made_folder, tmp / "onnx")  # an export made for this index travels with it
            elif old_onnx.is_dir() and self._export_is_ours(old_onnx):
                shutil.copytree(old_onnx, tmp / "onnx")

        _folder.replace_folder(target, write, owned=OWNED_FILES)
        self.path = target
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
        """Open an index folder; the vectors are memory-mapped read-only unless ``mmap=False``."""
        folder = Path(path)
        meta = _read_meta(folder)
        if not meta:
            raise InputError(
                folder, "is not a stagewise dense index (no meta.json)", hint="build one with `stagewise encode`"
            )
        if meta.get("format") == "stagewise-bm25-index":
            raise InputError(
                folder, "is a BM25 index (from stagewise index), not a dense index", hint="give it where BM25 goes"
            )
        if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
            raise InputError(
                folder / "meta.json",
                f"index format {meta.get('format')!r} version {meta.get('format_version')!r}",
                expected=f"{FORMAT!r} version {FORMAT_VERSION}",
            )
        try:
            embeddings = np.load(folder / "embeddings.npy", mmap_mode="r" if mmap else None, allow_pickle=False)
            doc_ids = json.loads((folder / "doc_ids.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(folder, f"index files are missing or unreadable ({exc})") from None
        if embeddings.shape != (meta["documents"], meta["dimension"]) or len(doc_ids) != meta["documents"]:
            raise InputError(folder / "meta.json", "metadata disagrees with the arrays (a partly copied index?)")
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
        encoder = load_encoder(model, backend=backend, onnx_cache=cache)
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
        encoder = encoder or self.encoder(backend)
        self.check_encoder(encoder)
        vectors = np.asarray(encoder.encode(texts), dtype=np.float32)
        rows, scores = self.topk(vectors, k, approximate=approximate, ef_search=ef_search)
        default = f"dense-{'hnsw-' if approximate else ''}{self.meta['model']}"
        return runs_from_topk(query_ids, self.doc_ids, rows, scores, name or default)


def _read_meta(folder: Path) -> dict[str, Any]:
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return {}
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(meta_path, f"unreadable index metadata ({exc})") from None


def _foreign_meta(folder: Path) -> str | None:
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
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT  # a damaged meta.json is the BM25 loader's
