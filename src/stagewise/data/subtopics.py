"""Subtopic judgements (ndeval's qrels): a label for (query, subtopic, document), the iteration column of a TREC
qrels file read as the subtopic.

ndeval (the TREC Web track's diversity evaluator) reads ``topic subtopic docno judgment``: the second column,
which trec_eval ignores as "iteration", names the subtopic (intent) the judgement is for, so a document appears
once per subtopic it was judged for. ir_measures reads the same column the same way when it computes the
diversity measures through pyndeval. :class:`SubtopicQrels` holds those judgements and is also an ordinary
:class:`~stagewise.data.qrels.Qrels` with one row per (query, document), labelled with the document's highest
label over its subtopics (a document relevant to any subtopic is relevant to the topic, as ndeval's MAP reads
it), so every other measure works on it too.

>>> qrels = read_subtopic_qrels([("1", "1", "d1", 1), ("1", "2", "d1", 0), ("1", "2", "d2", 2)])
>>> qrels
SubtopicQrels(name='qrels', queries=1, judgements=2, subtopic_judgements=3)
>>> qrels.to_dict()
{'1': {'d2': 2, 'd1': 1}}
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise._io import display_name, read_bytes
from stagewise._lazy import LazyModule
from stagewise.data.columns import clip, integer_labels, lines_from, no_lines
from stagewise.data.qrels import Qrels
from stagewise.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

#: What a line of ndeval's qrels holds, as an error message says it.
EXPECTED_LINE = "4 columns 'query subtopic doc_id relevance' (ndeval's qrels: the iteration column is the subtopic)"
_FIELDS = ("query_id", "subtopic", "doc_id", "relevance")
# ir_measures' GenericQrel / Qrel (query_id, doc_id, relevance, iteration) and pyndeval's SubtopicQrel
# (query_id, subtopic_id, doc_id, relevance): the same four values under other names.
_RECORD_FIELDS = {"iteration": "subtopic", "subtopic_id": "subtopic"}


class SubtopicQrels(Qrels):
    """Judgements per (query, subtopic, document), and as :class:`Qrels` per (query, document).

    Attributes (besides those of :class:`Qrels`)
    --------------------------------------------
    subtopic_offsets : numpy.ndarray of int64
        The subtopic judgements of the (query, document) row ``i`` are ``subtopic_offsets[i]:[i + 1]``.
    subtopic_slots : numpy.ndarray of int64
        Each subtopic judgement's (query, subtopic) pair, numbered 0.. in query, then subtopic order.
    subtopic_labels : numpy.ndarray of int32
    slot_query : numpy.ndarray of int32
        The query code of each (query, subtopic) pair.
    subtopic_names : numpy.ndarray of str
        The subtopic id of each (query, subtopic) pair, as the file spells it.
    """

    __slots__ = (
        "_memo",
        "frame",
        "slot_query",
        "subtopic_labels",
        "subtopic_names",
        "subtopic_offsets",
        "subtopic_slots",
    )

    @classmethod
    def from_subtopic_frame(
        cls, frame: pl.DataFrame, *, name: str = "qrels", source: str | None = None, line_of=no_lines
    ) -> SubtopicQrels:
        """Build from a frame with columns ``query_id, subtopic, doc_id, relevance`` (one row per judgement)."""
        where = source or name
        if frame.height == 0:
            raise InputError(where, "has no judgements", expected=EXPECTED_LINE)
        for column in _FIELDS:
            if frame[column].null_count():
                row = int(frame[column].is_null().arg_true()[0])
                raise InputError(where, f"missing {column}", line=line_of(row), expected=EXPECTED_LINE)
        labels = integer_labels(frame["relevance"], where, line_of)
        frame = frame.select(
            pl.col("query_id").cast(pl.String),
            pl.col("subtopic").cast(pl.String),
            pl.col("doc_id").cast(pl.String),
            pl.Series("relevance", labels),
        ).with_row_index("line")
        _raise_on_duplicates(frame, where, line_of)
        # One (query, document) row each, labelled with the document's highest label over its subtopics.
        pairs = frame.group_by("query_id", "doc_id", maintain_order=True).agg(pl.col("relevance").max())
        base = Qrels.from_frame(pairs, name=name, source=source)
        self = cls(base.query_ids, base.query_codes, base.docs, base.labels, base.pair_keys, name=name, source=source)
        # Qrels stores its rows by query id (byte order), then label descending, stably: the same sort of the
        # pairs gives each pair's row.
        stored = pairs.with_row_index("pair").sort(
            ["query_id", "relevance"], descending=[False, True], maintain_order=True
        )
        row_of_pair = np.empty(pairs.height, dtype=np.int64)
        row_of_pair[stored["pair"].to_numpy()] = np.arange(pairs.height)
        rows = pairs.select("query_id", "doc_id").with_columns(pl.Series("row", row_of_pair))
        self._attach(frame.drop("line"), rows)
        return self

    def _attach(self, frame: pl.DataFrame, rows: pl.DataFrame) -> None:
        """Index the subtopic judgements of ``frame`` by this qrels' (query, document) rows (``rows``: each
        pair's row)."""
        self.frame = frame
        self._memo = {}
        joined = frame.join(rows, on=["query_id", "doc_id"], how="inner")
        query_code = self.query_codes[joined["row"].to_numpy()].astype(np.int64)
        subtopic = joined["subtopic"]
        # Subtopics in number order when every one is a number (ndeval's are), else in byte order.
        numeric = subtopic.cast(pl.Int64, strict=False)
        key = numeric if numeric.null_count() == 0 else subtopic
        order = (
            pl.DataFrame({"q": query_code, "k": key, "row": joined["row"]})
            .with_row_index("i")
            .sort(["q", "k", "row"])["i"]
            .to_numpy()
        )
        query_code, key_sorted = query_code[order], key.gather(order)
        new_slot = np.r_[True, (query_code[1:] != query_code[:-1]) | (key_sorted[1:] != key_sorted[:-1]).to_numpy()]
        slot = np.cumsum(new_slot) - 1
        self.slot_query = query_code[new_slot].astype(np.int32)
        self.subtopic_names = subtopic.gather(order).to_numpy()[new_slot]
        by_row = np.lexsort((slot, joined["row"].to_numpy()[order]))  # by (query, document) row, then subtopic
        row = joined["row"].to_numpy()[order][by_row]
        self.subtopic_slots = slot[by_row].astype(np.int64)
        self.subtopic_labels = joined["relevance"].to_numpy()[order][by_row].astype(np.int32)
        self.subtopic_offsets = np.r_[0, np.cumsum(np.bincount(row, minlength=len(self)))].astype(np.int64)

    @property
    def n_subtopics(self) -> int:
        """The number of (query, subtopic) pairs judged."""
        return len(self.slot_query)

    def of_queries(self, query_ids: np.ndarray) -> SubtopicQrels:
        """The judgements of some of the judged queries (an engine's part of a run)."""
        if len(query_ids) == len(self.query_ids):
            return self
        wanted = self.frame.filter(pl.col("query_id").is_in(np.asarray(query_ids).astype(str).tolist()))
        return SubtopicQrels.from_subtopic_frame(wanted, name=self.name, source=self.source)

    def memo(self, key: object, compute):
        """``compute()``, kept for ``key``: the ideal rankings, shared by every run measured on these qrels."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def __repr__(self) -> str:
        return (
            f"SubtopicQrels(name={self.name!r}, queries={self.n_queries}, judgements={len(self)}, "
            f"subtopic_judgements={len(self.subtopic_labels)})"
        )


def _raise_on_duplicates(frame: pl.DataFrame, where: str, line_of) -> None:
    """A (query, subtopic, document) judged twice is an error naming the second line: ndeval would count the
    document twice in the subtopic's relevant documents."""
    twice = frame.filter(pl.struct("query_id", "subtopic", "doc_id").is_duplicated())
    if twice.height:
        first = (
            twice.group_by("query_id", "subtopic", "doc_id").agg(pl.col("line").sort()).sort(pl.col("line").list.get(1))
        )
        query, subtopic, doc, lines = first.row(0)
        raise InputError(
            where,
            f"query {clip(query)!r} subtopic {clip(subtopic)!r} judges document {clip(doc)!r} twice "
            f"(first at line {line_of(lines[0]) or lines[0] + 1})",
            line=line_of(lines[1]),
            expected="one judgement per (query, subtopic, document)",
        )


