"""Claim-level RAG metrics: RAGChecker's eleven, from the entailment checks of any judge or from its own output.

An answer is split into **claims** (:func:`split_claims`: sentences by default; a judge or a function may extract
them instead). Four entailment checks then decide everything, for each sample:

=========================  ==========================================================  ========================
check (our name)           question, for each claim                                     RAGChecker's key
=========================  ==========================================================  ========================
``response_in_answer``     is this response claim entailed by the ground-truth answer?  ``answer2response``
``answer_in_response``     is this ground-truth claim entailed by the response?         ``response2answer``
``response_in_chunks``     is this response claim entailed by chunk j? (a matrix)       ``retrieved2response``
``answer_in_chunks``       is this ground-truth claim entailed by chunk j? (a matrix)   ``retrieved2answer``
=========================  ==========================================================  ========================

Only an entailment counts: RAGChecker's ``Entailment`` is True, ``Neutral`` and ``Contradiction`` are False;
a stagewise judge's ``supported`` is True, ``partial``, ``not`` and ``unjudged`` are False (the unjudged are
counted apart). From the checks, per sample (RAGChecker's ``computation.py``; the formulas are facts, this is
our code), with R the response claims, G the ground-truth claims and C the chunks:

- ``precision`` = share of R entailed by the answer; ``recall`` = share of G entailed by the response;
  ``f1`` = their harmonic mean, 0 when either is 0 (per sample, then averaged: not the F1 of the means).
- ``claim_recall`` = share of G entailed by some chunk; ``context_precision`` = share of C entailing some claim
  of G (a chunk is *relevant* when it entails a ground-truth claim).
- ``context_utilization`` = of the G entailed by some chunk, the share also entailed by the response (0 when no
  claim of G is in any chunk).
- ``noise_sensitivity_in_relevant`` = share of R that are wrong (not entailed by the answer) yet entailed by a
  relevant chunk; ``noise_sensitivity_in_irrelevant`` = share of R that are wrong, entailed by an irrelevant
  chunk and by no relevant one (the two stay exclusive).
- ``hallucination`` = share of R entailed by no chunk and wrong; ``self_knowledge`` = share of R entailed by
  no chunk yet correct; ``faithfulness`` = share of R entailed by some chunk.

A metric whose claims or chunks are missing is 0, as RAGChecker scores it: precision with no response claim,
recall with no ground-truth claim; the retriever metrics and context utilisation with no ground-truth claim or
no chunk; noise sensitivity with no response claim, no chunk or no ground-truth claim; hallucination,
self-knowledge and faithfulness with no response claim or no chunk. A report averages the per-sample values;
RAGChecker prints each mean x 100 rounded to one decimal (:func:`ragchecker_printed`).

>>> checks = ClaimChecks(
...     id="q1", judge="hand", response_claims=("Nile is longest.", "It is in Asia."),
...     answer_claims=("Nile is longest.",),
...     response_in_answer=(True, False), answer_in_response=(True,),
...     response_in_chunks=((True, False), (False, False)), answer_in_chunks=((True, False),), n_chunks=2)
>>> m = sample_metrics(checks)
>>> m["precision"], m["recall"], round(m["f1"], 4), m["context_precision"], m["hallucination"], m["faithfulness"]
(0.5, 1.0, 0.6667, 0.5, 0.5, 0.5)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from stagewise.errors import InputError, StagewiseError
from stagewise.rag.calibrated import sentences
from stagewise.rag.judges import Passage, judge_name, judge_version
from stagewise.rag.verdicts import Verdict, support_verdicts

__all__ = [
    "CLAIM_METRICS",
    "ENTAILMENT",
    "METRIC_GROUPS",
    "ClaimChecks",
    "ClaimReport",
    "RagCheckerOutput",
    "check_claims",
    "claim_means",
    "claim_report",
    "claims_from_file",
    "claims_from_judge",
    "ragchecker_printed",
    "read_ragchecker",
    "sample_metrics",
    "split_claims",
]

#: The one label of RAGChecker's checker that counts as entailed ("Neutral" and "Contradiction" do not).
ENTAILMENT = "Entailment"
#: RAGChecker's metric groups, in its order (the keys of the ``metrics`` it stores).
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "overall": ("precision", "recall", "f1"),
    "retriever": ("claim_recall", "context_precision"),
    "generator": (
        "context_utilization",
        "noise_sensitivity_in_relevant",
        "noise_sensitivity_in_irrelevant",
        "hallucination",
        "self_knowledge",
        "faithfulness",
    ),
}
#: The eleven claim-level metrics, in RAGChecker's order.
CLAIM_METRICS: tuple[str, ...] = tuple(name for names in METRIC_GROUPS.values() for name in names)
#: Metrics where lower is better (the others: higher is better).
LOWER_IS_BETTER: frozenset[str] = frozenset(
    {"noise_sensitivity_in_relevant", "noise_sensitivity_in_irrelevant", "hallucination"}
)

_MARKER = re.compile(r"\[[^\[\]\n]{1,200}\]")


def split_claims(text: str) -> list[str]:
    """An answer's claims: its sentences (:func:`stagewise.rag.calibrated.sentences`: split after ``.``, ``!``,
    ``?``, ``;`` or a line break, windows of at most 40 words), citation markers (``[p9]``) removed, pieces with no
    letter (a list number such as ``1.``) dropped.

    >>> split_claims("The Nile is long [p1]. 1. It flows north!\\n\\nIt ends in Egypt")
    ['The Nile is long .', 'It flows north!', 'It ends in Egypt']
    """
    if "[" in text:
        text = _MARKER.sub("", text)
    return [s for s in sentences(text) if any(ch.isalpha() for ch in s)]


@dataclass(frozen=True)
class ClaimChecks:
    """The four entailment checks of one sample (True = entailed), the claims they are about, and who judged.

    ``response_in_chunks[i][j]``: response claim i entailed by chunk j; ``answer_in_chunks[i][j]`` the same for
    ground-truth claim i. ``n_chunks`` is the number of retrieved chunks (the matrices' width). ``judge`` names
    the judge of every check (``lexical``, ``calibrated(features=lexical)``, or ``ragchecker-output`` for checks
    read from RAGChecker's file); ``unjudged`` counts checks the judge could not answer (counted as not entailed).
    """

    id: str
    judge: str
    response_claims: tuple[str, ...]
    answer_claims: tuple[str, ...]
    response_in_answer: tuple[bool, ...]
    answer_in_response: tuple[bool, ...]
    response_in_chunks: tuple[tuple[bool, ...], ...]
    answer_in_chunks: tuple[tuple[bool, ...], ...]
    n_chunks: int
    unjudged: int = 0

    def __post_init__(self) -> None:
        shapes = (
            ("response_in_answer", len(self.response_in_answer), len(self.response_claims), "response claims"),
            ("answer_in_response", len(self.answer_in_response), len(self.answer_claims), "ground-truth claims"),
            ("response_in_chunks", len(self.response_in_chunks), len(self.response_claims), "response claims"),
            ("answer_in_chunks", len(self.answer_in_chunks), len(self.answer_claims), "ground-truth claims"),
        )
        for name, got, want, what in shapes:
            if got != want:
                raise StagewiseError(f"sample {self.id!r}: {name} has {got} checks for {want} {what}")
        for row in (*self.response_in_chunks, *self.answer_in_chunks):
            if len(row) != self.n_chunks:
                raise StagewiseError(
                    f"sample {self.id!r}: a chunk row has {len(row)} checks for {self.n_chunks} chunks"
                )


def _mean(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def _faithful(rows: Sequence[Sequence[bool]], columns: Sequence[bool] | None = None) -> list[bool]:
    """Per claim: entailed by some chunk (only the chunks where ``columns`` is True, when given)."""
    if columns is None:
        return [any(row) for row in rows]
    return [any(v and c for v, c in zip(row, columns, strict=True)) for row in rows]


def sample_metrics(checks: ClaimChecks) -> dict[str, float]:
    """The eleven metrics of one sample, each in [0, 1] (see the module's docstring for each formula and the
    zero rule for missing claims or chunks)."""
    r_ans, a_resp = checks.response_in_answer, checks.answer_in_response
    r_chunks, a_chunks = checks.response_in_chunks, checks.answer_in_chunks
    has_r, has_g, has_c = bool(r_ans), bool(a_resp), checks.n_chunks > 0
    out = dict.fromkeys(CLAIM_METRICS, 0.0)
    out["precision"] = _mean(r_ans) if has_r else 0.0
    out["recall"] = _mean(a_resp) if has_g else 0.0
    p, r = out["precision"], out["recall"]
    out["f1"] = 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0
    if has_g and has_c:
        recalled = _faithful(a_chunks)
        out["claim_recall"] = _mean(recalled)
        relevant = [any(a_chunks[i][j] for i in range(len(a_chunks))) for j in range(checks.n_chunks)]
        out["context_precision"] = _mean(relevant)
        if any(recalled):
            used = sum(1 for rec, resp in zip(recalled, a_resp, strict=True) if rec and resp)
            out["context_utilization"] = used / sum(recalled)
        if has_r:
            in_relevant = _faithful(r_chunks, relevant)
            in_irrelevant = _faithful(r_chunks, [not x for x in relevant])
            wrong = [not x for x in r_ans]
            out["noise_sensitivity_in_relevant"] = _mean([a and w for a, w in zip(in_relevant, wrong, strict=True)])
            out["noise_sensitivity_in_irrelevant"] = _mean(
                [b and not a and w for a, b, w in zip(in_relevant, in_irrelevant, wrong, strict=True)]
            )
    if has_r and has_c:
        faithful = _faithful(r_chunks)
        out["hallucination"] = _mean([not f and not ok for f, ok in zip(faithful, r_ans, strict=True)])
        out["self_knowledge"] = _mean([not f and ok for f, ok in zip(faithful, r_ans, strict=True)])
        out["faithfulness"] = _mean(faithful)
    return out


def claim_means(per_sample: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over samples, in [0, 1] (every sample counts, zeros included, as RAGChecker)."""
    rows = list(per_sample)
    if not rows:
        raise StagewiseError("no samples: claim metrics need at least one")
    return {name: sum(row[name] for row in rows) / len(rows) for name in CLAIM_METRICS}


def ragchecker_printed(means: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Means as RAGChecker prints them: grouped (overall, retriever, generator), x 100, rounded to one decimal.

    >>> ragchecker_printed(dict.fromkeys(CLAIM_METRICS, 0.76363636))["overall"]["precision"]
    76.4
    """
    return {group: {n: round(means[n] * 100, 1) for n in names} for group, names in METRIC_GROUPS.items()}


# -- checks from a judge ---------------------------------------------------------------------------------------


def _entailed(verdicts: Sequence[Verdict]) -> tuple[tuple[bool, ...], int]:
    return tuple(v.supported for v in verdicts), sum(1 for v in verdicts if not v.judged)


def check_claims(
    judge: Any,
    samples: Iterable[Mapping[str, Any]],
    *,
    extract: Callable[[str], Sequence[str]] | None = None,
) -> list[ClaimChecks]:
    """The four checks of each sample, asked of ``judge`` (any support judge: :func:`support_verdicts` reads it).

    Each sample is a mapping with ``id``, ``response``, ``gt_answer`` and ``chunks`` (texts, or
    :class:`~stagewise.rag.judges.Passage`); optional ``response_claims`` and ``answer_claims`` give the claims
    (else ``extract``, default :func:`split_claims`, splits the texts; a judge with ``extract_claims(text)``
    extracts them itself). A claim is checked against the other text whole, and against each chunk alone. All
    checks of all samples go to the judge in one batch.

    >>> from stagewise.rag.judges import LexicalJudge
    >>> (c,) = check_claims(LexicalJudge(), [{"id": "q", "response": "Emma is by Austen. Paris is in Peru.",
    ...     "gt_answer": "Austen wrote Emma.", "chunks": ["Emma, a novel by Jane Austen."]}])
    >>> c.response_in_answer, c.answer_in_response, c.response_in_chunks, c.judge
    ((True, False), (True,), ((True,), (False,)), 'lexical(threshold=0.6)')
    """
    if extract is None:
        extract = getattr(judge, "extract_claims", None) or split_claims
    prepared, items = [], []
    for sample in samples:
        chunks = [c if isinstance(c, Passage) else Passage(f"chunk{j}", str(c)) for j, c in enumerate(sample["chunks"])]
        response, answer = str(sample["response"]), str(sample["gt_answer"])
        given_r, given_a = sample.get("response_claims"), sample.get("answer_claims")  # [] given: no claims
        r_claims = tuple(extract(response) if given_r is None else given_r)
        a_claims = tuple(extract(answer) if given_a is None else given_a)
        start = len(items)
        items += [([Passage("gt_answer", answer)], c) for c in r_claims]
        items += [([Passage("response", response)], c) for c in a_claims]
        items += [([chunk], c) for c in (*r_claims, *a_claims) for chunk in chunks]
        prepared.append((str(sample["id"]), r_claims, a_claims, len(chunks), start))
    verdicts = support_verdicts(judge, items) if items else []
    name = judge_name(judge)
    version = judge_version(judge)
    label = name if version is None else f"{name} {version}"
    out = []
    for sid, r_claims, a_claims, n, start in prepared:
        nr, ng = len(r_claims), len(a_claims)
        at = start
        r_ans, u1 = _entailed(verdicts[at : at + nr])
        at += nr
        a_resp, u2 = _entailed(verdicts[at : at + ng])
        at += ng
        grid, u3 = _entailed(verdicts[at : at + (nr + ng) * n])
        rows = tuple(grid[i * n : (i + 1) * n] for i in range(nr + ng))
        out.append(ClaimChecks(sid, label, r_claims, a_claims, r_ans, a_resp, rows[:nr], rows[nr:], n, u1 + u2 + u3))
    return out


# -- RAGChecker's own output -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RagCheckerOutput:
    """RAGChecker's output JSON, read: each sample's checks, the per-sample metrics it stored (``{}`` when it
    stored none) and its aggregate ``metrics`` (``{group: {name: value x 100}}``, as it printed them)."""

    source: str | None
    checks: list[ClaimChecks]
    stored_sample_metrics: list[dict[str, float]]
    stored_metrics: dict[str, dict[str, float]] = field(default_factory=dict)


_CHECK_KEYS = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer")
_GROUP_ALIASES = {"overall_metrics": "overall", "retriever_metrics": "retriever", "generator_metrics": "generator"}


def _claim_text(claim: Any) -> str:
    """A claim as text: RAGChecker's claims are strings or [subject, relation, object] triplets."""
    if isinstance(claim, str):
        return claim
    if isinstance(claim, list) and all(isinstance(part, str) for part in claim):
        return " ".join(claim)
    raise ValueError("a claim must be a string or a list of strings")


def _labels(value: Any, where: str | None, at: str, key: str, n: int | None = None) -> tuple[bool, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(
            where, f"{at}.{key} must be a list of labels", expected='"Entailment", "Neutral" or "Contradiction"'
        )
    if n is not None and len(value) != n:
        raise InputError(where, f"{at}.{key} has {len(value)} labels for {n} chunks", expected="one label per chunk")
    return tuple(v == ENTAILMENT for v in value)


def _sample(obj: Any, index: int, where: str | None) -> tuple[ClaimChecks, dict[str, float]]:
    at = f"results[{index}]"
    if not isinstance(obj, Mapping):
        raise InputError(where, f"{at} must be an object")
    missing = [k for k in ("query_id", "response_claims", "gt_answer_claims", *_CHECK_KEYS) if obj.get(k) is None]
    if missing:
        raise InputError(
            where,
            f"{at} lacks {', '.join(missing)}",
            expected="RAGChecker's checking output (claims and the four checking results)",
            hint="run RAGChecker's evaluate with all metrics, or judge the claims with a stagewise judge instead",
        )
    n_chunks = len(obj.get("retrieved_context") or [])
    try:
        r_claims = tuple(_claim_text(c) for c in obj["response_claims"])
        a_claims = tuple(_claim_text(c) for c in obj["gt_answer_claims"])
    except (ValueError, TypeError):
        raise InputError(where, f"{at}: a claim is neither a string nor a list of strings") from None
    matrices = []
    for key in ("retrieved2response", "retrieved2answer"):
        rows = obj[key]
        if not isinstance(rows, list):
            raise InputError(where, f"{at}.{key} must be a list (one row of chunk labels per claim)")
        if rows and not obj.get("retrieved_context"):
            n_chunks = len(rows[0]) if isinstance(rows[0], list) else 0
        matrices.append(tuple(_labels(row, where, f"{at}", f"{key}[{i}]", n_chunks) for i, row in enumerate(rows)))
    stored = obj.get("metrics") or {}
    try:
        checks = ClaimChecks(
            str(obj["query_id"]),
            "ragchecker-output",
            r_claims,
            a_claims,
            _labels(obj["answer2response"], where, at, "answer2response"),
            _labels(obj["response2answer"], where, at, "response2answer"),
            matrices[0],
            matrices[1],
            n_chunks,
        )
    except StagewiseError as exc:
        raise InputError(where, f"{at}: {exc}") from None
    return checks, {k: float(v) for k, v in stored.items() if isinstance(v, int | float)}


def read_ragchecker(source: str | Path | Mapping[str, Any]) -> RagCheckerOutput:
    """RAGChecker's output JSON (``{"results": [...], "metrics": {...}}``, as ``ragchecker --output_path``
    writes it) read into checks; a sample without its claims or checking results is an
    :class:`~stagewise.errors.InputError` naming the file and the result, with how to fix it."""
    where = None
    data: Any = source
    if not isinstance(source, Mapping):
        from stagewise._io import display_name, read_bytes
        from stagewise.rag.records import decode, loads

        where = display_name(source)
        data = loads(decode(read_bytes(source), where), where, 1, column=False)
    if not isinstance(data, Mapping) or not isinstance(data.get("results"), list):
        raise InputError(where, "not RAGChecker's output", expected='a JSON object with a "results" list')
    checks, stored = [], []
    for index, obj in enumerate(data["results"]):
        sample, metrics = _sample(obj, index, where)
        checks.append(sample)
        stored.append(metrics)
    groups: dict[str, dict[str, float]] = {}
    for group, values in (data.get("metrics") or {}).items():
        if isinstance(values, Mapping):
            groups[_GROUP_ALIASES.get(group, group)] = {k: float(v) for k, v in values.items()}
    return RagCheckerOutput(where, checks, stored, groups)


# -- a report --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimReport:
    """Claim metrics of a set of samples: per sample (``rows``, by id, in input order), their means in [0, 1],
    RAGChecker's printed form of the means, and the judge of the checks."""

    judge: str
    rows: dict[str, dict[str, float]]
    means: dict[str, float]
    unjudged: int = 0
    claims: dict[str, int] = field(default_factory=dict)
    source: str | None = None
    without_checks: tuple[str, ...] = ()

    def printed(self) -> dict[str, dict[str, float]]:
        return ragchecker_printed(self.means)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "judge": self.judge,
            "convention": "RAGChecker's: per-sample values in [0, 1] averaged over samples; only an entailment "
            "counts; a metric without the claims or chunks it needs is 0; ragchecker = mean x 100, one decimal",
            "samples": len(self.rows),
            "means": self.means,
            "ragchecker": self.printed(),
            "unjudged_checks": self.unjudged,
            "claims": self.claims,
        }
        if self.source is not None:
            out["source"] = self.source
        if self.without_checks:
            out["samples_without_checks"] = list(self.without_checks)
        return out


def claim_report(checks: Sequence[ClaimChecks]) -> ClaimReport:
    """:class:`ClaimReport` of checked samples (all from one judge; two judges is an error)."""
    judges = sorted({c.judge for c in checks})
    ids = [c.id for c in checks]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise StagewiseError(f"sample id {twice!r} is checked twice; claim metrics are reported by sample id")
    if len(judges) > 1:
        raise StagewiseError(f"claim checks from several judges ({', '.join(judges)}); report one judge at a time")
    rows = {c.id: sample_metrics(c) for c in checks}
    claims = {
        "response": sum(len(c.response_claims) for c in checks),
        "ground_truth": sum(len(c.answer_claims) for c in checks),
        "chunks": sum(c.n_chunks for c in checks),
    }
    return ClaimReport(judges[0] if judges else "none", rows, claim_means(rows.values()),
                       sum(c.unjudged for c in checks), claims)  # fmt: skip


def claims_from_file(source: str | Path, ids: Sequence[str]) -> ClaimReport:
    """Claim metrics of the samples ``ids`` from RAGChecker's output file, matched by ``query_id``; samples the
    file lacks are listed in ``without_checks``, and the file's other samples are left out. None matching is an
    error that says what ids the file has."""
    output = read_ragchecker(source)
    wanted = set(ids)
    checks = [c for c in output.checks if c.id in wanted]
    if not checks:
        have = ", ".join(c.id for c in output.checks[:5])
        raise InputError(
            output.source,
            "no query_id matches a record id",
            expected=f"the records' ids ({', '.join(list(ids)[:5])}...)",
            hint=f"the file has {have}",
        )
    found = {c.id for c in checks}
    report = claim_report(checks)
    missing = tuple(i for i in ids if i not in found)
    return replace(report, source=output.source, without_checks=missing)


def claims_from_judge(judge: Any, samples: Sequence[Mapping[str, Any]]) -> ClaimReport:
    """Claim metrics of ``samples`` (as :func:`check_claims` takes them) with every check asked of ``judge``."""
    return claim_report(check_claims(judge, samples))
