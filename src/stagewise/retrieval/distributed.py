"""BM25 search on Dask workers that share one index folder (the ``stagewise[dask]`` extra).

The queries are cut into partitions of consecutive queries; each partition is searched by a worker, which
opens the index folder by its path (memory-mapped, checked once per worker process and kept open while the
folder is unchanged), and returns raw top-k arrays; the client joins them in query order and turns them into
one :class:`~stagewise.data.run.Run` with its own copy of the document ids. Every query is searched on its own,
so the run is identical, byte for byte when written, to :meth:`BM25Index.search` on one machine.

The index path must name the same folder on every worker: a local cluster shares this machine's disk; on a
cluster, put the index on a shared file system (NFS, Lustre) or copy it to the same path on every node. The
workers' memory holds only the pages of the index that their queries touch (the page cache is shared between
the worker processes of one node).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.errors import InputError, StagewiseError, parameter_error

Progress = Callable[[int, int], None]
_OPEN: dict[tuple, Any] = {}
_OPEN_LOCK = threading.Lock()


def _stamp(folder: Path) -> tuple:
    """What identifies one build of the index at ``folder``: a rebuild swaps in a new folder (a new inode)."""
    info = os.stat(folder / "meta.json")
    return (str(folder.resolve()), info.st_ino, info.st_mtime_ns, info.st_size)


def _worker_index(path: str):
    """The index at ``path``, opened once per worker process (and again after a rebuild)."""
    from stagewise.retrieval.index import BM25Index

    folder = Path(path)
    try:
        key = _stamp(folder)
    except OSError:  # no index there: load says so, as an InputError
        return BM25Index.load(folder)
    with _OPEN_LOCK:
        index = _OPEN.get(key)
        if index is None:
            _OPEN.clear()  # an older build of it, or another index: its maps are released
            index = _OPEN[key] = BM25Index.load(folder)
    return index


def _search_partition(path: str, ids: list[str], texts: list, options: dict[str, Any]):
    """One partition's results: (result counts per query, docs, scores, queries with no indexed term)."""
    top = _worker_index(path).topk(texts, ids, **options)
    return np.diff(top.offsets), top.docs, top.scores, top.empty_queries


