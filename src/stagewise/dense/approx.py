"""An approximate dense index: faiss HNSW over a :class:`~stagewise.dense.index.DenseIndex`'s vectors
(``pip install 'stagewise[ann]'``), with its recall@k against the exact search measured when it is built.

Exact blocked search is the default and is fast up to a few million vectors on one machine; HNSW trades a
measured amount of recall for sub-linear search on larger corpora.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.dense._deps import require
from stagewise.errors import InputError

FILE = "hnsw.faiss"


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

    def __init__(self, index: Any, report: HNSWReport | None = None) -> None:
        self.index = index
        self.report = report

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
        return cls(index, report)

    def save(self, folder: str | Path) -> Path:
        """Write ``hnsw.faiss`` into the dense index folder (atomically)."""
        faiss = require("faiss")
        from stagewise._io import atomic_path

        target = Path(folder) / FILE
        with atomic_path(target) as tmp:
            faiss.write_index(self.index, str(tmp))
        return target

    @classmethod
    def load(cls, dense: Any) -> HNSWIndex:
        """The HNSW index saved beside ``dense`` (built by ``stagewise encode --hnsw``)."""
        faiss = require("faiss")
        cached = getattr(dense, "_hnsw", None)
        if cached is not None:
            return cached
        if dense.path is None or not (Path(dense.path) / FILE).is_file():
            raise InputError(
                dense.path or "dense index", "has no approximate index", hint="build one with stagewise encode --hnsw"
            )
        out = cls(faiss.read_index(str(Path(dense.path) / FILE)))
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
        scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), kk)
        if (rows < 0).any():  # too few reachable neighbours: fill with nothing rather than row -1
            keep = rows >= 0
            width = int(keep.sum(axis=1).min())
            order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
            rows, scores = np.take_along_axis(rows, order, 1), np.take_along_axis(scores, order, 1)
        return rows.astype(np.int64), scores.astype(np.float32)
