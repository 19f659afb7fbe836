"""``stagewise report QRELS RUN... [-m METRIC...] [--baseline RUN] [--test ...] [--rag RECORDS] -o report.html``

The command reads its options into values (a :class:`~stagewise.Conventions`, a
:class:`~stagewise.stats.compare.CompareOptions`), asks the library for the :func:`~stagewise.study` of its
inputs and writes the page :func:`stagewise.report.html.render` makes of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    METRIC_SPELLINGS,
    IgnoreSelfOption,
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
from stagewise.cli.compare_cmd import (
    EXACT_VALUES,
    AlphaOption,
    Alternative,
    AlternativeOption,
    CorrectionOption,
    Exact,
    ExactOption,
    Family,
    FamilyOption,
    Interval,
    IntervalOption,
    LevelOption,
    ReferenceOption,
    ResamplesOption,
    SeedOption,
    StandardiseOption,
    TestOption,
    TieToleranceOption,
)

if TYPE_CHECKING:
    from stagewise.study import Study


# The command's own options, one type each (the signature below stays a list of names); the comparison's are
# compare's own (stagewise.cli.compare_cmd), so the two commands offer the same test options.
QrelsArgument = Annotated[
    str | None, typer.Argument(help="Judgements: TREC qrels, JSON, JSONL, CSV, TSV or Parquet; .gz accepted.")
]
RunsArgument = Annotated[
    list[str] | None,
    typer.Argument(help="Runs (TREC or the tabular formats); with two or more, a comparison with tests."),
]
OutputOption = Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write (atomically).")]
MetricOption = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        help="Metrics of the comparison and the per-query views, repeatable or comma-separated; the first is "
        f"the metric of the per-query difference plots. {METRIC_SPELLINGS} Default: {DEFAULT_METRICS_TEXT}.",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust",
        help="Add how far the qrels can be trusted: each run scored without the pool documents only it contributed "
        "(its score and rank change), score bounds over the unjudged, ranking agreement; on the first metric "
        "(stagewise trust does it alone).",
    ),
]
TrustDepthOption = Annotated[
    int, typer.Option("--trust-depth", **int_option(1), help="Pool depth of --trust: the first K results of each run.")
]
BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        "-b",
        help="Test and plot every run against this run (name or path); default: all pairs "
        "are tested and the first run is the plots' baseline.",
    ),
]
RagOption = Annotated[
    str | None,
    typer.Option(help="RAG records (JSONL, as stagewise rag reads them): adds the RAG diagnosis section."),
]
RagRunOption = Annotated[
    str | None,
    typer.Option(help="A run giving each RAG record's retrieved ids in ranked order (as stagewise rag --run)."),
]
JudgeAuditOption = Annotated[
    list[str] | None,
    typer.Option(
        "--judge-audit",
        help="With --rag: an audit of a judge against people's labels (the JSON of stagewise judge audit --format "
        "json), shown at the top of the RAG section beside the labels that judge gave; repeatable.",
    ),
]
ContextKOption = Annotated[
    int | None,
    typer.Option("--context-k", "-k", **int_option(1), help="RAG: the context of a record without 'context'."),
]
CorrectOption = Annotated[
    str, typer.Option("--correct", help="RAG: what decides 'answer correct': em, f1:T, contains, judge.")
]
TitleOption = Annotated[str | None, typer.Option(help="The page's title.")]
MissingOption = Annotated[
    Missing, typer.Option(help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip or error.")
]
DigitsOption = Annotated[int, typer.Option(**int_option(0, 20), help="Decimals of the means in the tables.")]


def report_command(
    qrels: QrelsArgument = None,
    runs: RunsArgument = None,
    output: OutputOption = Path("report.html"),
    metric: MetricOption = None,
    baseline: BaselineOption = None,
    test: TestOption = "t",
    correction: CorrectionOption = "holm",
    alpha: AlphaOption = 0.05,
    alternative: AlternativeOption = Alternative["two-sided"],
    resamples: ResamplesOption = 10_000,
    seed: SeedOption = 0,
    exact: ExactOption = Exact.auto,
    tie_tolerance: TieToleranceOption = 1e-9,
    ci: IntervalOption = Interval["t"],
    ci_level: LevelOption = 0.95,
    family: FamilyOption = Family["metric"],
    standardise: StandardiseOption = "none",
    reference: ReferenceOption = None,
    rag: RagOption = None,
    rag_run: RagRunOption = None,
    judge_audit: JudgeAuditOption = None,
    context_k: ContextKOption = None,
    correct: CorrectOption = "contains",
    title: TitleOption = None,
    trust: TrustOption = False,
    trust_depth: TrustDepthOption = 100,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: MissingOption = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    ignore_self: IgnoreSelfOption = False,
    digits: DigitsOption = 4,
    qrels_format: QrelsFormatOption = None,
) -> None:
    """Write one self-contained HTML report: the comparison table with significance letters, effect sizes and
    conventions; precision, recall and nDCG at k = 1..1000; per-query differences against the baseline and a
    sortable, filterable per-query table; judgement health; with --rag, the RAG diagnosis.

    The test options are compare's (a one-sided test, the interval, a correction across metrics); the page
    states what the comparison used. The file has everything inline (plots as SVG, a little JavaScript for
    sorting): it opens from disk, offline.

    Examples:

      stagewise report qrels.txt bm25.run dense.run hybrid.run -m ndcg@10 -m map --baseline bm25.run -o report.html

      stagewise report qrels.txt bm25.run tuned.run -b bm25.run -t randomization --alternative greater --ci bootstrap

      stagewise report --rag answers.jsonl --rag-run bm25.trec --correct f1:0.5 -o rag.html
    """
    with user_errors():
        runs = _inputs(qrels, runs, output, rag, rag_run, judge_audit)
        from stagewise.metrics.context import Conventions
        from stagewise.report.html import write
        from stagewise.report.html.page import pyplot

        labels = run_labels(runs) if runs else []
        from stagewise.stats.compare import CompareOptions

        options = CompareOptions(  # the whole value, as compare's: a one-sided test, an interval, a family
            test=test,
            baseline=None if baseline is None or not runs else baseline_label(baseline, runs, labels),
            correction=correction,
            alpha=alpha,
            alternative=alternative.value,
            resamples=resamples,
            seed=seed,
            exact=EXACT_VALUES[exact],
            tie_tolerance=tie_tolerance,
            ci=ci.value,
            ci_level=ci_level,
            family=family.value,
            standardise=standardise,
            reference=None if reference is None else tuple(baseline_label(r, runs, labels) for r in reference),
        )
        conventions = Conventions(
            relevance_level=relevance_level,
            ties=ties.value,
            missing=missing.value,
            max_ret=max_ret,
            judged_only=judged_only,
            ignore_self=ignore_self,
        )
        pyplot()  # matplotlib missing: said before any file is read
        made = _study(
            qrels, qrels_format, dict(zip(labels, runs, strict=True)) if runs else None, metric, conventions, options,
            _records(rag, rag_run), {"context_k": context_k, "correct": correct},
            [s for s in (qrels, *runs, rag, rag_run, *(judge_audit or [])) if s is not None],
            {"depth": trust_depth} if trust else None, judge_audit or None,
        )  # fmt: skip
        write(output, made, title=title, digits=digits)
        parts = [f"{len(runs)} run{'s' * (len(runs) != 1)}" + (", compared with tests" if len(runs) > 1 else "")]
        parts = parts if runs else []
        if trust:
            parts.append("how far the qrels can be trusted")
        if rag is not None:
            parts.append("the RAG diagnosis")
        typer.echo(f"wrote {output} (HTML report: {', '.join(parts)})", err=True)


def _inputs(
    qrels: str | None, runs: list[str] | None, output: Path, rag: str | None, rag_run: str | None, audits: Any = None
) -> list[str]:
    """The run paths (globs expanded), once the output and the combination of inputs are checked."""
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
    if audits and rag is None:
        raise StagewiseError("--judge-audit is shown in the RAG section: give --rag RECORDS too")
    return runs


def _records(rag: str | None, rag_run: str | None) -> Any:
    """The RAG records of ``--rag`` (their retrieved ids from ``--rag-run`` when given), or None."""
    if rag is None:
        return None
    if rag_run is not None:
        from stagewise.rag.records import records_from_run

        return records_from_run(rag_run, rag)
    from stagewise.rag.adapters import load_records

    return load_records(rag, "native")


def _study(
    qrels: str | None,
    qrels_format: Any,
    runs: dict[str, str] | None,
    metric: list[str] | None,
    conventions: Any,
    options: Any,
    records: Any,
    rag_options: dict[str, Any],
    sources: list[str],
    trust: dict[str, Any] | None = None,
    judge_audit: list[str] | None = None,
) -> Study:
    """The library's study of the inputs: the qrels read when the cheap checks have passed."""
    from stagewise.study import study

    return study(
        (lambda: read_qrels_as(qrels, qrels_format)) if qrels is not None else None,
        runs,
        split_metrics(metric) if metric else None,
        conventions=conventions,
        compare=options,
        rag=records,
        rag_options=rag_options,
        sources=sources,
        trust=trust,
        judge_audit=judge_audit,
    )
