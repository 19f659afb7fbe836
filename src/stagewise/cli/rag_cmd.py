"""``stagewise rag RECORDS.jsonl [--context-k N] [--correct ...] [--format table|json|jsonl|markdown]``"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import check_output, emit, int_option, output_format, split_metrics, user_errors


class RagFormat(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    markdown = "markdown"


class Shape(StrEnum):
    native = "native"
    ragas = "ragas"
    ragchecker = "ragchecker"
    kilt = "kilt"
    bergen = "bergen"


class Evidence(StrEnum):
    ids = "ids"
    answers = "answers"


def _load_judge(spec: str):
    """``auto|gold|lexical|none``, or ``module:attr`` naming a judge object, class or factory."""
    if ":" not in spec:
        return spec
    import importlib

    from stagewise.errors import StagewiseError

    module_name, _, attr = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise StagewiseError(f"cannot load judge {spec!r}: {exc}") from None
    if callable(getattr(target, "supports", None)) and not isinstance(target, type):
        return target
    return target()


def rag_command(
    records: Annotated[
        str,
        typer.Argument(
            help="RAG records, one JSON object a line (id, retrieved, context, gold_evidence, answer, "
            "gold_answers, citations, passages); a JSON list also works; '-' reads stdin; .gz accepted. "
            "With --from, another tool's output file."
        ),
    ],
    context_k: Annotated[
        int | None,
        typer.Option(
            "--context-k",
            "-k",
            **int_option(1),
            help="Context of a record without 'context': retrieved[:N] (default 5); also the cut-off below which a "
            "retrieved gold id is ranked_too_low.",
        ),
    ] = None,
    correct: Annotated[
        str,
        typer.Option("--correct", "-c", help="What decides 'answer correct': em, f1:T (e.g. f1:0.5), contains, judge."),
    ] = "contains",
    fmt: Annotated[
        RagFormat | None,
        typer.Option("--format", "-f", help="Output format (default: the one -o's extension names, else table)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
    ] = None,
    per_sample: Annotated[bool, typer.Option("--per-sample", help="With --format json, include every sample.")] = False,
    judge: Annotated[
        str,
        typer.Option(
            help="Support judge for sentence-level citation scores: auto (lexical when records carry passage texts, "
            "else gold), gold, lexical, none, or module:attr naming your own judge (an object with "
            "supports(passages, claim))."
        ),
    ] = "auto",
    judge_cache: Annotated[
        Path | None, typer.Option(help="JSONL file that keeps a custom judge's answers between runs.")
    ] = None,
    shape: Annotated[
        Shape,
        typer.Option(
            "--from",
            help="Shape of RECORDS: native, ragas, ragchecker, kilt (RECORDS = guesses; "
            "needs --gold), bergen (eval_dev_out.json; --run gives the retrieved ids).",
        ),
    ] = Shape.native,
    gold: Annotated[Path | None, typer.Option(help="KILT gold file (with --from kilt).")] = None,
    run: Annotated[
        str | None,
        typer.Option(help="A run (TREC or any run format) giving each record's retrieved ids, in its ranked order."),
    ] = None,
    qrels: Annotated[
        str | None,
        typer.Option(help="Qrels giving each record's gold evidence: every relevant document is one alternative."),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Ranking metrics of the evidence (repeatable or comma-separated); default "
            "recall@1, recall@5, recall@10, mrr, ndcg@10.",
        ),
    ] = None,
    kilt_k: Annotated[
        int | None,
        typer.Option(
            **int_option(1), help="KILT-style scores need the evidence in the top N (default: R-precision = 1)."
        ),
    ] = None,
    evidence: Annotated[
        Evidence,
        typer.Option(
            help="Gold evidence of records without any: none (ids) or passages containing a gold answer "
            "(answers, DPR's has_answer)."
        ),
    ] = Evidence.ids,
    digits: Annotated[int, typer.Option(**int_option(0, 20), help="Decimals in table and markdown output.")] = 4,
) -> None:
    """Diagnose RAG samples: score retrieval and answer generation separately, label every sample with the stage
    that failed (ok, generation_failure, retrieval_failure, lucky) and the reason, and check citations.

    Offline and deterministic by default. Every output names the correctness criterion, context_k and how
    alternatives of gold evidence count.

    Examples:

      stagewise rag records.jsonl

      stagewise rag records.jsonl --context-k 3 --correct f1:0.5 --format jsonl -o labels.jsonl

      stagewise rag answers.jsonl --run bm25.trec --qrels qrels.txt --format markdown

      stagewise rag ragas.json --from ragas --evidence answers --judge lexical

      stagewise rag guesses.jsonl --from kilt --gold nq-dev-kilt.jsonl --format json
    """
    with user_errors():
        inputs = [records, gold, run, qrels]
        check_output(output, [*inputs, judge_cache])
        chosen_format = output_format(fmt and fmt.value, output, tuple(RagFormat))
        # The judge cache is appended to, not replaced: the same checks keep it off the inputs and the output.
        check_output(judge_cache, inputs, option="--judge-cache", others={"--output": output})
        from stagewise.errors import StagewiseError
        from stagewise.rag.adapters import from_bergen, from_kilt, load_records
        from stagewise.rag.diagnose import DEFAULT_METRICS, evaluate_rag
        from stagewise.rag.records import records_from_run

        if qrels is not None and shape is not Shape.native:
            raise StagewiseError(f"--qrels works with native records, not --from {shape.value}")
        if shape is Shape.kilt:
            if gold is None:
                raise StagewiseError("--from kilt needs --gold GOLD_FILE (RECORDS is the guess file)")
            recs = from_kilt(gold, records)
        elif gold is not None:
            raise StagewiseError("--gold is only for --from kilt")
        elif shape is Shape.bergen:
            recs = from_bergen(records, run)
        elif run is not None or qrels is not None:
            if shape is not Shape.native:
                raise StagewiseError(f"--run/--qrels work with native records, not --from {shape.value}")
            recs = records_from_run(run, records, qrels)
        else:
            recs = load_records(records, shape.value)
        report = evaluate_rag(
            recs,
            context_k=context_k,
            correct=correct,
            judge=_load_judge(judge),
            judge_cache=judge_cache,
            metrics=split_metrics(metric) if metric else DEFAULT_METRICS,
            kilt_k=kilt_k,
            evidence=evidence.value,
        )
        from stagewise.report import rag as render_rag

        samples = len(report.rows)
        emit(
            render_rag.render(report, chosen_format, per_sample=per_sample, digits=digits),
            output,
            f"{chosen_format}, {samples:,} samples",
        )