def dask_client(scheduler: str | None = None, workers: int | None = None):
    """A ``dask.distributed`` client: of the scheduler at ``scheduler`` (``tcp://host:8786``), or of a new local
    cluster of ``workers`` processes (default: one per CPU) with one thread each. Close it when done."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise StagewiseError(
            "the dask engine needs dask.distributed: pip install 'stagewise[dask]' (or use --engine local)"
        ) from None
    if scheduler:
        try:
            return Client(scheduler)
        except (OSError, ValueError, TimeoutError) as exc:  # unreachable, or not an address
            raise InputError(
                "--scheduler",
                f"cannot use the Dask scheduler at {scheduler!r} ({exc})",
                expected="the address of a running scheduler, such as tcp://HOST:8786",
                hint="start one (dask scheduler), check the address, or leave out --scheduler for a local cluster",
            ) from None
    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    client._stagewise_owns_cluster = cluster  # closed with the client by close_client
    return client


def close_client(client) -> None:
    cluster = getattr(client, "_stagewise_owns_cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


def topk_dask(
    index,
    queries: Sequence[str] | Mapping[str, str] | Any,
    ids: Sequence[str] | None = None,
    *,
    client,
    partitions: int | None = None,
    progress: Progress | None = None,
    **options: Any,
):
    """:meth:`BM25Index.topk` with the queries partitioned over the workers of ``client``; ``index`` is an
    index opened from its folder (the workers open the same folder). ``options`` are topk's (``k``,
    ``variant``, ``k1``, ``b``, ``delta``, ``epsilon``, ``all_documents``). ``partitions`` defaults to four
    per worker. The result is identical to ``index.topk(queries, ids, **options)``."""
    from stagewise.retrieval.index import TopK, _check_ids, _queries

    if index.path is None:
        raise StagewiseError("the dask engine searches a saved index: save it, or open it with BM25Index.load")
    if "workers" in options:
        raise StagewiseError("workers= is the local engine's threads; a dask cluster has its own workers")
    k = options.get("k", 1000)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise parameter_error("k", "search", "an int >= 1", k)
    # every check the local search makes before searching, made here, so that errors come before the cluster
    scoring = index._scoring(*(options.get(name) for name in ("variant", "k1", "b", "delta", "epsilon")))
    query_ids, texts = _queries(queries, ids)
    _check_ids(query_ids, "queries")
    if texts and not (all(isinstance(q, str) for q in texts) or all(isinstance(q, list | tuple) for q in texts)):
        raise StagewiseError("queries must all be strings, or all be lists of terms")
    n = len(query_ids)
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    parts = max(1, min(n, partitions or 4 * n_workers))
    bounds = np.linspace(0, n, parts + 1).astype(int).tolist()
    path = str(Path(index.path).resolve())
    from dask.distributed import as_completed

    futures = {}
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            future = client.submit(_search_partition, path, query_ids[lo:hi], texts[lo:hi], options, pure=False)
            futures[future] = (lo, hi)
    results: dict[int, tuple] = {}
    done = 0
    for future in as_completed(futures):
        lo, hi = futures[future]
        try:
            results[lo] = future.result()
        except InputError as exc:  # raised on a worker: most often, the index is not at that path there
            raise InputError(
                exc.source,
                f"on a Dask worker: {exc.problem}",
                line=exc.line,
                expected=exc.expected,
                hint=exc.hint or "the index folder must be at the same path on every worker",
            ) from None
        done += hi - lo
        if progress is not None:
            progress(done, n)
    if progress is not None and not futures:
        progress(0, 0)
    ordered = [results[lo] for lo in sorted(results)]
    offsets = np.zeros(n + 1, dtype=np.int64)
    if ordered:
        np.cumsum(np.concatenate([part[0] for part in ordered]), out=offsets[1:])
        docs = np.concatenate([part[1] for part in ordered])
        scores = np.concatenate([part[2] for part in ordered])
    else:
        docs, scores = np.zeros(0, dtype=np.int32), np.zeros(0)
    return TopK(query_ids, offsets, docs, scores, scoring, sum(part[3] for part in ordered))


def topk_cluster(
    index,
    queries: Sequence[str] | Mapping[str, str] | Any,
    ids: Sequence[str] | None = None,
    *,
    client=None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    **options: Any,
):
    """:func:`topk_dask` with the client handled here: ``client``'s cluster, else the scheduler at ``scheduler``,
    else a local cluster of ``workers`` processes started for this search and closed after it (also when the
    search fails)."""
    own = client is None
    client = client if client is not None else dask_client(scheduler, workers)
    try:
        return topk_dask(index, queries, ids, client=client, progress=progress, **options)
    finally:
        if own:
            close_client(client)


def search_dask(
    index,
    queries: Sequence[str] | Mapping[str, str] | Any,
    ids: Sequence[str] | None = None,
    *,
    client=None,
    scheduler: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    **options: Any,
):
    """:meth:`BM25Index.search` on a Dask cluster: ``client``'s, or the scheduler at ``scheduler``, or a local
    cluster started for this search and closed after it. Returns the same :class:`~stagewise.data.run.Run`.

    On a cluster: ``search_dask(BM25Index.load("bm25-index"), queries, scheduler="tcp://10.0.0.5:8786",
    k=1000)``. The same with an in-process client (the runs equal :meth:`BM25Index.search`'s):

    >>> from dask.distributed import Client
    >>> from stagewise.retrieval import BM25Index
    >>> import tempfile
    >>> folder = tempfile.mkdtemp() + "/bm25-index"
    >>> saved = BM25Index.build(["wing lift in a slipstream", "lift of a flat plate", "heat transfer"],
    ...                         ids=["d1", "d2", "d3"]).save(folder)
    >>> index = BM25Index.load(folder)  # the workers open the saved index's files, not a copy sent to them
    >>> with Client(processes=False, dashboard_address=None) as client:
    ...     run = search_dask(index, {"q1": "lift of wings"}, client=client, k=10)
    >>> run.to_polars()["doc_id"].to_list()
    ['d1', 'd2']
    >>> index.search({"q1": "lift of wings"}, k=10).to_polars()["doc_id"].to_list()
    ['d1', 'd2']
    """
    top = topk_cluster(index, queries, ids, client=client, scheduler=scheduler, progress=progress, **options)
    return top.to_run(index, name=name)
