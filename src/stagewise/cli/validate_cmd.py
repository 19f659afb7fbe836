"""``stagewise validate QRELS RUN...``"""

from __future__ import annotations

from typing import Annotated

import typer

from stagewise.cli.common import QrelsFormatOption, format_option, read_qrels_as, user_errors


def validate_command(
    qrels: Annotated[str, typer.Argument(help="Judgements file.")],
    runs: Annotated[list[str], typer.Argument(help="Run files to check against it.")],
    fmt: Annotated[str, format_option("ValidationReport", from_output=False)] = "table",
    qrels_format: QrelsFormatOption = None,
) -> None:
    """Check runs against judgements before trusting a number.

    Reports judged queries missing from a run, run queries without judgements, duplicate documents, the
    unjudged share of the top 10 and 100, and the label histogram.

    Warns when a run's rank and score columns disagree (scores rising with the rank: a distance, or the two
    columns swapped). Exits with 1 when a run misses judged queries, repeats documents or draws a warning, so
    scripts can stop on it.
    """
    with user_errors():
        from stagewise.checks import validate

        report = validate(read_qrels_as(qrels, qrels_format), runs)
        from stagewise.report import render

        typer.echo(render(report, fmt).rstrip("\n"))
        if not report.ok:
            raise typer.Exit(1)
