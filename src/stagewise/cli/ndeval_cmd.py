"""``stagewise ndeval [OPTIONS] QRELS RUN``: ndeval's own command line, passed through untouched."""

from __future__ import annotations

import typer


def ndeval_command(ctx: typer.Context) -> None:
    """A drop-in for ndeval (TREC Web diversity evaluation): its CSV of intent-aware measures per topic.

    Takes ndeval's flags (-alpha A, -beta B, -traditional, -c, -M DEPTH, -baseline RUN2, -riskAlpha A, -a) and
    subtopic qrels ('topic subtopic docno judgment': the iteration column names the subtopic). Prints
    ERR-IA, nERR-IA, alpha-DCG, alpha-nDCG, P-IA and strec at 5, 10 and 20, NRBP, nNRBP and MAP-IA for each
    topic of the run, then their amean. `stagewise ndeval -help` explains each flag.

    Example: stagewise ndeval -traditional qrels.diversity.txt run.txt > run.ndeval.csv
    """
    from stagewise.ndeval.usage import HELP_FLAGS, USAGE, VERSION, VERSION_FLAGS

    args = list(ctx.args)
    flags = args[:-2] if len(args) > 2 else args  # ndeval's flags come before the two files
    if any(flag in HELP_FLAGS or flag in VERSION_FLAGS for flag in flags):  # answered before numpy loads
        first = next(flag for flag in flags if flag in HELP_FLAGS or flag in VERSION_FLAGS)
        typer.echo(USAGE if first in HELP_FLAGS else VERSION, nl=False)
        return
    from stagewise.ndeval.command import main

    code = main(args)
    if code:
        raise typer.Exit(code)
