"""The fusion table: runs joined on (query, document), one row per candidate and one column per run.

Every fusion method is a function of this table, so the join, the depth cut, the query policy and the
normalisation happen once, vectorised over all queries:

1. each run keeps its first ``depth`` results per query (its own order: score descending, doc id
   descending) and the queries the policy selects;
2. the runs are joined on their 64-bit pair keys (one quicksort of (query, key) composites), and every key
   match is confirmed by comparing the document strings; should two different pairs ever share a key, the
   join is redone on the strings themselves;
3. each run's lists are normalised with segment reductions (no loop over queries) and scattered into
   ``score[candidate, run]`` and ``rank[candidate, run]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from stagewise.data.run import Run
from stagewise.data.strings import StringColumn
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion.normalize import Lists, Normalization

QUERY_POLICIES: dict[str, str] = {
    "union": "a query is fused when at least one run has it; runs without it contribute nothing",
    "intersection": "only queries that every run has are fused",
    "error": "every run must have the same queries (an error names the differences)",
}


@dataclass
class FusionTable:
    """Runs joined on (query, document).

    Attributes
    ----------
    run_names : tuple of str
    query_ids : numpy.ndarray of str
        The fused queries, sorted (byte order); ``query`` indexes into it.
    query : numpy.ndarray of int32, shape (n,)
        Each candidate's query.
    keys : numpy.ndarray of uint64, shape (n,)
        Each candidate's pair key (the hash of query and doc id that every container shares).
    score : numpy.ndarray of float64, shape (n, m)
        Normalised score of each candidate in each run; 0 where the run did not return it (see ``present``).
    rank : numpy.ndarray of int32, shape (n, m)
        1-based rank of each candidate in each run (after the depth cut); 0 where the run did not return it.
    length : numpy.ndarray of int64, shape (q, m)
        How many results each run gives each query (after the depth cut); 0 when the run lacks the query.
    candidates : numpy.ndarray of int64, shape (q,)
        Distinct documents of each query over all runs.
    unranked : numpy.ndarray of float64, shape (q, m), or None
        The normalisation's value for a document a run did not return (only Borda defines one).
    """

    run_names: tuple[str, ...]
    query_ids: np.ndarray
    query: np.ndarray
    keys: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    length: np.ndarray
    candidates: np.ndarray
    unranked: np.ndarray | None
    _strings: StringColumn
    _home: np.ndarray  # each candidate's row in _strings
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_runs(self) -> int:
        return self.score.shape[1]

    def __len__(self) -> int:
        return len(self.query)

    @property
    def present(self) -> np.ndarray:
        """``present[i, r]``: run r returned candidate i."""
        if "present" not in self._cache:
            self._cache["present"] = self.rank > 0
        return self._cache["present"]

    @property
    def count(self) -> np.ndarray:
        """How many runs returned each candidate (the "number of non-zero" of CombMNZ)."""
        if "count" not in self._cache:
            count = self.present[:, 0].astype(np.int64)
            for r in range(1, self.n_runs):  # column by column: a row sum over few columns is slow in numpy
                count += self.present[:, r]
            self._cache["count"] = count
        return self._cache["count"]

    @property
    def docs(self) -> StringColumn:
        """Each candidate's document id."""
        if "docs" not in self._cache:
            self._cache["docs"] = self._strings.take(self._home)
        return self._cache["docs"]

    def take(self, rows: np.ndarray) -> FusionTable:
        """The table restricted to ``rows`` (candidates), with the same queries and runs."""
        rows = np.asarray(rows, dtype=np.int64)
        return FusionTable(
            run_names=self.run_names,
            query_ids=self.query_ids,
            query=self.query[rows],
            keys=self.keys[rows],
            score=np.asfortranarray(self.score[rows]),
            rank=np.asfortranarray(self.rank[rows]),
            length=self.length,
            candidates=self.candidates,
            unranked=self.unranked,
            _strings=self._strings,
            _home=self._home[rows],
        )

    def rows_of_queries(self, selected: np.ndarray) -> np.ndarray:
        """Candidates whose query is in ``selected`` (a boolean mask over ``query_ids``)."""
        return np.flatnonzero(selected[self.query])

    def to_run(self, scores: np.ndarray, *, name: str, cls: type[Run] = Run, tag: str | None = None) -> Run:
        """A run with one row per candidate and the given fused scores, stored in evaluation order (query,
        fused score descending, doc id descending)."""
        if len(scores) != len(self):
            raise ValueError(f"{len(scores)} scores for {len(self)} candidates")
        bad = ~np.isfinite(scores)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise StagewiseError(
                f"fusion gave a non-finite score ({scores[row]!r}) to document {self.docs.value(row)!r} of query "
                f"{self.query_ids[self.query[row]]!r}; check the weights and parameters"
            )
        scores = np.asarray(scores, dtype=np.float64) + 0.0  # -0.0 becomes 0.0: the two tie, as in trec_eval
        order = evaluation_order(self.query, scores, self._strings, self._home)
        return cls(
            self.query_ids,
            self.query[order],
            self._strings.take(self._home[order]),
            scores[order],
            None,
            np.arange(len(order), dtype=np.int32 if len(order) < 2**31 else np.int64),
            self.keys[order],
            name=name,
            tag=tag,
        )


