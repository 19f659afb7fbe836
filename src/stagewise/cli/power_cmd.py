"""``stagewise power topics ...`` and ``stagewise power discriminative ...``: how many topics a test collection needs
(:func:`stagewise.stats.power.topic_set_size`), and how many run pairs each measure tells apart
(:func:`stagewise.stats.discriminative.discriminative_power`).

The designs of ``--test``, their help and their errors come from :data:`stagewise.stats.power.DESIGNS`, read when
the command runs or shows help; the output formats from :data:`stagewise.report.FORMATS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.command import RegistryChoice, StagewiseCommand, reflowed_help
from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    MAX_PERMUTATIONS,
    Duplicates,
    DuplicatesOption,
    JudgedOnlyOption,
    MaxRetOption,
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
    run_labels,
    split_metrics,
    stage_progress,
    user_errors,
)

_POWER = "stagewise.stats.power"

power_app = typer.Typer(
    name="power",
    help="Statistical power: how many topics a test collection needs, and how discriminative a measure is.",
    no_args_is_help=True,
)

OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]
DigitsOption = Annotated[int, typer.Option(**int_option(0, 20), help="Decimals of the numbers in the table.")]
AlphaOption = Annotated[float, typer.Option(**float_option(), help="Significance level.")]
MinDiffOption = Annotated[
    float | None,
    typer.Option(**float_option(), help="The difference to detect (t, anova), or the widest interval allowed (ci)."),
]
BetaOption = Annotated[
    float, typer.Option(**float_option(), help="Type II error rate (power 1 - beta); not read by ci.")
]
VarianceOption = Annotated[
    float | None,
    typer.Option(**float_option(), help="The within-system variance V (one system's score variance), instead of runs."),
]


def _conventions(relevance_level: int, ties: Ties, max_ret: int | None, judged_only: bool):
    from stagewise.metrics.context import Conventions

    return Conventions(
        relevance_level=relevance_level,
        ties=ties.value,  # type: ignore[arg-type]
        max_ret=max_ret,
        judged_only=judged_only,
    )


def topics_command(
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="QRELS RUN", help="Judgements then two or more runs: the variance is estimated from them."
        ),
    ] = None,
    test: Annotated[
        str,
        typer.Option(
            "--test",
            "-t",
            parser=RegistryChoice(_POWER, "DESIGNS", canonical=True),
            metavar="DESIGN",
            help=f"What the topics must achieve: {{entries:{_POWER}:DESIGNS}}.",
        ),
    ] = "t",
    min_diff: MinDiffOption = None,
    alpha: AlphaOption = 0.05,
    beta: BetaOption = 0.20,
    systems: Annotated[
        int | None,
        typer.Option(**int_option(2), help="anova: the number of systems compared (default: the runs given)."),
    ] = None,
    variance: VarianceOption = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="With runs: the one metric whose variance is estimated.")
    ] = None,
    fmt: Annotated[str | None, format_option("TopicSetSize")] = None,
    output: OutputOption = None,
    digits: DigitsOption = 4,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
) -> None:
    """How many topics a test collection needs (Sakai, Topic set size design, IRJ 2016).

    From a minimum difference, alpha, beta and the within-system variance V: stated (--variance), or estimated
    from runs as the residual variance V_E of the two-way ANOVA (topics x systems) of their scores on one metric.
    The t and ci designs read 2 V, the variance of a difference between two systems. Prints the number of
    topics, every input, where the variance came from, and the power (or expected width) at that number.

    Examples:

      stagewise power topics --test t --min-diff 0.05 --variance 0.01

      stagewise power topics qrels.txt runs/*.run -m map --test anova --min-diff 0.1

      stagewise power topics qrels.txt a.run b.run -m ndcg@10 --test ci --min-diff 0.1 --format json
    """
    with user_errors():
        from stagewise.engines import expand_globs
        from stagewise.errors import InputError
        from stagewise.report import offered, render
        from stagewise.stats.power import check_design, estimate_variance, topic_set_size

        paths = expand_globs(inputs) if inputs else []
        check_output(output, paths)
        chosen = output_format(fmt, output, offered("TopicSetSize"))
        if min_diff is None:
            raise InputError("power topics", "no --min-diff was given", expected="e.g. --min-diff 0.05")
        check_design(test, min_diff, alpha=alpha, beta=beta, systems=systems)
        if (variance is None) == (not paths):
            raise InputError(
                "power topics",
                "both --variance and runs were given" if paths else "no variance: neither --variance nor runs",
                expected="--variance V, or QRELS RUN... -m METRIC",
            )
        if paths:
            metrics = split_metrics(metric or [])
            if len(paths) < 3 or len(metrics) != 1:
                raise InputError(
                    "power topics",
                    f"{len(paths) - 1} run(s) and {len(metrics)} metric(s) were given",
                    expected="QRELS, two or more runs and one -m METRIC",
                )
            qrels, runs = paths[0], paths[1:]
            conventions = _conventions(relevance_level, ties, max_ret, judged_only)
            estimated = estimate_variance(
                lambda: read_qrels_as(qrels, qrels_format),
                dict(zip(run_labels(runs), runs, strict=True)),
                metrics[0],
                conventions=conventions,
                duplicates=duplicates.value,
            )
            result = topic_set_size(test, min_diff, estimated, alpha=alpha, beta=beta, systems=systems)
        else:
            result = topic_set_size(test, min_diff, variance, alpha=alpha, beta=beta, systems=systems)  # type: ignore[arg-type]
        emit(render(result, chosen, digits=digits), output, f"{chosen}, {result.topics} topics")


def discriminative_command(
    qrels: Annotated[str, typer.Argument(help="Judgements: TREC qrels or the tabular formats; .gz accepted.")],
    runs: Annotated[list[str], typer.Argument(help="Two or more runs; every pair of them is tested.")],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help=f"Measure to assess, repeatable or comma-separated. Default: {DEFAULT_METRICS_TEXT}."
        ),
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", "-B", **int_option(1, MAX_PERMUTATIONS), help="Bootstrap resamples B.")
    ] = 1000,
    seed: Annotated[int, typer.Option(**int_option(0), help="Seed of the resamples: same seed, same ASLs.")] = 0,
    alpha: AlphaOption = 0.05,
    fmt: Annotated[str | None, format_option("DiscriminativePower")] = None,
    output: OutputOption = None,
    digits: DigitsOption = 4,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
) -> None:
    """Discriminative power of measures by the paired bootstrap (Sakai, SIGIR 2006), to choose between them.

    For every pair of runs and every measure, the achieved significance level (ASL) of the paired bootstrap
    test on the same B resamples of the topics. The table gives each measure's share of pairs with ASL < alpha
    (its discriminative power) and its ASL curve (every pair's ASL, smallest first) read at a few points; JSON
    keeps every curve and every pair, CSV one row per measure and pair.

    Examples:

      stagewise power discriminative qrels.txt runs/*.run -m map -m ndcg@10 -m P@10

      stagewise power discriminative qrels.txt runs/*.run -m map,ndcg@10 -B 10000 --seed 1 --format json
    """
    with user_errors():
        from stagewise.engines import expand_globs
        from stagewise.errors import InputError
        from stagewise.metrics.defaults import DEFAULT_METRICS
        from stagewise.report import offered, render
        from stagewise.stats.discriminative import discriminative_power

        runs = expand_globs(runs)
        check_output(output, [qrels, *runs])
        chosen = output_format(fmt, output, offered("DiscriminativePower"))
        if len(runs) < 2:
            raise InputError("power discriminative", f"{len(runs)} run(s) were given", expected="at least two runs")
        metrics = split_metrics(metric) if metric else list(DEFAULT_METRICS)
        with stage_progress("evaluating the runs", "bootstrap", "pairs") as report:
            result = discriminative_power(
                lambda: read_qrels_as(qrels, qrels_format),
                dict(zip(run_labels(runs), runs, strict=True)),
                metrics,
                resamples=resamples,
                seed=seed,
                alpha=alpha,
                conventions=_conventions(relevance_level, ties, max_ret, judged_only),
                duplicates=duplicates.value,
                progress=report,
            )
        what = f"{chosen}, {len(result.measures)} measure(s), {len(result.runs)} runs"
        emit(render(result, chosen, digits=digits), output, what)


power_app.command("topics", cls=StagewiseCommand, help=reflowed_help(topics_command))(topics_command)
power_app.command("discriminative", cls=StagewiseCommand, help=reflowed_help(discriminative_command))(
    discriminative_command
)
