"""``stagewise trust QRELS RUN... -m METRIC --depth K``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import (
    Missing,
    QrelsFormatOption,
    RelevanceLevelOption,
    Ties,
    TiesOption,
    check_output,
    emit,
    format_option,
    int_option,
    output_format,
    read_qrels_as,
    run_labels,
    user_errors,
)

MetricOption = Annotated[
    str,
    typer.Option("--metric", "-m", help="The one metric to trust: map, ndcg@10, P@10(rel=2), recall@100, bpref..."),
]
DepthOption = Annotated[
    int, typer.Option("--depth", "-k", **int_option(1), help="Pool depth: the first K results of every run.")
]
GroupByOption = Annotated[
    str,
    typer.Option(
        "--group-by",
        metavar="SPEC",
        help="What is left out: each run; runs whose tag starts with the same letters (prefix) or the same N "
        "characters (prefix:N); or the groups a file gives ('run group' a line, or a JSON object).",
    ),
]
BoundDepthOption = Annotated[
    int | None,
    typer.Option(
        "--bound-depth", **int_option(1), help="How deep the score bounds look for unjudged documents (default: K)."
    ),
]
BoundLabelOption = Annotated[
    int,
    typer.Option(
        "--bound-label", **int_option(1), help="The label an unjudged document gets when the bounds read it relevant."
    ),
]
OtherQrelsOption = Annotated[
    str | None,
    typer.Option("--other-qrels", help="A second qrels file: the ranking of the runs on it is compared too."),
]
TrustMissingOption = Annotated[
    Missing,
    typer.Option(help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip or error."),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]


def trust_command(
    qrels: Annotated[str, typer.Argument(help="Judgements (TREC qrels, JSON, JSONL, CSV, TSV or Parquet).")],
    runs: Annotated[list[str], typer.Argument(help="The runs (at least two): the pool is made of them.")],
    metric: MetricOption = "map",
    depth: DepthOption = 100,
    group_by: GroupByOption = "run",
    bound_depth: BoundDepthOption = None,
    bound_label: BoundLabelOption = 1,
    other_qrels: OtherQrelsOption = None,
    fmt: Annotated[str | None, format_option("TrustReport")] = None,
    output: OutputOption = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: TrustMissingOption = Missing.zero,
    qrels_format: QrelsFormatOption = None,
) -> None:
    """How far the qrels can be trusted to score a system that was not pooled.

    Leave one run out (Zobel 1998): the pool of depth K is made from every run; the documents only one run (or
    one group, --group-by) brought to it are removed from the qrels and that run is scored again. Its score
    change and its rank change among all runs say what a new, unpooled system's number is worth.

    Score bounds: each run's score with the unjudged documents in its first K results read as non-relevant,
    then as relevant (--bound-label). Ranking agreement: Kendall's tau, tau_ap, Spearman and RBO between the
    full and the left-out ranking of the runs (and the ranking on --other-qrels).

    Examples:

      stagewise trust robust03_qrels.txt runs/* -m map --depth 100

      stagewise trust qrels.txt runs/*.trec -m ndcg@10 --depth 20 --group-by prefix --format json -o trust.json
    """
    with user_errors():
        from stagewise.assess.qrels_trust import TrustOptions, trust
        from stagewise.cli.common import check_distinct, split_metrics
        from stagewise.errors import InputError
        from stagewise.metrics.context import Conventions
        from stagewise.report import offered, render

        check_distinct(runs, "each run once (a run given twice leaves out nothing of its own)")
        if other_qrels is not None:
            check_distinct([qrels, other_qrels], "--other-qrels a second qrels file, not QRELS again")
        check_output(output, [qrels, *runs, other_qrels])
        chosen_format = output_format(fmt, output, offered("TrustReport"))
        metrics = split_metrics([metric])
        if len(metrics) != 1:  # else the error would be "unknown metric 'map,ndcg'"
            raise InputError(
                "--metric",
                f"{len(metrics)} metrics were given ({', '.join(metrics)})",
                expected="one metric",
                hint="trust measures one metric a run; run it once per metric",
            )
        spec = group_by.strip()
        grouping = spec if spec.lower() == "run" or spec.lower().startswith("prefix") else _group_file(spec)
        options = TrustOptions(
            metric=metrics[0],
            depth=depth,
            group_by=grouping,
            bound_depth=bound_depth,
            bound_label=bound_label,
        )
        conventions = Conventions(relevance_level=relevance_level, ties=ties.value, missing=missing.value)  # type: ignore[arg-type]
        report = trust(
            lambda: read_qrels_as(qrels, qrels_format),  # read once the options are checked
            dict(zip(run_labels(runs), runs, strict=True)),
            options,
            conventions=conventions,
            other_qrels=other_qrels,
        )
        emit(render(report, chosen_format), output, chosen_format)


def _group_file(spec: str) -> dict[str, str]:
    """The groups a --group-by file gives; a value that is neither a grouping nor a file says both."""
    import os

    from stagewise.assess.qrels_trust import read_groups
    from stagewise.errors import InputError

    if not os.path.exists(spec):
        raise InputError(
            spec, "is neither a grouping nor a file", expected="--group-by run, prefix, prefix:N or a run-to-group file"
        )
    return read_groups(spec)
