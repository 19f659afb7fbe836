"""Training the supervised fusion methods on judged queries: PosFuse, ProbFuse, SegFuse, SlideFuse, MAPFuse
and BayesFuse estimate, per run, how likely a document at a given rank is to be relevant.

Each estimator is vectorised over all training queries: the fusion table is joined to the qrels once (pair
keys, confirmed by strings), then every run's relevant ranks are counted with ``np.bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from stagewise.data.qrels import Qrels
from stagewise.errors import StagewiseError
from stagewise.fusion.methods import BAYESFUSE_CUTOFFS, SEGFUSE_BOUNDS, FusionMethod
from stagewise.fusion.table import FusionTable


@dataclass
class Judged:
    """The fusion table's candidates against the qrels: which are relevant, which queries are judged."""

    relevant: np.ndarray  # bool per candidate
    judged_query: np.ndarray  # bool per table query
    relevant_per_query: np.ndarray  # int64 per table query: judgements with label >= level


def judge(table: FusionTable, qrels: Qrels, relevance_level: int = 1) -> Judged:
    """Join ``table`` to ``qrels`` on pair keys; each match is confirmed by its query and doc strings."""
    judged = pl.DataFrame({"k": qrels.pair_keys, "j": np.arange(len(qrels), dtype=np.int64)})
    ranked = pl.DataFrame({"k": table.keys, "i": np.arange(len(table), dtype=np.int64)})
    pairs = ranked.join(judged, on="k", how="inner")
    rows, judgements = pairs["i"].to_numpy(), pairs["j"].to_numpy()
    same = table.query_ids[table.query[rows]] == qrels.query_ids[qrels.query_codes[judgements]]
    mine, theirs = table.docs.take(rows), qrels.docs.take(judgements)
    if not (np.array_equal(mine.offsets, theirs.offsets) and mine.data == theirs.data):
        same &= np.fromiter(
            (a == b for a, b in zip(mine.raw(np.arange(len(rows))), theirs.raw(np.arange(len(rows))), strict=True)),
            dtype=bool,
            count=len(rows),
        )
    rows, judgements = rows[same], judgements[same]
    relevant = np.zeros(len(table), dtype=bool)
    relevant[rows] = qrels.labels[judgements] >= relevance_level
    judged_query = np.isin(table.query_ids, qrels.query_ids)
    pos = np.searchsorted(qrels.query_ids, table.query_ids)
    per_judged = np.bincount(qrels.query_codes[qrels.labels >= relevance_level], minlength=len(qrels.query_ids))
    relevant_per_query = np.zeros(len(table.query_ids), dtype=np.int64)
    relevant_per_query[judged_query] = per_judged[pos[judged_query]]
    return Judged(relevant, judged_query, relevant_per_query)


def _training(table: FusionTable, judged: Judged, queries: np.ndarray | None) -> np.ndarray:
    """Mask over the table's queries: judged and selected for training."""
    mask = judged.judged_query.copy()
    if queries is not None:
        mask &= queries
    if not mask.any():
        raise StagewiseError(
            "no fused query has judgements to train on; check that the qrels and the runs use the same query ids"
        )
    return mask


