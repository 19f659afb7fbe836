"""``stagewise agreement A B [C ...]`` and ``stagewise merge A B C --policy P -o MERGED``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.common import (
    INT64_MAX,
    check_distinct,
    check_output,
    emit,
    format_option,
    int_option,
    output_format,
    usage_error,
    user_errors,
)


def _names(paths: list[str]) -> list[str]:
    """The files' labels, after refusing a file given twice."""
    from stagewise.data.readers import path_labels

    check_distinct(paths, "each qrels file once (a file agrees with itself)")
    return path_labels(paths)


def agreement_command(
    qrels: Annotated[
        list[str] | None, typer.Argument(help="Two qrels files or more (assessors, judges, versions).")
    ] = None,
    fmt: Annotated[str | None, format_option("AgreementReport")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
    ] = None,
    relevance_level: Annotated[
        int | None,
        typer.Option(
            "--relevance-level",
            "-l",
            **int_option(-INT64_MAX - 1),
            help="Binary agreement: a label >= this is relevant (graded by default).",
        ),
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="A campaign store: its assessors' labels instead of qrels files.")
    ] = None,
    campaign: Annotated[
        str | None, typer.Option("--campaign", help="The store's campaign (needed when it holds several).")
    ] = None,
) -> None:
    """Agreement between qrels files: Cohen's kappa (unweighted, linear, quadratic) and the confusion matrix per
    pair, Fleiss' kappa, Krippendorff's alpha (nominal, ordinal), per-assessor figures, and for two files the
    qrels diff.

    Files are aligned on their (query, document) pairs; a pair one file did not judge is missing there (Cohen's
    kappa uses the pairs both judged, Fleiss' kappa those all judged, Krippendorff's alpha those judged twice or
    more).

    Examples:

        stagewise agreement ann.qrels bob.qrels
        stagewise agreement ann.qrels bob.qrels judge.qrels --format json -l 1
        stagewise agreement --store campaign.sqlite --campaign pool
    """
    with user_errors():
        from stagewise.errors import InputError

        if campaign is not None and store is None:
            raise InputError("--campaign", "names a campaign of a store", hint="add --store STORE")
        if store is not None:
            return _store_agreement(store, campaign, qrels, fmt, output, relevance_level)
        qrels = qrels or []
        if len(qrels) < 2:
            raise InputError("QRELS", f"{len(qrels)} file given", expected="two qrels files or more")
        check_output(output, list(qrels))
        from stagewise.report import offered, render

        chosen = output_format(fmt, output, offered("AgreementReport"))
        from stagewise.assess.summary import agreement_report

        report = agreement_report(dict(zip(_names(qrels), qrels, strict=True)), relevance_level=relevance_level)
        emit(render(report, chosen), output, chosen)


def _store_agreement(
    store: Path, campaign: str | None, qrels: list[str] | None, fmt: str | None, output: Path | None, level: int | None
) -> None:
    """``stagewise agreement --store STORE [--campaign NAME]``: the campaign's assessors, as qrels files would be."""
    from stagewise.errors import InputError

    if qrels:
        raise InputError("QRELS", "given with --store", hint="agree qrels files, or a store's assessors, not both")
    check_output(output, [store])
    from stagewise.assess.campaign_build import campaign_agreement
    from stagewise.cli.campaign_cmd import open_campaign
    from stagewise.report import offered, render

    chosen = output_format(fmt, output, offered("AgreementReport"))
    opened, name = open_campaign(store, campaign)
    try:
        report = campaign_agreement(opened, name, relevance_level=level)
    finally:
        opened.close()
    emit(render(report, chosen), output, chosen)


def _policy(value: Any) -> Any:
    from stagewise.assess.catalogue import parse_policy
    from stagewise.errors import StagewiseError

    if value is None:
        return value
    try:
        return str(parse_policy(str(value)))
    except StagewiseError as exc:
        raise usage_error(str(exc)) from None


def merge_command(
    qrels: Annotated[
        list[str], typer.Argument(help="The assessors' qrels files (each file's name names its assessor).")
    ],
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            "-p",
            parser=_policy,
            metavar="POLICY",
            help="How labels merge, in the spec grammar (adjudicator(name=B), mean(threshold=1.5)): "
            "{entries:stagewise.assess.catalogue:MERGE_POLICIES}.",
        ),
    ] = "majority",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the merged qrels to this file (atomically) instead of stdout."),
    ] = None,
) -> None:
    """Merge several assessors' qrels into one, the policy stated in a header comment.

    Every (query, document) pair some assessor judged is in the result; the policy sees only the labels that
    pair received. The first line of the output is a '#' comment naming the policy with its parameters and the
    assessors (trec_eval and stagewise skip it). An adjudicator is named by its file's name as shown in the
    header (its file name; a longer path suffix where two files share one).

    Examples:

        stagewise merge ann.qrels bob.qrels cy.qrels --policy majority -o merged.qrels
        stagewise merge ann.qrels bob.qrels boss.qrels --policy 'adjudicator(name=boss.qrels)' -o merged.qrels
    """
    with user_errors():
        from stagewise.errors import InputError

        if len(qrels) < 2:
            raise InputError("QRELS", f"{len(qrels)} file given", expected="two qrels files or more to merge")
        check_output(output, list(qrels))
        from stagewise.assess.catalogue import merge

        merged = merge(dict(zip(_names(qrels), qrels, strict=True)), policy)
        emit(qrels_text(merged), output, f"qrels, {len(merged.qrels):,} judgements, policy {merged.policy}")


def qrels_text(merged: Any) -> str:
    """The merged qrels as TREC lines (``qid 0 docid label``, by query then document, byte order) after a header
    comment stating the policy and the assessors."""
    q = merged.qrels
    queries = q.query_ids[q.query_codes].tolist()
    lines = [f"# merged by stagewise: policy {merged.policy}; assessors {', '.join(merged.assessors)}\n"]
    rows = sorted(
        zip(queries, q.docs.values(), q.labels.tolist(), strict=True), key=lambda r: (r[0].encode(), r[1].encode())
    )
    lines += [f"{a} 0 {d} {int(x)}\n" for a, d, x in rows]
    return "".join(lines)
