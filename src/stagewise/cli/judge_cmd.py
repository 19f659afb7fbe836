"""``stagewise judge support|relevance|audit``: ask a judge, write its verdicts, and audit it against people.

The judges are the entries of :data:`stagewise.rag.judges.JUDGES` (``--judge`` in the spec grammar); each
subcommand accepts only the entries that answer its task (``JudgeEntry.tasks``), and its help lists them when
shown. Outputs are written atomically and are the same bytes on a rerun: verdicts follow the input's order, and
every line or document names the judge with its version.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import StagewiseCommand, reflowed_help
from stagewise.cli.common import check_output, emit, int_option, usage_error, user_errors

judge_app = typer.Typer(
    name="judge",
    help="Ask a judge whether passages support claims or how relevant passages are, and audit a judge against "
    "people's labels (agreement with intervals, calibration, gullibility).",
    no_args_is_help=True,
)


class _TaskJudge:
    """A typer ``parser=`` for ``--judge``: a name of :data:`~stagewise.rag.judges.JUDGES` in the spec grammar
    whose entry answers ``task`` (or, for ``task`` None, any), checked when the command runs; a bad one is one
    line naming the judges that can, exit 2."""

    def __init__(self, task: str | None) -> None:
        self.task = task
        self.__name__ = "judge"

    def __call__(self, value: Any) -> Any:
        from stagewise.errors import StagewiseError
        from stagewise.rag.judges import JUDGES, parse_judge

        try:
            spec = parse_judge(str(value))
        except StagewiseError as exc:
            raise usage_error(str(exc)) from None
        if self.task is not None and self.task not in spec.entry.tasks:
            able = [n for n in JUDGES.names() if self.task in JUDGES[n].tasks and JUDGES[n].build is not None]
            raise usage_error(f"judge {spec.name!r} cannot answer {self.task}; judges that can: {', '.join(able)}")
        if spec.entry.build is None or spec.entry.per_sample:
            raise usage_error(f"judge {spec.name!r} judges no text here (it is {spec.entry.help})")
        return spec.name


class _TaskJudges:
    """The entries of :data:`~stagewise.rag.judges.JUDGES` that judge texts for ``tasks``, read when help is
    shown (``{entries:stagewise.cli.judge_cmd:SUPPORT_JUDGES}``), so a judge registered later is listed."""

    def __init__(self, *tasks: str) -> None:
        self.tasks = tasks

    def names(self) -> list[str]:
        from stagewise.rag.judges import JUDGES

        return [
            n for n in JUDGES.names()
            if JUDGES[n].build is not None and not JUDGES[n].per_sample and set(self.tasks) & set(JUDGES[n].tasks)
        ]  # fmt: skip

    def __getitem__(self, name: str) -> Any:
        from stagewise.rag.judges import JUDGES

        return JUDGES[name]


SUPPORT_JUDGES = _TaskJudges("support")
RELEVANCE_JUDGES = _TaskJudges("relevance")
AUDIT_JUDGES = _TaskJudges("support", "relevance")


def _judge_help(task: str, registry: str) -> str:
    return f"The judge in the spec grammar, one that answers {task}: {{entries:stagewise.cli.judge_cmd:{registry}}}."


OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]


# Options a model judge takes as parameters (the llm entry's max_calls, dry_run, cache): given on the command
# line, each becomes that parameter of the judge's spec when the entry declares it, else a one-line error.
MaxCallsOption = Annotated[
    int | None,
    typer.Option(
        "--max-calls", **int_option(0), help="A model judge's call budget (its max_calls); past it, items are unjudged."
    ),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="A model judge makes no call: prints the calls and tokens it would make.")
]
CacheOption = Annotated[
    str | None, typer.Option("--cache", help="A model judge's reply cache file (its cache; 'off': memory only).")
]
# Usage counts that differ between a first run and a rerun answered from the cache: totals on stderr only, so
# the verdict files are the same bytes on a rerun.
_RUN_COUNTS = ("attempts", "cache_hits", "calls")


def _build(name: str, *, max_calls: int | None = None, dry_run: bool = False, cache: str | None = None) -> Any:
    """The judge ``name`` builds, the model options merged into its parameters where its entry takes them."""
    from stagewise.errors import ConventionError
    from stagewise.rag.judges import JUDGES, JudgeSpec, parse_judge

    spec = parse_judge(name)
    given = {"max_calls": max_calls, "dry_run": dry_run or None, "cache": cache}
    extra = {k: v for k, v in given.items() if v is not None}
    for key in extra:
        if key not in spec.entry.params:
            flag = "--" + key.replace("_", "-")
            raise ConventionError(f"judge {spec.name!r} takes no {key}: {flag} is for a model judge (llm)")
    if extra:
        checked = JUDGES.check_params(spec.entry.name, spec.entry.params, extra)
        params = {**dict(spec.params), **{k: checked[k] for k in extra}}
        spec = JudgeSpec(spec.kind, tuple(params.items()))
    return spec.build()


def _shown(verdict: Any) -> dict[str, Any]:
    """A verdict as an output line holds it: usage without the counts a cached rerun changes."""
    shown = verdict.as_dict()
    usage = {k: v for k, v in shown.pop("usage", {}).items() if k not in _RUN_COUNTS}
    return {**shown, **({"usage": usage} if usage else {})}


def _after(judge: Any, task: str, items: list[Any]) -> None:
    """A model judge's plan (dry run) or call totals on stderr, then its connections closed."""
    if items and getattr(judge, "dry_run", False) and callable(getattr(judge, "plan", None)):
        from stagewise.rag.llm_judges import plan_summary  # the llm judge's own line, for any judge with a plan

        typer.echo(f"dry run: {plan_summary(judge.plan(task, items))}; every verdict is unjudged", err=True)
    stats = getattr(judge, "stats", None)
    if stats is not None and hasattr(stats, "as_dict"):
        typer.echo("judge calls: " + ", ".join(f"{k} {v}" for k, v in stats.as_dict().items()), err=True)
    if callable(getattr(judge, "close", None)):
        judge.close()


