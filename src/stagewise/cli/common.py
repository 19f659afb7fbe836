"""What the subcommands share: failing cleanly, writing output atomically, splitting metric lists."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.metrics.defaults import DEFAULT_METRICS

# For --help, which must not import the metrics engine (numpy, polars): the same tuple evaluate() uses.
DEFAULT_METRICS_TEXT = ", ".join(DEFAULT_METRICS)


class Ties(StrEnum):
    """The evaluation's tie conventions, as CLI choices (see stagewise.metrics.context.Conventions)."""

    docid = "docid"
    input = "input"
    rank = "rank"


class Missing(StrEnum):
    """What happens to a judged query absent from a run, as CLI choices."""

    zero = "zero"
    skip = "skip"
    error = "error"


# Convention options shared by the commands that evaluate runs (eval, compare).
RelevanceLevelOption = Annotated[
    int,
    typer.Option("--relevance-level", "-l", help="A label >= this is relevant for binary metrics (trec_eval -l)."),
]
TiesOption = Annotated[
    Ties,
    typer.Option(
        help="Order of equal scores: docid (descending, trec_eval), input (file order) or rank (the rank column)."
    ),
]
MaxRetOption = Annotated[
    int | None, typer.Option("--max-ret", "-M", help="Only the first N results of each query count (trec_eval -M).")
]
JudgedOnlyOption = Annotated[
    bool, typer.Option("--judged-only", "-J", help="Drop unjudged results before measuring (trec_eval -J).")
]


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`StagewiseError` into one line on stderr and exit code 2 (no traceback)."""
    from stagewise.errors import StagewiseError

    try:
        yield
    except StagewiseError as exc:
        typer.echo(f"stagewise: error: {exc}", err=True)
        raise typer.Exit(2) from None


def emit(text: str, output: Path | None) -> None:
    """Write ``text`` to ``output`` atomically, or to stdout."""
    if output is None:
        sys.stdout.write(text)
        return
    from stagewise._io import atomic_write

    with atomic_write(output) as fh:
        fh.write(text)
    typer.echo(f"wrote {output}", err=True)


def show_table(rich: Callable[[int], Any], plain: Callable[[], str]) -> None:
    """A table on stdout: rich (box drawing, bold best values) on a terminal; on a pipe or in a file, plain
    ASCII columns with the best values marked ``*``, which ``grep``, ``cut`` and diffs read. ``rich`` takes the
    terminal's width."""
    from rich.console import Console

    console = Console()
    if console.is_terminal:
        console.print(rich(console.width))
    else:
        sys.stdout.write(plain())


def split_metrics(values: list[str]) -> list[str]:
    """``-m map,ndcg@10 -m P@5(rel=2)`` -> each metric once, commas inside parentheses kept; trec_eval's cutoff
    lists expand (``ndcg_cut.10,20`` -> ``ndcg_cut_10``, ``ndcg_cut_20``, the names trec_eval prints)."""
    from stagewise.metrics.measures import expand_cutoff_lists

    out: list[str] = []
    for value in values:
        depth, start = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                out.append(value[start:i])
                start = i + 1
        out.append(value[start:])
    return expand_cutoff_lists([m.strip() for m in out if m.strip()])


def read_runs_with_progress(paths: list[str]) -> list:
    """Read run files with a progress bar on stderr (shown only on a terminal, and gone when done)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stagewise.data.readers import read_run

    console = Console(stderr=True)
    runs = []
    with Progress(
        TextColumn("reading {task.fields[name]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("runs", total=len(paths), name="")
        for path in paths:
            progress.update(task, name=path)
            runs.append(read_run(path))
            progress.advance(task)
    return runs
