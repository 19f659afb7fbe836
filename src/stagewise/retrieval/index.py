"""A BM25 index: raw term statistics, memory-mapped, scored at search time by any variant.

Build with :meth:`BM25Index.build` (or :meth:`~BM25Index.from_tokens`), grow with :meth:`~BM25Index.add`,
search with :meth:`~BM25Index.search` (or :meth:`~BM25Index.topk` for raw arrays). Keeping it is
:mod:`stagewise.retrieval.storage`'s (the arrays on disk, their checks on load, the folder replaced in one
step); adding documents is :mod:`stagewise.retrieval.merge`'s.

Because only tf, lengths and df are stored, ``k1``, ``b``, ``delta``, ``epsilon`` (and the variant) change at
search time with no re-indexing. Adding documents merges their postings into the arrays, giving exactly the
arrays a rebuild over all documents would give. A damaged index is an error, never a crash: the compiled
search checks the term and document ids it follows too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stagewise.errors import ConventionError, InputError, StagewiseError, parameter_error
from stagewise.retrieval import _kernels
from stagewise.retrieval.analysis import Analysed, Analyser, analysed_from_tokens, drop_absent
from stagewise.retrieval.storage import (  # noqa: F401 - the layout's names stay importable from here
    _ARRAYS,
    CRC_BLOCK,
    FORMAT,
    FORMAT_VERSION,
    INDEX_FILES,
    _column_values,
    _narrow_tf,
    _strings_to_column,
    _take_column,
    foreign_meta,
    index_metadata,
    read_index,
    save_index,
)
from stagewise.retrieval.variants import DEFAULT_VARIANT, Scoring

_STRATEGIES = {
    "auto": _kernels.STRATEGY_AUTO,
    "maxscore": _kernels.STRATEGY_MAXSCORE,
    "exhaustive": _kernels.STRATEGY_EXHAUSTIVE,
}
UB_SLACK = 1e-9  # relative margin on pruning upper bounds, far above the rounding error of a sum of terms

Progress = Callable[[int, int], None]


def _checksum_terms(ids: Sequence[str], texts: Sequence[str], start: int) -> int:
    try:
        return _kernels.checksum(ids, texts, start)
    except TypeError as exc:
        raise StagewiseError(f"documents: {exc}; documents must be strings") from None
    except UnicodeError as exc:  # a lone surrogate, which UTF-8 cannot encode
        raise StagewiseError(f"documents: text or id that is not valid Unicode ({exc.reason})") from None


@dataclass(frozen=True)
class TopK:
    """Raw search results: query ``i``'s results are rows ``offsets[i]:offsets[i + 1]``, best first."""

    query_ids: list[str]
    offsets: np.ndarray
    docs: np.ndarray
    scores: np.ndarray
    scoring: Scoring
    empty_queries: int
    """Queries with no term in the index (they have no results)."""

    def to_run(self, index: BM25Index, name: str | None = None):
        """The results as a :class:`stagewise.data.run.Run` (document ids from ``index``).

        The Run keeps rows in trec_eval's order (query id, score as a C float descending, doc id descending in
        byte order). The results already come best first, so only rows whose scores tie as floats are put in
        doc id order, through the index's rank of each id in byte order (:func:`_kernels.run_rows`); the Run is
        then taken as it is, not sorted and checked again. Its doc ids are gathered from the index when first
        read (:class:`~stagewise.data.strings.DeferredTake`: a million ids are about half the cost of the Run,
        and a run that is only scored never reads them); pickling the Run gathers them. Each row's
        ``input_position`` is its row here."""
        from stagewise.data.columns import byte_order
        from stagewise.data.run import Run
        from stagewise.data.strings import DeferredTake, StringColumn

        if len(self.docs) == 0:
            raise StagewiseError(
                f"no query matched any document ({len(self.query_ids)} queries, "
                f"{self.empty_queries} with no term in the index)"
            )
        counts = np.diff(self.offsets)
        with_results = np.flatnonzero(counts)
        query_ids, by_bytes = byte_order([self.query_ids[i] for i in with_results.tolist()])
        query_order = with_results if by_bytes is None else with_results[by_bytes]
        with index._damage_is_input_error():
            rows = _kernels.run_rows(self.offsets, self.docs, self.scores, index.doc_id_rank(), query_order)
        if rows is None:  # not best first (not the kernel's results): let the Run sort and check them
            return self._to_run_sorted(index, name)
        ids = StringColumn(np.asarray(index.doc_ids_offsets, dtype=np.int64), index.doc_ids_data)
        codes = np.repeat(np.arange(len(query_order), dtype=np.int32), counts[query_order])
        return Run.in_evaluation_order(
            query_ids, codes, DeferredTake(ids, self.docs, rows), self.scores[rows], rows,
            name=name or f"bm25-{self.scoring}",
        )  # fmt: skip

    def _to_run_sorted(self, index: BM25Index, name: str | None = None):
        """:meth:`to_run` through :meth:`Run.from_columns`, which sorts the rows and checks them (the reference
        the tests compare :meth:`to_run` with, and its way for results that are not best first)."""
        from stagewise.data.columns import pair_keys
        from stagewise.data.run import Run
        from stagewise.data.strings import StringColumn

        counts = np.diff(self.offsets)
        with_results = np.flatnonzero(counts)
        first_seen = [self.query_ids[i] for i in with_results.tolist()]
        codes = np.repeat(np.arange(len(with_results), dtype=np.int32), counts[with_results])
        q_off, q_data = _strings_to_column(first_seen)
        query_per_row = StringColumn(q_off, q_data.tobytes()).take(codes.astype(np.int64))
        d_off, d_data = _take_column(index.doc_ids_offsets, index.doc_ids_data, self.docs.astype(np.int64))
        docs = StringColumn(d_off, d_data.tobytes())
        keys = pair_keys(query_per_row, docs)
        return Run.from_columns(
            first_seen,
            codes,
            docs,
            np.asarray(self.scores, dtype=np.float64),  # the TopK's own: the Run reorders a copy
            None,
            keys,
            name=name or f"bm25-{self.scoring}",
        )


