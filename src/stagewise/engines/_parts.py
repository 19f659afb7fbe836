"""Evaluate a part of a run (some of its queries, each whole), and gather the parts into the in-memory result.

Every measure's per-query value depends on that query's rows and judgements only, so a part is evaluated on its
own with the queries it has; what depends on the whole run is settled at the gather: the judged queries no part
had (scored under the ``missing`` policy exactly as the in-memory engine scores them), the order of queries
(the qrels' sorted order), and the means, taken over the gathered values in that order, so they are the same
floating-point sums.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_run
from stagewise.data.run import Run
from stagewise.errors import InputError, StagewiseError
from stagewise.metrics.context import Conventions
from stagewise.metrics.evaluate import measure_run
from stagewise.metrics.measures import Measure, aggregate
from stagewise.metrics.result import RunScores

from ._blocks import UNGROUPED_HINT


@dataclass
class Part:
    """What one part of a run gives: per-query values of its judged queries (None when it has none), and every
    query id it held (to check that no query was split between parts)."""

    query_ids: np.ndarray
    values: dict[str, np.ndarray] | None
    all_ids: np.ndarray
    run_only: np.ndarray
    score_from: str | None = None  # "rank": the part's rows had ranks only (Run.score_from)
    num_ret: np.ndarray | None = None  # results measured per judged query, aligned with query_ids


def evaluate_part(qrels: Qrels, run: Run, parsed: list[tuple[str, Measure]], base: Conventions) -> Part:
    """The per-query values of ``run``'s judged queries under ``base`` (missing queries are the gather's)."""
    # A binary search per query of the part, not np.isin, which sorts the qrels' ids again for every part.
    at = np.minimum(np.searchsorted(qrels.query_ids, run.query_ids), len(qrels.query_ids) - 1)
    judged = qrels.query_ids[at] == run.query_ids
    run_only = run.query_ids[~judged]
    if not judged.any():
        return Part(run.query_ids[:0], None, run.query_ids, run_only, run.score_from)
    own = judgements_of(qrels, run.query_ids[judged])
    scores = measure_run(own, run, parsed, dataclasses.replace(base, missing="skip"))
    return Part(scores.query_ids, scores.values, run.query_ids, run_only, run.score_from, scores.num_ret)


def judgements_of(qrels: Qrels, query_ids: np.ndarray) -> Qrels:
    """The judgements of some of the judged queries (``query_ids``, sorted): a part's work and memory then
    follow the part, not the whole qrels."""
    if len(query_ids) == len(qrels.query_ids):
        return qrels
    subset = getattr(qrels, "of_queries", None)
    if subset is not None:  # subtopic qrels (ndeval's) take their subtopics along
        return subset(query_ids)
    index = np.searchsorted(qrels.query_ids, query_ids)
    starts, stops = qrels.offsets[index], qrels.offsets[index + 1]
    lengths = stops - starts
    rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    codes = np.repeat(np.arange(len(index), dtype=np.int32), lengths)
    return Qrels(
        qrels.query_ids[index],
        codes,
        qrels.docs.take(rows),
        qrels.labels[rows],
        qrels.pair_keys[rows],
        name=qrels.name,
        source=qrels.source,
    )


def merge_parts(parts: list[Part]) -> Part:
    """Several parts of one run as one (a partition's blocks)."""
    with_values = [p for p in parts if p.values is not None]
    if not parts:
        empty = np.array([], dtype=str)
        return Part(empty, None, empty, empty)
    values = None
    if with_values:
        names = list(with_values[0].values)
        values = {n: np.concatenate([p.values[n] for p in with_values]) for n in names}  # type: ignore[index]
    return Part(
        np.concatenate([p.query_ids for p in parts]),
        values,
        np.concatenate([p.all_ids for p in parts]),
        np.concatenate([p.run_only for p in parts]),
        next((p.score_from for p in parts if p.score_from is not None), None),
        np.concatenate([p.num_ret for p in with_values]) if with_values and all(
            p.num_ret is not None for p in with_values) else None,
    )  # fmt: skip


def gather(qrels: Qrels, parts: list[Part], parsed: list[tuple[str, Measure]], base: Conventions, name: str,
           source: str | None = None) -> RunScores:
    """One run's :class:`RunScores` from its parts, identical to what the in-memory engine computes."""
    merged = merge_parts(parts)
    ids, counts = np.unique(merged.all_ids, return_counts=True)
    if (counts > 1).any():
        query = str(ids[np.argmax(counts > 1)])
        raise InputError(
            source or name,
            f"query {query!r} has lines in two places of the run: it is not grouped by query, which a run read in "
            "parts needs",
            hint=UNGROUPED_HINT,
        )
    judged_ids = qrels.query_ids
    present = np.isin(judged_ids, merged.query_ids)
    missing = [str(q) for q in judged_ids[~present]]
    if base.missing == "error" and missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise StagewiseError(
            f"{len(missing)} judged quer{'y is' if len(missing) == 1 else 'ies are'} absent from run "
            f"{name!r}: {shown} (use --missing zero or skip to evaluate anyway)"
        )
    pieces_ids = [merged.query_ids]
    pieces_values = [merged.values] if merged.values is not None else []
    if base.missing == "zero" and missing:
        pieces_ids.append(judged_ids[~present])
        pieces_values.append(_absent_values(qrels, ~present, parsed, base))
    query_ids = np.concatenate(pieces_ids)
    if len(query_ids) == 0:
        raise StagewiseError(
            f"no query has both results in run {name!r} and judgements in qrels {qrels.name!r}; "
            "check that the query ids of the two files match"
        )
    order = np.argsort(np.searchsorted(judged_ids, query_ids), kind="stable")
    values = {n: np.concatenate([v[n] for v in pieces_values])[order] for n, _ in parsed}
    num_ret = None
    if merged.num_ret is not None:
        absent = np.zeros(len(query_ids) - len(merged.num_ret), dtype=np.int64)
        num_ret = np.concatenate([merged.num_ret.astype(np.int64), absent])[order]
    return RunScores(
        name=name,
        query_ids=judged_ids[present | (base.missing == "zero")],
        values=values,
        means={n: aggregate(measure, values[n]) for n, measure in parsed},
        missing_queries=missing,
        run_only_queries=[str(q) for q in np.sort(merged.run_only)],
        score_from=merged.score_from,
        num_ret=num_ret,
    )


def _absent_values(
    qrels: Qrels, absent: np.ndarray, parsed: list[tuple[str, Measure]], base: Conventions
) -> dict[str, np.ndarray]:
    """The values of judged queries no part had, computed as the in-memory engine does: by the kernels, on a
    context where those queries retrieved nothing (a run holding one unjudged query)."""
    taken = set(qrels.query_ids.tolist())
    placeholder = "stagewise:no-query"
    while placeholder in taken:
        placeholder += "_"
    empty = read_run({placeholder: {"d": 0.0}}, name="absent")
    scores = measure_run(qrels, empty, parsed, dataclasses.replace(base, missing="zero"))
    return {n: v[absent] for n, v in scores.values.items()}