@dataclass
class _Part:
    """The rows one run contributes: indices into the run, their table query codes and pair keys."""

    run: Run
    rows: np.ndarray | None  # None: every row, in order
    codes: np.ndarray
    keys: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def run_rows(self) -> np.ndarray:
        return np.arange(len(self.run), dtype=np.int64) if self.rows is None else self.rows

    def scores(self) -> np.ndarray:
        return self.run.scores if self.rows is None else self.run.scores[self.rows]


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


def _part(run: Run, query_ids: np.ndarray, depth: int | None) -> _Part:
    """The rows of ``run`` within ``depth`` whose query is fused, with table query codes."""
    pos = np.searchsorted(query_ids, run.query_ids)
    inside = pos < len(query_ids)
    inside[inside] = query_ids[pos[inside]] == run.query_ids[inside]
    code_of = np.where(inside, pos, -1).astype(np.int32)
    codes = code_of[run.query_codes]
    keep = codes >= 0
    if depth is not None:
        keep &= run.within_query_rank() <= depth
    if keep.all():
        return _Part(run, None, codes, run.pair_keys)
    rows = np.flatnonzero(keep)
    return _Part(run, rows, codes[rows], run.pair_keys[rows])


def _join(parts: list[_Part], strings: StringColumn, bases: np.ndarray):
    """Candidates of the joined parts: (number, each part's candidate per row, each candidate's query, pair
    key and global row in ``strings``). Candidates come out grouped by query, ascending.

    One quicksort of a 64-bit composite (query code, top half of the pair key) brings the rows of a pair next
    to each other; each match is confirmed by its document string. Should two different documents share a
    key, the join is redone on the strings.
    """
    sizes = [len(part) for part in parts]
    keys = np.concatenate([part.keys for part in parts])
    # Rows of uncut runs are their own global rows (the string columns are concatenated in run order).
    uncut = all(part.rows is None for part in parts)
    rows = None if uncut else np.concatenate([bases[r] + part.run_rows() for r, part in enumerate(parts)])
    if len(parts) == 1:
        n = sizes[0]
        return n, [np.arange(n, dtype=np.int64)], parts[0].codes, keys, _global(rows, np.arange(n))
    # One sort of a 64-bit composite, (query code, top half of the key), brings the rows of a pair together.
    composite = keys >> np.uint64(32)
    high = np.concatenate([part.codes for part in parts]).astype(np.uint64)
    high <<= np.uint64(32)
    composite |= high
    del high
    order = np.argsort(composite)
    sorted_composite, sorted_keys = composite[order], keys[order]
    del composite
    start = np.empty(len(order), dtype=bool)
    start[0] = True
    np.not_equal(sorted_composite[1:], sorted_composite[:-1], out=start[1:])
    differ = sorted_keys[1:] != sorted_keys[:-1]
    mixed = np.flatnonzero(differ & ~start[1:]) + 1
    if len(mixed):  # keys sharing their top half in one query: order those groups' rows by the whole key
        starts = np.flatnonzero(start)
        group = np.unique(np.searchsorted(starts, mixed, side="right") - 1)
        ends = np.r_[starts[1:], len(order)][group]
        where = np.concatenate([np.arange(b, e) for b, e in zip(starts[group], ends, strict=True)])
        local = where[np.lexsort((sorted_keys[where], sorted_composite[where]))]
        order[where] = order[local]  # whole groups of equal composite: the composites stay sorted
        sorted_keys[where] = sorted_keys[local]
        differ = sorted_keys[1:] != sorted_keys[:-1]
    start[1:] |= differ  # a new candidate where the query or the key changes
    del differ
    candidate = np.cumsum(start.view(np.uint8), dtype=np.int32 if len(order) < 2**31 else np.int64)
    candidate -= 1
    home = _global(rows, order[start])
    # Confirm: every row joined to a candidate has the candidate's document string.
    others = np.flatnonzero(~start)
    if len(others):
        mine = strings.take(_global(rows, order[others]))
        theirs = strings.take(home[candidate[others]])
        if not (np.array_equal(mine.offsets, theirs.offsets) and mine.data == theirs.data):
            query = np.concatenate([part.codes for part in parts])
            return _join_on_strings(parts, strings, query, keys, _global(rows, np.arange(len(keys))), sizes)
    cand_of = np.empty(len(order), dtype=candidate.dtype)
    cand_of[order] = candidate
    bounds = np.cumsum([0, *sizes])
    per_part = [cand_of[bounds[i] : bounds[i + 1]] for i in range(len(parts))]
    query = (sorted_composite[start] >> np.uint64(32)).astype(np.int32)
    return int(candidate[-1]) + 1, per_part, query, sorted_keys[start], home


