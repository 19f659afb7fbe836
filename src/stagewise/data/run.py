"""A ranked result list for many queries: the output of a retrieval, fusion or reranking stage."""

from __future__ import annotations

import numpy as np
import polars as pl

from stagewise.data.columns import (
    LineLookup,
    check_duplicates,
    intern_queries,
    no_lines,
    pair_keys,
    segment_offsets,
)
from stagewise.errors import InputError


class Run:
    """Columnar ranked results with interned query ids.

    Rows are stored in trec_eval's evaluation order: query id (byte order), then score descending, then
    doc id descending (``form_res_rels.c``); ``input_position`` keeps each row's position in the input so
    other tie conventions can be applied. Build one with :func:`stagewise.read_run` or the ``from_*``
    constructors; it is immutable afterwards.

    Attributes
    ----------
    name : str
        The run's name: the file name it came from, or the name given.
    query_ids : numpy.ndarray of str
        The distinct query ids, sorted; ``query_codes`` index into it.
    query_codes : numpy.ndarray of int32
        Each row's query.
    doc_ids : polars.Series of str
        Each row's document id.
    scores : numpy.ndarray of float64
        Each row's score, exactly as read.
    ranks : numpy.ndarray of int64, or None
        The rank column of the input, when it had one (kept, not used to order rows by default).
    offsets : numpy.ndarray of int64
        Rows of query ``c`` are ``offsets[c]:offsets[c + 1]``.
    """

    __slots__ = (
        "doc_ids",
        "duplicates_dropped",
        "input_position",
        "name",
        "offsets",
        "pair_keys",
        "query_codes",
        "query_ids",
        "ranks",
        "scores",
        "source",
        "tag",
    )

    def __init__(
        self,
        query_ids: np.ndarray,
        query_codes: np.ndarray,
        doc_ids: pl.Series,
        scores: np.ndarray,
        ranks: np.ndarray | None,
        input_position: np.ndarray,
        keys: np.ndarray,
        *,
        name: str,
        source: str | None = None,
        tag: str | None = None,
    ) -> None:
        self.query_ids = query_ids
        self.query_codes = query_codes
        self.doc_ids = doc_ids
        self.scores = scores
        self.ranks = ranks
        self.input_position = input_position
        self.pair_keys = keys
        self.offsets = segment_offsets(query_codes, len(query_ids))
        self.name = name
        self.source = source
        self.tag = tag
        self.duplicates_dropped = 0

    # -- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_frame(
        cls,
        frame: pl.DataFrame,
        *,
        name: str = "run",
        source: str | None = None,
        line_of: LineLookup = no_lines,
        duplicates: str = "error",
    ) -> Run:
        """Build from a polars frame with columns ``query_id``, ``doc_id``, ``score`` and optionally ``rank``
        and ``tag``. Rejects missing values and non-finite scores. A document repeated within a query is an
        error (``duplicates="error"``, naming the line), or only its first (``"first"``) or highest-scored
        (``"best"``) occurrence is kept; ``duplicates_dropped`` counts what was dropped."""
        where = source or name
        if frame.height == 0:
            raise InputError(where, "has no results", expected="at least one (query_id, doc_id, score) row")
        query = frame["query_id"].cast(pl.String)
        docs = frame["doc_id"].cast(pl.String)
        scores = frame["score"].cast(pl.Float64).to_numpy()
        for column, series in (("query_id", query), ("doc_id", docs)):
            if series.null_count():
                row = int(series.is_null().arg_true()[0])
                raise InputError(where, f"missing {column}", line=line_of(row), expected=f"a {column} on every row")
        finite = np.isfinite(scores)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise InputError(
                where,
                f"score {frame['score'][row]!r} is not a finite number",
                line=line_of(row),
                expected="a finite decimal score",
            )
        keys = pair_keys(query, docs)
        dropped = 0
        if duplicates == "error":
            check_duplicates(keys, query, docs, where, line_of, "run")
        elif duplicates in ("first", "best"):
            keep = _deduplicate(query, docs, scores, duplicates)
            if keep is not None:
                dropped = frame.height - len(keep)
                frame, query, docs, scores, keys = (
                    frame[keep],
                    query.gather(keep),
                    docs.gather(keep),
                    scores[keep],
                    keys[keep],
                )
        else:
            raise ValueError(f"duplicates must be 'error', 'first' or 'best', not {duplicates!r}")
        query_ids, codes = intern_queries(query)
        order = _evaluation_order(codes, scores, docs)
        ranks = frame["rank"].cast(pl.Int64, strict=False).to_numpy() if "rank" in frame.columns else None
        # trec_eval reports the tag of the last line as the run id.
        tag = str(frame["tag"][-1]) if "tag" in frame.columns and frame["tag"][-1] is not None else None
        position = np.arange(frame.height, dtype=np.int64)
        if order is not None:
            codes, scores, docs, keys, position = (
                codes[order],
                scores[order],
                docs.gather(order),
                keys[order],
                position[order],
            )
            if ranks is not None:
                ranks = ranks[order]
        run = cls(query_ids, codes, docs, scores, ranks, position, keys, name=name, source=source, tag=tag)
        run.duplicates_dropped = dropped
        return run

    # -- views ----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, queries={self.n_queries}, rows={len(self)})"

    def to_polars(self) -> pl.DataFrame:
        """Rows in evaluation order with columns ``query_id, doc_id, score, rank`` (rank 1-based, recomputed)."""
        within = np.arange(len(self), dtype=np.int64) - np.repeat(self.offsets[:-1], np.diff(self.offsets))
        return pl.DataFrame(
            {
                "query_id": self.query_ids[self.query_codes] if len(self) else np.array([], dtype=str),
                "doc_id": self.doc_ids,
                "score": self.scores,
                "rank": within + 1,
            }
        )

    def to_pandas(self):
        """The :meth:`to_polars` frame as a pandas DataFrame (needs the ``pandas`` extra)."""
        return self.to_polars().to_pandas()

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}``, the shape pytrec_eval and ranx take."""
        out: dict[str, dict[str, float]] = {}
        docs = self.doc_ids.to_list()
        scores = self.scores.tolist()
        for code, query in enumerate(self.query_ids):
            start, end = int(self.offsets[code]), int(self.offsets[code + 1])
            out[str(query)] = dict(zip(docs[start:end], scores[start:end], strict=True))
        return out


def _evaluation_order(codes: np.ndarray, scores: np.ndarray, docs: pl.Series) -> np.ndarray | None:
    """The permutation into (query, score descending, doc id descending) order; ``None`` if already so.

    Most runs arrive sorted, so checking first saves a sort of millions of rows.
    """
    if len(codes) > 1:
        step_query = np.diff(codes)
        step_score = np.diff(scores)
        same_query = step_query == 0
        if np.all((step_query > 0) | (same_query & (step_score <= 0))):
            tied = np.flatnonzero(same_query & (step_score == 0))
            if len(tied) == 0 or (docs.gather(tied) > docs.gather(tied + 1)).all():
                return None
    elif len(codes) <= 1:
        return None
    frame = pl.DataFrame({"q": codes, "s": scores, "d": docs}).with_row_index("i")
    ordered = frame.sort(["q", "s", "d"], descending=[False, True, True], maintain_order=True)
    return ordered["i"].to_numpy().astype(np.int64)


def _deduplicate(query: pl.Series, docs: pl.Series, scores: np.ndarray, policy: str) -> np.ndarray | None:
    """Rows to keep so each (query, doc) appears once; ``None`` when nothing repeats."""
    frame = pl.DataFrame({"q": query, "d": docs, "s": scores}).with_row_index("i")
    if not frame.select(pl.struct("q", "d").is_duplicated().any()).item():
        return None
    if policy == "best":
        frame = frame.sort(["s", "i"], descending=[True, False])
    kept = frame.unique(subset=["q", "d"], keep="first", maintain_order=True)["i"].to_numpy()
    return np.sort(kept).astype(np.int64)
