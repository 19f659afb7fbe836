"""``stagewise compare QRELS RUN RUN... -m METRIC... [--test t|wilcoxon|randomization|bootstrap|sign]``"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    MAX_PERMUTATIONS,
    Duplicates,
    DuplicatesOption,
    EngineChoice,
    EngineOption,
    JudgedOnlyOption,
    Loaded,
    MaxRetOption,
    Missing,
    QrelsFormatOption,
    RelevanceLevelOption,
    SchedulerOption,
    Ties,
    TiesOption,
    baseline_label,
    check_output,
    emit,
    engine_for,
    engine_progress,
    int_option,
    output_format,
    read_qrels_as,
    read_runs_with_progress,
    resampling_estimate,
    run_labels,
    show_table,
    split_metrics,
    stage_progress,
    user_errors,
    warn_from_checks,
)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


class Test(StrEnum):
    t = "t"
    wilcoxon = "wilcoxon"
    randomization = "randomization"
    fisher = "fisher"
    bootstrap = "bootstrap"
    sign = "sign"

    __test__ = False  # not a pytest class


class Correction(StrEnum):
    none = "none"
    bonferroni = "bonferroni"
    holm = "holm"
    bh = "bh"


class Alternative(StrEnum):
    two_sided = "two-sided"
    greater = "greater"
    less = "less"


class Exact(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class Family(StrEnum):
    metric = "metric"
    all = "all"


class Interval(StrEnum):
    t = "t"
    bootstrap = "bootstrap"


def compare_command(
    qrels: Annotated[
        str,
        typer.Argument(help="Judgements: TREC qrels, JSON, JSONL, CSV, TSV or Parquet; '-' reads stdin; .gz accepted."),
    ],
    runs: Annotated[
        list[str],
        typer.Argument(help="Two or more runs (TREC or the tabular formats); each is a row of the table."),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Metric, repeatable or comma-separated (map, ndcg@10, P@5(rel=2), recall@100, mrr@10, ...). "
            f"Default: {DEFAULT_METRICS_TEXT}.",
        ),
    ] = None,
    test: Annotated[
        Test,
        typer.Option(
            "--test",
            "-t",
            help="Paired test: t (Student, scipy.stats.ttest_rel), wilcoxon (signed-rank, scipy defaults), "
            "randomization (Fisher's sign flips; alias fisher), bootstrap (studentized) or sign (binomial).",
        ),
    ] = Test.t,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline", "-b", help="Test every run against this run (its name or path) instead of all pairs."
        ),
    ] = None,
    correction: Annotated[
        Correction,
        typer.Option(
            "--correction",
            "-c",
            help="Multiple-comparison correction per family: none, bonferroni, holm or bh (Benjamini-Hochberg).",
        ),
    ] = Correction.holm,
    alpha: Annotated[float, typer.Option(help="Significance level for the adjusted p-values.")] = 0.05,
    alternative: Annotated[
        Alternative, typer.Option(help="two-sided, or one-sided: greater (b > a) or less; a is the earlier run.")
    ] = Alternative.two_sided,
    permutations: Annotated[
        int,
        typer.Option(
            "--permutations",
            "-B",
            **int_option(1, MAX_PERMUTATIONS),
            help="Sign flips (randomization) or resamples (bootstrap).",
        ),
    ] = 10_000,
    seed: Annotated[
        int,
        typer.Option(
            **int_option(0), help="Seed of the randomization and bootstrap: same seed, same p-values, every call."
        ),
    ] = 0,
    exact: Annotated[
        Exact,
        typer.Option(
            help="Randomization: enumerate all 2^n sign assignments always (n <= 24), never, or auto (when 2^n <= B)."
        ),
    ] = Exact.auto,
    tie_tolerance: Annotated[
        float, typer.Option(help="A per-query difference within this is a tie (win/tie/loss and the sign test).")
    ] = 1e-9,
    ci: Annotated[
        Interval, typer.Option(help="Interval of the mean difference: t (Student) or bootstrap (percentile).")
    ] = Interval.t,
    ci_level: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    family: Annotated[
        Family, typer.Option(help="Correct within each metric's pairs (metric) or over all metrics' pairs (all).")
    ] = Family.metric,
    pairs: Annotated[
        bool | None,
        typer.Option(
            "--pairs/--no-pairs",
            help="Show every pair's difference, CI, d_z, W/T/L and p-values "
            "(default: when at most 10 pairs per metric).",
        ),
    ] = None,
    per_query: Annotated[
        bool, typer.Option("--per-query", "-q", help="Also show each pair's per-query deltas (b - a), sorted.")
    ] = False,
    top: Annotated[
        int | None,
        typer.Option(**int_option(1), help="With --per-query: only the N largest gains and N largest losses."),
    ] = None,
    fmt: Annotated[
        OutputFormat | None,
        typer.Option("--format", "-f", help="Output format (default: the one -o's extension names, else table)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
    ] = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: Annotated[
        Missing,
        typer.Option(
            help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip (pairs use the queries "
            "both runs have) or error."
        ),
    ] = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    digits: Annotated[
        int, typer.Option(**int_option(0, 20), help="Decimals of the means in table, markdown and LaTeX output.")
    ] = 4,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
    engine: EngineOption = EngineChoice.local,
    scheduler: SchedulerOption = None,
) -> None:
    """Compare runs with paired significance tests, corrected for multiple comparisons, with effect sizes.

    The table has runs as rows and metrics as columns; the letters after a value name the runs it is
    significantly better than, and the best value is marked. Every convention is stated under it: test,
    sidedness, family, correction, number of queries, permutations and seed, tie tolerance.

    JSON (--format json) keeps every pair: metric, a, b, test, statistic, p_value, p_adjusted, correction,
    mean_diff (= mean(b) - mean(a)), ci_low, ci_high, effect_size (Cohen's d_z), wins, ties, losses.

    Examples:

      stagewise compare qrels.txt bm25.run dense.run hybrid.run -m map -m ndcg@10

      stagewise compare qrels.txt *.run -m ndcg@10 --baseline bm25.run --test randomization --seed 1

      stagewise compare qrels.txt bm25.run dense.run -m ndcg@10 --per-query --top 10

      stagewise compare qrels.txt a.run b.run c.run -c bh --format json -o comparison.json
    """
    with user_errors():
        from stagewise.engines import expand_globs

        runs = expand_globs(runs)
        check_output(output, [qrels, *runs])
        chosen_format = output_format(fmt and fmt.value, output, tuple(OutputFormat))
        from stagewise.errors import StagewiseError
        from stagewise.metrics.evaluate import DEFAULT_METRICS
        from stagewise.stats import compare

        if len(runs) < 2:
            raise StagewiseError(f"compare needs at least two runs; got {len(runs)}")
        metrics = split_metrics(metric) if metric else list(DEFAULT_METRICS)
        tests = dict(
            test=test.value,
            correction=correction.value,
            alpha=alpha,
            alternative=alternative.value,
            permutations=permutations,
            seed=seed,
            exact={Exact.auto: None, Exact.always: True, Exact.never: False}[exact],
            tie_tolerance=tie_tolerance,
            ci=ci.value,
            ci_level=ci_level,
            family=family.value,
        )
        conventions = dict(
            relevance_level=relevance_level,
            ties=ties.value,
            missing=missing.value,
            max_ret=max_ret,
            judged_only=judged_only,
        )
        resamples = test in (Test.randomization, Test.fisher, Test.bootstrap) or ci is Interval.bootstrap
        if engine is EngineChoice.local and scheduler is None:
            # compare() checks the metrics and options, then reads the files through these functions.
            with contextlib.ExitStack() as stack:
                bar: list[Callable[[float, int], None] | None] = []

                def read_runs() -> list:
                    loaded = read_runs_with_progress(runs, duplicates.value)
                    if resamples:
                        n_pairs = len(loaded) - 1 if baseline is not None else len(loaded) * (len(loaded) - 1) // 2
                        queries = max(run.n_queries for run in loaded)
                        note = resampling_estimate(permutations, queries, len(metrics), n_pairs)
                        if note is not None:
                            typer.echo(note, err=True)
                    # rich shows one live display at a time: the stage bar starts once the reading bar is gone
                    bar.append(stack.enter_context(stage_progress("evaluating the runs", "testing", "comparisons")))
                    return loaded

                def report(done: float, total: int) -> None:
                    if bar and bar[0] is not None:
                        bar[0](done, total)

                seen = Loaded()
                result = compare(
                    seen.keep("qrels", lambda: read_qrels_as(qrels, qrels_format)),
                    seen.keep("runs", read_runs),
                    metrics,
                    baseline=None if baseline is None else baseline_label(baseline, runs, run_labels(runs)),
                    progress=report,
                    **tests,
                    **conventions,
                )
            warn_from_checks(seen.qrels, seen.runs, runs)
        else:
            from stagewise.stats import compare_scores

            labels = run_labels(runs)
            with engine_for(engine, scheduler) as chosen, engine_progress(chosen):
                scores = chosen.evaluate(
                    lambda: read_qrels_as(qrels, qrels_format),
                    dict(zip(labels, runs, strict=True)),
                    metrics,
                    duplicates=duplicates.value,
                    **conventions,
                )
            with stage_progress("testing", "testing", "comparisons") as report:
                result = compare_scores(
                    scores,
                    baseline=None if baseline is None else baseline_label(baseline, runs, labels),
                    progress=report,
                    **tests,
                )
        from stagewise.report import compare as render_compare

        options = dict(digits=digits, show_pairs=pairs, per_query=per_query, top=top)
        if chosen_format == "table" and output is None:
            show_table(
                lambda _width: render_compare.rich(result, **options),
                lambda: render_compare.render(result, "table", **options),
            )
            return
        n_pairs = len(result.pairs)
        what = f"{chosen_format}, {len(runs)} runs, {len(metrics)} metric(s)" + (
            f", {n_pairs} pairs" if n_pairs else ""
        )
        emit(render_compare.render(result, chosen_format, **options), output, what)
