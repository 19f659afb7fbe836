"""The Dask engine: many run files, each large one read in partitions of whole queries, on a Dask cluster.

Each plain TREC run file is cut into partitions of about ``partition_bytes``; a partition's ends are moved to
the next place where one query's lines end and another's begin (every task finds the same boundaries, so each
query is read by exactly one task). A task streams its byte range in blocks (bounded memory on the worker),
applies the metrics engine's per-query kernels and sends back the per-query values; the client gathers them
into the in-memory result (see ``_parts``). Compressed files and the tabular formats are one task each.

The qrels are sent to every worker once. Measures travel as their canonical text and are parsed on the worker.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Callable, Iterator
from typing import Any

from stagewise._io import display_name
from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_run
from stagewise.errors import InputError, StagewiseError
from stagewise.metrics.context import Conventions
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import RunScores

from ._base import Engine
from ._blocks import BLOCK_BYTES, count_lines, open_run, query_boundary, runs_from_stream
from ._groups import iter_groups, lower_bound, split_queries
from ._parts import Part, evaluate_part, gather, merge_parts
from ._sources import is_path, run_sources, trec_file

#: Nominal bytes of run file per task (a partition is then moved to whole queries).
PARTITION_BYTES = 64 * 2**20

INSTALL_HINT = "the Dask engine needs dask and distributed: pip install 'stagewise[dask]'"


def _distributed():
    try:
        import distributed
    except ImportError:
        raise StagewiseError(INSTALL_HINT) from None
    return distributed


# ------------------------------------------------------------------------------------------------------ tasks
def _error_record(exc: StagewiseError) -> dict[str, Any]:
    """An error as plain data: the error classes take keyword arguments, which pickling drops."""
    if isinstance(exc, InputError):
        return {
            "input": True,
            "source": exc.source,
            "problem": exc.problem,
            "line": exc.line,
            "expected": exc.expected,
            "hint": exc.hint,
        }
    return {"input": False, "message": str(exc)}


def _raise_record(record: dict[str, Any]) -> None:
    if record["input"]:
        raise InputError(
            record["source"], record["problem"], line=record["line"], expected=record["expected"], hint=record["hint"]
        )
    raise StagewiseError(record["message"])


def _range_task(
    path: str, where: str, name: str, index: int, count: int, size: int, qrels: Qrels, metrics: list[tuple[str, str]],
    base: Conventions, duplicates: str, block_bytes: int,
) -> Part | dict[str, Any]:
    """Partition ``index`` of ``count`` of a plain TREC file: its byte range moved to whole queries, streamed."""
    parsed = [(key, Measure.parse(text)) for key, text in metrics]
    try:
        start = query_boundary(path, size * index // count, size)
        end = query_boundary(path, size * (index + 1) // count, size)
        if end <= start:
            return merge_parts([])

        def read(line_base: int) -> Part:
            with open(path, "rb") as fh:
                fh.seek(start)
                runs = runs_from_stream(fh, where, name, duplicates, block_bytes, end - start, line_base=line_base)
                return merge_parts([evaluate_part(qrels, run, parsed, base) for run in runs])

        try:
            return read(0)
        except InputError:  # again, counting the lines before the partition, so the error names the file's line
            return read(count_lines(path, start))
    except StagewiseError as exc:
        return _error_record(exc)


def _file_task(
    source: Any, where: str, name: str, qrels: Qrels, metrics: list[tuple[str, str]], base: Conventions,
    duplicates: str, block_bytes: int,
) -> Part | dict[str, Any]:
    """A whole file: a compressed TREC run streamed in blocks, any other format read whole."""
    parsed = [(key, Measure.parse(text)) for key, text in metrics]
    try:
        if trec_file(source):
            with open_run(source) as fh:
                parts = [
                    evaluate_part(qrels, run, parsed, base)
                    for run in runs_from_stream(fh, where, name, duplicates, block_bytes)
                ]
            return merge_parts(parts)
        return evaluate_part(qrels, read_run(source, name=name, duplicates=duplicates), parsed, base)
    except StagewiseError as exc:
        return _error_record(exc)


def _group_task(
    paths: list[str], wheres: list[str], names: list[str], low: str | None, high: str | None,
    fn: Callable[[list[Any]], Any], duplicates: str, block_bytes: int,
) -> list[Any] | dict[str, Any]:
    """``fn`` over the groups of queries in ``[low, high)`` of sorted run files, each range found by binary
    search."""
    try:
        ranges = []
        for path in paths:
            size = os.path.getsize(path)
            start = 0 if low is None else lower_bound(path, low, size)
            end = size if high is None else lower_bound(path, high, size)
            ranges.append((start, max(0, end - start)))

        def read(line_bases: list[int]) -> list[Any]:
            with contextlib.ExitStack() as stack:
                streams = []
                for path, where, name, (start, length), lines in zip(paths, wheres, names, ranges, line_bases,
                                                                      strict=True):
                    fh = stack.enter_context(open(path, "rb"))
                    fh.seek(start)
                    streams.append((fh, where, name, length, lines))
                return [fn(group) for group in iter_groups(streams, duplicates, block_bytes)]

        try:
            return read([0] * len(paths))
        except InputError:  # again, counting the lines before each range, so the error names the file's line
            return read([count_lines(path, start) for path, (start, _) in zip(paths, ranges, strict=True)])
    except StagewiseError as exc:
        return _error_record(exc)


def _plain(path: str) -> bool:
    from stagewise._io import compression_of

    with open(path, "rb") as fh:
        return compression_of(fh.read(4)) is None  # gzip and lz4 are read whole, decompressed


# ----------------------------------------------------------------------------------------------------- engine
class DaskEngine(Engine):
    """Runs the per-query kernels on a Dask cluster and gathers per-query values and means on the client.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); by default a local cluster is started for the
        call (``n_workers`` processes of ``threads_per_worker`` threads) and closed after it.
    client : distributed.Client, optional
        A client already connected; it is used as is and left open.
    n_workers, threads_per_worker, processes
        The local cluster's shape (default: one single-threaded worker process per CPU).
    partition_bytes : int, default=64 MiB
        Nominal bytes of run file per task; each partition is moved to whole queries.
    block_bytes : int, default=2 MiB
        Bytes a task reads at a time (bounds a worker's memory per task).
    progress : callable, optional
        Called as ``progress(done, total)`` in tasks as the cluster reports them finished (the CLI draws its
        progress bar from it).

    The run files must be readable at the same paths by the workers (a shared file system), and the workers
    need stagewise installed.
    """

    name = "dask"
    progress_text = ("starting the Dask cluster", "Dask tasks", "tasks")

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        client: Any = None,
        n_workers: int | None = None,
        threads_per_worker: int = 1,
        processes: bool = True,
        partition_bytes: int = PARTITION_BYTES,
        block_bytes: int = BLOCK_BYTES,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        _distributed()
        if partition_bytes < 1 or block_bytes < 1:
            raise ValueError("partition_bytes and block_bytes must be >= 1")
        self.scheduler = scheduler
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.partition_bytes = partition_bytes
        self.block_bytes = block_bytes
        self.progress = progress
        self._client = client
        self._owned: list[Any] = []

    @property
    def client(self):
        """The Dask client (connecting, or starting the local cluster, on first use)."""
        if self._client is None:
            distributed = _distributed()
            if self.scheduler is not None:
                try:
                    self._client = distributed.Client(self.scheduler, timeout="30s")
                except OSError as exc:
                    raise StagewiseError(
                        f"cannot reach the Dask scheduler at {self.scheduler!r} ({exc}); check --scheduler, or "
                        "leave it out to start a local cluster"
                    ) from None
            else:
                cluster = distributed.LocalCluster(
                    n_workers=self.n_workers or os.cpu_count() or 1,
                    threads_per_worker=self.threads_per_worker,
                    processes=self.processes,
                    dashboard_address=":0",
                )
                self._client = distributed.Client(cluster)
                self._owned.append(cluster)
            self._owned.insert(0, self._client)
        return self._client

    def close(self) -> None:
        for thing in self._owned:
            with contextlib.suppress(Exception):
                thing.close()
        if self._owned:
            self._client = None
        self._owned = []

    def score_runs(
        self,
        qrels: Qrels,
        sources: list[tuple[str, Any]],
        parsed: list[tuple[str, Measure]],
        base: Conventions,
        duplicates: str,
    ) -> list[RunScores]:
        client = self.client
        metrics = [(name, str(measure)) for name, measure in parsed]
        shared = client.scatter(qrels, broadcast=True, hash=False)
        futures: list[list[Any]] = []
        wheres: list[str] = []
        for name, source in sources:
            where = display_name(source) if is_path(source) else name
            wheres.append(where)
            if is_path(source) and str(source) == "-":
                raise InputError(where, "is stdin, which the Dask workers cannot read", hint="use --engine stream")
            if is_path(source):
                path = os.fspath(source)
                if not os.path.isfile(path):
                    raise InputError(where, "does not exist" if not os.path.exists(path) else "is not a file")
            if is_path(source) and trec_file(source) and _plain(os.fspath(source)):
                path = os.path.abspath(os.fspath(source))
                size = os.path.getsize(path)
                count = max(1, math.ceil(size / self.partition_bytes))
                futures.append(
                    [
                        client.submit(
                            _range_task, path, where, name, i, count, size, shared, metrics, base, duplicates,
                            self.block_bytes, pure=False,
                        )
                        for i in range(count)
                    ]
                )
            else:
                item = os.path.abspath(os.fspath(source)) if is_path(source) else source
                futures.append(
                    [
                        client.submit(
                            _file_task, item, where, name, shared, metrics, base, duplicates, self.block_bytes,
                            pure=False,
                        )
                    ]
                )
        flat = [f for group in futures for f in group]
        self._show_progress(flat)
        results = client.gather(flat)
        out, at = [], 0
        for (name, _), where, group in zip(sources, wheres, futures, strict=True):
            parts = results[at : at + len(group)]
            at += len(group)
            for part in parts:
                if isinstance(part, dict):
                    _raise_record(part)
            out.append(gather(qrels, parts, parsed, base, name, where))
        return out

    def map_groups(
        self, runs: Any, fn: Callable[[list[Any]], Any], *, duplicates: str = "error"
    ) -> Iterator[Any]:
        """Groups of plain TREC run files sorted by query id (byte order): the query space is cut at split
        queries taken from the largest file, each range is a task, and results come back in query order."""
        sources = run_sources(runs)
        paths, wheres, names = [], [], []
        for name, source in sources:
            where = display_name(source) if is_path(source) else name
            if not (is_path(source) and trec_file(source) and os.path.isfile(source) and _plain(os.fspath(source))):
                raise InputError(
                    where,
                    "is not a plain TREC run file; the Dask engine fuses uncompressed TREC files it can seek in",
                    hint="use --engine stream or --engine local",
                )
            paths.append(os.path.abspath(os.fspath(source)))
            wheres.append(where)
            names.append(name)
        sizes = [os.path.getsize(p) for p in paths]
        largest = int(max(range(len(paths)), key=lambda i: sizes[i]))
        count = max(1, math.ceil(sum(sizes) / self.partition_bytes))
        splits = split_queries(paths[largest], sizes[largest], count)
        bounds = [None, *splits, None]
        client = self.client
        per_file = max(2**20, self.block_bytes // len(paths))
        futures = [
            client.submit(
                _group_task, paths, wheres, names, low, high, fn, duplicates, per_file, pure=False
            )
            for low, high in itertools.pairwise(bounds)
        ]
        for done, future in enumerate(futures, start=1):  # in query order, each range as soon as it is ready
            result = future.result()
            if self.progress is not None:
                self.progress(done, len(futures))
            if isinstance(result, dict):
                _raise_record(result)
            yield from result

    def _show_progress(self, futures: list[Any]) -> None:
        """Reports ``progress(done, total)`` as the cluster says tasks finish (``distributed.as_completed``)."""
        if self.progress is None:
            return
        distributed = _distributed()
        self.progress(0, len(futures))
        for done, _ in enumerate(distributed.as_completed(futures), start=1):
            self.progress(done, len(futures))

    def __repr__(self) -> str:
        where = self.scheduler or "local cluster"
        return f"DaskEngine({where!r})"
