"""``stagewise gate QRELS RUN --baseline RUN -m METRIC --max-drop D [--min METRIC=V] [--rag R --max LABEL=RATE]``

A regression gate for CI: builds one :class:`~stagewise.gate.GateOptions`, one
:class:`~stagewise.stats.CompareOptions` and one :class:`~stagewise.Conventions`, calls
:func:`stagewise.gate.gate`, renders the :class:`~stagewise.gate.GateResult` through :func:`stagewise.report.render`
and exits 0 (pass) or 1 (fail); bad input stays exit 2. The one-line verdict goes to stderr, always.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import (
    MAX_PERMUTATIONS,
    IgnoreSelfOption,
    JudgedOnlyOption,
    MaxRetOption,
    Missing,
    QrelsFormatOption,
    RelevanceLevelOption,
    Ties,
    TiesOption,
    check_output,
    emit,
    float_option,
    format_option,
    int_option,
    output_format,
    read_qrels_as,
    user_errors,
)
from stagewise.cli.compare_cmd import Alternative, Interval
from stagewise.rag.labels import LABELS

_CATALOGUE = "stagewise.stats.catalogue"

BaselineOption = Annotated[
    str, typer.Option("--baseline", "-b", help="The run RUN must not fall behind (another file than RUN).")
]
MetricOption = Annotated[
    list[str] | None,
    typer.Option("--metric", "-m", help="Metric held to the margin, repeatable or comma-separated (default: ndcg@10)."),
]
MaxDropOption = Annotated[
    float,
    typer.Option(
        "--max-drop",
        **float_option(),
        help="Non-inferiority margin in the metric's units: fail when the interval of mean(RUN - baseline) reaches "
        "below -max-drop.",
    ),
]
MinOption = Annotated[
    list[str] | None,
    typer.Option("--min", metavar="METRIC=VALUE", help="Floor: RUN's mean of METRIC must be >= VALUE (repeatable)."),
]
RagOption = Annotated[
    str | None, typer.Option("--rag", metavar="RECORDS", help="RAG records (JSONL) for the --max ceilings.")
]
MaxOption = Annotated[
    list[str] | None,
    typer.Option(
        "--max",
        metavar="LABEL=RATE",
        help=f"Ceiling: the share of RAG samples labelled LABEL ({', '.join(LABELS)}) must be <= RATE "
        "(repeatable; needs --rag).",
    ),
]
TestOption = Annotated[
    str,
    typer.Option(
        "--test",
        "-t",
        parser=RegistryChoice(_CATALOGUE, "TESTS"),
        metavar="TEST",
        help=f"Paired test whose p-value is shown beside each interval: {{names:{_CATALOGUE}:TESTS}}.",
    ),
]
IntervalOption = Annotated[
    Interval, typer.Option("--ci", help="Interval of the mean difference: t (Student) or bootstrap (percentile).")
]
LevelOption = Annotated[float, typer.Option(**float_option(), help="Confidence level of the (two-sided) interval.")]
ResamplesOption = Annotated[
    int,
    typer.Option(
        "--resamples", "-B", **int_option(1, MAX_PERMUTATIONS), help="Sign flips or bootstrap resamples (seeded)."
    ),
]
SeedOption = Annotated[int, typer.Option(**int_option(0), help="Seed of the resampling: same seed, same verdict.")]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]
MissingOption = Annotated[
    Missing, typer.Option(help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip or error.")
]


def gate_command(
    qrels: Annotated[str, typer.Argument(help="Judgements: TREC qrels or the tabular formats; .gz accepted.")],
    run: Annotated[str, typer.Argument(help="The run to gate.")],
    baseline: BaselineOption,
    metric: MetricOption = None,
    max_drop: MaxDropOption = 0.01,
    floor: MinOption = None,
    rag: RagOption = None,
    ceiling: MaxOption = None,
    test: TestOption = "t",
    alternative: Annotated[Alternative, typer.Option(help="Sidedness of the test's p-value.")] = Alternative[
        "two-sided"
    ],
    ci: IntervalOption = Interval["t"],
    ci_level: LevelOption = 0.95,
    resamples: ResamplesOption = 10_000,
    seed: SeedOption = 0,
    fmt: Annotated[str | None, format_option("GateResult")] = None,
    output: OutputOption = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: MissingOption = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    ignore_self: IgnoreSelfOption = False,
    qrels_format: QrelsFormatOption = None,
) -> None:
    """Gate a run in CI: exit 0 when every check passes, 1 when one fails (2: bad input).

    Margin (non-inferiority): for each -m metric, the confidence interval of mean(RUN - baseline) over the
    queries (Student t, or the seeded percentile bootstrap with --ci bootstrap; 95% by default) must not reach
    below -max-drop. Floors (--min): RUN's mean must reach each. Ceilings (--max, with --rag): the share of RAG
    samples with a label must stay at or below each.

    The one-line verdict goes to stderr; stdout (or -o) gets the result in --format: table, json, junit (JUnit
    XML, one testcase per check) or github (a step summary in markdown, also appended to $GITHUB_STEP_SUMMARY
    when that is set). Every convention is printed with it.

    Examples:

      stagewise gate qrels.txt new.run --baseline main.run -m ndcg@10 --max-drop 0.01

      stagewise gate qrels.txt new.run -b main.run --min recall@100=0.8 --format junit -o gate.xml

      stagewise gate qrels.txt new.run -b main.run --rag records.jsonl --max retrieval_failure=0.05 --format github
    """
    with user_errors():
        from stagewise.gate import GateOptions, gate
        from stagewise.metrics.context import Conventions
        from stagewise.report import offered, render
        from stagewise.stats import CompareOptions

        check_output(output, [qrels, run, baseline, rag])
        _note_same_content(run, baseline)
        chosen = output_format(fmt, output, offered("GateResult"))
        options = GateOptions(
            metrics=tuple(_split(metric)) or ("ndcg@10",),
            max_drop=max_drop,
            floors=tuple(floor or ()),
            ceilings=tuple(ceiling or ()),
        )
        compare = CompareOptions(
            test=test, alternative=alternative.value, ci=ci.value, ci_level=ci_level, resamples=resamples, seed=seed
        )
        conventions = Conventions(
            relevance_level=relevance_level,
            ties=ties.value,  # type: ignore[arg-type]
            missing=missing.value,  # type: ignore[arg-type]
            max_ret=max_ret,
            judged_only=judged_only,
            ignore_self=ignore_self,
        )
        result = gate(
            lambda: read_qrels_as(qrels, qrels_format),
            run,
            baseline,
            options,
            rag=rag,
            conventions=conventions,
            compare=compare,
        )
        text = render(result, chosen)
        emit(text, output, f"{chosen}, {len(result.checks)} checks")
        if chosen == "github":
            _append_step_summary(text)
    typer.echo(f"stagewise gate: {result.verdict()}", err=True)
    raise typer.Exit(0 if result.passed else 1)


def _note_same_content(run: str, baseline: str) -> None:
    """A run byte-identical to its baseline passes by construction (a copy, or a build that wrote nothing new):
    say so on stderr, without failing (an unchanged run is a legitimate pass)."""
    import filecmp

    try:
        same = not os.path.samefile(run, baseline) and filecmp.cmp(run, baseline, shallow=False)
    except OSError:
        return  # a missing file is the reader's one-line error; the same file is gate's
    if same:
        typer.echo(
            f"stagewise gate: note: {run} and the baseline {baseline} have the same content; the margin is 0 "
            "by construction",
            err=True,
        )


def _split(values: list[str] | None) -> list[str]:
    if not values:
        return []
    from stagewise.cli.common import split_metrics

    return split_metrics(values)


def _append_step_summary(text: str) -> None:
    """Append the summary to the file GitHub Actions names in $GITHUB_STEP_SUMMARY (when set)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    from stagewise._io import write_errors

    with write_errors(Path(target)), open(target, "a", encoding="utf-8") as fh:
        fh.write(text)
    typer.echo(f"appended the summary to $GITHUB_STEP_SUMMARY ({target})", err=True)