def read_subtopic_qrels(source: Any, *, name: str | None = None) -> SubtopicQrels:
    """Read subtopic judgements: ndeval's qrels file (``query subtopic doc_id relevance``, whitespace separated,
    gzip allowed), or records of four values.

    ``source`` may be a path (``-`` for stdin); an iterable of 4-tuples in ndeval's order ``(query, subtopic,
    doc_id, relevance)`` (pyndeval's), or of namedtuples with fields ``query_id, doc_id, relevance, iteration``
    (ir_measures' ``Qrel``, ir_datasets' ``TrecSubtopicQrel``-like records) or ``query_id, subtopic_id, doc_id,
    relevance`` (pyndeval's ``SubtopicQrel``); a polars or pandas frame with those columns; or a mapping
    ``{query: {subtopic: {doc_id: relevance}}}``. Labels are integers; a label below the relevance level
    (1 unless a measure says ``rel=``) counts as not relevant to that subtopic.

    >>> read_subtopic_qrels({"7": {"1": {"d1": 1}, "2": {"d1": 1, "d2": 0}}}).n_subtopics
    2
    """
    if isinstance(source, SubtopicQrels):
        return source
    if isinstance(source, Qrels):
        raise InputError(
            source.source or source.name,
            "holds one label per (query, document), without subtopics",
            expected=EXPECTED_LINE + "; read the file with read_subtopic_qrels",
        )
    if isinstance(source, str | os.PathLike):
        where = display_name(source)
        frame, line_of = _parse_lines(read_bytes(source), where)
        default = "stdin" if where == "<stdin>" else os.path.basename(os.fspath(source))
        return SubtopicQrels.from_subtopic_frame(frame, name=name or default, source=where, line_of=line_of)
    where = f"<{type(source).__name__}>"
    frame = _frame_of(source, where)
    return SubtopicQrels.from_subtopic_frame(frame, name=name or "qrels", source=where)


