"""Fusion on the stream and Dask engines: runs fused a group of whole queries at a time, straight to a file.

A fused query depends on that query's rows in each run only (normalisations are per run and query), so fusing
groups of queries and writing them one after another gives the bytes the in-memory :func:`fuse` writes. The
supervised methods fit on every judged query at once, so they need the local engine unless their trained
parameters are given.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from stagewise.errors import StagewiseError
from stagewise.fusion.api import fuse, split_params
from stagewise.fusion.methods import FusionMethod


def _fuse_group(group: list[Any], names: list[str], method: str, options: dict[str, Any]) -> tuple[bytes, dict]:
    """One group's fused lines (TREC) and its fusion statement."""
    from stagewise.data.writers import write_trec_run

    if options.get("queries") == "intersection":
        common = group[0].query_ids
        for run in group[1:]:
            common = np.intersect1d(common, run.query_ids)
        if len(common) == 0:
            return b"", {}
    fused = fuse(dict(zip(names, group, strict=True)), method, **options)
    sink = io.BytesIO()
    if len(fused):
        write_trec_run(fused, sink)
    return sink.getvalue(), fused.fusion


def fuse_to(
    runs: Any,
    sink: IO[bytes],
    method: str | FusionMethod = "rrf",
    *,
    engine: Any = "stream",
    scheduler: str | None = None,
    norm: str | None = None,
    depth: int | None = None,
    queries: str = "union",
    missing: str | None = None,
    weights: Sequence[float] | None = None,
    name: str | None = None,
    duplicates: str = "error",
    **params: Any,
) -> dict[str, Any]:
    """Fuse run files on an engine, writing the fused run to ``sink`` (a binary stream) as TREC lines; returns
    the fusion statement (:attr:`FusedRun.fusion`). Arguments are :func:`fuse`'s; ``engine`` is ``"stream"``
    (files sorted by query id, byte order: ``LC_ALL=C sort -k1,1 -s``), ``"dask"`` (with ``scheduler``) or an
    engine object. The bytes written are those :func:`fuse` and :func:`stagewise.write_run` give."""
    from stagewise.engines import get_engine
    from stagewise.engines._sources import run_sources

    base = FusionMethod.parse(method) if isinstance(method, str | FusionMethod) else None
    if base is None:
        raise StagewiseError(f"method must be a name such as 'rrf' or a FusionMethod, not {type(method).__name__}")
    _, trained = split_params(base.info, params)
    if base.info.supervised and len(trained) < len(base.info.trained):
        raise StagewiseError(
            f"{base.info.name} learns from judgements over all queries at once: fuse it with --engine local, or "
            f"give its trained parameters ({', '.join(base.info.trained)})"
        )
    sources = run_sources(runs)
    names = [n for n, _ in sources]
    options = dict(norm=norm, depth=depth, queries=queries, missing=missing, weights=weights, name=name, **params)
    task = functools.partial(_fuse_group, names=names, method=str(base), options=options)
    chosen = get_engine(engine, scheduler=scheduler)
    statement: dict[str, Any] | None = None
    n_queries = n_results = 0
    try:
        for text, info in chosen.map_groups(dict(sources), task, duplicates=duplicates):
            if not info:
                continue
            sink.write(text)
            statement = statement or info
            n_queries += info["n_queries"]
            n_results += info["n_results"]
    finally:
        if chosen is not engine:
            chosen.close()
    if statement is None:
        raise StagewiseError("no query is in every run; use the union policy, or check the query ids")
    return {**statement, "n_queries": n_queries, "n_results": n_results}
