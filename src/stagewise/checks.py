"""A validation report for a qrels file and runs: what would silently change the numbers.

It sits above ``data`` and ``metrics`` (it measures unjudged@k with the metric kernels), as a stage does; the
report holds data and never renders itself (:mod:`stagewise.report.validate` does). ``stagewise.validate`` is
:func:`validate`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stagewise._io import GZIP_MAGIC, open_input
from stagewise.data import shape
from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels, read_run
from stagewise.data.run import Run
from stagewise.errors import InputError


@dataclass
class RunReport:
    """What one run looks like next to the qrels."""

    name: str
    queries: int
    results: int
    queries_only_in_qrels: list[str]
    queries_only_in_run: list[str]
    duplicate_documents: int
    unjudged_at_k: dict[int, float]
    """trec_eval's ``unj@k`` per k: unjudged results in the top k, over k; ranks past the end of a short run
    count as judged (a run of 6 results per query has at most 0.06 at k = 100)."""
    results_per_query: dict[str, float]
    tied_score_share: float
    single_precision_ties: int = 0
    """Adjacent results whose scores differ as doubles but are one C float: trec_eval 9 and pytrec_eval tie
    them (and so does the default convention); trec_eval 10.0 does not."""
    warnings: list[str] = field(default_factory=list)
    """Things that parse but are likely misread, each naming the file and line (or the queries) it saw."""
    unjudged: dict[str, float] = field(default_factory=dict)
    """The two unjudged shares by measure name, each k: ``unj@k`` (as :attr:`unjudged_at_k`) and ``unjudged@k``
    = 1 - judged@k, which counts ranks past the end of the run as unjudged (the report's judgement plot)."""
    shorter_than_k: dict[int, int] = field(default_factory=dict)
    """Per k, the answered queries with fewer than k results: where the two shares differ."""


@dataclass
class ValidationReport:
    """Qrels facts and one :class:`RunReport` per run."""

    qrels_name: str
    qrels_queries: int
    judgements: int
    label_histogram: dict[int, int]
    queries_without_relevant: list[str]
    runs: list[RunReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing needs attention (no missing queries, no duplicates, no warnings)."""
        return all(not r.queries_only_in_qrels and not r.duplicate_documents and not r.warnings for r in self.runs)

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise validate --format json`` writes)."""
        import json

        return json.dumps(self.to_dict(), indent=indent)

    def to_dict(self) -> dict[str, Any]:
        """The findings as a JSON-ready dict: ``{"qrels": {...}, "runs": {run: {...}}, ...}``."""
        return {
            "qrels": {
                "name": self.qrels_name,
                "queries": self.qrels_queries,
                "judgements": self.judgements,
                "label_histogram": {str(k): v for k, v in self.label_histogram.items()},
                "queries_without_relevant": self.queries_without_relevant,
            },
            "runs": {
                r.name: {
                    "queries": r.queries,
                    "results": r.results,
                    "queries_only_in_qrels": r.queries_only_in_qrels,
                    "queries_only_in_run": r.queries_only_in_run,
                    "duplicate_documents": r.duplicate_documents,
                    "unjudged_at_k": {str(k): v for k, v in r.unjudged_at_k.items()},
                    "results_per_query": r.results_per_query,
                    "tied_score_share": r.tied_score_share,
                    "single_precision_ties": r.single_precision_ties,
                    "warnings": r.warnings,
                    "unjudged": r.unjudged,
                    "shorter_than_k": {str(k): v for k, v in r.shorter_than_k.items()},
                }
                for r in self.runs
            },
        }


def _mean(values: np.ndarray) -> float:
    """Mean over the queries the run answered; NaN when it answered none of the judged queries."""
    return float(values.mean()) if len(values) else float("nan")


def _file_head(item: Any) -> bytes:
    """The first bytes of a run file (plain or gzip), or nothing for stdin and in-memory runs."""
    if not isinstance(item, str | os.PathLike) or str(item) == "-" or not Path(item).is_file():
        return b""
    head = shape.head_of(Path(item))
    if head[:2] == GZIP_MAGIC:
        try:
            with open_input(Path(item)) as fh:
                head = fh.read(shape.HEAD_BYTES)
        except InputError:
            return b""  # the reader has already said what is wrong with it
    return head


def rank_score_warnings(run: Run, head: bytes = b"") -> list[str]:
    """Warnings when a run's rank and score columns disagree: scores that rise with the rank (a distance
    where a similarity is expected, or the columns swapped) or integer scores beside fractional ranks.
    ``head`` (the first bytes of a TREC file) lets the warning name a line; without it, the run's own rank
    column is compared with its scores, query by query."""
    where = run.source or run.name
    problem = shape.rank_score_problem(head) if head else None
    if problem is not None:
        line, text = problem
        return [f"{where}:{line}: {text}"]
    if head or run.ranks is None or len(run) < 2:
        return []
    # Rows are in evaluation order (score descending): a sound rank column then mostly ascends.
    # compared in place, not through np.diff in int64: eval runs this on every run (8 bytes a row saved twice)
    same_query = run.query_codes[1:] == run.query_codes[:-1]
    ranks = run.ranks
    up = int(np.count_nonzero((ranks[1:] > ranks[:-1]) & same_query))
    down = int(np.count_nonzero((ranks[1:] < ranks[:-1]) & same_query))
    if down > up:
        return [
            f"{where}: scores rise with the rank in {down} of {up + down} adjacent pairs (rank 1 has the lowest "
            "score): if the score is a distance (lower is better) negate it, since evaluation ranks by score "
            "descending; if rank and score are swapped, swap them back"
        ]
    return []


def renumber_warning(name: str, queries: int, only_run: int, only_qrels: int) -> str | None:
    """A warning when a run numbers its queries otherwise than the qrels: as many run queries match no judged
    query as judged queries are absent (or none matches at all), as a run searched from Cranfield's cran.qry
    without --renumber does (its query numbers skip, the qrels count 1..n)."""
    if not only_run or not only_qrels or (only_run != only_qrels and only_run != queries):
        return None
    if only_run * 10 < queries:  # a stray query or two is not a numbering
        return None
    return (
        f"{name}: {only_run} run queries match no judged query while {only_qrels} judged queries are absent: "
        "the run numbers its queries otherwise than the qrels (a run searched from Cranfield's cran.qry needs "
        "stagewise search --renumber, which numbers the queries 1..n in file order)"
    )


def qrels_warnings(qrels: Qrels) -> list[str]:
    """What in the judgements themselves must not pass in silence: subtopic qrels (``--qrels-format
    subtopics``) with one subtopic per query, as an ordinary TREC qrels file read that way gives (its iteration
    column is 0 everywhere): the diversity measures then say nothing about diversity."""
    from stagewise.data.subtopics import SubtopicQrels

    if isinstance(qrels, SubtopicQrels) and qrels.n_queries and qrels.n_subtopics == qrels.n_queries:
        return [
            f"{qrels.name}: every query has a single subtopic, as an ordinary TREC qrels file read with "
            "--qrels-format subtopics has (its iteration column is not a subtopic); the diversity measures then "
            "reduce to single-intent ones: give ndeval's qrels, whose second column names each subtopic"
        ]
    return []


def run_warnings(qrels: Qrels, run: Run, source: Any = None) -> list[str]:
    """The warnings :func:`validate` gives about ``run`` that must not pass in silence where its numbers are
    reported (eval, compare): rank and score columns that disagree, and queries numbered otherwise than the
    qrels. Only those two checks, on what is already read (eval paid 10% more for a whole validate)."""
    out = rank_score_warnings(run)  # the run's own rank column against its scores
    if not out and source is not None:  # then the file's first lines, as written
        out = rank_score_warnings(run, _file_head(source))
    run_queries = {str(q) for q in run.query_ids.tolist()}
    judged = {str(q) for q in qrels.query_ids.tolist()}
    hint = renumber_warning(run.name, run.n_queries, len(run_queries - judged), len(judged - run_queries))
    return out if hint is None else [*out, hint]


def validate(qrels: Any, runs: Any, k: tuple[int, ...] = (10, 100)) -> ValidationReport:
    """Check ``runs`` against ``qrels``: missing and extra queries, duplicate documents, unjudged@k, labels.

    >>> report = validate({"q1": {"d1": 1}, "q2": {"d9": 0}}, {"q1": {"d1": 1.0, "d2": 0.5}})
    >>> report.runs[0].queries_only_in_qrels, report.runs[0].unjudged_at_k[10]
    (['q2'], 0.1)
    """
    from stagewise.metrics import kernels
    from stagewise.metrics.context import Conventions, build_context

    judged: Qrels = read_qrels(qrels)
    listed = runs if isinstance(runs, list | tuple) else [runs]
    relevant = np.bincount(judged.query_codes[judged.labels >= 1], minlength=judged.n_queries)
    report = ValidationReport(
        qrels_name=judged.name,
        qrels_queries=judged.n_queries,
        judgements=len(judged),
        label_histogram=judged.label_histogram(),
        queries_without_relevant=[str(q) for q in judged.query_ids[relevant == 0]],
    )
    for item in listed:
        run: Run = item if isinstance(item, Run) else read_run(item, duplicates="first")
        ctx = build_context(judged, run, Conventions(missing="zero"))  # keeps every judged query
        lengths = np.diff(run.offsets)
        same_query = np.diff(run.query_codes) == 0
        # The stored order compares scores as C floats (trec_eval 9), so ties are counted the same way.
        with np.errstate(over="ignore"):
            single = run.scores.astype(np.float32)
        tied = (single[1:] == single[:-1]) & same_query
        ties = float(np.mean(tied[same_query])) if same_query.any() else 0.0
        single_only = int(np.count_nonzero(tied & (run.scores[1:] != run.scores[:-1])))
        report.runs.append(
            RunReport(
                name=run.name,
                queries=run.n_queries,
                results=len(run),
                queries_only_in_qrels=ctx.missing_queries,
                queries_only_in_run=ctx.run_only_queries,
                duplicate_documents=run.duplicates_dropped,
                unjudged_at_k={cut: _mean(kernels.unjudged(ctx, cut)[ctx.in_run]) for cut in k},
                results_per_query={
                    "min": float(lengths.min()),
                    "median": float(np.median(lengths)),
                    "max": float(lengths.max()),
                },
                tied_score_share=ties,
                single_precision_ties=single_only,
                warnings=rank_score_warnings(run, _file_head(item)),
                unjudged=_unjudged_shares(ctx, k),
                shorter_than_k={cut: int(np.count_nonzero(ctx.num_ret[ctx.in_run] < cut)) for cut in k},
            )
        )
    return report


def _unjudged_shares(ctx: Any, cutoffs: tuple[int, ...]) -> dict[str, float]:
    """``unj@k`` and ``unjudged@k`` (= 1 - judged@k) for each k, means over the queries the run answered: one
    definition per name (see :class:`RunReport`)."""
    from stagewise.metrics import kernels

    out: dict[str, float] = {}
    for cut in cutoffs:
        out[f"unj@{cut}"] = _mean(kernels.unjudged(ctx, cut)[ctx.in_run])
        out[f"unjudged@{cut}"] = _mean(kernels.unjudged_at(ctx, cut)[ctx.in_run])
    return out
