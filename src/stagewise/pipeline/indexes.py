"""An index folder as a retriever, whichever kind it is: :func:`open_index` and :func:`search_index`.

``stagewise index`` writes a BM25 index and ``stagewise encode`` a dense one; both keep a ``meta.json`` that
says which. The choice between them, which options apply to which, and the Dask cluster of a distributed BM25
search are made here, once, for the CLI and for a script alike.

>>> import tempfile
>>> from stagewise.retrieval import BM25Index
>>> folder = BM25Index.build({"d1": "wing lift", "d2": "heat transfer"}).save(tempfile.mkdtemp() + "/idx")
>>> index_kind(folder), open_index(folder).name
('bm25', 'bm25-lucene(k1=1.2,b=0.75)')
>>> found = search_index(folder, {"q1": "lifting wings", "q2": "boundary"}, SearchOptions(k=5))
>>> found.run.rankings(), found.empty_queries, found.scoring
({'q1': ['d1']}, 1, 'lucene(k1=1.2,b=0.75)')
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from stagewise.errors import InputError

__all__ = ["SearchOptions", "Searched", "index_kind", "open_index", "search_index"]

ENGINES = ("local", "dask")
_BM25_ONLY = ("variant", "k1", "b", "delta", "epsilon")


def index_kind(path: str | os.PathLike[str]) -> str:
    """``"dense"`` for a folder written by ``stagewise encode`` (its meta.json says so), else ``"bm25"`` (whose
    loader says what is wrong with a folder that is no index)."""
    from stagewise.dense.index import is_dense_index

    return "dense" if is_dense_index(path) else "bm25"


def open_index(path: str | os.PathLike[str], *, mmap: bool = True) -> Any:
    """The index in folder ``path`` as a :class:`~stagewise.protocols.Retriever`: a
    :class:`~stagewise.dense.DenseIndex` or a :class:`~stagewise.retrieval.BM25Index`, checked as it opens
    (memory-mapped unless ``mmap=False``)."""
    if index_kind(path) == "dense":
        from stagewise.dense.index import DenseIndex

        return DenseIndex.load(path, mmap=mmap)
    from stagewise.retrieval.index import BM25Index

    return BM25Index.load(path, mmap=mmap)


@dataclass(frozen=True)
class SearchOptions:
    """How to search an index folder, as one value (``dataclasses.replace`` to change one field).

    ``k`` results per query, the run's ``name`` (default: the retriever's). BM25 only: ``variant``, ``k1``,
    ``b``, ``delta``, ``epsilon`` override the index's scoring; ``all_documents`` ranks documents matching no
    term too; ``workers`` threads (with ``engine="dask"`` and no ``scheduler``: the local cluster's
    processes); ``engine`` ``local`` or ``dask`` (queries partitioned over Dask workers that each map the same
    folder). Dense only: ``backend`` (torch or onnx) encodes the queries, ``approximate`` searches the HNSW
    index.
    """

    k: int = 1000
    name: str | None = None
    engine: str = "local"
    scheduler: str | None = None
    workers: int | None = None
    variant: str | None = None
    k1: float | None = None
    b: float | None = None
    delta: float | None = None
    epsilon: float | None = None
    all_documents: bool = False
    backend: str | None = None
    approximate: bool = False

    def check(self, kind: str, path: str | os.PathLike[str] = "index") -> list[str]:
        """Raise :class:`~stagewise.errors.InputError` for options that contradict each other or the index
        ``kind`` (at ``path``); return a note for each option the index ignores (said, not an error)."""
        if self.engine not in ENGINES:
            raise InputError("--engine", f"unknown engine {self.engine!r}", expected=" or ".join(ENGINES))
        if self.scheduler is not None and self.engine != "dask":
            raise InputError("--scheduler", "is only used with --engine dask", hint="add --engine dask")
        if kind == "dense":
            if self.engine == "dask":
                raise InputError(str(path), "is a dense index; --engine dask searches BM25 indexes only")
            bm25_only = any(getattr(self, key) is not None for key in _BM25_ONLY) or self.all_documents
            if bm25_only or self.workers not in (None, 1):
                return ["BM25 options are ignored for a dense index"]
        elif self.approximate or self.backend is not None:
            return ["--approximate and --backend are for dense indexes; ignored here"]
        return []

    def bm25(self) -> dict[str, Any]:
        """The keywords of :meth:`~stagewise.retrieval.BM25Index.topk` these options set."""
        return {"k": self.k, "all_documents": self.all_documents, **{key: getattr(self, key) for key in _BM25_ONLY}}


@dataclass(frozen=True)
class Searched:
    """A search's run, the index that made it, its kind, how it scored (the BM25 scoring, or the model with
    exact or approximate search) and how many queries had no indexed term (BM25; 0 for dense)."""

    run: Any
    index: Any
    kind: str
    scoring: str
    empty_queries: int = 0


def search_index(
    path: str | os.PathLike[str],
    queries: Any,
    options: SearchOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    **overrides: Any,
) -> Searched:
    """Search the index in folder ``path`` (BM25 or dense, by what it holds) with ``queries`` (a mapping id ->
    text, or a :class:`~stagewise.retrieval.Documents`).

    ``options`` is a :class:`SearchOptions`; keyword ``overrides`` replace its fields (``k=10``). They are
    checked (:meth:`SearchOptions.check`) before the index is opened. With ``engine="dask"`` a cluster is
    used: the scheduler's, else a local one started here and closed after the search.
    """
    options = replace(options or SearchOptions(), **overrides)
    kind = index_kind(path)
    options.check(kind, path)
    if kind == "dense":
        from stagewise.dense.index import DenseIndex

        index = DenseIndex.load(path)
        run = index.search(queries, k=options.k, backend=options.backend, approximate=options.approximate,
                           name=options.name)  # fmt: skip
        how = "approximate (HNSW)" if options.approximate else "exact"
        return Searched(run, index, kind, f"{index.meta['model']} ({how} inner product)")
    from stagewise.retrieval.index import BM25Index

    index = BM25Index.load(path)
    if options.engine == "dask":
        from stagewise.retrieval.distributed import topk_cluster

        top = topk_cluster(index, queries, scheduler=options.scheduler, workers=options.workers, progress=progress,
                           **options.bm25())  # fmt: skip
    else:
        top = index.topk(queries, workers=options.workers or 1, progress=progress, **options.bm25())
    return Searched(top.to_run(index, name=options.name), index, kind, str(top.scoring), top.empty_queries)
