"""What the subcommands share: failing cleanly, writing output atomically, splitting metric lists."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


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


class QrelsFormat(StrEnum):
    """How a qrels file is laid out, as CLI choices (stagewise.data.readers.QRELS_FORMATS)."""

    trec = "trec"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    tsv = "tsv"
    parquet = "parquet"
    cranfield = "cranfield"
    cisi = "cisi"


class Duplicates(StrEnum):
    """What a document listed twice for one query of a run does, as CLI choices."""

    error = "error"
    first = "first"
    best = "best"


QrelsFormatOption = Annotated[
    QrelsFormat | None,
    typer.Option(
        "--qrels-format",
        help="Layout of the qrels file (default: from its extension, else TREC): cranfield reads 'qid docid grade' "
        "(grade 1 best -> label 4, -1 -> 0), cisi reads 'qid docid ...' pairs as relevant (CISI, CACM, ADI).",
    ),
]
DuplicatesOption = Annotated[
    Duplicates,
    typer.Option(
        help="A document listed twice for one query of a run: error (naming the line), or keep the first or the "
        "best-scored listing."
    ),
]


def read_qrels_as(path: str, qrels_format: QrelsFormat | None):
    """The qrels argument, read with its stated format (or by its extension when none is stated)."""
    from stagewise.data.readers import read_qrels

    return read_qrels(path, format=None if qrels_format is None else qrels_format.value)


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


def split_metrics(values: list[str]) -> list[str]:
    """``-m map,ndcg@10 -m P@5(rel=2)`` -> each metric once, commas inside parentheses kept."""
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
    return [m.strip() for m in out if m.strip()]


def read_runs_with_progress(paths: list[str], duplicates: str = "error") -> list:
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
            runs.append(read_run(path, duplicates=duplicates))
            progress.advance(task)
    return runs
