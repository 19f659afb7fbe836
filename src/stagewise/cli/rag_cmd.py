"""``stagewise rag RECORDS.jsonl [--context-k N] [--correct ...] [--format table|json|jsonl|markdown]``

The choices of ``--format``, ``--correct``, ``--judge``, ``--from`` and ``--evidence`` come from the library's
registries (:data:`stagewise.report.FORMATS`, :data:`stagewise.rag.answers.CRITERIA`,
:data:`stagewise.rag.judges.JUDGES`, :data:`stagewise.rag.adapters.ADAPTERS`,
:data:`stagewise.rag.options.EVIDENCE_SOURCES`): the help lists them when shown and a value is checked against
them when the command runs, so a criterion or a judge registered there is taken here with no edit.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.common import (
    check_output,
    emit,
    format_option,
    int_option,
    output_format,
    split_metrics,
    user_errors,
)

_MODULE_ATTR = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class _Checked:
    """A typer ``parser=`` that checks a value with a library function (or against a mapping's keys) when the
    command runs, not at start-up, and gives it back as typed; a bad value is the library's own
    :class:`~stagewise.errors.StagewiseError`, which names what there is, printed as one line with exit code 2
    (as :class:`~stagewise.cli.command.RegistryChoice` does for a plain name)."""

    def __init__(self, module: str, attr: str, option: str, *, module_attr: bool = False) -> None:
        self.module, self.attr, self.option, self.module_attr = module, attr, option, module_attr
        self.__name__ = "choice"  # typer names the parameter's type after its parser

    def __call__(self, value: Any) -> Any:
        from stagewise.errors import StagewiseError, parameter_error

        if value is None or (self.module_attr and _MODULE_ATTR.fullmatch(str(value))):
            return value  # module:attr names a user's own judge, loaded when the command runs
        check = getattr(importlib.import_module(self.module), self.attr)
        try:
            if callable(check):
                check(str(value))
            elif str(value) not in check:
                raise parameter_error(self.option, "rag", f"one of {', '.join(check)}", value)
        except StagewiseError as exc:  # click would wrap it (a ValueError) in its usage box
            typer.echo(f"stagewise: error: {exc}", err=True)
            raise typer.Exit(2) from None
        return value


def _load_judge(spec: str) -> Any:
    """A judge's name in the spec grammar (kept as typed), or ``module:attr`` naming a judge object, class or
    factory (loaded)."""
    if not _MODULE_ATTR.fullmatch(spec):
        return spec
    from stagewise.errors import StagewiseError

    module_name, _, attr = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise StagewiseError(f"cannot load judge {spec!r}: {exc}") from None
    if callable(getattr(target, "supports", None)) and not isinstance(target, type):
        return target
    return target()


def _records(records: str, shape: str, gold: Path | None, run: str | None, qrels: str | None) -> list[Any]:
    """The records, read in their shape (``--from``), with ``--gold``, ``--run`` and ``--qrels`` where they apply."""
    from stagewise.errors import StagewiseError
    from stagewise.rag.adapters import from_bergen, from_kilt, load_records
    from stagewise.rag.records import records_from_run

    if qrels is not None and shape != "native":
        raise StagewiseError(f"--qrels works with native records, not --from {shape}")
    if shape == "kilt":
        if gold is None:
            raise StagewiseError("--from kilt needs --gold GOLD_FILE (RECORDS is the guess file)")
        return from_kilt(gold, records)
    if gold is not None:
        raise StagewiseError("--gold is only for --from kilt")
    if shape == "bergen":
        return from_bergen(records, run)
    if run is not None or qrels is not None:
        if shape != "native":
            raise StagewiseError(f"--run/--qrels work with native records, not --from {shape}")
        return records_from_run(run, records, qrels)
    return load_records(records, shape)


Records = Annotated[
    str,
    typer.Argument(
        help="RAG records, one JSON object a line (id, retrieved, context, gold_evidence, answer, gold_answers, "
        "citations, passages); a JSON list also works; '-' reads stdin; .gz accepted. With --from, another tool's "
        "output file."
    ),
]
ContextK = Annotated[
    int | None,
    typer.Option(
        "--context-k",
        "-k",
        **int_option(1),
        help="Context of a record without 'context': retrieved[:N] (default 5); also the cut-off below which a "
        "retrieved gold id is ranked_too_low.",
    ),
]
Correct = Annotated[
    str,
    typer.Option(
        "--correct",
        "-c",
        parser=_Checked("stagewise.rag.answers", "parse_criterion", "correct"),
        help="What decides 'answer correct': {entries:stagewise.rag.answers:CRITERIA}; a parameter in the spec "
        "grammar (f1:0.5 is f1(threshold=0.5)).",
    ),
]
Judge = Annotated[
    str,
    typer.Option(
        parser=_Checked("stagewise.rag.judges", "parse_judge", "judge", module_attr=True),
        help="Support judge for sentence-level citation scores: {entries:stagewise.rag.judges:JUDGES}; parameters "
        "in the spec grammar (lexical(threshold=0.5)), or module:attr naming your own judge (an object with "
        "supports(passages, claim)).",
    ),
]
Shape = Annotated[
    str,
    typer.Option(
        "--from",
        parser=_Checked("stagewise.rag.adapters", "ADAPTERS", "from"),
        help="Shape of RECORDS: {names:stagewise.rag.adapters:ADAPTERS} (kilt: RECORDS = guesses, needs --gold; "
        "bergen: eval_dev_out.json, --run gives the retrieved ids).",
    ),
]
Evidence = Annotated[
    str,
    typer.Option(
        parser=_Checked("stagewise.rag.options", "EVIDENCE_SOURCES", "evidence"),
        help="Gold evidence of records without any: {names:stagewise.rag.options:EVIDENCE_SOURCES} (ids: none; "
        "answers: passages containing a gold answer, DPR's has_answer).",
    ),
]
Metrics = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        help="Ranking metrics of the evidence (repeatable or comma-separated); default "
        "recall@1, recall@5, recall@10, mrr, ndcg@10.",
    ),
]
_PerSample = typer.Option("--per-sample", help="With --format json, include every sample.")
_Output = typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
_JudgeCache = typer.Option(help="JSONL file that keeps a judge's answers between runs.")
_Run = typer.Option(help="A run (TREC or any run format) giving each record's retrieved ids, in its ranked order.")
_Qrels = typer.Option(help="Qrels giving each record's gold evidence: every relevant document is one alternative.")
_KiltK = typer.Option(
    **int_option(1), help="KILT-style scores need the evidence in the top N (default: R-precision = 1)."
)
_Digits = typer.Option(**int_option(0, 20), help="Decimals in table and markdown output.")
_Claims = typer.Option(
    help="RAGChecker's output JSON (ragchecker --output_path): its claims and entailment checks, matched to the "
    "records by query_id, give its 11 claim-level metrics (precision, recall, F1, claim recall, context precision, "
    "context utilisation, noise sensitivity, hallucination, self-knowledge, faithfulness)."
)
ClaimJudge = Annotated[
    str | None,
    typer.Option(
        parser=_Checked("stagewise.rag.judges", "parse_judge", "claim-judge", module_attr=True),
        help="Compute the claim-level metrics with this judge instead of reading them: sentences of the answer and "
        "of the gold answers as claims, context passages as chunks; also assigns unassigned nuggets and checks "
        "the nuggets' context (default lexical there). A judge that reads text: lexical, calibrated, or module:attr.",
    ),
]
_Nuggets = typer.Option(
    help="Nuggets in nuggetizer's JSONL ({qid, nuggets: [{text, importance, assignment?}]}), matched by qid: "
    "TREC RAG 2024 nugget scores (strict/partial, vital/all) and the nugget 2x2 (in context x in answer)."
)


def rag_command(
    records: Records,
    context_k: ContextK = None,
    correct: Correct = "contains",
    fmt: Annotated[str | None, format_option("RagReport")] = None,
    output: Annotated[Path | None, _Output] = None,
    per_sample: Annotated[bool, _PerSample] = False,
    judge: Judge = "auto",
    judge_cache: Annotated[Path | None, _JudgeCache] = None,
    shape: Shape = "native",
    gold: Annotated[Path | None, typer.Option(help="KILT gold file (with --from kilt).")] = None,
    run: Annotated[str | None, _Run] = None,
    qrels: Annotated[str | None, _Qrels] = None,
    metric: Metrics = None,
    kilt_k: Annotated[int | None, _KiltK] = None,
    evidence: Evidence = "ids",
    digits: Annotated[int, _Digits] = 4,
    claims: Annotated[Path | None, _Claims] = None,
    claim_judge: ClaimJudge = None,
    nuggets: Annotated[Path | None, _Nuggets] = None,
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

      stagewise rag checked.json --from ragchecker --claims checked.json

      stagewise rag records.jsonl --claim-judge lexical --nuggets nuggets.jsonl
    """
    with user_errors():
        inputs = [records, gold, run, qrels, claims, nuggets]
        check_output(output, [*inputs, judge_cache])
        from stagewise.report import offered

        chosen_format = output_format(fmt, output, offered("RagReport"))
        # The judge cache is appended to, not replaced: the same checks keep it off the inputs and the output.
        check_output(judge_cache, inputs, option="--judge-cache", others={"--output": output})
        from stagewise.rag.diagnose import evaluate_rag
        from stagewise.rag.options import DEFAULT_METRICS, RagOptions
        from stagewise.report import render

        options = RagOptions(
            context_k=context_k,
            correct=correct,
            judge=_load_judge(judge),
            judge_cache=judge_cache,
            metrics=tuple(split_metrics(metric)) if metric else DEFAULT_METRICS,
            kilt_k=kilt_k,
            evidence=evidence,
            claims=claims,
            claim_judge=_load_judge(claim_judge) if claim_judge is not None else None,
            nuggets=nuggets,
        )
        report = evaluate_rag(_records(records, shape, gold, run, qrels), options)
        text = render(report, chosen_format, per_sample=per_sample, digits=digits)
        emit(text, output, f"{chosen_format}, {len(report.rows):,} samples")