def _global(rows: np.ndarray | None, index: np.ndarray) -> np.ndarray:
    """Global string rows of concatenated-part indices (the identity when no run was cut)."""
    return index.astype(np.int64, copy=False) if rows is None else rows[index]


def segment_sort(offsets: np.ndarray, values: np.ndarray, pad, segment: np.ndarray | None = None) -> np.ndarray:
    """A permutation that sorts ``values`` ascending within each segment ``offsets[i]:offsets[i + 1]`` (the
    segments stay in order; equal values in any order). ``pad`` must sort after every value.

    Short segments of similar length are laid out as the rows of a padded matrix and sorted row by row, which
    is about twice as fast as one sort of everything; otherwise one quicksort and a stable radix sort of the
    segment numbers. ``segment`` (each value's segment number), when given, saves recomputing it.
    """
    counts = np.diff(offsets)
    n, k = len(values), len(counts)
    width = int(counts.max()) if k else 0
    if segment is None:
        segment = np.repeat(np.arange(k, dtype=np.int64), counts)
    if 0 < k * width <= 4 * n + 4096 and not (values == pad).any():
        matrix = np.full((k, width), pad, dtype=values.dtype)
        flat = segment * np.int64(width)  # value i goes to row segment[i], column i - offsets[segment[i]]
        flat += np.arange(n, dtype=np.int64)
        flat -= offsets[:-1][segment]
        matrix.ravel()[flat] = values
        local = np.argsort(matrix, axis=1)
        local += offsets[:-1, None]
        return local[np.arange(width) < counts[:, None]]
    order = np.argsort(values)
    return order[_stable_order(segment[order])]


def _join_on_strings(parts, strings, query, keys, rows, sizes):
    """The join by (query, document string): slower, and exact whatever the keys."""
    frame = pl.DataFrame({"q": query, "d": strings.take(rows).series().cast(pl.Binary)}).with_row_index("i")
    ordered = frame.sort(["q", "d"])
    order = ordered["i"].to_numpy().astype(np.int64)
    q, d = ordered["q"], ordered["d"]
    start = np.r_[True, ((q.slice(1) != q.slice(0, len(q) - 1)) | (d.slice(1) != d.slice(0, len(d) - 1))).to_numpy()]
    candidate = np.cumsum(start) - 1
    cand_of = np.empty(len(order), dtype=np.int64)
    cand_of[order] = candidate
    bounds = np.cumsum([0, *sizes])
    per_part = [cand_of[bounds[i] : bounds[i + 1]] for i in range(len(parts))]
    return int(candidate[-1]) + 1, per_part, query[order][start], keys[order][start], rows[order][start]


def evaluation_order(query: np.ndarray, scores: np.ndarray, strings: StringColumn, rows: np.ndarray) -> np.ndarray:
    """The permutation into trec_eval's order: query ascending, score descending, doc id descending (bytes).

    A segment sort of the scores within each query (see :func:`segment_sort`); rows that tie on (query,
    score) are then put in doc id order: pairs by one vectorised string comparison (polars), larger groups
    by a sort of their members only.
    """
    n_queries = int(query.max()) + 1 if len(query) else 0
    if len(query) > 1 and (query[1:] < query[:-1]).any():  # not grouped by query: group first
        grouping = _stable_order(query)
        return grouping[evaluation_order(query[grouping], scores[grouping], strings, rows[grouping])]
    offsets = np.searchsorted(query, np.arange(n_queries + 1))
    order = segment_sort(offsets, -scores, np.inf, query)
    value = scores[order]  # the order moves rows within their query only, so query[order] == query
    tied = (query[1:] == query[:-1]) & (value[1:] == value[:-1])
    if not tied.any():
        return order
    member = np.zeros(len(order), dtype=bool)
    member[:-1] |= tied
    member[1:] |= tied
    positions = np.flatnonzero(member)
    joined = np.zeros(len(order), dtype=bool)  # joined[i]: row i ties with row i - 1
    joined[1:] = tied
    group = np.cumsum((~joined[positions]).view(np.uint8), dtype=np.int64) - 1  # runs of tied neighbours
    sizes = np.bincount(group)
    first = positions[np.r_[0, np.cumsum(sizes)[:-1]]]
    # Pairs, the common case: compare the two ids (polars, byte order) and swap when the second is larger.
    pair = first[sizes == 2]
    if len(pair):
        a, b = order[pair], order[pair + 1]
        swap = (strings.take(rows[a]).series() < strings.take(rows[b]).series()).to_numpy().astype(np.int64)
        order[pair] = a + (b - a) * swap  # arithmetic, not a random boolean mask (branches mispredict)
        order[pair + 1] = b + (a - b) * swap
    # Larger groups: sort their members by group, then doc id descending.
    large = (sizes > 2)[group]
    if large.any():
        where = positions[large]
        frame = pl.DataFrame({"g": group[large], "d": strings.take(rows[order[where]]).series()})
        local = frame.with_row_index("i").sort(["g", "d"], descending=[False, True])["i"].to_numpy()
        order[where] = order[where[local.astype(np.int64)]]
    return order


