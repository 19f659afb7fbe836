"""``stagewise report QRELS RUN... [-m METRIC...] [--baseline RUN] [--test ...] [--rag RECORDS] -o report.html``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    MAX_PERMUTATIONS,
    JudgedOnlyOption,
    MaxRetOption,
    Missing,
    QrelsFormatOption,
    RelevanceLevelOption,
    Ties,
    TiesOption,
    baseline_label,
    check_output,
    int_option,
    read_qrels_as,
    run_labels,
    split_metrics,
    user_errors,
)
from stagewise.cli.compare_cmd import Correction, Test


def report_command(
    qrels: Annotated[
        str | None,
        typer.Argument(help="Judgements: TREC qrels, JSON, JSONL, CSV, TSV or Parquet; .gz accepted."),
    ] = None,
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs (TREC or the tabular formats); with two or more, a comparison with tests."),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write (atomically).")] = Path(
        "report.html"
    ),
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Metrics of the comparison and the per-query views, repeatable or comma-separated; the first is "
            f"the metric of the per-query difference plots. Default: {DEFAULT_METRICS_TEXT}.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Test and plot every run against this run (name or path); default: all pairs "
            "are tested and the first run is the plots' baseline.",
        ),
    ] = None,
    test: Annotated[Test, typer.Option("--test", "-t", help="Paired test, as in stagewise compare.")] = Test.t,
    correction: Annotated[
        Correction, typer.Option("--correction", "-c", help="Multiple-comparison correction, as in stagewise compare.")
    ] = Correction.holm,
    alpha: Annotated[float, typer.Option(help="Significance level for the adjusted p-values.")] = 0.05,
    permutations: Annotated[
        int,
        typer.Option(
            "--permutations",
            "-B",
            **int_option(1, MAX_PERMUTATIONS),
            help="Sign flips (randomization) or resamples (bootstrap).",
        ),
    ] = 10_000,
    seed: Annotated[int, typer.Option(**int_option(0), help="Seed of the randomization and bootstrap.")] = 0,
    rag: Annotated[
        str | None,
        typer.Option(help="RAG records (JSONL, as stagewise rag reads them): adds the RAG diagnosis section."),
    ] = None,
    rag_run: Annotated[
        str | None,
        typer.Option(help="A run giving each RAG record's retrieved ids in ranked order (as stagewise rag --run)."),
    ] = None,
    context_k: Annotated[
        int | None,
        typer.Option("--context-k", "-k", **int_option(1), help="RAG: the context of a record without 'context'."),
    ] = None,
    correct: Annotated[
        str, typer.Option("--correct", help="RAG: what decides 'answer correct': em, f1:T, contains, judge.")
    ] = "contains",
    title: Annotated[str | None, typer.Option(help="The page's title.")] = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: Annotated[
        Missing,
        typer.Option(help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip or error."),
    ] = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    digits: Annotated[int, typer.Option(**int_option(0, 20), help="Decimals of the means in the tables.")] = 4,
    qrels_format: QrelsFormatOption = None,
) -> None:
    """Write one self-contained HTML report: the comparison table with significance letters, effect sizes and
    conventions; precision, recall and nDCG at k = 1..1000; per-query differences against the baseline and a
    sortable, filterable per-query table; judgement health; with --rag, the RAG diagnosis.

    The file has everything inline (plots as SVG, a little JavaScript for sorting): it opens from disk, offline.

    Examples:

      stagewise report qrels.txt bm25.run dense.run hybrid.run -m ndcg@10 -m map --baseline bm25.run -o report.html

      stagewise report --rag answers.jsonl --rag-run bm25.trec --correct f1:0.5 -o rag.html
    """
    with user_errors():
        from stagewise.errors import StagewiseError

        runs = list(runs or [])
        if runs:
            from stagewise.engines import expand_globs

            runs = expand_globs(runs)
        check_output(output, [qrels, *runs, rag, rag_run])
        if qrels is not None and not runs and rag is None:
            raise StagewiseError("a report needs runs after the qrels (or RAG records with --rag)")
        if rag_run is not None and rag is None:
            raise StagewiseError("--rag-run gives the retrieved ids of RAG records: give --rag RECORDS too")
        from stagewise.report.html import write

        records = None
        if rag is not None:
            if rag_run is not None:
                from stagewise.rag.records import records_from_run

                records = records_from_run(rag_run, rag)
            else:
                from stagewise.rag.adapters import load_records

                records = load_records(rag, "native")
        labels = run_labels(runs) if runs else []
        named = dict(zip(labels, runs, strict=True)) if runs else None
        write(
            output,
            (lambda: read_qrels_as(qrels, qrels_format)) if qrels is not None else None,
            named,
            split_metrics(metric) if metric else None,
            baseline=None if baseline is None or not runs else baseline_label(baseline, runs, labels),
            test=test.value,
            correction=correction.value,
            alpha=alpha,
            permutations=permutations,
            seed=seed,
            rag=records,
            rag_options={"context_k": context_k, "correct": correct},
            relevance_level=relevance_level,
            ties=ties.value,
            missing=missing.value,
            max_ret=max_ret,
            judged_only=judged_only,
            title=title,
            digits=digits,
            sources=[s for s in (qrels, *runs, rag, rag_run) if s is not None],
        )
        parts = [f"{len(runs)} run{'s' * (len(runs) != 1)}" + (", compared with tests" if len(runs) > 1 else "")]
        parts = parts if runs else []
        if rag is not None:
            parts.append("the RAG diagnosis")
        typer.echo(f"wrote {output} (HTML report: {', '.join(parts)})", err=True)
