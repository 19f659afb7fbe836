"""Pools from runs: which documents to judge, in which order, and what each run brought to the pool.

A pool is made by a strategy (:data:`stagewise.assess.catalogue.STRATEGIES`): ``depth(k=...)``, the union of
every run's first k documents per query; ``take(n=...,order=rrf|rbp|combsum)``, the n documents per query of
highest fused priority; ``mtf(n=...)``, move-to-front. Conventions, stated once:

- A run's order is read as ``ranking`` says (:data:`~stagewise.assess.catalogue.POOL_RANKINGS`): trec_eval's
  (the default), trectools' (score descending as doubles, ties by doc id ascending), or the rank column as
  written (what trectools' rrf and rbp pools read). Depth-k pools equal trectools' with ``ranking="trectools"``,
  its rrf and rbp pools with ``ranking="rank"`` (tests/test_pool.py, on the 17 TREC 2003 Robust runs).
- With ``qrels``, a document already judged for its query is left out of the pool (``judged_left_out`` counts
  them); a ``take`` or ``mtf`` pool then spends its n on unjudged documents only; an ``mtf`` walk reads the
  judged labels as its feedback (label >= ``relevance_level`` is relevant; an unjudged document counts as not
  relevant: the order a campaign starts from).
- The judging order: by priority (depth: the best rank any run gave the document, then how many runs pooled
  it, then doc id; take: the fused value, highest first, then doc id ascending, as trectools; mtf: the step the
  walk took it at), or shuffled within each query with ``seed``.
- A run *contributed* a pooled document when the document is within how far the strategy read that run (depth:
  its first k; take: the whole run; mtf: as far as the walk went in it); ``unique`` counts the pooled
  documents it alone contributed.
- Coverage at k (trectools' ``check_coverage``): per query of the pool, how many of the run's first k documents
  are pooled or already judged, averaged over the queries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from stagewise.assess.catalogue import POOL_RANKINGS, Strategy, parse_strategy
from stagewise.errors import ConventionError, InputError

__all__ = ["Pool", "PoolEntry", "RunContribution", "make_pool"]


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """One document to judge: its query, its judging ``order`` within the query (1 first), the strategy's
    ``priority`` (see the module's conventions) and the runs that contributed it."""

    query_id: str
    doc_id: str
    order: int
    priority: float
    runs: tuple[str, ...]


@dataclass(frozen=True)
class RunContribution:
    """What one run brought: pooled documents it contributed, those it alone contributed (``unique``), and
    its coverage at ``k`` (mean count of its first k documents per query that are pooled or judged)."""

    run: str
    contributed: int
    unique: int
    coverage: float
    k: int

    @property
    def coverage_share(self) -> float:
        """``coverage`` over ``k``: the share of the run's first k documents that are pooled or judged."""
        return self.coverage / self.k


@dataclass(frozen=True)
class Pool:
    """A pool: entries by query (byte order) then judging order, each run's contribution, and how it was made."""

    strategy: str
    ranking: str
    entries: tuple[PoolEntry, ...]
    contributions: tuple[RunContribution, ...]
    queries: tuple[str, ...]
    judged_left_out: int
    shuffled: bool
    seed: int | None

    def __len__(self) -> int:
        return len(self.entries)

    def to_dict(self) -> dict[str, set[str]]:
        """``{query_id: {doc_id, ...}}``, trectools' ``TrecPool.pool`` shape (every query, even an empty one)."""
        out: dict[str, set[str]] = {q: set() for q in self.queries}
        for entry in self.entries:
            out[entry.query_id].add(entry.doc_id)
        return out

    def sizes(self) -> dict[str, int]:
        """Documents to judge per query."""
        return {q: len(docs) for q, docs in self.to_dict().items()}


def _run_frame(index: int, run: Any, ranking: str) -> pl.DataFrame:
    """A run's rows with ``run, q, d, score, pos`` (1-based position in the ranking) and ``rv`` (the rank the
    priorities use: ``pos``, or the rank column as written)."""
    if ranking == "rank" and run.ranks is None:
        raise InputError(run.name, "has no rank column", expected="a run with ranks for ranking='rank'")
    frame = pl.DataFrame(
        {
            "q": run.query_ids[run.query_codes] if len(run) else np.array([], dtype=str),
            "d": run.doc_ids,
            "score": run.scores,
            "rank": run.ranks if run.ranks is not None else np.zeros(len(run), dtype=np.int64),
            "stored": np.arange(len(run), dtype=np.int64),
        }
    ).with_columns(pl.lit(index, dtype=pl.Int32).alias("run"))
    keys = {
        "trec_eval": (["q", "stored"], [False, False]),  # rows are stored in trec_eval's order already
        "trectools": (["q", "score", "d"], [False, True, False]),
        "rank": (["q", "rank", "d"], [False, False, False]),
    }[ranking]
    frame = frame.sort(keys[0], descending=keys[1], maintain_order=True)
    frame = frame.with_columns(pos=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("q"))
    rv = pl.col("rank").cast(pl.Float64) if ranking == "rank" else pl.col("pos").cast(pl.Float64)
    return frame.with_columns(rv=rv).drop("stored", "rank")


def _judged(qrels: Any, relevance_level: int) -> pl.DataFrame:
    if qrels is None:
        return pl.DataFrame(schema={"q": pl.String, "d": pl.String, "relevant": pl.Boolean})
    return pl.DataFrame(
        {
            "q": qrels.query_ids[qrels.query_codes] if len(qrels) else np.array([], dtype=str),
            "d": qrels.docs.series(),
            "relevant": np.asarray(qrels.labels) >= relevance_level,
        }
    )


def _depth(rows: pl.DataFrame, judged: pl.DataFrame, k: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    top = rows.filter(pl.col("pos") <= k)
    pool = (
        top.join(judged, on=["q", "d"], how="anti")
        .group_by("q", "d")
        .agg(pl.col("pos").min().alias("priority"), pl.len().alias("votes"))
        .sort(["q", "priority", "votes", "d"], descending=[False, False, True, False])
    )
    return pool.select("q", "d", pl.col("priority").cast(pl.Float64)), top.select("run", "q", "d")


def _fused_value(rows: pl.DataFrame, s: Strategy) -> pl.Expr:
    order = s.get("order")
    if order == "rrf":
        return 1.0 / (s.get("rrf_k") + pl.col("rv"))
    if order == "rbp":
        p = s.get("p")
        return (1.0 - p) * pl.lit(p) ** (pl.col("rv") - 1.0)
    low, high = pl.col("score").min().over("run", "q"), pl.col("score").max().over("run", "q")
    span = high - low
    return pl.when(span > 0).then((pl.col("score") - low) / span).otherwise(1.0)


def _take(rows: pl.DataFrame, judged: pl.DataFrame, s: Strategy) -> tuple[pl.DataFrame, pl.DataFrame]:
    valued = rows.with_columns(value=_fused_value(rows, s)).join(judged, on=["q", "d"], how="anti")
    combine = pl.col("value").max() if s.get("order") == "rbp" and s.get("rbp") == "max" else pl.col("value").sum()
    fused = valued.sort("run", maintain_order=True).group_by("q", "d", maintain_order=True).agg(combine)
    pool = (
        fused.sort(["q", "value", "d"], descending=[False, True, False])
        .group_by("q", maintain_order=True)
        .head(s.get("n"))
    )
    return pool.select("q", "d", priority=pl.col("value")), rows.select("run", "q", "d")


def _mtf_query(lists: list[list[str]], judged: Mapping[str, bool], n: int) -> tuple[list[str], list[int]]:
    """One query's move-to-front walk: the pooled documents in the order taken, and how far each run was read."""
    front = deque(range(len(lists)))
    read = [0] * len(lists)
    taken: list[str] = []
    seen: set[str] = set()
    while front and len(taken) < n:
        r = front[0]
        if read[r] >= len(lists[r]):
            front.popleft()
            continue
        doc = lists[r][read[r]]
        read[r] += 1
        if doc in seen:
            continue
        seen.add(doc)
        if doc not in judged:
            taken.append(doc)
        if not judged.get(doc, False):
            front.rotate(-1)  # not (known to be) relevant: this run goes to the back
    return taken, read


def _mtf(rows: pl.DataFrame, judged: pl.DataFrame, n: int, n_runs: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    labels: dict[str, dict[str, bool]] = {}
    for q, d, rel in judged.iter_rows():
        labels.setdefault(q, {})[d] = rel
    pooled: dict[str, list] = {"q": [], "d": [], "priority": []}
    reached: dict[str, list] = {"run": [], "q": [], "d": []}
    for (q,), group in rows.sort(["q", "run", "pos"]).group_by("q", maintain_order=True):
        lists: list[list[str]] = [[] for _ in range(n_runs)]
        for run, doc in zip(group["run"].to_list(), group["d"].to_list(), strict=True):
            lists[run].append(doc)
        taken, read = _mtf_query(lists, labels.get(q, {}), n)
        pooled["q"] += [q] * len(taken)
        pooled["d"] += taken
        pooled["priority"] += [float(i) for i in range(1, len(taken) + 1)]
        for run, depth in enumerate(read):
            reached["run"] += [run] * depth
            reached["q"] += [q] * depth
            reached["d"] += lists[run][:depth]
    pool = pl.DataFrame(pooled, schema={"q": pl.String, "d": pl.String, "priority": pl.Float64})
    return pool, pl.DataFrame(reached, schema={"run": pl.Int32, "q": pl.String, "d": pl.String})


def _contributions(
    pool: pl.DataFrame, reached: pl.DataFrame, rows: pl.DataFrame, judged: pl.DataFrame, names: list[str], k: int
) -> tuple[list[tuple[str, ...]], list[RunContribution]]:
    by = pool.select("q", "d").with_row_index("i").join(reached, on=["q", "d"], how="left")  # a run lists a doc once
    runs_of = by.group_by("i").agg(pl.col("run").drop_nulls().sort()).sort("i")["run"].to_list()
    contributors = [tuple(names[r] for r in runs) for runs in runs_of]
    contributed = np.zeros(len(names), dtype=np.int64)
    unique = np.zeros(len(names), dtype=np.int64)
    for runs in runs_of:
        contributed[runs] += 1
        if len(runs) == 1:
            unique[runs[0]] += 1
    covered = pl.concat([pool.select("q", "d"), judged.select("q", "d")]).unique()
    queries = pool["q"].unique() if len(pool) else pl.Series("q", [], dtype=pl.String)
    out = []
    for r, name in enumerate(names):
        first = rows.filter((pl.col("run") == r) & (pl.col("pos") <= k)).select("q", "d")
        hits = first.join(covered, on=["q", "d"], how="semi").group_by("q").len()
        counts = pl.DataFrame({"q": queries}).join(hits, on="q", how="left")["len"].fill_null(0)
        out.append(RunContribution(name, int(contributed[r]), int(unique[r]), float(counts.mean() or 0.0), k))
    return contributors, out


def _judging_order(pool: pl.DataFrame, shuffle: bool, seed: int | None) -> pl.DataFrame:
    pool = pool.with_columns(order=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("q"))
    if not shuffle:
        return pool
    rng = np.random.default_rng(seed)
    keys = rng.permutation(len(pool))  # one permutation, read within each query: a seeded shuffle per query
    return (
        pool.with_columns(key=pl.Series(keys))
        .sort(["q", "key"])
        .with_columns(order=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("q"))
        .drop("key")
    )


def _check(strategy: Any, ranking: str, coverage_at: int, seed: Any, shuffle: bool) -> tuple[Strategy, str]:
    chosen = parse_strategy(strategy)
    rank_name = POOL_RANKINGS.lookup(ranking).name
    if isinstance(coverage_at, bool) or not isinstance(coverage_at, int | np.integer) or coverage_at < 1:
        raise ConventionError(
            f"The 'coverage_at' parameter of make_pool must be an int >= 1. Got {coverage_at!r} instead."
        )
    if seed is not None and not shuffle:
        raise ConventionError("a seed is for a shuffled judging order: pass shuffle=True (--shuffle) with it")
    return chosen, rank_name


def make_pool(
    runs: Sequence[Any],
    strategy: str | Strategy = "depth(k=100)",
    *,
    qrels: Any = None,
    ranking: str = "trec_eval",
    shuffle: bool = False,
    seed: int | None = None,
    coverage_at: int = 10,
    relevance_level: int = 1,
) -> Pool:
    """The pool of ``runs`` by ``strategy``, without the documents ``qrels`` already judge.

    Parameters
    ----------
    runs : sequence of Run, paths or anything ``read_run`` takes
    strategy : str or Strategy, default="depth(k=100)"
        A name of :data:`~stagewise.assess.catalogue.STRATEGIES` in the spec grammar (``take(n=50,order=rbp)``)
        or the issue's ``depth:K`` / ``take:N(order)``.
    qrels : Qrels, path or dict, default=None
        Judgements already made: their documents are left out, and ``mtf`` reads them as feedback.
    ranking : {"trec_eval", "trectools", "rank"}, default="trec_eval"
        How a run's order is read (see the module's conventions).
    shuffle, seed : the judging order shuffled within each query, reproducibly with ``seed``.
    coverage_at : int, default=10
        The k of each run's coverage.
    relevance_level : int, default=1
        A judged label >= this is relevant (mtf's feedback).

    Examples
    --------
    >>> runs = [{"q1": {"a": 3.0, "b": 2.0, "c": 1.0}}, {"q1": {"c": 3.0, "d": 2.0}}]
    >>> pool = make_pool(runs, "depth:1")
    >>> [(e.doc_id, e.order, e.runs) for e in pool.entries]
    [('a', 1, ('run',)), ('c', 2, ('run#2',))]
    >>> [(c.run, c.contributed, c.unique, c.coverage) for c in pool.contributions]
    [('run', 1, 1, 2.0), ('run#2', 1, 1, 1.0)]
    >>> [e.doc_id for e in make_pool(runs, "take(n=2,order=rrf)", qrels={"q1": {"c": 1}}).entries]
    ['a', 'b']
    """
    chosen, rank_name = _check(strategy, ranking, coverage_at, seed, shuffle)
    from stagewise.data.readers import read_qrels, read_runs

    if not runs:
        raise InputError("runs", "are none", expected="at least one run to pool")
    read = read_runs(list(runs))
    names = [r.name for r in read]
    rows = pl.concat([_run_frame(i, run, rank_name) for i, run in enumerate(read)])
    judged_qrels = None if qrels is None else read_qrels(qrels)
    judged = _judged(judged_qrels, relevance_level)
    if chosen.name == "depth":
        pool, reached = _depth(rows, judged, chosen.get("k"))
    elif chosen.name == "take":
        pool, reached = _take(rows, judged, chosen)
    else:
        pool, reached = _mtf(rows, judged, chosen.get("n"), len(read))
    left_out = len(judged.join(reached, on=["q", "d"], how="semi"))
    pool = _judging_order(pool.sort("q", maintain_order=True), shuffle, seed)
    contributors, contributions = _contributions(pool, reached, rows, judged, names, coverage_at)
    entries = tuple(
        PoolEntry(q, d, int(o), float(p), who)
        for (q, d, p, o), who in zip(pool.select("q", "d", "priority", "order").iter_rows(), contributors, strict=True)
    )
    queries = tuple(sorted(rows["q"].unique().to_list(), key=lambda q: q.encode("utf-8")))
    return Pool(str(chosen), rank_name, entries, tuple(contributions), queries, left_out, shuffle, seed)