def _parse_lines(data: bytes, where: str) -> tuple[pl.DataFrame, Any]:
    """ndeval's qrels lines as a frame, blank lines skipped; a line that is not 4 fields is an error naming it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(where, "is not UTF-8 text", line=line, expected=EXPECTED_LINE) from None
    lines = pl.Series("text", text.split("\n"), dtype=pl.String)
    numbers = np.flatnonzero(lines.str.strip_chars().str.len_bytes().to_numpy() > 0)
    kept = lines.gather(numbers)
    fields = kept.str.extract_groups(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$").struct.unnest()
    line_of = lines_from((numbers + 1).tolist())
    bad = fields[fields.columns[0]].is_null()
    if bad.any():
        row = int(bad.arg_true()[0])
        raise InputError(
            where, f"line {clip(kept[row].strip())!r} is not 4 fields", line=line_of(row), expected=EXPECTED_LINE
        )
    fields.columns = list(_FIELDS)
    return fields, line_of


def _frame_of(source: Any, where: str) -> pl.DataFrame:
    """A frame with columns query_id, subtopic, doc_id, relevance from records, a frame or a mapping."""
    if isinstance(source, pl.DataFrame) or type(source).__name__ == "DataFrame":
        frame = source if isinstance(source, pl.DataFrame) else pl.from_pandas(source)
        frame = frame.rename({k: v for k, v in _RECORD_FIELDS.items() if k in frame.columns})
        missing = [c for c in _FIELDS if c not in frame.columns]
        if missing:
            raise InputError(
                where,
                f"lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                expected="columns query_id, subtopic (or iteration), doc_id, relevance",
            )
        return frame.select(_FIELDS)
    if isinstance(source, Mapping):
        rows = [
            (query, subtopic, doc, label)
            for query, subtopics in source.items()
            for subtopic, docs in subtopics.items()
            for doc, label in docs.items()
        ]
    elif isinstance(source, Iterable):
        rows = [_record(item, where, i) for i, item in enumerate(source)]
    else:
        raise InputError(where, "is not a file path, frame, mapping or iterable of records", expected=EXPECTED_LINE)
    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pl.DataFrame(
        {
            "query_id": [str(v) for v in columns[0]],
            "subtopic": [str(v) for v in columns[1]],
            "doc_id": [str(v) for v in columns[2]],
            "relevance": pl.Series(list(columns[3]), strict=False),
        }
    )


def _record(item: Any, where: str, index: int) -> tuple[Any, Any, Any, Any]:
    fields = getattr(item, "_fields", None)
    if fields is not None:
        named = {_RECORD_FIELDS.get(f, f): getattr(item, f) for f in fields}
        if all(f in named for f in _FIELDS):
            return tuple(named[f] for f in _FIELDS)  # type: ignore[return-value]
    elif isinstance(item, tuple | list) and len(item) == 4:
        return tuple(item)  # type: ignore[return-value]
    raise InputError(
        where,
        f"record {index + 1} is {clip(item)!r}",
        expected="(query, subtopic, doc_id, relevance) or a namedtuple with query_id, doc_id, relevance, iteration",
    )


__all__ = ["EXPECTED_LINE", "SubtopicQrels", "read_subtopic_qrels"]