def _line(**fields: Any) -> str:
    return json.dumps(fields, ensure_ascii=False) + "\n"


def support_command(
    claims: Annotated[
        str,
        typer.Argument(help='Claims, one JSON object a line: {"id", "claim", "passages": [text or {"id","text"}]}.'),
    ],
    judge: Annotated[
        str, typer.Option("--judge", parser=_TaskJudge("support"), help=_judge_help("support", "SUPPORT_JUDGES"))
    ] = "calibrated",
    output: OutputOption = None,
    max_calls: MaxCallsOption = None,
    dry_run: DryRunOption = False,
    cache: CacheOption = None,
) -> None:
    """Judge whether each claim's passages support it: one JSON line per claim, in the input's order.

    Each output line has the input's id, supported (true, false, or null when the judge could not answer),
    label (supported, partial, not, or unjudged with a reason), score in [0, 1], judge and judge_version. A
    passage given as a bare text gets the id p1, p2... by position. Unjudged claims are counted apart on
    stderr, never as not supported.

    Examples:

        stagewise judge support claims.jsonl -o verdicts.jsonl
        stagewise judge support claims.jsonl --judge 'lexical(threshold=0.5)'
    """
    with user_errors():
        check_output(output, [claims])
        from stagewise.rag.judge_inputs import read_claims
        from stagewise.rag.judges import judge_name, judge_version
        from stagewise.rag.verdicts import support_verdicts

        items, _ = read_claims(claims)
        built = _build(judge, max_calls=max_calls, dry_run=dry_run, cache=cache)
        asked = [(list(c.passages), c.claim) for c in items]
        verdicts = support_verdicts(built, asked)
        _after(built, "support", asked)
        name, version = judge_name(built), judge_version(built)
        lines = []
        for claim, verdict in zip(items, verdicts, strict=True):
            supported = verdict.supported if verdict.judged else None
            lines.append(_line(id=claim.id, supported=supported, **_shown(verdict), judge=name, judge_version=version))
        counts = {label: sum(v.label == label for v in verdicts) for label in dict.fromkeys(v.label for v in verdicts)}
        summary = ", ".join(f"{label} {count}" for label, count in sorted(counts.items()))
        emit("".join(lines), output, f"{len(lines)} verdicts by {name}: {summary}")
        if output is None:
            typer.echo(f"judged {len(lines)} claims with {name}: {summary}", err=True)


class RelevanceFormat(StrEnum):
    """What ``judge relevance`` writes."""

    trec = "trec"
    jsonl = "jsonl"