def _cells(table: FusionTable, judged: Judged, train: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """(0-based position, relevant) of every result run ``r`` returns for a training query."""
    mine = train[table.row_query(r)]
    return table.rank_of[r][mine].astype(np.int64) - 1, judged.relevant[table.cand_of[r][mine]]


def position_probs(table: FusionTable, judged: Judged, train: np.ndarray) -> list[np.ndarray]:
    """PosFuse's P_r(p): relevant results at rank p over training queries that have a result at rank p."""
    out = []
    for r in range(table.n_runs):
        position, relevant = _cells(table, judged, train, r)
        lengths = table.length[train, r]
        depth = int(lengths.max()) if len(lengths) else 0
        if depth == 0:
            out.append(np.zeros(0))
            continue
        hits = np.bincount(position[relevant], minlength=depth)[:depth].astype(np.float64)
        having = np.bincount(lengths, minlength=depth + 1)[::-1].cumsum()[::-1][1:]  # queries with length > p
        out.append(hits / having)
    return out


def segment_probs(table: FusionTable, judged: Judged, train: np.ndarray, segments: int) -> list[np.ndarray]:
    """ProbFuse's P_r(k): mean over training queries of the share of relevant results in segment k, each list
    cut into ``segments`` segments of ceil(n / segments) results (ProbFuseAll: unjudged count non-relevant)."""
    out = []
    for r in range(table.n_runs):
        mine = train[table.row_query(r)] & judged.relevant[table.cand_of[r]]
        n_queries = int(np.count_nonzero(table.length[train, r]))
        if n_queries == 0:
            out.append(np.zeros(segments))
            continue
        length = table.length[table.row_query(r)[mine], r]
        size = np.maximum(np.ceil(length / segments).astype(np.int64), 1)
        k = (table.rank_of[r][mine].astype(np.int64) - 1) // size
        segment_length = np.minimum((k + 1) * size, length) - k * size
        out.append(np.bincount(k, weights=1.0 / segment_length, minlength=segments)[:segments] / n_queries)
    return out


def segfuse_probs(table: FusionTable, judged: Judged, train: np.ndarray) -> list[np.ndarray]:
    """SegFuse's P_r(k): mean over training queries of relevant results in segment k over the segment's size
    (5, 10, 20, ...)."""
    sizes = np.diff(SEGFUSE_BOUNDS).astype(np.float64)
    out = []
    for r in range(table.n_runs):
        position, relevant = _cells(table, judged, train, r)
        n_queries = int(np.count_nonzero(table.length[train, r]))
        k = np.searchsorted(SEGFUSE_BOUNDS[1:], position[relevant], side="right")
        k = k[k < len(sizes)]
        hits = np.bincount(k, minlength=len(sizes))[: len(sizes)]
        out.append(hits / sizes / max(n_queries, 1))
    return out


def bayes_log_odds(table: FusionTable, judged: Judged, train: np.ndarray) -> list[np.ndarray]:
    """BayesFuse's log-odds per rank bucket: mean precision p of the bucket over training queries, with
    p = 0 read as 0.001 and 1 - p = 0 as 0.001 (as ranx); ``log(p / (1 - p))`` for every rank in the bucket."""
    cutoffs = BAYESFUSE_CUTOFFS
    sizes = np.diff(cutoffs).astype(np.float64)
    out = []
    for r in range(table.n_runs):
        position, relevant = _cells(table, judged, train, r)
        n_queries = int(np.count_nonzero(table.length[train, r]))
        bucket = np.searchsorted(cutoffs[1:], position[relevant], side="right")
        bucket = bucket[bucket < len(sizes)]
        precision = np.bincount(bucket, minlength=len(sizes))[: len(sizes)] / sizes / max(n_queries, 1)
        precision = np.where(precision == 0, 0.001, precision)
        rest = np.where(1 - precision == 0, 0.001, 1 - precision)
        out.append(np.repeat(np.log(precision / rest), np.diff(cutoffs)))
    return out


def mean_average_precision(table: FusionTable, judged: Judged, train: np.ndarray) -> np.ndarray:
    """Each run's MAP over the judged training queries (trec_eval's AP; a query the run lacks scores 0)."""
    out = np.zeros(table.n_runs)
    n_train = int(train.sum())
    for r in range(table.n_runs):
        mine = train[table.row_query(r)] & judged.relevant[table.cand_of[r]]
        query, rank = table.row_query(r)[mine], table.rank_of[r][mine].astype(np.int64)
        order = np.lexsort((rank, query))
        query, rank = query[order], rank[order]
        starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]]) if len(query) else np.zeros(0, dtype=np.int64)
        seen = np.arange(len(query)) - np.repeat(starts, np.diff(np.r_[starts, len(query)])) + 1
        per_query = np.bincount(query, weights=seen / rank, minlength=len(table.query_ids))
        total = judged.relevant_per_query
        ap = np.divide(per_query, total, out=np.zeros(len(total)), where=total > 0)
        out[r] = ap[train].sum() / n_train
    return out


def fit_position_probs(method: FusionMethod, table: FusionTable, judged: Judged, train: np.ndarray) -> dict[str, Any]:
    """PosFuse's and SlideFuse's ``fit``: P_r(relevant | rank)."""
    return {"probs": position_probs(table, judged, train)}


def fit_segment_probs(method: FusionMethod, table: FusionTable, judged: Judged, train: np.ndarray) -> dict[str, Any]:
    """ProbFuse's ``fit``: P_r(relevant | segment), with the method's number of segments."""
    return {"probs": segment_probs(table, judged, train, method.param("segments"))}


def fit_segfuse_probs(method: FusionMethod, table: FusionTable, judged: Judged, train: np.ndarray) -> dict[str, Any]:
    """SegFuse's ``fit``: P_r(relevant | segment) over its growing segments."""
    return {"probs": segfuse_probs(table, judged, train)}


def fit_map_scores(method: FusionMethod, table: FusionTable, judged: Judged, train: np.ndarray) -> dict[str, Any]:
    """MAPFuse's ``fit``: each run's MAP."""
    return {"map_scores": mean_average_precision(table, judged, train)}


def fit_log_odds(method: FusionMethod, table: FusionTable, judged: Judged, train: np.ndarray) -> dict[str, Any]:
    """BayesFuse's ``fit``: log-odds of relevance per rank bucket."""
    return {"log_odds": bayes_log_odds(table, judged, train)}


def fit(
    method: FusionMethod,
    table: FusionTable,
    qrels: Qrels,
    *,
    relevance_level: int = 1,
    queries: np.ndarray | None = None,
    judged: Judged | None = None,
) -> dict[str, Any]:
    """The trained parameters of a supervised ``method`` from ``qrels``, on the table's judged queries (or
    those of the boolean mask ``queries``): the method's own ``fit`` hook
    (:attr:`stagewise.fusion.methods.MethodInfo.fit`)."""
    fitter = method.info.fitter()  # a method that learns nothing fails before the join
    judged = judged or judge(table, qrels, relevance_level)
    return fitter(method, table, judged, _training(table, judged, queries))


def describe_trained(trained: dict[str, Any]) -> dict[str, Any]:
    """The trained parameters as JSON-ready lists."""
    out: dict[str, Any] = {}
    for key, value in trained.items():
        if isinstance(value, np.ndarray):
            out[key] = value.tolist()
        else:
            out[key] = [np.asarray(v).tolist() for v in value]
    return out
