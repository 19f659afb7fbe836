"""A ranked result list for many queries: the output of a retrieval, fusion or reranking stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import parsing
from stagewise.data.columns import (
    LineLookup,
    byte_order,
    duplicate_rows,
    intern,
    no_lines,
    pair_keys,
    raise_on_duplicates,
    require_values,
    segment_offsets,
    sorted_vocabulary,
)
from stagewise.data.formats import DUPLICATE_POLICIES  # kept there, light, for the CLI's choices
from stagewise.data.order import evaluation_order
from stagewise.data.strings import StringColumn
from stagewise.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")


class Run:
    """Columnar ranked results with interned query ids.

    Rows are stored in trec_eval's evaluation order: query id (byte order), then score descending compared
    in single precision (trec_eval 9 and pytrec_eval keep scores as C floats), then doc id descending
    (``form_res_rels.c``); ``input_position`` keeps each row's position in the input so
    other tie conventions can be applied. Build one with :func:`stagewise.read_run`; it is not modified
    afterwards.

    Attributes
    ----------
    name : str
        The run's name: the file name it came from, or the name given.
    query_ids : numpy.ndarray of str
        The distinct query ids, sorted; ``query_codes`` index into it.
    query_codes : numpy.ndarray of int32
        Each row's query.
    docs : StringColumn
        Each row's document id (``doc_ids`` gives them as a polars Series).
    scores : numpy.ndarray of float64
        Each row's score, exactly as read.
    ranks : numpy.ndarray of int64, or None
        The rank column of the input, when it had one (kept, not used to order rows by default).
    offsets : numpy.ndarray of int64
        Rows of query ``c`` are ``offsets[c]:offsets[c + 1]``.
    duplicates_dropped : int
        Repeated documents dropped when read with ``duplicates="first"`` or ``"best"``.
    score_from : str or None
        ``"rank"`` when the input had no scores, only ranks (a 3-column ``qid docid rank`` MS MARCO run): each
        score is ``-rank``, so the rank is the only order; ``None`` when the scores are the input's own.
    """

    __slots__ = (
        "_input_position",
        "_pair_keys",
        "docs",
        "duplicates_dropped",
        "name",
        "offsets",
        "query_codes",
        "query_ids",
        "ranks",
        "score_from",
        "scores",
        "source",
        "tag",
    )

    def __init__(
        self,
        query_ids: np.ndarray,
        query_codes: np.ndarray,
        docs: StringColumn,
        scores: np.ndarray,
        ranks: np.ndarray | None,
        input_position: np.ndarray | tuple | None,
        keys: np.ndarray | None,
        *,
        name: str,
        source: str | None = None,
        tag: str | None = None,
        duplicates_dropped: int = 0,
        score_from: str | None = None,
    ) -> None:
        self.query_ids = query_ids
        self.query_codes = query_codes
        self.docs = docs
        self.scores = scores
        self.ranks = ranks
        # None: the rows are in input order; (rows, sources): so are they, but for rows[i], input row sources[i];
        # (rows, sources, blocks): query blocks moved as blocks describes, then (rows, sources) as above
        self._input_position = input_position
        self._pair_keys = keys  # None: computed from the ids when first asked for (pair_keys)
        self.offsets = segment_offsets(query_codes, len(query_ids))
        self.name = name
        self.source = source
        self.tag = tag
        self.duplicates_dropped = duplicates_dropped
        self.score_from = score_from

    # -- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_columns(
        cls,
        first_seen: list[str],
        codes: np.ndarray,
        docs: StringColumn,
        scores: np.ndarray,
        ranks: np.ndarray | None,
        keys: np.ndarray,
        *,
        name: str,
        source: str | None = None,
        tag: str | None = None,
        line_of: LineLookup = no_lines,
        duplicates: str = "error",
        score_from: str | None = None,
        owned: bool = False,
    ) -> Run:
        """Build from columns in input order: query ids numbered by first appearance (``codes``), document
        ids, finite scores, optional ranks and pair keys. See :meth:`from_frame` for ``duplicates``.

        The columns stay the caller's: they are reordered into trec_eval's order on copies, unless ``owned``
        says the caller hands them over (a reader's freshly parsed columns), when they are reordered in place
        and no second copy of a column is made."""
        where = source or name
        if len(codes) == 0:
            raise InputError(where, "has no results", expected="at least one (query_id, doc_id, score) row")
        if duplicates not in DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {DUPLICATE_POLICIES}, not {duplicates!r}")
        # One compiled pass: is each query's block contiguous, in score order, where are its ties and repeats?
        layout = parsing.run_layout(codes, scores, keys, len(first_seen))
        dropped = 0
        if duplicates == "error":
            if layout is None or layout.repeat != -1:  # -1: no key repeats within a query, so no duplicate
                raise_on_duplicates(codes, keys, docs, first_seen, where, line_of, "run")
        else:
            pairs = [] if layout is not None and layout.repeat == -1 else duplicate_rows(codes, keys, docs)
            if pairs:
                drop = _rows_to_drop(pairs, scores, duplicates)
                keep = np.setdiff1d(np.arange(len(codes)), drop)
                dropped = len(drop)
                codes, docs, scores, keys = codes[keep], docs.take(keep), scores[keep], keys[keep]
                ranks = None if ranks is None else ranks[keep]
                layout = parsing.run_layout(codes, scores, keys, len(first_seen))
        query_ids, codes, docs, scores, ranks, keys, position = _stored_order(
            first_seen, codes, docs, scores, ranks, keys, layout, owned
        )
        return cls(
            query_ids,
            codes,
            docs,
            scores,
            ranks,
            position,
            keys,
            name=name,
            source=source,
            tag=tag,
            duplicates_dropped=dropped,
            score_from=score_from,
        )

    @classmethod
    def in_evaluation_order(
        cls,
        query_ids: np.ndarray,
        codes: np.ndarray,
        docs: StringColumn,
        scores: np.ndarray,
        input_position: np.ndarray | None,
        *,
        name: str,
    ) -> Run:
        """A run from columns its maker already put in trec_eval's order, taken as they are (nothing is sorted or
        checked again): ``query_ids`` distinct and in byte order, ``codes`` (int32) ascending, each query's rows
        by score descending compared as C floats and then doc id descending in byte order, no document twice in
        a query, finite scores; ``input_position`` each row's position in the maker's own order (``None``: the
        same order). The pair keys are computed when first used (:attr:`pair_keys`). For a stage that produced
        its rows in this order itself (BM25's search, through :func:`stagewise.retrieval._kernels.run_rows`);
        everything else goes through :meth:`from_columns`, which checks. The tests build each such run both
        ways and compare every column."""
        if len(codes) == 0:
            raise InputError(name, "has no results", expected="at least one (query_id, doc_id, score) row")
        return cls(query_ids, codes, docs, scores, None, input_position, None, name=name)

    @classmethod
    def from_frame(
        cls,
        frame: pl.DataFrame,
        *,
        name: str = "run",
        source: str | None = None,
        line_of: LineLookup = no_lines,
        duplicates: str = "error",
        score_from: str | None = None,
    ) -> Run:
        """Build from a polars frame with columns ``query_id``, ``doc_id``, ``score`` and optionally ``rank``
        and ``tag``. Rejects missing values and non-finite scores. A document repeated within a query is an
        error (``duplicates="error"``, naming the line), or only its first (``"first"``) or highest-scored
        (``"best"``) occurrence is kept; ``duplicates_dropped`` counts what was dropped."""
        where = source or name
        if frame.height == 0:
            raise InputError(where, "has no results", expected="at least one (query_id, doc_id, score) row")
        query = frame["query_id"].cast(pl.String)
        doc_series = frame["doc_id"].cast(pl.String)
        require_values((("query_id", query), ("doc_id", doc_series)), where, line_of)
        scores = frame["score"].cast(pl.Float64).to_numpy()
        finite = np.isfinite(scores)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            value = frame["score"][row]
            # pandas' NaN arrives as a polars null: say NaN, not None, and name the row when there is no line
            shown = "NaN (or missing)" if value is None else repr(value)
            line = line_of(row)
            at = "" if line is not None else f" at row {row} (query {query[row]!r}, doc {doc_series[row]!r})"
            raise InputError(
                where,
                f"score {shown}{at} is not a finite number",
                line=line,
                expected="a finite decimal score",
            )
        first_seen, codes = intern(query)
        docs = StringColumn.from_series(doc_series)
        keys = pair_keys(StringColumn.from_series(query), docs)
        ranks = frame["rank"].cast(pl.Int64, strict=False).to_numpy() if "rank" in frame.columns else None
        # trec_eval reports the tag of the last line as the run id.
        tag = str(frame["tag"][-1]) if "tag" in frame.columns and frame["tag"][-1] is not None else None
        return cls.from_columns(
            first_seen,
            codes,
            docs,
            scores,
            ranks,
            keys,
            name=name,
            source=source,
            tag=tag,
            line_of=line_of,
            duplicates=duplicates,
            score_from=score_from,
        )

    # -- views ----------------------------------------------------------------------------------------------

    @property
    def pair_keys(self) -> np.ndarray:
        """Each row's 64-bit (query id, doc id) hash, the integer key joined with qrels' (uint64). A run read
        from a file has them from the parser; one a stage built in order (:meth:`in_evaluation_order`) gets
        them here, when something first joins it, so a search written straight to a file never hashes."""
        if self._pair_keys is None:
            queries = StringColumn.from_strings(self.query_ids.tolist())
            self._pair_keys = pair_keys(queries.take(self.query_codes.astype(np.int64)), self.docs)
        return self._pair_keys

    @pair_keys.setter
    def pair_keys(self, keys: np.ndarray) -> None:
        self._pair_keys = keys

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def doc_ids(self) -> pl.Series:
        """Each row's document id as a polars String Series."""
        return self.docs.series()

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, queries={self.n_queries}, rows={len(self)})"

    @property
    def input_position(self) -> np.ndarray:
        """Each row's position in the input (0-based)."""
        kept = self._input_position
        if kept is None or isinstance(kept, tuple):
            if kept is not None and len(kept) == 3:  # query blocks moved, then (rows, sources) within them
                full = _block_positions(kept[2])
                rows, sources = kept[0], kept[1]
                if rows is not None:
                    full[rows] = full[sources]
            else:
                full = np.arange(len(self), dtype=np.int32 if len(self) < 2**31 else np.int64)
                if kept is not None:
                    rows, sources = kept
                    full[rows] = sources
            self._input_position = kept = full
        return kept

    def renamed(self, name: str) -> Run:
        """The same run under another name (the arrays are shared, not copied)."""
        twin = object.__new__(Run)
        for slot in Run.__slots__:
            object.__setattr__(twin, slot, getattr(self, slot))
        twin.name = name
        return twin

    def within_query_rank(self) -> np.ndarray:
        """1-based rank of each stored row within its query (trec_eval's order)."""
        return np.arange(len(self), dtype=np.int64) - np.repeat(self.offsets[:-1], np.diff(self.offsets)) + 1

    def to_polars(self) -> pl.DataFrame:
        """Rows in evaluation order with columns ``query_id, doc_id, score, rank`` (rank 1-based, recomputed)."""
        return pl.DataFrame(
            {
                "query_id": self.query_ids[self.query_codes] if len(self) else np.array([], dtype=str),
                "doc_id": self.doc_ids,
                "score": self.scores,
                "rank": self.within_query_rank(),
            }
        )

    def to_pandas(self):
        """The :meth:`to_polars` frame as a pandas DataFrame (needs the ``pandas`` extra)."""
        return self.to_polars().to_pandas()

    def rankings(self) -> dict[str, list[str]]:
        """``{query_id: [doc_id, ...]}``, each query's documents best first in evaluation order (score descending,
        ties as the run's ``ties`` convention orders them)."""
        docs = self.docs.values()
        return {
            str(query): docs[int(self.offsets[code]) : int(self.offsets[code + 1])]
            for code, query in enumerate(self.query_ids)
        }

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}``, the shape pytrec_eval and ranx take."""
        out: dict[str, dict[str, float]] = {}
        docs = self.docs.values()
        scores = self.scores.tolist()
        for code, query in enumerate(self.query_ids):
            start, end = int(self.offsets[code]), int(self.offsets[code + 1])
            out[str(query)] = dict(zip(docs[start:end], scores[start:end], strict=True))
        return out


def _writable(values: np.ndarray, owned: bool = True) -> np.ndarray:
    """``values`` to write into: itself when the caller handed it over (``owned``) and it is writable, else a
    copy."""
    return values if owned and values.flags.writeable else values.copy()


def _rows_to_drop(pairs: list[tuple[int, int]], scores: np.ndarray, policy: str) -> np.ndarray:
    """For each set of repeated rows, every row but the first (``first``) or the best-scored (``best``)."""
    groups: dict[int, list[int]] = {}
    for first, repeat in pairs:
        root = next((r for r, members in groups.items() if first in members), first)
        groups.setdefault(root, [root])
        if repeat not in groups[root]:
            groups[root].append(repeat)
    drop: list[int] = []
    for members in groups.values():
        keep = members[0] if policy == "first" else max(members, key=lambda r: (scores[r], -r))
        drop.extend(r for r in members if r != keep)
    return np.array(sorted(drop), dtype=np.int64)


def _stored_order(
    first_seen: list[str],
    codes: np.ndarray,
    docs: StringColumn,
    scores: np.ndarray,
    ranks: np.ndarray | None,
    keys: np.ndarray,
    layout: parsing.Layout | None,
    owned: bool = False,
) -> tuple:
    """The columns in trec_eval's order (query ids in byte order, score descending in single precision, doc id
    descending), with what is kept of the input positions: ``None`` (unchanged), ``(rows, sources)`` (only
    those rows moved) or an array of every row's input position (an array of n rows costs memory).

    A run grouped by query and in score order within each query (most runs) moves whole query blocks, in
    O(n), when its ids are not in byte order (numeric ids, as MS MARCO's), then only its tied rows; anything
    else is sorted whole. Columns move in place only when ``owned``."""
    if layout is None or not (layout.grouped and layout.ordered):
        query_ids, codes = sorted_vocabulary(first_seen, codes)
        if layout is None:  # no extension: the numpy checks
            order, moved = _evaluation_order(codes, scores, docs)
        else:
            order, moved = evaluation_order(codes, scores, docs, np.arange(len(codes), dtype=np.int64)), None
        return (query_ids, *_apply_order(order, moved, codes, docs, scores, ranks, keys, owned))
    query_ids, by_bytes = byte_order(first_seen)
    blocks, tied = None, layout.tied
    if by_bytes is not None:
        blocks, codes, tied = _block_order(layout.starts, by_bytes, codes, tied)
        scores, keys = _move_blocks(scores, blocks, owned), _move_blocks(keys, blocks, owned)
        ranks = None if ranks is None else _move_blocks(ranks, blocks, owned)
        if not (owned and parsing.move_string_blocks(docs.offsets, docs.data, *blocks)):
            docs = docs.take(_block_positions(blocks))
    order, moved = _tie_order(tied, len(codes), docs)
    codes, docs, scores, ranks, keys, position = _apply_order(order, moved, codes, docs, scores, ranks, keys, owned)
    if blocks is not None:  # input positions: the moved blocks, then the tied rows moved within them
        position = (*(position if isinstance(position, tuple) else (None, None)), blocks)
    return query_ids, codes, docs, scores, ranks, keys, position


def _block_order(
    starts: np.ndarray, by_bytes: np.ndarray, codes: np.ndarray, tied: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
    """For a run grouped by query: its query blocks in byte order of their ids (``by_bytes[i]`` is the
    first-seen code of the i-th id in that order) as (first input row, length) of each block in that order,
    the new code of every row, and the tied rows' new positions (sorted). Linear: no sort of the rows."""
    n = len(codes)
    if len(starts) and (starts >= 0).all() and (starts[1:] > starts[:-1]).all():
        lengths = np.diff(np.append(starts, n))  # first-seen codes of a grouped run: block k is the k-th
    else:
        lengths = np.bincount(codes, minlength=len(starts))
    moved_starts, moved_lengths = np.maximum(starts[by_bytes], 0), lengths[by_bytes].astype(np.int64)
    new_starts = np.zeros(len(by_bytes), dtype=np.int64)
    np.cumsum(moved_lengths[:-1], out=new_starts[1:])
    shift = np.zeros(len(starts), dtype=np.int64)  # each code's block moves by this many rows
    shift[by_bytes] = new_starts - moved_starts
    new_codes = np.repeat(np.arange(len(by_bytes), dtype=np.int32), moved_lengths)
    tied = np.sort(tied + shift[codes[tied]]) if len(tied) else tied
    return (moved_starts, moved_lengths), new_codes, tied


def _block_positions(blocks: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The input row of each row once the blocks (first input row, length; in their new order) are laid out."""
    starts, lengths = blocks
    n = int(lengths.sum())
    index = np.int32 if n < 2**31 else np.int64
    new_starts = np.cumsum(lengths) - lengths
    positions = np.repeat((starts - new_starts).astype(index), lengths)
    positions += np.arange(n, dtype=index)
    return positions


def _move_blocks(values: np.ndarray, blocks: tuple[np.ndarray, np.ndarray], owned: bool) -> np.ndarray:
    """``values`` with its blocks laid out in their new order: in place when the column is ``owned`` and
    writable (one column's copy held at a time, not every column's), else as a copy."""
    if owned and parsing.move_blocks(values, *blocks):
        return values
    return values[_block_positions(blocks)]


def _apply_order(
    order: np.ndarray | None,
    moved: tuple[np.ndarray, np.ndarray] | None,
    codes: np.ndarray,
    docs: StringColumn,
    scores: np.ndarray,
    ranks: np.ndarray | None,
    keys: np.ndarray,
    owned: bool = False,
) -> tuple:
    """The columns reordered by the full permutation ``order``, or by ``moved`` (rows, sources: only those rows
    change), and the input positions kept: ``None`` (unchanged), ``(rows, sources)`` or an array of every row's."""
    if order is None and moved is None:
        return codes, docs, scores, ranks, keys, None
    if moved is None:
        codes, scores, keys = codes[order], scores[order], keys[order]
        position = order.astype(np.int32 if len(order) < 2**31 else np.int64)
        ranks = None if ranks is None else ranks[order]
        return codes, docs.take(order), scores, ranks, keys, position
    # only tied rows moved, within their query and score: fix those rows in place
    moved, moved_from = moved
    keys, scores = _writable(keys, owned), _writable(scores, owned)  # 0.0 and -0.0 tie, so scores move too
    keys[moved], scores[moved] = keys[moved_from], scores[moved_from]
    position = (moved, moved_from)
    if ranks is not None:
        ranks = _writable(ranks, owned)
        ranks[moved] = ranks[moved_from]
    docs = docs.permute_within_blocks(moved, moved_from) if owned else docs.take(_permutation(len(codes), moved,
                                                                                              moved_from))  # fmt: skip
    return codes, docs, scores, ranks, keys, position


def _permutation(n: int, rows: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Every row's source when row ``rows[i]`` takes row ``sources[i]`` and the others stay."""
    order = np.arange(n, dtype=np.int64)
    order[rows] = sources
    return order


def _evaluation_order(
    codes: np.ndarray, scores: np.ndarray, docs: StringColumn
) -> tuple[np.ndarray | None, tuple[np.ndarray, np.ndarray] | None]:
    """The permutation into (query, score descending, doc id descending) order (``None`` if already so),
    or, when only tied rows move (the input was sorted by query and score), those rows and their sources.

    Most runs arrive sorted by query and score, so that is checked first; then only tied scores, usually
    few, are ordered by doc id. Other inputs are sorted whole (:func:`stagewise.data.order.evaluation_order`).
    The path without the compiled extension (which checks all this in one pass: :func:`_stored_order`).
    """
    n = len(codes)
    if n <= 1:
        return None, None
    # trec_eval compares scores as C floats: a run sorted by its double scores is sorted in single precision
    # too (rounding keeps order), but scores that differ only beyond single precision tie.
    with np.errstate(over="ignore"):
        compared = scores.astype(np.float32)
    # Neighbour comparisons, not differences: scores near the float limits would overflow a subtraction.
    step_query = np.diff(codes)
    if not np.all((step_query > 0) | ((step_query == 0) & (compared[1:] <= compared[:-1]))):
        return evaluation_order(codes, scores, docs, np.arange(n, dtype=np.int64)), None
    tied = np.flatnonzero((step_query == 0) & (compared[1:] == compared[:-1]))
    del compared
    return _tie_order(tied, n, docs)


def _tie_order(tied: np.ndarray, n: int, docs: StringColumn) -> tuple[None, tuple[np.ndarray, np.ndarray] | None]:
    """For rows in query and score order whose ``tied`` rows (ascending) tie the next row: ``(None, (rows,
    sources))``, row ``rows[i]`` taking what row ``sources[i]`` holds puts each tie group in doc id descending
    order; ``(None, None)`` when nothing moves."""
    if len(tied) == 0:
        return None, None
    # Rows in a tie group: each tied step joins row i and i + 1; a row starts a new group unless the step before
    # it is tied. Only these rows move, and nothing of n rows is allocated: the work and memory are the ties'.
    rows = np.union1d(tied, tied + 1)
    continues = np.zeros(len(rows), dtype=bool)
    continues[1:] = np.isin(rows[1:] - 1, tied, assume_unique=True)
    group = np.cumsum(~continues)
    ties = pl.DataFrame({"g": group, "d": docs.take(rows).binary_series(), "r": rows})
    in_order = ties.select(
        ((pl.col("g") != pl.col("g").shift(-1)) | (pl.col("d") > pl.col("d").shift(-1))).fill_null(True).all()
    ).item()
    if in_order:
        return None, None
    reordered = ties.sort(["g", "d"], descending=[False, True], maintain_order=True)["r"].to_numpy()
    return None, (rows, reordered)