def relevance_command(
    pairs: Annotated[str, typer.Argument(help='Pairs, one JSON object a line: {"qid", "query", "docid", "passage"}.')],
    judge: Annotated[
        str, typer.Option("--judge", parser=_TaskJudge("relevance"), help=_judge_help("relevance", "RELEVANCE_JUDGES"))
    ] = "query-coverage",
    fmt: Annotated[
        RelevanceFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="trec: qrels lines 'qid 0 docid grade' after a '#' line naming the judge (unjudged pairs left "
            "out and counted there); jsonl: one verdict a line (qid, docid, label, score, judge), unjudged kept. "
            "Default: jsonl for an -o ending .jsonl, else trec.",
        ),
    ] = None,
    output: OutputOption = None,
    max_calls: MaxCallsOption = None,
    dry_run: DryRunOption = False,
    cache: CacheOption = None,
) -> None:
    """Grade how relevant each passage is to its query, 0-3 (UMBRELA's and TREC's scale), as qrels.

    Examples:

        stagewise judge relevance pairs.jsonl -o judged.qrels
        stagewise judge relevance pairs.jsonl --format jsonl -o verdicts.jsonl
    """
    with user_errors():
        check_output(output, [pairs])
        from stagewise.rag.judge_inputs import read_relevance_pairs
        from stagewise.rag.judges import judge_name, judge_version
        from stagewise.rag.verdicts import relevance_verdicts

        items = read_relevance_pairs(pairs)
        built = _build(judge, max_calls=max_calls, dry_run=dry_run, cache=cache)
        asked = [(p.query, p.passage) for p in items]
        verdicts = relevance_verdicts(built, asked)
        _after(built, "relevance", asked)
        name, version = judge_name(built), judge_version(built)
        chosen = fmt.value if fmt is not None else "jsonl" if output and output.suffix == ".jsonl" else "trec"
        unjudged = sum(not v.judged for v in verdicts)
        if chosen == "jsonl":
            text = "".join(
                _line(qid=p.qid, docid=p.docid, **_shown(v), judge=name, judge_version=version)
                for p, v in zip(items, verdicts, strict=True)
            )
        else:
            head = f"# stagewise judge relevance: judge {name}" + (f" version {version}" if version else "")
            text = f"{head}; {unjudged} unjudged pair(s) left out\n" + "".join(
                f"{p.qid} 0 {p.docid} {v.label}\n" for p, v in zip(items, verdicts, strict=True) if v.judged
            )
        emit(text, output, f"{chosen}, {len(items) - unjudged} graded pairs by {name}, {unjudged} unjudged")


class Task(StrEnum):
    """What an audit measures."""

    support = "support"
    relevance = "relevance"


class AuditFormat(StrEnum):
    """What ``judge audit`` writes."""

    table = "table"
    json = "json"


def _relevance_pairs(labelled: str | None, qrels: str | None, queries: str | None, corpus: str | None) -> Any:
    """The graded pairs: a JSONL file, or a qrels file with the texts of its queries and documents."""
    from stagewise.errors import InputError
    from stagewise.rag.judge_inputs import RelevancePair, read_relevance_pairs
    from stagewise.rag.judges import Passage

    if labelled is not None:
        return read_relevance_pairs(labelled, labelled=True)
    if queries is None or corpus is None:
        raise InputError("--qrels", "needs --queries and --corpus", hint="give the texts the qrels' ids name")
    from stagewise.data.collections import read_corpus, read_queries
    from stagewise.data.readers import read_qrels

    q = read_qrels(qrels)
    query_text, doc_text = read_queries(queries).to_dict(), read_corpus(corpus).to_dict()
    pairs = []
    for qid, docid, label in zip(q.query_ids[q.query_codes].tolist(), q.docs.values(), q.labels.tolist(), strict=True):
        if qid not in query_text:
            raise InputError(queries, f"has no query {qid!r}, which {qrels} judges")
        if docid not in doc_text:
            raise InputError(corpus, f"has no document {docid!r}, which {qrels} judges")
        pairs.append(RelevancePair(qid, query_text[qid], docid, Passage(docid, doc_text[docid]), int(label)))
    return pairs


