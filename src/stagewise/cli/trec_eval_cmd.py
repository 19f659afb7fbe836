"""``stagewise trec_eval [FLAGS] QRELS RUN``: trec_eval's own command line, passed through untouched."""

from __future__ import annotations

import typer


def trec_eval_command(ctx: typer.Context) -> None:
    """A drop-in for trec_eval with byte-identical output.

    Takes trec_eval's flags (-q -c -n -J -M N -l N -N N -m MEASURE[.PARAMS], -R qrels|prefs|qrels_prefs|qrels_jg,
    -Z ZSCORES) and --ties docid|docid-double
    (scores compared as C floats, trec_eval 9's way, the default; or as doubles, trec_eval 10.0's).
    `stagewise trec_eval -h` (or --help) lists them and every measure with a line of description, as
    trec_eval's -h -m all_trec does.
    """
    from stagewise.trec_eval.command import main

    code = main(list(ctx.args))
    if code:
        raise typer.Exit(code)
