"""Fusion on the stream and Dask engines: runs fused a group of whole queries at a time, straight to a file.

A fused query depends on that query's rows in each run only (normalisations are per run and query), so fusing
groups of queries and writing them one after another gives the bytes the in-memory :func:`fuse` writes. The
supervised methods fit on every judged query at once, so they need the local engine unless their trained
parameters are given.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from stagewise.errors import StagewiseError
from stagewise.fusion.api import fuse
from stagewise.fusion.methods import FusionMethod
from stagewise.fusion.options import FusionOptions, resolve_options


def _fuse_group(group: list[Any], names: list[str], options: FusionOptions, name: str | None) -> tuple[bytes, dict]:
    """One group's fused lines (TREC) and its fusion statement."""
    from stagewise.fusion.writer import write_trec_lines

    if options.queries == "intersection":
        common = group[0].query_ids
        for run in group[1:]:
            common = np.intersect1d(common, run.query_ids)
        if len(common) == 0:
            return b"", {}
    fused = fuse(dict(zip(names, group, strict=True)), options=options, name=name)
    sink = io.BytesIO()
    if len(fused):
        write_trec_lines(fused, sink)
    return sink.getvalue(), fused.fusion


def fuse_to(
    runs: Any,
    sink: IO[bytes],
    method: str | FusionMethod | None = None,
    *,
    options: FusionOptions | None = None,
    engine: Any = "stream",
    scheduler: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
    **overrides: Any,
) -> dict[str, Any]:
    """Fuse run files on an engine, writing the fused run to ``sink`` (a binary stream) as TREC lines; returns
    the fusion statement (:attr:`FusedRun.fusion`). ``method``, ``options``, ``name`` and the ``overrides`` are
    :func:`fuse`'s; ``engine`` is ``"stream"`` (files sorted by query id, byte order: ``LC_ALL=C sort -k1,1 -s``),
    ``"dask"`` (with ``scheduler``) or an engine object. The bytes written are those :func:`fuse` and
    :func:`stagewise.write_run` give."""
    from stagewise.engines import get_engine
    from stagewise.engines._sources import run_sources

    chosen_options = resolve_options(options, method, **overrides)
    info = chosen_options.info
    if info.supervised and len(chosen_options.trained) < len(info.trained):
        raise StagewiseError(
            f"{info.name} learns from judgements over all queries at once: fuse it with --engine local, or "
            f"give its trained parameters ({', '.join(info.trained)})"
        )
    sources = run_sources(runs)
    names = [n for n, _ in sources]
    task = functools.partial(_fuse_group, names=names, options=chosen_options, name=name)
    chosen = get_engine(engine, scheduler=scheduler)
    statement: dict[str, Any] | None = None
    n_queries = n_results = 0
    try:
        for text, described in chosen.map_groups(dict(sources), task, duplicates=duplicates):
            if not described:
                continue
            sink.write(text)
            statement = statement or described
            n_queries += described["n_queries"]
            n_results += described["n_results"]
    finally:
        if chosen is not engine:
            chosen.close()
    if statement is None:
        raise StagewiseError("no query is in every run; use the union policy, or check the query ids")
    return {**statement, "n_queries": n_queries, "n_results": n_results}


def fuse_blocks_to(
    runs: list[Any],
    sink: IO[bytes],
    method: str | FusionMethod | None = None,
    *,
    options: FusionOptions | None = None,
    name: str | None = None,
    block_queries: int = 100,
    on_block: Callable[[Any], None] | None = None,
    **overrides: Any,
) -> dict[str, Any] | None:
    """Fuse loaded runs ``block_queries`` queries at a time, writing each block's TREC lines to ``sink``
    before the next is fused: memory holds the runs and one block's fusion, not the whole fused run. The bytes
    are those of :func:`fuse` then :func:`stagewise.fusion.write_fused`; returns the fusion statement, or
    ``None`` (nothing written) where blocks would not give the same result: supervised methods, the
    ``intersection``/``error`` query policies, or a tie convention other than ``docid``."""
    from stagewise.fusion.writer import write_trec_lines

    chosen = resolve_options(options, method, **overrides)
    if chosen.info.supervised or chosen.queries != "union" or chosen.ties != "docid" or not runs:
        return None
    every = functools.reduce(np.union1d, [run.query_ids for run in runs])
    statement: dict[str, Any] | None = None
    n_queries = n_results = 0
    for first in range(0, len(every), block_queries):
        low, high = every[first], every[min(first + block_queries, len(every)) - 1]
        parts = [_query_block(run, low, high) for run in runs]
        fused = fuse(parts, options=chosen, name=name)
        write_trec_lines(fused, sink)
        if on_block is not None:  # the caller sees each block's fused run (a command's summary line)
            on_block(fused)
        statement = statement or fused.fusion
        n_queries += fused.fusion["n_queries"]
        n_results += fused.fusion["n_results"]
    assert statement is not None
    return {**statement, "n_queries": n_queries, "n_results": n_results}


def _query_block(run: Any, low: str, high: str) -> Any:
    """The rows of ``run``'s queries ``low``..``high`` (ids, inclusive) as a run of their own (empty when it
    has none of them: the block still has every run, so weights and the statement's run names line up)."""
    from stagewise.data.run import Run
    from stagewise.data.strings import StringColumn

    first = int(np.searchsorted(run.query_ids, low, side="left"))
    last = int(np.searchsorted(run.query_ids, high, side="right"))
    lo, hi = int(run.offsets[first]), int(run.offsets[last])
    offsets = run.docs.offsets[lo : hi + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    docs = StringColumn(offsets - start, bytes(run.docs.data[start:end]))
    return Run(
        run.query_ids[first:last],
        run.query_codes[lo:hi] - np.int32(first),
        docs,
        run.scores[lo:hi],
        None if run.ranks is None else run.ranks[lo:hi],
        None,
        run.pair_keys[lo:hi],
        name=run.name,
        source=run.source,
        tag=run.tag,
    )