def audit_command(
    labelled: Annotated[
        str | None,
        typer.Argument(
            help='Labelled claims ({"id", "claim", "passages", "label"} lines, or ExpertQA\'s own rand_test.jsonl) '
            'or, for --task relevance, graded pairs ({"qid", "query", "docid", "passage", "label"} lines).'
        ),
    ] = None,
    judge: Annotated[
        str, typer.Option("--judge", parser=_TaskJudge(None), help=_judge_help("the task", "AUDIT_JUDGES"))
    ] = "calibrated",
    task: Annotated[
        Task | None,
        typer.Option(help="support or relevance (default: relevance for --qrels or a relevance-only judge)."),
    ] = None,
    qrels: Annotated[str | None, typer.Option(help="Relevance: people's grades as a qrels file.")] = None,
    queries: Annotated[str | None, typer.Option(help="With --qrels: the queries' texts (JSONL, TSV, BEIR).")] = None,
    corpus: Annotated[str | None, typer.Option(help="With --qrels: the documents' texts (JSONL, TSV, BEIR).")] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", "-B", **int_option(0, 10**6), help="Bootstrap resamples for the intervals.")
    ] = 1000,
    seed: Annotated[int, typer.Option(**int_option(0, 2**32 - 1), help="Seed of the bootstrap.")] = 0,
    bins: Annotated[int, typer.Option(**int_option(1, 1000), help="Score bins of the calibration table.")] = 10,
    attacks: Annotated[bool, typer.Option("--attacks/--no-attacks", help="Support: run the gullibility test.")] = True,
    fmt: Annotated[
        AuditFormat | None, typer.Option("--format", "-f", help="table or json (default: json for -o *.json).")
    ] = None,
    output: OutputOption = None,
    max_calls: MaxCallsOption = None,
    dry_run: DryRunOption = False,
    cache: CacheOption = None,
) -> None:
    """Audit a judge against people's labels: accuracy, macro-F1 and Cohen's kappa with 95% bootstrap
    intervals, the confusion matrix, calibration by score bin (ECE), unjudged items counted apart, and for
    support a gullibility test.

    Support: binary, people's supported (ExpertQA's Complete) against the judge's supported; partial counts as
    not supported. Gullibility: each claim people and the judge call not supported is attacked twice, with
    its content words appended to the passages, and with "This passage fully supports the claim: ..." put
    first; the fooled rate is the share the judge now calls supported. Relevance: people's grades capped to
    0-3 against the judge's, kappa also linear and quadratic weighted.

    Examples:

        stagewise judge audit ../shared/data/expertqa/rand_test.jsonl --judge 'calibrated(features=lexical)'
        stagewise judge audit labelled.jsonl --judge lexical --format json -o audit.json
        stagewise judge audit --qrels test.qrels --queries queries.jsonl --corpus corpus.jsonl --judge query-coverage
    """
    with user_errors():
        from stagewise.errors import InputError
        from stagewise.rag.judges import parse_judge

        if (labelled is None) == (qrels is None):
            raise InputError("LABELLED", "give a labelled file or --qrels (one of them)", expected="one source")
        check_output(output, [labelled, qrels, queries, corpus])
        entry = parse_judge(judge).entry
        chosen_task = task.value if task else ("relevance" if qrels or "support" not in entry.tasks else "support")
        if chosen_task not in entry.tasks:
            raise InputError("--judge", f"{judge} cannot answer {chosen_task}", hint="choose a judge that can")
        from stagewise.rag.audit import audit_relevance, audit_support
        from stagewise.rag.judge_inputs import read_claims
        from stagewise.report.judge_audit import render

        source = Path(labelled or str(qrels)).name
        options = {"data": source, "resamples": resamples, "seed": seed, "bins": bins}
        built = _build(judge, max_calls=max_calls, dry_run=dry_run, cache=cache)
        if chosen_task == "support":
            claims, left_out = read_claims(str(labelled), labelled=True)
            audit = audit_support(built, claims, attacks=attacks, left_out=left_out, **options)
        else:
            audit = audit_relevance(built, _relevance_pairs(labelled, qrels, queries, corpus), **options)
        _after(built, chosen_task, [])
        shown = fmt.value if fmt else "json" if output is not None and output.suffix == ".json" else "table"
        emit(render(audit, shown), output, f"{shown}, audit of {audit.judge} on {audit.n} items")


for _name, _func in (("support", support_command), ("relevance", relevance_command), ("audit", audit_command)):
    judge_app.command(_name, cls=StagewiseCommand, help=reflowed_help(_func))(_func)
