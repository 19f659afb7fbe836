"""Relevance judgements: an integer label for (query, document) pairs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stagewise._lazy import LazyModule
from stagewise.data.columns import (
    LineLookup,
    integer_labels,
    intern,
    no_lines,
    pair_keys,
    raise_on_duplicates,
    require_values,
    segment_offsets,
    sorted_vocabulary,
)
from stagewise.data.strings import StringColumn
from stagewise.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")


class Qrels:
    """Columnar graded judgements with interned query ids.

    Rows are stored by query id (byte order), then label descending, so each query's block is already its
    ideal ordering. A label below 0 means "judged, but neither relevant nor non-relevant" the way trec_eval
    reads it (such documents are not relevant and do not count as judged non-relevant).

    Attributes
    ----------
    query_ids : numpy.ndarray of str
        The distinct judged query ids, sorted.
    query_codes : numpy.ndarray of int32
    docs : StringColumn
        Each judgement's document id (``doc_ids`` gives them as a polars Series).
    labels : numpy.ndarray of int32
    offsets : numpy.ndarray of int64
        Judgements of query ``c`` are ``offsets[c]:offsets[c + 1]``.
    """

    __slots__ = ("docs", "labels", "name", "offsets", "pair_keys", "query_codes", "query_ids", "source")

    def __init__(
        self,
        query_ids: np.ndarray,
        query_codes: np.ndarray,
        docs: StringColumn,
        labels: np.ndarray,
        keys: np.ndarray,
        *,
        name: str = "qrels",
        source: str | None = None,
    ) -> None:
        self.query_ids = query_ids
        self.query_codes = query_codes
        self.docs = docs
        self.labels = labels
        self.pair_keys = keys
        self.offsets = segment_offsets(query_codes, len(query_ids))
        self.name = name
        self.source = source

    @classmethod
    def from_columns(
        cls,
        first_seen: list[str],
        codes: np.ndarray,
        docs: StringColumn,
        labels: np.ndarray,
        keys: np.ndarray,
        *,
        name: str = "qrels",
        source: str | None = None,
        line_of: LineLookup = no_lines,
    ) -> Qrels:
        """Build from columns in input order (query ids numbered by first appearance)."""
        where = source or name
        if len(codes) == 0:
            raise InputError(where, "has no judgements", expected="at least one (query_id, doc_id, relevance) row")
        raise_on_duplicates(codes, keys, docs, first_seen, where, line_of, "qrels file")
        query_ids, codes = sorted_vocabulary(first_seen, codes)
        order = np.lexsort((-labels.astype(np.int64), codes))
        return cls(query_ids, codes[order], docs.take(order), labels[order], keys[order], name=name, source=source)

    @classmethod
    def from_frame(
        cls,
        frame: pl.DataFrame,
        *,
        name: str = "qrels",
        source: str | None = None,
        line_of: LineLookup = no_lines,
    ) -> Qrels:
        """Build from a polars frame with columns ``query_id``, ``doc_id`` and ``relevance`` (integers)."""
        where = source or name
        if frame.height == 0:
            raise InputError(where, "has no judgements", expected="at least one (query_id, doc_id, relevance) row")
        query = frame["query_id"].cast(pl.String)
        doc_series = frame["doc_id"].cast(pl.String)
        raw = frame["relevance"]
        require_values((("query_id", query), ("doc_id", doc_series), ("relevance", raw)), where, line_of)
        labels = integer_labels(raw, where, line_of)
        first_seen, codes = intern(query)
        docs = StringColumn.from_series(doc_series)
        keys = pair_keys(StringColumn.from_series(query), docs)
        return cls.from_columns(first_seen, codes, docs, labels, keys, name=name, source=source, line_of=line_of)

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __repr__(self) -> str:
        return f"Qrels(name={self.name!r}, queries={self.n_queries}, judgements={len(self)})"

    @property
    def doc_ids(self) -> pl.Series:
        """Each judgement's document id as a polars String Series."""
        return self.docs.series()

    def to_polars(self) -> pl.DataFrame:
        """Columns ``query_id, doc_id, relevance``."""
        return pl.DataFrame(
            {
                "query_id": self.query_ids[self.query_codes],
                "doc_id": self.doc_ids,
                "relevance": self.labels,
            }
        )

    def to_pandas(self):
        """The :meth:`to_polars` frame as a pandas DataFrame (needs the ``pandas`` extra)."""
        return self.to_polars().to_pandas()

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: label}}``, the shape pytrec_eval and ranx take."""
        out: dict[str, dict[str, int]] = {}
        docs = self.docs.values()
        labels = self.labels.tolist()
        for code, query in enumerate(self.query_ids):
            start, end = int(self.offsets[code]), int(self.offsets[code + 1])
            out[str(query)] = dict(zip(docs[start:end], labels[start:end], strict=True))
        return out

    def label_histogram(self) -> dict[int, int]:
        """How many judgements carry each label."""
        values, counts = np.unique(self.labels, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts, strict=True)}
