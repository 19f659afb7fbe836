"""``stagewise pool [QRELS] RUN... --strategy S -o POOL``"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.common import (
    INT64_MAX,
    check_output,
    emit,
    format_option,
    int_option,
    output_format,
    usage_error,
    user_errors,
)


def _strategy(value: Any) -> Any:
    """The --strategy value parsed when the command runs: a bad one is the registry's one-line error, exit 2."""
    from stagewise.assess.catalogue import parse_strategy
    from stagewise.errors import StagewiseError

    if value is None or not isinstance(value, str):
        return value
    try:
        return str(parse_strategy(value))
    except StagewiseError as exc:
        raise usage_error(str(exc)) from None


def _ranking(value: Any) -> Any:
    from stagewise.assess.catalogue import POOL_RANKINGS
    from stagewise.errors import StagewiseError

    try:
        return POOL_RANKINGS.lookup(str(value)).name
    except StagewiseError as exc:
        raise usage_error(str(exc)) from None


def looks_like_qrels(path: str) -> bool:
    """Whether the file's first data line has the qrels' four fields (``qid 0 docid label``), not a run's six."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if fields and not fields[0].startswith("#"):
                    return len(fields) == 4 and fields[3].lstrip("-").isdigit()
    except OSError:
        return False
    return False


StrategyOption = Annotated[
    str,
    typer.Option(
        "--strategy",
        "-s",
        parser=_strategy,
        metavar="STRATEGY",
        help="How documents are pooled, in the spec grammar (depth(k=100), take(n=50,order=rrf), mtf(n=20); "
        "depth:K and take:N(rrf) read too): {entries:stagewise.assess.catalogue:STRATEGIES}.",
    ),
]


def pool_command(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="[QRELS] RUN...: the runs to pool, after the judgements already made (optional; a 4-column "
            "file first is read as qrels)."
        ),
    ],
    strategy: StrategyOption = "depth(k=100)",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the pool to this file (atomically) instead of stdout.")
    ] = None,
    fmt: Annotated[str | None, format_option("Pool", default="trec")] = None,
    qrels: Annotated[
        str | None,
        typer.Option(
            "--qrels", help="Judgements already made (their documents are left out; mtf reads them as feedback)."
        ),
    ] = None,
    ranking: Annotated[
        str,
        typer.Option(
            "--ranking",
            parser=_ranking,
            metavar="RANKING",
            help="How a run's order is read: {entries:stagewise.assess.catalogue:POOL_RANKINGS}.",
        ),
    ] = "trec_eval",
    shuffle: Annotated[
        bool,
        typer.Option(
            "--shuffle",
            help="Judging order shuffled within each query (with --seed, reproducibly) instead of by priority.",
        ),
    ] = False,
    seed: Annotated[int | None, typer.Option("--seed", **int_option(0, INT64_MAX), help="Seed of --shuffle.")] = None,
    coverage_at: Annotated[
        int, typer.Option("--coverage-at", **int_option(1, metavar="K"), help="The k of each run's coverage.")
    ] = 10,
    relevance_level: Annotated[
        int,
        typer.Option(
            "--relevance-level",
            "-l",
            **int_option(-INT64_MAX - 1),
            help="A judged label >= this is relevant (mtf's feedback).",
        ),
    ] = 1,
) -> None:
    """Pool runs into the documents to judge, in a judging order, with what each run contributed.

    The pool goes to -o (or stdout) in the TREC layout (qid Q0 docid order priority strategy) or as JSONL
    (-o pool.jsonl, or --format jsonl); --format json holds the summary and the pool, --format table the summary
    alone. The summary (documents per query, each run's contributed and unique documents and its coverage at
    k) is printed on stderr when the pool is written.

    Examples:

        stagewise pool runs/*.gz --strategy depth:100 -o pool.txt
        stagewise pool judged.qrels runs/*.gz --strategy 'take(n=50,order=rbp)' --shuffle --seed 7 -o pool.jsonl
    """
    with user_errors():
        from stagewise.errors import InputError

        runs = list(inputs)
        if qrels is None and len(runs) > 1 and looks_like_qrels(runs[0]):
            qrels = runs.pop(0)
        if not runs:
            raise InputError("RUN", "no run file given", expected="one run file or more")
        from stagewise.cli.common import check_distinct

        check_distinct(runs, "each run once (a run given twice contributes nothing unique)")
        check_output(output, [*runs, qrels])
        from stagewise.report import offered

        chosen = output_format(fmt, output, offered("Pool"), default="trec")
        from stagewise.assess.pool import make_pool
        from stagewise.report import render

        pool = make_pool(
            runs, strategy, qrels=qrels, ranking=ranking, shuffle=shuffle, seed=seed,
            coverage_at=coverage_at, relevance_level=relevance_level,
        )  # fmt: skip
        emit(render(pool, chosen), output, f"{chosen}, {len(pool):,} documents")
        if chosen in ("trec", "jsonl"):
            typer.echo(render(pool, "table").rstrip("\n"), err=True)
