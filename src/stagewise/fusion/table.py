"""The fusion table: runs joined on (query, document), one row per candidate and, per run, the candidates it
returned.

Every fusion method is a function of this table, so the join, the depth cut, the query policy and the
normalisation happen once, vectorised over all queries:

1. each run keeps its first ``depth`` results per query (its own order: score descending, doc id
   descending) and the queries the policy selects;
2. the runs are joined on (query, document) (see :mod:`stagewise.fusion.join`), which gives each run's rows
   their candidate (``cand_of[r]``) and rank (``rank_of[r]``);
3. each run's lists are normalised with segment reductions (no loop over queries) into ``score_of[r]``, when a
   method first asks for scores (rank-based methods never do).

The table is sparse: it holds one value per row a run returned, never a candidates x runs matrix, so its memory
grows with the rows fused however disjoint the runs are (200 nearly disjoint runs of 10k rows are 2M candidates;
dense, their rank and score matrices alone were 4.8 GB). The dense ``rank``, ``score`` and ``present`` are still
there for a small table or a block of one (:meth:`FusionTable.blocks`), for the methods that need a whole row
of cells at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from stagewise.data.columns import segment_offsets
from stagewise.data.order import evaluation_order
from stagewise.data.run import Run
from stagewise.data.strings import StringColumn, StringSources
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion.join import Part, cut, join, ranks
from stagewise.fusion.normalize import Lists, Normalization
from stagewise.fusion.options import QUERY_POLICIES

# The most cells (candidates x runs) a dense block holds: 2M float64 cells are 16 MB a matrix, so a method that
# needs whole rows (a median, a fill for documents a run did not return) stays near 100 MB whatever the size.
BLOCK_CELLS = 2**21


@dataclass
class FusionTable:
    """Runs joined on (query, document).

    Attributes
    ----------
    run_names : tuple of str
    query_ids : numpy.ndarray of str
        The fused queries, sorted (byte order); ``query`` indexes into it.
    query : numpy.ndarray of int32, shape (n,)
        Each candidate's query; candidates are grouped by query, ascending.
    keys : numpy.ndarray of uint64, shape (n,)
        Each candidate's pair key (the hash of query and doc id that every container shares).
    cand_of : list of numpy.ndarray of int
        Per run, the candidate of each of its rows (the run's rows within the depth cut, grouped by query,
        ascending, each list in the run's order).
    rank_of : list of numpy.ndarray of int32
        Per run, the 1-based rank of each row in its list (after the depth cut; a normalisation that reverses
        the order re-ranks).
    score_of : list of numpy.ndarray of float64
        Per run, the normalised score of each row. Computed on first use.
    length : numpy.ndarray of int64, shape (q, m)
        How many results each run gives each query (after the depth cut); 0 when the run lacks the query.
    candidates : numpy.ndarray of int64, shape (q,)
        Distinct documents of each query over all runs.
    unranked : numpy.ndarray of float64, shape (q, m), or None
        The normalisation's value for a document a run did not return (only Borda defines one).

    ``rank``, ``score`` and ``present`` are the same cells as dense (n, m) matrices, built on first use: for a
    small table or a block (:meth:`blocks`), not for a large one.
    """

    run_names: tuple[str, ...]
    query_ids: np.ndarray
    query: np.ndarray
    keys: np.ndarray
    cand_of: list[np.ndarray]
    rank_of: list[np.ndarray]
    length: np.ndarray
    candidates: np.ndarray
    unranked: np.ndarray | None
    _strings: StringSources  # the runs' doc ids, read as one column
    _home: np.ndarray  # each candidate's row in _strings
    _score_of: list[np.ndarray] | None = None
    _normalise: Callable[[], list[np.ndarray]] | None = None  # makes _score_of when first asked for
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_runs(self) -> int:
        return len(self.cand_of)

    def __len__(self) -> int:
        return len(self.query)

    @property
    def n_rows(self) -> int:
        """Rows over all runs: the number of cells a run returned."""
        return sum(len(c) for c in self.cand_of)

    @property
    def score_of(self) -> list[np.ndarray]:
        """Per run, the normalised score of each of its rows (aligned with ``cand_of``)."""
        if self._score_of is None:
            self._score_of = self._normalise()
        return self._score_of

    def row_query(self, r: int) -> np.ndarray:
        """The query of each row of run ``r`` (never decreasing)."""
        key = ("row_query", r)
        if key not in self._cache:
            self._cache[key] = self.query[self.cand_of[r]]
        return self._cache[key]

    def _dense(self, columns: list[np.ndarray], dtype: type) -> np.ndarray:
        out = np.zeros((len(self), self.n_runs), dtype=dtype, order="F")  # each run's column contiguous
        for r, values in enumerate(columns):
            out[self.cand_of[r], r] = values
        return out

    @property
    def rank(self) -> np.ndarray:
        """``rank[i, r]``: the rank of candidate i in run r, 0 where r did not return it (dense: n x m)."""
        if "rank" not in self._cache:
            self._cache["rank"] = self._dense(self.rank_of, np.int32)
        return self._cache["rank"]

    @property
    def score(self) -> np.ndarray:
        """``score[i, r]``: the normalised score of candidate i in run r, 0 where r did not return it (dense)."""
        if "score" not in self._cache:
            self._cache["score"] = self._dense(self.score_of, np.float64)
        return self._cache["score"]

    @property
    def present(self) -> np.ndarray:
        """``present[i, r]``: run r returned candidate i (dense)."""
        if "present" not in self._cache:
            self._cache["present"] = self.rank > 0
        return self._cache["present"]

    @property
    def count(self) -> np.ndarray:
        """How many runs returned each candidate (the "number of non-zero" of CombMNZ)."""
        if "count" not in self._cache:
            count = np.zeros(len(self), dtype=np.int64)
            for cand in self.cand_of:  # a run returns a candidate at most once
                count[cand] += 1
            self._cache["count"] = count
        return self._cache["count"]

    @property
    def docs(self) -> StringColumn:
        """Each candidate's document id."""
        if "docs" not in self._cache:
            self._cache["docs"] = self._strings.take(self._home)
        return self._cache["docs"]

    def take(self, rows: np.ndarray) -> FusionTable:
        """The table restricted to ``rows`` (candidates, ascending), with the same queries and runs."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(len(self), -1, dtype=np.int64)
        new[rows] = np.arange(len(rows))
        kept = []
        for cand in self.cand_of:
            mapped = new[cand]
            kept.append(np.flatnonzero(mapped >= 0))
        cand_of = [new[cand[keep]] for cand, keep in zip(self.cand_of, kept, strict=True)]
        rank_of = [rank[keep] for rank, keep in zip(self.rank_of, kept, strict=True)]
        return self._derived(rows, cand_of, rank_of, lambda scores: [s[k] for s, k in zip(scores, kept, strict=True)])

    def _derived(
        self,
        rows: np.ndarray | slice,
        cand_of: list[np.ndarray],
        rank_of: list[np.ndarray],
        select: Callable[[list[np.ndarray]], list[np.ndarray]],
    ) -> FusionTable:
        return FusionTable(
            run_names=self.run_names,
            query_ids=self.query_ids,
            query=self.query[rows],
            keys=self.keys[rows],
            cand_of=cand_of,
            rank_of=rank_of,
            length=self.length,
            candidates=self.candidates,
            unranked=self.unranked,
            _strings=self._strings,
            _home=self._home[rows],
            _score_of=None if self._score_of is None else select(self._score_of),
            _normalise=None if self._score_of is not None else lambda: select(self.score_of),
        )

    def blocks(self, max_cells: int | None = None) -> Iterator[tuple[int, int, list[tuple[int, int]]]]:
        """Consecutive candidate ranges ``(lo, hi, rows)`` of whole queries, each at most ``max_cells`` cells
        (candidates x runs; default :data:`BLOCK_CELLS`) unless one query alone has more; ``rows[r]`` is the
        range of run r's rows whose candidates lie in ``lo:hi``."""
        n, m = len(self), self.n_runs
        if n == 0:
            return
        per_block = max(1, (max_cells or BLOCK_CELLS) // max(m, 1))
        if n <= per_block:
            yield 0, n, [(0, len(c)) for c in self.cand_of]
            return
        starts = np.flatnonzero(np.r_[True, self.query[1:] != self.query[:-1]])  # each query's first candidate
        cuts = [0]
        while cuts[-1] < n:
            lo = cuts[-1]
            if lo + per_block >= n:
                cuts.append(n)
                break
            i = int(np.searchsorted(starts, lo + per_block, side="right")) - 1  # the last query start in reach
            if starts[i] <= lo:  # one query holds more than a block: it alone
                i = int(np.searchsorted(starts, lo, side="right"))
            cuts.append(int(starts[i]) if i < len(starts) else n)
        bounds = np.asarray(cuts, dtype=np.int64)
        codes = np.r_[self.query[bounds[:-1]], self.query[-1] + 1]  # each block's first query, and past the last
        run_bounds = [np.searchsorted(self.row_query(r), codes, side="left") for r in range(m)]
        for b in range(len(bounds) - 1):
            yield int(bounds[b]), int(bounds[b + 1]), [(int(rb[b]), int(rb[b + 1])) for rb in run_bounds]

    def block(self, lo: int, hi: int, rows: list[tuple[int, int]]) -> FusionTable:
        """The candidates ``lo:hi`` as a table of their own (one of :meth:`blocks`)."""
        cand_of = [cand[a:b] - lo for cand, (a, b) in zip(self.cand_of, rows, strict=True)]
        rank_of = [rank[a:b] for rank, (a, b) in zip(self.rank_of, rows, strict=True)]
        return self._derived(
            slice(lo, hi), cand_of, rank_of, lambda scores: [s[a:b] for s, (a, b) in zip(scores, rows, strict=True)]
        )

    def rows_of_queries(self, selected: np.ndarray) -> np.ndarray:
        """Candidates whose query is in ``selected`` (a boolean mask over ``query_ids``)."""
        return np.flatnonzero(selected[self.query])

    def output_rows(self) -> CandidateRows:
        """The rows a fused run is made of, without the per-run columns (which can then be freed)."""
        return CandidateRows(self.query_ids, self.query, self.keys, self._strings, self._home)

    def to_run(self, scores: np.ndarray, *, name: str, cls: type[Run] = Run, tag: str | None = None) -> Run:
        """A run with one row per candidate and the given fused scores (see :meth:`CandidateRows.to_run`)."""
        return self.output_rows().to_run(scores, name=name, cls=cls, tag=tag)


@dataclass(frozen=True)
class CandidateRows:
    """A fusion table's candidates without its per-run columns: what a fused run is made of.

    Holding only these, :func:`stagewise.fuse` lets the table's rank and score matrices go before it builds
    the run, which keeps the peak memory of a fusion near the size of its output.
    """

    query_ids: np.ndarray
    query: np.ndarray
    keys: np.ndarray
    strings: StringSources
    home: np.ndarray

    def __len__(self) -> int:
        return len(self.query)

    def to_run(
        self, scores: np.ndarray, *, name: str, cls: type[Run] = Run, tag: str | None = None, consume: bool = False
    ) -> Run:
        """A run with one row per candidate and the given fused scores, stored in evaluation order (query,
        fused score descending, doc id descending). With ``consume`` (the caller needs neither these rows nor
        ``scores`` again), the scores and the pair keys are reordered in place and become the run's: two arrays
        fewer at the peak of memory."""
        if len(scores) != len(self):
            raise ValueError(f"{len(scores)} scores for {len(self)} candidates")
        scores = np.asarray(scores, dtype=np.float64)
        bad = ~np.isfinite(scores)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise StagewiseError(
                f"fusion gave a non-finite score ({float(scores[row])}) to document "
                f"{str(self.strings.value(int(self.home[row])))!r} of query {str(self.query_ids[self.query[row]])!r}; "
                "check the weights and parameters"
            )
        order = evaluation_order(self.query, scores, self.strings, self.home)
        if consume and scores.base is None and scores.flags.writeable:  # its own memory, not a view of another
            scores[:] = scores[order]
            ordered = scores
        else:
            ordered = scores[order]
        ordered += 0.0  # -0.0 becomes 0.0 (the two tie, as in trec_eval)
        keys = self.keys
        if consume and keys.flags.writeable:  # these rows are not used again: their keys become the run's
            keys[:] = keys[order]
        else:
            keys = keys[order]
        # The order moves rows within their query only: rows already grouped by query keep their query column.
        query, steps = self.query, np.diff(self.query)
        if not bool((steps >= 0).all()):
            query = query[order]
            steps = np.diff(query)
        query_ids = self.query_ids
        if len(query) and np.count_nonzero(steps) + 1 < len(query_ids):  # some queries (a fold): only those
            present = np.zeros(len(query_ids), dtype=bool)
            present[query] = True
            query_ids = query_ids[present]
            query = (np.cumsum(present, dtype=np.int32) - 1)[query]
        return cls(
            query_ids,
            query,
            self.strings.take(self.home, through=order),
            ordered,
            None,
            None,  # the rows are the run's own input order
            keys,
            name=name,
            tag=tag,
        )


def load_runs(runs: Any) -> list[Run]:
    """Runs from paths, objects, a list of them or a ``{name: run}`` mapping, named as
    :func:`stagewise.evaluate` names them (the same file name twice becomes ``name#2``)."""
    from stagewise.data.readers import read_runs

    return read_runs(runs)


def select_queries(runs: list[Run], policy: str) -> np.ndarray:
    """The query ids to fuse under ``policy`` (sorted)."""
    if policy not in QUERY_POLICIES:
        raise ConventionError(f"unknown query policy {policy!r}; choose one of {', '.join(QUERY_POLICIES)}")
    ids = [np.asarray(run.query_ids) for run in runs]
    if all(np.array_equal(ids[0], other) for other in ids[1:]):  # the common case: every policy agrees
        return ids[0]
    union = ids[0]
    for other in ids[1:]:
        union = np.union1d(union, other)
    if policy == "union":
        return union
    if policy == "intersection":
        common = ids[0]
        for other in ids[1:]:
            common = np.intersect1d(common, other)
        if len(common) == 0:
            raise StagewiseError("no query is in every run; use the union policy, or check the query ids")
        return common
    for run, own in zip(runs, ids, strict=True):
        lacking = np.setdiff1d(union, own)
        if len(lacking):
            shown = ", ".join(map(str, lacking[:5])) + (" ..." if len(lacking) > 5 else "")
            raise StagewiseError(
                f"run {run.name!r} lacks {len(lacking)} quer{'y' if len(lacking) == 1 else 'ies'} that other runs "
                f"have: {shown} (fuse with queries='union' or 'intersection')"
            )
    return union


def in_order(run: Run, ties: str) -> Run:
    """``run`` with each query's rows in the order ``ties`` gives them (its positions then are the ranks fusion
    reads, and its depth cut): itself for ``docid`` (a run is stored in trec_eval's order), else a copy whose
    rows are permuted within their queries.

    >>> from stagewise.data.readers import read_run
    >>> run = read_run({"q": {"a": 1.0000000001, "b": 1.0}})  # equal as C floats: trec_eval's order is b, a
    >>> run.doc_ids.to_list(), in_order(run, "docid-double").doc_ids.to_list()
    (['b', 'a'], ['a', 'b'])
    """
    if ties == "docid" or len(run) < 2:
        return run
    if ties == "docid-double":
        order = evaluation_order(run.query_codes, run.scores, run.docs, np.arange(len(run)), single=False)
    elif ties == "input":
        key = pl.DataFrame({"q": run.query_codes, "s": run.scores, "p": run.input_position}).with_row_index("i")
        order = key.sort(["q", "s", "p"], descending=[False, True, False])["i"].to_numpy()
    elif ties == "rank":
        if run.ranks is None or np.isnan(np.asarray(run.ranks, dtype=float)).any():
            raise ConventionError(f"ties='rank' needs a run with an integer rank column on every row ({run.name})")
        key = pl.DataFrame({"q": run.query_codes, "r": run.ranks, "p": run.input_position}).with_row_index("i")
        order = key.sort(["q", "r", "p"])["i"].to_numpy()
    else:
        raise ConventionError(f"unknown tie convention {ties!r}; choose one of docid, docid-double, input, rank")
    if np.array_equal(order, np.arange(len(run))):
        return run
    return Run(
        run.query_ids,
        run.query_codes[order],
        run.docs.take(order),
        run.scores[order],
        None if run.ranks is None else run.ranks[order],
        run.input_position[order],
        run.pair_keys[order],
        name=run.name,
        source=run.source,
        tag=run.tag,
    )


def _segments(part: Part) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each of the part's lists (its rows grouped by query, at least one)."""
    if part.rows is None:  # the whole run: its own query offsets (every query it has holds a row)
        offsets = part.run.offsets
        return offsets[:-1], np.diff(offsets)
    codes = part.codes
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    lengths = np.diff(np.r_[starts, len(codes)])
    return starts.astype(np.int64), lengths.astype(np.int64)


def _rerank(part: Part, values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """1-based rank of each row by normalised value descending, then doc id descending (for normalisations
    that reverse the order)."""
    frame = pl.DataFrame(
        {
            "q": part.codes,
            "v": values,
            "d": part.run.docs.series().gather(part.run_rows()).cast(pl.Binary),
        }
    ).with_row_index("i")
    order = frame.sort(["q", "v", "d"], descending=[False, True, True])["i"].to_numpy()
    rank = np.empty(len(values), dtype=np.int32)
    rank[order] = (np.arange(len(values)) - np.repeat(starts, lengths) + 1).astype(np.int32)
    return rank


def build_table(
    runs: Any,
    *,
    norm: Normalization | str | None = None,
    depth: int | None = None,
    queries: str = "union",
    ties: str = "docid",
) -> FusionTable:
    """Join ``runs`` into a :class:`FusionTable` under the depth, query, normalisation and tie choices
    (``ties``: how equal scores order each run's list, :data:`stagewise.fusion.options.FUSION_TIES`)."""
    runs = [in_order(run, ties) for run in load_runs(runs)]
    if not runs:
        raise StagewiseError("give at least one run to fuse")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ConventionError(f"The 'depth' parameter of fuse must be an int >= 1 or None. Got {depth!r} instead.")
    normalization = Normalization.parse(norm)
    query_ids = select_queries(runs, queries)
    parts = [cut(run, query_ids, depth) for run in runs]
    for run, part in zip(runs, parts, strict=True):
        if len(part) == 0 and queries == "intersection":
            raise StagewiseError(f"run {run.name!r} has no results for the fused queries")
    strings = StringSources([run.docs for run in runs])
    joined = join(parts, strings, strings.bases[:-1])
    m, q = len(runs), len(query_ids)
    candidates = np.diff(segment_offsets(joined.query, q))

    lists: list[Lists | None] = []
    length = np.zeros((q, m), dtype=np.int64)
    for r, part in enumerate(parts):
        if len(part) == 0:
            lists.append(None)
            continue
        starts, lengths = _segments(part)
        list_codes = part.codes[starts]
        lists.append(Lists(part.scores(), starts, lengths, candidates[list_codes]))
        length[list_codes, r] = lengths
    info = normalization.info

    def normalise() -> list[np.ndarray]:
        return [
            np.zeros(0) if own is None else np.asarray(info.function(own), dtype=np.float64) for own in lists
        ]

    score_of = None
    rank_of = [ranks(part) for part in parts]
    if info.reverses:  # a normalisation that reverses a list's order re-ranks it
        score_of = normalise()
        for r, (part, own) in enumerate(zip(parts, lists, strict=True)):
            if own is not None:
                rank_of[r] = _rerank(part, score_of[r], own.starts, own.lengths)
    unranked = None
    if info.unranked is not None:
        unranked = info.unranked(length.astype(np.float64), candidates[:, None].astype(np.float64))

    return FusionTable(
        run_names=tuple(run.name for run in runs),
        query_ids=query_ids,
        query=joined.query,
        keys=joined.keys,
        cand_of=joined.cand_of,
        rank_of=rank_of,
        length=length,
        candidates=candidates,
        unranked=unranked,
        _strings=strings,
        _home=joined.home,
        _score_of=score_of,
        _normalise=normalise,
    )
