"""The stream engine: a run file larger than memory, evaluated a block of whole queries at a time."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from stagewise._io import display_name
from stagewise.data.qrels import Qrels
from stagewise.data.readers import _format_of
from stagewise.errors import InputError
from stagewise.metrics.context import Conventions
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import RunScores

from ._base import Engine
from ._blocks import BLOCK_BYTES, open_run, runs_from_stream
from ._groups import iter_groups
from ._parts import evaluate_part, gather
from ._sources import is_path, run_sources, trec_file


class StreamEngine(Engine):
    """Reads each TREC run file (plain, ``.gz`` or ``-`` for stdin) in blocks of about ``block_bytes``, cut
    where one query's lines end, and measures each block on its own: memory is bounded by the block, not the
    file. The run must be grouped by query (all of a query's lines together, queries in any order); a query
    whose lines come back later is an error naming the line. Runs given as objects are already in memory and
    are measured whole."""

    name = "stream"

    def __init__(self, block_bytes: int = BLOCK_BYTES) -> None:
        if block_bytes < 1:
            raise ValueError("block_bytes must be >= 1")
        self.block_bytes = block_bytes

    def score_runs(
        self,
        qrels: Qrels,
        sources: list[tuple[str, Any]],
        parsed: list[tuple[str, Measure]],
        base: Conventions,
        duplicates: str,
    ) -> list[RunScores]:
        out = []
        for name, source in sources:
            self._report(len(out), len(sources))
            if not is_path(source):
                run = self._read_whole(source, name, duplicates)
                out.append(gather(qrels, [evaluate_part(qrels, run, parsed, base)], parsed, base, name))
                continue
            where = display_name(source)
            kind = _format_of(source, None)
            if kind != "trec":
                raise InputError(
                    where,
                    f"is a {kind} file; the stream engine reads TREC run files (qid Q0 docid rank score tag)",
                    hint="use --engine local or --engine dask for other formats",
                )
            with open_run(source) as fh:
                parts = [
                    evaluate_part(qrels, run, parsed, base)
                    for run in runs_from_stream(fh, where, name, duplicates, self.block_bytes)
                ]
            if not parts:
                raise InputError(where, "is empty", expected="lines of 'query_id Q0 doc_id rank score run_tag'")
            out.append(gather(qrels, parts, parsed, base, name, where))
        self._report(len(out), len(sources))
        return out

    def map_groups(
        self, runs: Any, fn: Callable[[list[Any]], Any], *, duplicates: str = "error"
    ) -> Iterator[Any]:
        """Groups read side by side from TREC run files sorted by query id (byte order); each file is read in
        blocks of ``block_bytes`` divided among the files, so memory is bounded whatever the number of runs."""
        sources = run_sources(runs)
        for name, source in sources:
            if not (is_path(source) and trec_file(source)):
                where = display_name(source) if is_path(source) else name
                raise InputError(
                    where,
                    "is not a TREC run file; the stream engine reads runs side by side from TREC files",
                    hint="use --engine local",
                )
        per_file = max(2**20, self.block_bytes // len(sources))
        with contextlib.ExitStack() as stack:
            streams = [
                (stack.enter_context(open_run(source)), display_name(source), name, None, 0)
                for name, source in sources
            ]
            for group in iter_groups(streams, duplicates, per_file):
                yield fn(group)

    def __repr__(self) -> str:
        return f"StreamEngine(block_bytes={self.block_bytes})"
