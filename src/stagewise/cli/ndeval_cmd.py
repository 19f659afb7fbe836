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
    from stagewise.ndeval.command import main

    code = main(list(ctx.args))
    if code:
        raise typer.Exit(code)
