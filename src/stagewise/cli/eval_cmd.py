"""``stagewise eval QRELS RUN... -m METRIC...``"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
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
    check_output,
    emit,
    engine_for,
    engine_progress,
    int_option,
    output_format,
    read_qrels_as,
    read_runs_with_progress,
    run_labels,
    show_table,
    split_metrics,
    user_errors,
    warn_from_checks,
)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


def eval_command(
    qrels: Annotated[
        str,
        typer.Argument(
            help="Judgements: TREC qrels (qid iter docid label), JSON, JSONL, CSV, "
            "TSV or Parquet; '-' reads stdin; .gz accepted."
        ),
    ],
    runs: Annotated[
        list[str],
        typer.Argument(
            help="One or more runs (qid Q0 docid rank score tag, or the tabular formats); each is a row of the table."
        ),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Metric, repeatable or comma-separated: "
            "map, ndcg@10, ndcg@10(gain=exp), P@5(rel=2), recall@100, mrr@10, "
            "Rprec, bpref, success@5, judged@10, rbp(p=0.8), err@20, and "
            "trec_eval names (ndcg_cut_10; a list ndcg_cut.10,20 gives ndcg_cut_10 and ndcg_cut_20). "
            f"Default: {DEFAULT_METRICS_TEXT}.",
        ),
    ] = None,
    per_query: Annotated[
        bool,
        typer.Option(
            "--per-query",
            "-q",
            help="Also give every query's value; tables end each run with its mean as query 'all' (trec_eval -q).",
        ),
    ] = False,
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
            help="A judged query absent from a run: zero (scores 0, "
            "trec_eval -c), skip (left out of the mean) or error."
        ),
    ] = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    digits: Annotated[int, typer.Option(**int_option(0, 20), help="Decimals in table, markdown and LaTeX output.")] = 4,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
    engine: EngineOption = EngineChoice.local,
    scheduler: SchedulerOption = None,
) -> None:
    """Score runs against judgements: one row per run, one column per metric.

    Every number comes with the conventions that produced it: gain, ideal, ties, relevance level, missing queries.
    On a terminal the table is drawn with rich; piped or redirected it is plain text, best values marked *.

    Defaults are trec_eval's, except that judged queries absent from a run score 0 and are counted.

    Examples:

      stagewise eval qrels.txt bm25.run dense.run -m ndcg@10 -m recall@100

      stagewise eval qrels.txt run.trec -m "ndcg@10(gain=exp)" --format json --per-query -o scores.json

      stagewise eval qrels.txt huge.run --engine stream

      stagewise eval qrels.txt 'runs/*.trec' --engine dask --scheduler tcp://scheduler:8786
    """
    with user_errors():
        from stagewise.engines import expand_globs

        runs = expand_globs(runs)
        check_output(output, [qrels, *runs])
        chosen_format = output_format(fmt and fmt.value, output, tuple(OutputFormat))
        from stagewise.metrics.evaluate import DEFAULT_METRICS, evaluate

        metrics = split_metrics(metric) if metric else list(DEFAULT_METRICS)
        conventions = dict(
            relevance_level=relevance_level,
            ties=ties.value,
            missing=missing.value,
            max_ret=max_ret,
            judged_only=judged_only,
        )
        # The files are read by evaluate() once it has checked the metrics and conventions.
        if engine is EngineChoice.local and scheduler is None:
            seen = Loaded()
            result = evaluate(
                seen.keep("qrels", lambda: read_qrels_as(qrels, qrels_format)),
                seen.keep("runs", lambda: read_runs_with_progress(runs, duplicates.value)),
                metrics,
                **conventions,
            )
            warn_from_checks(seen.qrels, seen.runs, runs)
        else:
            with engine_for(engine, scheduler) as chosen, engine_progress(chosen):
                result = chosen.evaluate(
                    lambda: read_qrels_as(qrels, qrels_format),
                    dict(zip(run_labels(runs), runs, strict=True)),
                    metrics,
                    duplicates=duplicates.value,
                    **conventions,
                )
        from stagewise.report import eval as report

        if chosen_format == "table" and output is None:
            show_table(
                lambda width: report.rich(result, per_query=per_query, digits=digits, width=width),
                lambda: report.render(result, "table", per_query=per_query, digits=digits),
            )
            return
        emit(
            report.render(result, chosen_format, per_query=per_query, digits=digits),
            output,
            report.summary(result, chosen_format, per_query),
        )
