"""``stagewise eval QRELS RUN... -m METRIC...``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    METRIC_SPELLINGS,
    Duplicates,
    DuplicatesOption,
    EngineChoice,
    EngineOption,
    IgnoreSelfOption,
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
    format_option,
    int_option,
    output_format,
    read_qrels_as,
    run_labels,
    show_table,
    split_metrics,
    stage_progress,
    user_errors,
    warn_from_checks,
)

# The command's arguments and options as types, so its signature reads as a list of them.
QrelsArgument = Annotated[
    str,
    typer.Argument(
        help="Judgements: TREC qrels (qid iter docid label), JSON, JSONL, CSV, "
        "TSV or Parquet; '-' reads stdin; .gz accepted."
    ),
]
RunsArgument = Annotated[
    list[str],
    typer.Argument(
        help="One or more runs (qid Q0 docid rank score tag, or the tabular formats); each is a row of the table."
    ),
]
MetricOption = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        help=f"Metric, repeatable or comma-separated. {METRIC_SPELLINGS} Default: {DEFAULT_METRICS_TEXT}.",
    ),
]
PerQueryOption = Annotated[
    bool,
    typer.Option(
        "--per-query",
        "-q",
        help="Also give every query's value; tables end each run with its mean as query 'all' (trec_eval -q).",
    ),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]
EvalMissingOption = Annotated[
    Missing,
    typer.Option(
        help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip (left out of the mean) or error."
    ),
]
DigitsOption = Annotated[int, typer.Option(**int_option(0, 20), help="Decimals in table, markdown and LaTeX output.")]
StandardiseOption = Annotated[
    str,
    typer.Option(
        "--standardise",
        "--standardize",
        parser=RegistryChoice("stagewise.stats.catalogue", "STANDARDISATIONS"),
        metavar="HOW",
        help="Standardise each topic's scores by reference runs, then average them: "
        "{entries:stagewise.stats.catalogue:STANDARDISATIONS}. The output states it.",
    ),
]
ReferenceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--reference",
        help="A reference run of --standardise (its name or path; repeatable; at least two). Default: every run.",
    ),
]


def eval_command(
    qrels: QrelsArgument,
    runs: RunsArgument,
    metric: MetricOption = None,
    per_query: PerQueryOption = False,
    std: Annotated[
        bool,
        typer.Option(
            "--std",
            help="Add each run's standard deviation of per-query scores (population, ddof 0, as ranx's return_std): "
            "a row 'RUN std' under its mean, 'std' in JSON.",
        ),
    ] = False,
    fmt: Annotated[str | None, format_option("EvalResult")] = None,
    output: OutputOption = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: EvalMissingOption = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    ignore_self: IgnoreSelfOption = False,
    digits: DigitsOption = 4,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
    engine: EngineOption = EngineChoice.local,
    scheduler: SchedulerOption = None,
    standardise: StandardiseOption = "none",
    reference: ReferenceOption = None,
) -> None:
    """Score runs against judgements: one row per run, one column per metric.

    Every number comes with the conventions that produced it: gain, ideal, ties, relevance level, missing queries.
    On a terminal the table is drawn with rich; piped or redirected it is plain text, best values marked *.

    Defaults are trec_eval's, except that judged queries absent from a run score 0 and are counted.

    Examples:

      stagewise eval qrels.txt bm25.run dense.run -m ndcg@10 -m recall@100

      stagewise eval qrels.txt run.trec -m "ndcg@10(gain=exp)" --format json --per-query -o scores.json

      stagewise eval qrels.txt huge.run --engine stream

      stagewise eval qrels.txt *.run -m ap --standardise zscore --reference bm25.run --reference dense.run

      stagewise eval qrels.txt 'runs/*.trec' --engine dask --scheduler tcp://scheduler:8786
    """
    with user_errors():
        _one_blas_thread()
        from stagewise.engines import evaluate, expand_globs
        from stagewise.metrics.context import Conventions
        from stagewise.metrics.defaults import DEFAULT_METRICS

        runs = expand_globs(runs)
        check_output(output, [qrels, *runs])
        from stagewise.report import offered

        chosen_format = output_format(fmt, output, offered("EvalResult"))
        metrics = split_metrics(metric) if metric else list(DEFAULT_METRICS)
        conventions = Conventions(
            relevance_level=relevance_level,
            ties=ties.value,  # type: ignore[arg-type]
            missing=missing.value,  # type: ignore[arg-type]
            max_ret=max_ret,
            judged_only=judged_only,
            ignore_self=ignore_self,
        )
        # evaluate() reads the files after its cheap checks; runs held whole are kept, with paths, for the warnings
        seen, whole = Loaded(), {}
        with engine_for(engine, scheduler) as chosen, _progress(chosen.progress_text) as report:
            result = evaluate(
                seen.keep("qrels", lambda: read_qrels_as(qrels, qrels_format)),
                dict(zip(run_labels(runs), runs, strict=True)),
                metrics,
                conventions=conventions,
                engine=chosen,
                progress=report,
                duplicates=duplicates.value,
                on_run=lambda run, path: whole.__setitem__(run.name, (run, path)),
            )
        warn_from_checks(seen.qrels, [run for run, _ in whole.values()], [path for _, path in whole.values()])
        result = _standardised(result, standardise, reference, runs)
        from stagewise.report import eval as report

        if chosen_format == "table" and output is None:
            show_table(
                lambda width: report.rich(result, per_query=per_query, digits=digits, width=width, std=std),
                lambda: report.render(result, "table", per_query=per_query, digits=digits, std=std),
            )
            exit_without_teardown()
            return
        from stagewise.report import render  # through the format registry: a registered format renders too

        emit(
            render(result, chosen_format, per_query=per_query, digits=digits, **({"std": True} if std else {})),
            output,
            report.summary(result, chosen_format, per_query),
        )
        exit_without_teardown()


def _progress(text: tuple[str, str, str]) -> Any:
    """:func:`stage_progress`, or nothing where no bar could be drawn: stderr no terminal, and none of the
    variables by which rich is told it is one (``stage_progress`` would then draw nothing either, after
    importing rich's console and progress for it: 0.05 s of CPU time)."""
    import contextlib
    import os
    import sys

    told = any(name in os.environ for name in ("FORCE_TERMINAL", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"))
    if told or getattr(sys.stderr, "isatty", lambda: False)():
        return stage_progress(*text)
    return contextlib.nullcontext(None)


def _one_blas_thread() -> None:
    """Before numpy is first imported: OpenBLAS on one thread, unless the environment says otherwise.
    Evaluation does no linear algebra, and OpenBLAS's worker threads, started when numpy is imported, cost
    0.05-0.07 s of CPU time on a 2-core machine (numpy's import: 0.15 s -> 0.085 s) for nothing."""
    import os
    import sys

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def exit_without_teardown() -> None:
    """End the process now that every output is written, flushed and closed: freeing a run's millions of rows
    one buffer at a time costs 0.1-0.2 s at exit that nobody waits for usefully. Only when this process is the
    ``stagewise`` program itself (a test or a library user running the command in its own process goes on),
    and not under coverage, whose data is saved at exit."""
    import os
    import sys

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    program = Path(getattr(main, "__file__", None) or "").name in {"stagewise", "stagewise.exe"}
    if not (program or getattr(spec, "name", None) == "stagewise.__main__") or "coverage" in sys.modules:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _standardised(result: Any, how: str, reference: list[str] | None, paths: list[str]) -> Any:
    """``result`` standardised per topic as ``--standardise`` and ``--reference`` (names or paths) ask."""
    if how == "none" and not reference:
        return result
    if how == "none":
        from stagewise.errors import ConventionError

        raise ConventionError(
            "--reference is a reference run of --standardise; give --standardise zscore|std-cdf|std-ab"
        )
    from stagewise.stats.standardise import standardise_result

    labels = run_labels(paths)
    chosen = None if reference is None else [baseline_label(name, paths, labels) for name in reference]
    return standardise_result(result, how, chosen)