def _stable_order(values: np.ndarray) -> np.ndarray:
    """A stable argsort of non-negative integers: radix sort, 16 bits per pass."""
    values = np.asarray(values, dtype=np.int64)
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while len(values) and int(values.max()) >> shift:
        order = order[np.argsort(((values[order] >> shift) & 0xFFFF).astype(np.uint16), kind="stable")]
        shift += 16
    return order


def _concatenate(columns: list[StringColumn]) -> tuple[StringColumn, np.ndarray]:
    """All columns as one, and the first row of each in it."""
    if len(columns) == 1:
        return columns[0], np.zeros(1, dtype=np.int64)
    sizes = np.array([len(c) for c in columns], dtype=np.int64)
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    shift = 0
    pieces = []
    for column in columns:
        pieces.append(column.offsets[:-1] + shift)
        shift += int(column.offsets[-1])
    offsets = np.concatenate([*pieces, np.array([shift], dtype=np.int64)])
    data = b"".join(c.data for c in columns)
    return StringColumn(offsets, data), bases


def _segments(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of equal codes in ``codes`` (sorted, non-empty)."""
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    lengths = np.diff(np.r_[starts, len(codes)])
    return starts.astype(np.int64), lengths.astype(np.int64)


def _rerank(part: _Part, values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
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
) -> FusionTable:
    """Join ``runs`` into a :class:`FusionTable` under the depth, query and normalisation choices."""
    runs = load_runs(runs)
    if not runs:
        raise StagewiseError("give at least one run to fuse")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ConventionError(f"The 'depth' parameter of fuse must be an int >= 1 or None. Got {depth!r} instead.")
    normalization = Normalization.parse(norm)
    query_ids = select_queries(runs, queries)
    parts = [_part(run, query_ids, depth) for run in runs]
    for run, part in zip(runs, parts, strict=True):
        if len(part) == 0 and queries == "intersection":
            raise StagewiseError(f"run {run.name!r} has no results for the fused queries")
    strings, bases = _concatenate([run.docs for run in runs])
    n, cand_of, query, keys, home = _join(parts, strings, bases)
    m, q = len(runs), len(query_ids)
    candidates = np.bincount(query, minlength=q).astype(np.int64)

    info = normalization.info
    score = np.zeros((n, m), dtype=np.float64, order="F")  # column-major: each run's column is contiguous
    rank = np.zeros((n, m), dtype=np.int32, order="F")
    length = np.zeros((q, m), dtype=np.int64)
    for r, part in enumerate(parts):
        if len(part) == 0:
            continue
        starts, lengths = _segments(part.codes)
        list_codes = part.codes[starts]
        lists = Lists(part.scores(), starts, lengths, candidates[list_codes])
        values = np.asarray(info.function(lists), dtype=np.float64)
        reranked = info.reverses  # a normalisation that reverses the order re-ranks the list
        ranks = _rerank(part, values, starts, lengths) if reranked else (lists.position() + 1).astype(np.int32)
        score[cand_of[r], r] = values
        rank[cand_of[r], r] = ranks
        length[list_codes, r] = lengths
    unranked = None
    if info.unranked is not None:
        unranked = info.unranked(length.astype(np.float64), candidates[:, None].astype(np.float64))

    return FusionTable(
        run_names=tuple(run.name for run in runs),
        query_ids=query_ids,
        query=query,
        keys=keys,
        score=score,
        rank=rank,
        length=length,
        candidates=candidates,
        unranked=unranked,
        _strings=strings,
        _home=home,
    )