class BM25Index:
    """BM25 over an analysed corpus. Build with :meth:`build` (or :meth:`from_tokens`), grow with :meth:`add`,
    keep with :meth:`save` / :meth:`load`, query with :meth:`search`.

    Examples
    --------
    >>> index = BM25Index.build(["wing lift in a slipstream", "lift of a flat plate", "heat transfer"],
    ...                         ids=["d1", "d2", "d3"])
    >>> run = index.search({"q1": "lift of wings"}, k=10)
    >>> run.to_polars()["doc_id"].to_list()
    ['d1', 'd2']
    >>> index.search({"q1": "lift of wings"}, k=10, k1=0.9, b=0.4).name   # no re-indexing
    'bm25-lucene(k1=0.9,b=0.4)'
    """

    def __init__(
        self,
        arrays: Mapping[str, np.ndarray],
        *,
        analyser: Analyser | None,
        scoring: Scoring,
        checksum: int,
        path: Path | None = None,
    ) -> None:
        for name in _ARRAYS:
            setattr(self, name, arrays[name])
        self.analyser = analyser
        self.scoring = scoring
        self.checksum = checksum
        self.path = path
        self.n_docs = len(self.doc_len)
        self.n_terms = len(self.term_ptr) - 1
        self.total_length = int(self.doc_len.sum(dtype=np.int64))
        self.avgdl = self.total_length / self.n_docs if self.n_docs else 0.0
        self._cache: dict[tuple, np.ndarray] = {}

    # ----------------------------------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        documents: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        analyser: Analyser | None = None,
        variant: str = DEFAULT_VARIANT,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        progress: Progress | None = None,
    ) -> BM25Index:
        """Index ``documents``: a sequence of texts (with ``ids``, default ``"0"``, ``"1"``, ...), a mapping of
        id to text, or an object with ``ids`` and ``texts`` (a :class:`stagewise.data.collections.Documents`).

        The variant and parameters given become the index's defaults (stored in its metadata); any of them can
        be overridden at search time.
        """
        scoring = Scoring.of(variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
        analyser = analyser or Analyser()
        ids, texts = _documents(documents, ids)
        _check_ids(ids, "documents")
        analysed = analyser.analyse_many(texts, source="documents", progress=progress, keep_dropped=True)
        index = cls._from_analysed(analysed, ids, analyser=analyser, scoring=scoring)
        index.checksum = _checksum_terms(ids, texts, 0)
        return index

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[Sequence[str]],
        ids: Sequence[str] | None = None,
        *,
        variant: str = DEFAULT_VARIANT,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> BM25Index:
        """Index documents that are already lists of terms (used as given; queries must then be term lists)."""
        scoring = Scoring.of(variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
        ids = [str(i) for i in range(len(tokens))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(tokens):
            raise InputError("documents", f"{len(tokens)} documents but {len(ids)} ids")
        _check_ids(ids, "documents")
        index = cls._from_analysed(analysed_from_tokens(tokens), ids, analyser=None, scoring=scoring)
        index.checksum = _checksum_terms(ids, ["\x1f".join(t) for t in tokens], 0)
        return index

    @classmethod
    def _from_analysed(
        cls, analysed: Analysed, ids: list[str], *, analyser: Analyser | None, scoring: Scoring
    ) -> BM25Index:
        postings = _kernels.build_postings(analysed.offsets, analysed.term_ids, len(analysed.terms))
        vocab_offsets, vocab_data = _strings_to_column(analysed.terms)
        doc_offsets, doc_data = _strings_to_column(ids)
        arrays = {
            "term_ptr": postings.term_ptr,
            "post_docs": postings.docs,
            "post_tf": _narrow_tf(postings.tf),
            "doc_len": postings.doc_len,
            "max_tf": postings.max_tf,
            "min_dl": postings.min_dl,
            "vocab_offsets": vocab_offsets,
            "vocab_data": vocab_data,
            "doc_ids_offsets": doc_offsets,
            "doc_ids_data": doc_data,
        }
        return cls(arrays, analyser=analyser, scoring=scoring, checksum=0)

    def add(
        self,
        documents: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        progress: Progress | None = None,
    ) -> BM25Index:
        """A new index with ``documents`` appended (after the current ones). Only the new documents are
        analysed; their postings are merged into the existing arrays, which come out exactly as a rebuild over
        all the documents would make them. Call :meth:`save` to keep it."""
        if self.analyser is None:
            raise StagewiseError("this index was built from tokens; add tokens with add_tokens()")
        new_ids, texts = _documents(documents, ids, start=self.n_docs)
        self._check_new_ids(new_ids)
        analysed = self.analyser.analyse_many(texts, source="documents", progress=progress, keep_dropped=True)
        merged = self._merged(analysed, new_ids)
        merged.checksum = (self.checksum + _checksum_terms(new_ids, texts, self.n_docs)) % (1 << 128)
        return merged

    def add_tokens(self, tokens: Sequence[Sequence[str]], ids: Sequence[str] | None = None) -> BM25Index:
        """:meth:`add` for an index built with :meth:`from_tokens`."""
        new_ids = [str(self.n_docs + i) for i in range(len(tokens))] if ids is None else [str(i) for i in ids]
        self._check_new_ids(new_ids)
        merged = self._merged(analysed_from_tokens(tokens), new_ids)
        joined = ["\x1f".join(t) for t in tokens]
        merged.checksum = (self.checksum + _checksum_terms(new_ids, joined, self.n_docs)) % (1 << 128)
        return merged

    def _check_new_ids(self, new_ids: list[str]) -> None:
        _check_ids(new_ids, "documents")
        existing = set(self.doc_ids())
        clash = next((i for i in new_ids if i in existing), None)
        if clash is not None:
            raise InputError("documents", f"document id {clash!r} is already in the index", expected="new ids")

    def _merged(self, analysed: Analysed, new_ids: list[str]) -> BM25Index:
        from stagewise.retrieval.merge import merged_arrays

        arrays = merged_arrays(self, analysed, new_ids)
        return BM25Index(arrays, analyser=self.analyser, scoring=self.scoring, checksum=self.checksum)

    # ------------------------------------------------------------------------------------------ storage

    def metadata(self) -> dict[str, Any]:
        return index_metadata(
            scoring=self.scoring,
            analyser=self.analyser,
            n_docs=self.n_docs,
            n_terms=self.n_terms,
            n_postings=int(self.term_ptr[-1]),
            total_length=self.total_length,
            tf_dtype=str(self.post_tf.dtype),
            checksum=self.checksum,
        )

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write the index to folder ``path``, replacing an index there in one step (a crash at any moment
        leaves the old index or the new one, whole). A non-empty folder that is not an index is refused unless
        ``force``; the current folder (or one that holds it) always is. Folders and files get the umask."""
        return save_index(self, path, force=force)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True) -> BM25Index:
        """Open a saved index; arrays are memory-mapped (read-only) unless ``mmap=False``.

        The index is checked before use: each array's dtype, length and CRC-32 against the metadata, offsets
        ascending and ending at their data, document ids in range, lengths adding up to the metadata's total.
        A failed check raises :class:`~stagewise.errors.InputError` naming the file, with a hint to rebuild.
        """
        arrays, analyser, scoring, checksum = read_index(path, mmap=mmap)
        return cls(arrays, analyser=analyser, scoring=scoring, checksum=checksum, path=Path(path))

    # ---------------------------------------------------------------------------------------- inspection

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        analysis = "pre-tokenised" if self.analyser is None else self.analyser.describe()
        return (
            f"BM25Index({self.n_docs:,} documents, {self.n_terms:,} terms, {int(self.term_ptr[-1]):,} postings, "
            f"{self.scoring}; {analysis})"
        )

    @property
    def name(self) -> str:
        """The retriever's name, the default name of its runs: ``bm25-<variant>(<parameters>)``."""
        return f"bm25-{self.scoring}"

    def describe(self) -> dict[str, Any]:
        """What this retriever is (:class:`stagewise.protocols.Retriever`'s provenance): the scoring, the
        analyser, the sizes and the folder it was opened from."""
        return {
            "retriever": "bm25",
            "name": self.name,
            "scoring": str(self.scoring),
            "analyser": None if self.analyser is None else self.analyser.describe(),
            "documents": self.n_docs,
            "terms": self.n_terms,
            "postings": int(self.term_ptr[-1]),
            "path": None if self.path is None else str(self.path),
        }

    def doc_ids(self, rows: np.ndarray | None = None) -> list[str]:
        return _column_values(self.doc_ids_offsets, self.doc_ids_data, rows)

    def doc_id_rank(self) -> np.ndarray:
        """Each document's place among the document ids in byte order (int32, index order): trec_eval breaks
        ties in score by doc id descending, and a Run built from search results orders tied rows by this rank.
        Computed on first use and kept (one sort of the ids; 4 bytes a document)."""
        held = self._cache.get(("doc_rank",))
        if held is None or held[0] is not self.doc_ids_data or held[1] is not self.doc_ids_offsets:
            from stagewise.data.strings import StringColumn

            ids = StringColumn(np.asarray(self.doc_ids_offsets, dtype=np.int64), self.doc_ids_data)
            order = ids.binary_series().arg_sort().to_numpy()
            rank = np.empty(self.n_docs, dtype=np.int32)
            rank[order] = np.arange(self.n_docs, dtype=np.int32)
            held = (self.doc_ids_data, self.doc_ids_offsets, rank)
            self._cache[("doc_rank",)] = held
        return held[2]

    def terms(self, rows: np.ndarray | None = None) -> list[str]:
        return _column_values(self.vocab_offsets, self.vocab_data, rows)

    def document_frequency(self, terms: Sequence[str]) -> np.ndarray:
        """df of each (already analysed) term; 0 when it is not in the index."""
        found = _kernels.find_terms(self.vocab_offsets, self.vocab_data, list(terms))
        df = np.diff(self.term_ptr)
        return np.where(found >= 0, df[np.maximum(found, 0)], 0)

    # ------------------------------------------------------------------------------------------- search

    @contextlib.contextmanager
    def _damage_is_input_error(self) -> Iterator[None]:
        """The search kernels' own bounds checks (an index changed in memory, or one that passed its checks
        on disk and was damaged after) as a user error that says to rebuild."""
        try:
            yield
        except ValueError as exc:
            if not str(exc).startswith("damaged index"):
                raise
            where = self.path if self.path is not None else "index"
            raise InputError(where, str(exc), hint=f"rebuild it: stagewise index CORPUS -o {where}") from None

    def _scoring(self, variant, k1, b, delta, epsilon) -> Scoring:
        return self.scoring.with_params(variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon)

    def _idf(self, scoring: Scoring) -> np.ndarray:
        key = ("idf", scoring.variant, scoring.epsilon)
        if key not in self._cache:
            df = np.diff(self.term_ptr).astype(np.float64)
            self._cache[key] = np.asarray(scoring.idf(df, self.n_docs), dtype=np.float64)
        return self._cache[key]

    def _norm(self, b: float) -> np.ndarray:
        key = ("norm", b)
        if key not in self._cache:
            self._cache = {k: v for k, v in self._cache.items() if k[0] != "norm"}
            avgdl = self.avgdl or 1.0  # every document empty: there are no postings to score
            self._cache[key] = 1 - b + b * np.asarray(self.doc_len) / avgdl
        return self._cache[key]

    def _weight_cache(self, mode: int, k1: float, b: float, delta: float) -> _kernels.WeightCache:
        """The compiled kernel's per-posting weights for these parameters (one set kept: a search with other
        parameters replaces it). Keyed on the posting arrays themselves too, so arrays swapped in memory never
        meet weights computed from the old ones."""
        arrays = (self.term_ptr, self.post_docs, self.post_tf, self.doc_len)
        key = ("weights", mode, k1, b, delta)
        held = self._cache.get(key)
        if held is None or any(a is not h for a, h in zip(arrays, held[0], strict=True)):
            self._cache = {k: v for k, v in self._cache.items() if k[0] != "weights"}
            held = (arrays, _kernels.WeightCache.empty(len(self.post_docs), len(self.term_ptr) - 1))
            self._cache[key] = held
        return held[1]

    def _find_terms(self, terms: list[str]) -> np.ndarray:
        """Each term's id in the index (int32; -1 when absent), through a hash table of the vocabulary built on
        first use and kept (6 to 12 bytes a term; keyed on the vocabulary arrays themselves, as the weights are)."""
        held = self._cache.get(("term_table",))
        if held is None or held[0] is not self.vocab_offsets or held[1] is not self.vocab_data:
            with self._damage_is_input_error():
                held = (self.vocab_offsets, self.vocab_data, _kernels.vocab_table(self.vocab_offsets, self.vocab_data))
            self._cache[("term_table",)] = held
        return _kernels.lookup_terms(self.vocab_offsets, self.vocab_data, held[2], terms)

    def _query_terms(self, queries: Sequence[str] | Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Each query's index term ids (offsets, ids), in query order, absent terms dropped."""
        if queries and all(isinstance(q, str) for q in queries):
            if self.analyser is None:
                raise StagewiseError("this index was built from tokens: give each query as a list of terms")
            with self._damage_is_input_error():
                return self.analyser.analyse_to_ids(list(queries), self._find_terms, source="queries")
        if not all(isinstance(q, list | tuple) for q in queries):
            raise StagewiseError("queries must all be strings, or all be lists of terms")
        # every term looked up as it comes (a hash lookup each costs less than finding the distinct terms first)
        offsets = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, queries), dtype=np.int64, count=len(queries)), out=offsets[1:])
        with self._damage_is_input_error():
            ids = self._find_terms([t for q in queries for t in q])
        return drop_absent(offsets, ids)

    def topk(
        self,
        queries: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        k: int = 1000,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        all_documents: bool = False,
        workers: int = 1,
        progress: Progress | None = None,
        exhaustive: bool = False,
        strategy: str = "auto",
        weight_mask: Any = None,
    ) -> TopK:
        """The top ``k`` documents of each query, as arrays (:meth:`search` wraps them in a Run; the parameters
        are the same). ``strategy`` picks how each query is answered: ``"auto"`` (a cost model chooses per
        query), ``"maxscore"`` (always prune) or ``"exhaustive"`` (score every posting; ``exhaustive=True`` says
        the same). Every strategy gives identical results, to the last bit and the tie order; the choice is
        there for tests and timing. ``weight_mask`` (bm25s' ``weight_mask``): see :meth:`search`."""
        if weight_mask is not None:
            return self._masked_topk(queries, ids, weight_mask, k=k, variant=variant, k1=k1, b=b, delta=delta,
                                     epsilon=epsilon, all_documents=all_documents)  # fmt: skip
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise parameter_error("k", "search", "an int >= 1", k)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise parameter_error("workers", "search", "an int >= 1", workers)
        scoring = self._scoring(variant, k1, b, delta, epsilon)
        query_ids, texts = _queries(queries, ids)
        _check_ids(query_ids, "queries")
        q_offsets, q_terms = self._query_terms(texts)
        n_queries = len(query_ids)
        # one entry per distinct (query, term), weighted by the term's count in the query
        q_of = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(q_offsets))
        keys, counts = np.unique(q_of * max(self.n_terms, 1) + q_terms, return_counts=True)
        uq, ut = keys // max(self.n_terms, 1), (keys % max(self.n_terms, 1)).astype(np.int32)
        ptr = np.zeros(n_queries + 1, dtype=np.int64)
        np.cumsum(np.bincount(uq, minlength=n_queries), out=ptr[1:])
        weights = counts * self._idf(scoring)[ut]
        bound = scoring.tf(self.max_tf[ut].astype(np.float64), self.min_dl[ut].astype(np.float64), self.avgdl)
        ub = weights * bound * (1 + UB_SLACK)
        empty = int(np.count_nonzero(np.diff(ptr) == 0))
        if strategy not in _STRATEGIES:
            raise parameter_error("strategy", "search", f"one of {', '.join(map(repr, _STRATEGIES))}", strategy)
        named = "exhaustive" if exhaustive else strategy
        code = _kernels.STRATEGY_ALL_DOCS if all_documents else _STRATEGIES[named]
        postings = _kernels.Postings(
            self.term_ptr, self.post_docs, self.post_tf, self.doc_len, self.max_tf, self.min_dl
        )
        norm = self._norm(scoring.b)
        mode, delta_value = scoring.spec.kernel_mode, scoring.delta or 0.0
        cache = self._weight_cache(mode, scoring.k1, scoring.b, delta_value)

        def run_chunk(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            a, e = ptr[lo], ptr[hi]
            with self._damage_is_input_error():
                return _kernels.search(
                    postings, norm, ptr[lo : hi + 1] - a, ut[a:e], weights[a:e], ub[a:e], k, mode, scoring.k1,
                    delta_value, code, cache=cache,
                )  # fmt: skip

        if workers == 1 and progress is None:
            chunk = max(n_queries, 1)  # one call: nothing to report, nothing to share out
        else:
            chunk = max(16, min(2000, -(-n_queries // (workers * 8)))) if n_queries else 1
        bounds = [(lo, min(lo + chunk, n_queries)) for lo in range(0, n_queries, chunk)]
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if workers == 1 or len(bounds) <= 1:
            for lo, hi in bounds:
                parts.append(run_chunk(lo, hi))
                if progress is not None:
                    progress(hi, n_queries)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as pool:  # the kernel releases the GIL
                for (_, hi), part in zip(bounds, pool.map(lambda bound: run_chunk(*bound), bounds), strict=True):
                    parts.append(part)
                    if progress is not None:
                        progress(hi, n_queries)
        if progress is not None and not bounds:
            progress(0, 0)
        res_offsets = np.zeros(n_queries + 1, dtype=np.int64)
        if len(parts) == 1:  # one call (one thread, no progress): its arrays as they are, not copied
            res_offsets, docs, scores = parts[0]
        elif parts:
            res_offsets[1:] = np.cumsum(np.concatenate([np.diff(p[0]) for p in parts]))
            docs = np.concatenate([p[1] for p in parts])
            scores = np.concatenate([p[2] for p in parts])
        else:
            docs, scores = np.zeros(0, dtype=np.int32), np.zeros(0)
        return TopK(query_ids, res_offsets, docs, scores, scoring, empty)

    def search(
        self,
        queries: Sequence[str] | Mapping[str, str] | Any,
        ids: Sequence[str] | None = None,
        *,
        k: int = 1000,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
        all_documents: bool = False,
        workers: int = 1,
        progress: Progress | None = None,
        name: str | None = None,
        weight_mask: Any = None,
    ):
        """Rank documents for each query; returns a :class:`stagewise.data.run.Run`.

        Parameters
        ----------
        queries : sequence of str, mapping of id to str, or an object with ``ids`` and ``texts``
            Query texts (analysed like the documents), or lists of terms (used as given).
        ids : sequence of str, optional
            Query ids for a plain sequence of queries (default ``"0"``, ``"1"``, ...).
        k : int, default=1000
            Results per query. A query gets at most ``k`` of the documents that contain one of its terms
            (fewer when fewer match; ``k`` above the corpus size is not an error). Ties in score keep the
            document indexed first.
        variant, k1, b, delta, epsilon : optional
            Override the index's scoring for this search (no re-indexing is needed).
        all_documents : bool, default=False
            Also rank documents that contain no query term (score 0, in index order), as bm25s and rank_bm25
            do; every query then gets ``min(k, N)`` results, the whole corpus when ``k >= N``.
        workers : int, default=1
            Threads searching query batches in parallel (the compiled kernel releases the GIL and all threads
            share the memory-mapped index).
        progress : callable(done, total), optional
            Called after each batch of queries.
        name : str, optional
            The run's name (default ``bm25-<variant>(<parameters>)``).
        weight_mask : array of float, one per document (index order), optional
            bm25s' ``weight_mask``: each document's score is multiplied by its weight before the top ``k`` are
            taken, so a weight of 0 filters a document out (it is not returned unless ``all_documents``) and other
            weights re-weight it. Every document's score is computed for each query (no pruning), as bm25s does.
        """
        top = self.topk(
            queries,
            ids,
            k=k,
            variant=variant,
            k1=k1,
            b=b,
            delta=delta,
            epsilon=epsilon,
            all_documents=all_documents,
            workers=workers,
            progress=progress,
            weight_mask=weight_mask,
        )
        return top.to_run(self, name=name)

    def _masked_topk(self, queries: Any, ids: Sequence[str] | None, weight_mask: Any, *, k: int,
                     all_documents: bool, **scoring: Any) -> TopK:  # fmt: skip
        """:meth:`topk` with bm25s' ``weight_mask``: every document scored, multiplied by its weight, then the top
        ``k`` by masked score (ties: the document indexed first). A document whose masked score is 0 is left out
        unless ``all_documents``, as an unmatched document is."""
        mask = np.asarray(weight_mask)
        if mask.ndim != 1 or len(mask) != self.n_docs or not np.issubdtype(mask.dtype, np.number):
            raise parameter_error(
                "weight_mask", "search", f"a 1-D array of {self.n_docs} numbers (one per indexed document)",
                f"an array of shape {mask.shape} and type {mask.dtype}",
            )  # fmt: skip
        mask = mask.astype(np.float64)
        if not np.isfinite(mask).all():
            raise parameter_error("weight_mask", "search", "finite numbers", "NaN or infinity")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise parameter_error("k", "search", "an int >= 1", k)
        query_ids, texts = _queries(queries, ids)
        _check_ids(query_ids, "queries")
        offsets, docs, scores, empty = [0], [], [], 0
        for text in texts:
            masked = self.score(text, **scoring) * mask
            keep = np.arange(self.n_docs) if all_documents else np.flatnonzero(masked != 0)
            empty += int(len(keep) == 0)
            order = keep[np.lexsort((keep, -masked[keep]))][:k]  # score descending, then index order
            docs.append(order.astype(np.int32))
            scores.append(masked[order])
            offsets.append(offsets[-1] + len(order))
        scoring_value = self._scoring(scoring.get("variant"), scoring.get("k1"), scoring.get("b"),
                                      scoring.get("delta"), scoring.get("epsilon"))  # fmt: skip
        return TopK(list(query_ids), np.asarray(offsets, dtype=np.int64),
                    np.concatenate(docs) if docs else np.zeros(0, np.int32),
                    np.concatenate(scores) if scores else np.zeros(0), scoring_value, empty)  # fmt: skip

    def score(
        self,
        query: str | Sequence[str],
        *,
        variant: str | None = None,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> np.ndarray:
        """Every document's score for one query (0 where no query term occurs), in index order."""
        query = query if isinstance(query, str) else list(query)
        top = self.topk(
            [query], k=max(self.n_docs, 1), variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon,
            all_documents=True,
        )  # fmt: skip
        dense = np.zeros(self.n_docs)
        dense[top.docs] = top.scores
        return dense


def _check_ids(ids: Sequence[str], what: str) -> None:
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        for position, value in enumerate(ids):
            if value in seen:
                raise InputError(what, f"id {value!r} appears twice (second at position {position})")
            seen.add(value)


def _documents(documents: Any, ids: Sequence[str] | None, start: int = 0) -> tuple[list[str], list]:
    if hasattr(documents, "ids") and hasattr(documents, "texts"):
        if ids is not None:
            raise ConventionError("give ids either inside the documents object or as ids=, not both")
        return [str(i) for i in documents.ids], list(documents.texts)
    if isinstance(documents, Mapping):
        if ids is not None:
            raise ConventionError("give ids either as the mapping's keys or as ids=, not both")
        return [str(i) for i in documents], list(documents.values())
    if isinstance(documents, str):
        raise ConventionError("documents must be a sequence of texts, not one string")
    texts = list(documents)
    if ids is None:
        return [str(start + i) for i in range(len(texts))], texts
    ids = [str(i) for i in ids]
    if len(ids) != len(texts):
        raise InputError("documents", f"{len(texts)} documents but {len(ids)} ids")
    return ids, texts


def _queries(queries: Any, ids: Sequence[str] | None) -> tuple[list[str], list]:
    if isinstance(queries, str):
        raise ConventionError("queries must be a sequence or mapping of queries, not one string")
    return _documents(queries, ids)
