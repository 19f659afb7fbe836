"""The loops of BM25: compiled (``stagewise._native._bm25``) when built, numpy otherwise.

Both paths give the same output: the same tokens and ids, the same postings, the same top-k (scores to the
last bit, ties in score broken by the smaller document index), and the same rows in trec_eval's order. The
numpy path is much slower at search and exists for installs without a C compiler; the tests run both.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from stagewise._native import bm25 as native

STRATEGY_MAXSCORE, STRATEGY_EXHAUSTIVE, STRATEGY_ALL_DOCS, STRATEGY_AUTO = 0, 1, 2, 3
_WORD_RUN = re.compile(r"\w+")


class WeightCache(NamedTuple):
    """Each posting's term-frequency part of the score, computed once per term when a query first uses it.

    ``tf_part[j]`` is the kernel's ``term_weight(tf_j, norm of doc_j)`` for one (mode, k1, b, delta): the same
    double the kernel would compute on the fly, so a cached score is bit for bit an uncached one. ``ready[t]``
    is 1 once term ``t``'s postings are filled (2 when one of its weights is not finite, which sends its
    queries down the kernel's marked path). The array is allocated empty, so only the pages of queried
    terms ever take memory (8 bytes a posting at most)."""

    tf_part: np.ndarray  # float64 [nnz]
    ready: np.ndarray  # uint8 [V]

    @classmethod
    def empty(cls, n_postings: int, n_terms: int) -> WeightCache:
        return cls(np.empty(n_postings, dtype=np.float64), np.zeros(n_terms, dtype=np.uint8))


class Postings(NamedTuple):
    term_ptr: np.ndarray  # int64 [V + 1]: term t's postings are term_ptr[t]:term_ptr[t + 1]
    docs: np.ndarray  # int32 [nnz], ascending within a term
    tf: np.ndarray  # int32 [nnz]
    doc_len: np.ndarray  # int32 [n_docs]
    max_tf: np.ndarray  # int32 [V]
    min_dl: np.ndarray  # int32 [V]: the shortest document containing the term


# ------------------------------------------------------------------------------------------------- tokenize


def tokenize(texts: Sequence[str], lowercase: bool, min_length: int, *, use_native: bool = True):
    """Word-character runs of each text, interned: (offsets int64 [n+1], token ids int32, distinct tokens)."""
    if native is not None and use_native:
        offsets, ids, tokens = native.tokenize(texts, lowercase, min_length)
        return np.frombuffer(offsets, dtype=np.int64), np.frombuffer(ids, dtype=np.int32), tokens
    position: dict[str, int] = {}
    ids_list: list[int] = []
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"document {i} is {type(text).__name__}, not str")
        if lowercase:
            text = text.lower()
        for token in _WORD_RUN.findall(text):
            if len(token) >= min_length:
                ids_list.append(position.setdefault(token, len(position)))
        offsets[i + 1] = len(ids_list)
    return offsets, np.array(ids_list, dtype=np.int32), list(position)


# ------------------------------------------------------------------------------------------- build_postings


def build_postings(offsets: np.ndarray, term_ids: np.ndarray, n_terms: int, *, use_native: bool = True) -> Postings:
    """Postings grouped by term, each sorted by document, with tf; ``term_ids`` below 0 are dropped."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    term_ids = np.ascontiguousarray(term_ids, dtype=np.int32)
    if native is not None and use_native:
        ptr, docs, tf, dl, max_tf, min_dl = native.build_postings(offsets, term_ids, n_terms)
        return Postings(
            np.frombuffer(ptr, dtype=np.int64),
            np.frombuffer(docs, dtype=np.int32),
            np.frombuffer(tf, dtype=np.int32),
            np.frombuffer(dl, dtype=np.int32),
            np.frombuffer(max_tf, dtype=np.int32),
            np.frombuffer(min_dl, dtype=np.int32),
        )
    n_docs = len(offsets) - 1
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(offsets))
    valid = term_ids >= 0
    doc_of, terms = doc_of[valid], term_ids[valid].astype(np.int64)
    doc_len = np.bincount(doc_of, minlength=n_docs).astype(np.int32)
    keys, tf = np.unique(terms * max(n_docs, 1) + doc_of, return_counts=True)
    post_terms, docs = keys // max(n_docs, 1), (keys % max(n_docs, 1)).astype(np.int32)
    df = np.bincount(post_terms, minlength=n_terms)
    ptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=ptr[1:])
    max_tf = np.zeros(n_terms, dtype=np.int32)
    min_dl = np.zeros(n_terms, dtype=np.int32)
    present = df > 0
    if len(keys):
        max_tf[present] = np.maximum.reduceat(tf, ptr[:-1][present])
        min_dl[present] = np.minimum.reduceat(doc_len[docs], ptr[:-1][present])
    return Postings(ptr, docs, tf.astype(np.int32), doc_len, max_tf, min_dl)


# ----------------------------------------------------------------------------------------------- find_terms


def find_terms(vocab_offsets: np.ndarray, vocab_data: np.ndarray, terms: Sequence[str], *, use_native: bool = True):
    """Index of each term in the sorted vocabulary (offsets + UTF-8 bytes), or ``-(insertion point + 1)``."""
    if native is not None and use_native:
        return np.frombuffer(native.find_terms(vocab_offsets, vocab_data, list(terms)), dtype=np.int32)
    data = bytes(vocab_data)
    starts, ends = vocab_offsets[:-1].tolist(), vocab_offsets[1:].tolist()
    vocab = [data[s:e] for s, e in zip(starts, ends, strict=True)]
    out = np.empty(len(terms), dtype=np.int32)
    for i, term in enumerate(terms):
        raw = term.encode("utf-8")
        at = bisect_left(vocab, raw)
        out[i] = at if at < len(vocab) and vocab[at] == raw else -at - 1
    return out


def vocab_table(vocab_offsets: np.ndarray, vocab_data: np.ndarray) -> np.ndarray | None:
    """A hash table of the vocabulary's term ids for :func:`lookup_terms` (built once per index and kept), or
    ``None`` without the compiled extension."""
    if native is None:
        return None
    return np.frombuffer(native.vocab_table(vocab_offsets, vocab_data), dtype=np.int32)


def lookup_terms(vocab_offsets: np.ndarray, vocab_data: np.ndarray, table: np.ndarray | None, terms: list[str]):
    """Each term's index in the sorted vocabulary, -1 when absent: :func:`find_terms` through ``table`` (a hash
    and one compare a term instead of a binary search), or through :func:`find_terms` when ``table`` is None."""
    if native is not None and table is not None:
        return np.frombuffer(native.lookup_terms(vocab_offsets, vocab_data, table, terms), dtype=np.int32)
    return np.maximum(find_terms(vocab_offsets, vocab_data, terms, use_native=native is not None), -1)


# --------------------------------------------------------------------------------------------------- search


def term_part(mode: int, tf: np.ndarray, norm: np.ndarray, k1: float, delta: float) -> np.ndarray:
    """The kernel's term-frequency arithmetic, vectorised: the same operations in the same order as the C
    code and as :mod:`stagewise.retrieval.variants`, given ``norm = 1 - b + b * dl / avgdl``."""
    tf = tf.astype(np.float64)
    if mode == 2:
        c = tf / norm
        return (k1 + 1) * (c + delta) / (k1 + c + delta)
    base = tf * (k1 + 1) / (tf + k1 * norm)
    return base + delta if mode == 1 else base


def search(
    postings: Postings,
    norm: np.ndarray,
    q_ptr: np.ndarray,
    q_terms: np.ndarray,
    q_weights: np.ndarray,
    q_ub: np.ndarray,
    k: int,
    mode: int,
    k1: float,
    delta: float,
    strategy: int,
    *,
    cache: WeightCache | None = None,
    use_native: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top ``k`` (doc, score) of each query, best first: (result offsets int64 [nq+1], docs int32, scores).

    ``cache`` is the compiled kernel's weight cache for these (mode, k1, delta, norm), kept by the caller across
    calls (a fresh one is used when none is given); the numpy path computes every weight as it goes."""
    tf = postings.tf
    if native is not None and use_native:
        if cache is None:
            cache = WeightCache.empty(len(postings.docs), len(postings.term_ptr) - 1)
        if tf.dtype not in (np.uint16, np.int32):
            tf = tf.astype(np.int32)
        ptr, docs, scores = native.search(
            postings.term_ptr,
            postings.docs,
            np.ascontiguousarray(tf),
            tf.dtype.itemsize,
            np.ascontiguousarray(norm, dtype=np.float64),
            np.ascontiguousarray(q_ptr, dtype=np.int64),
            np.ascontiguousarray(q_terms, dtype=np.int32),
            np.ascontiguousarray(q_weights, dtype=np.float64),
            np.ascontiguousarray(q_ub, dtype=np.float64),
            int(k),
            int(mode),
            float(k1),
            float(delta),
            int(strategy),
            cache.tf_part,
            cache.ready,
        )
        return (
            np.frombuffer(ptr, dtype=np.int64),
            np.frombuffer(docs, dtype=np.int32),
            np.frombuffer(scores, dtype=np.float64),
        )
    n_docs = len(norm)
    out_docs, out_scores = [], []
    res_ptr = np.zeros(len(q_ptr), dtype=np.int64)
    for q in range(len(q_ptr) - 1):
        lo, hi = int(q_ptr[q]), int(q_ptr[q + 1])
        # the kernel's summation order: descending upper bound, then descending term id
        order = sorted(range(lo, hi), key=lambda i: (q_ub[i], q_terms[i]), reverse=True)
        acc = np.zeros(n_docs)
        touched = np.zeros(n_docs, dtype=bool)
        for i in order:
            t = int(q_terms[i])
            a, e = postings.term_ptr[t], postings.term_ptr[t + 1]
            if not 0 <= a <= e <= len(postings.docs):
                raise ValueError(f"damaged index: the postings of term {t} lie outside 0..{len(postings.docs)}")
            docs = postings.docs[a:e]
            if len(docs) and int(docs.view(np.uint32).max()) >= n_docs:  # a negative id too, as unsigned
                raise ValueError(f"damaged index: a posting of term {t} names a document outside 0..{n_docs - 1}")
            acc[docs] += q_weights[i] * term_part(mode, tf[a:e], norm[docs], k1, delta)
            touched[docs] = True
        candidates = np.arange(n_docs) if strategy == STRATEGY_ALL_DOCS else np.flatnonzero(touched)
        ranked = candidates[np.lexsort((candidates, -acc[candidates]))][: min(k, n_docs)]
        out_docs.append(ranked.astype(np.int32))
        out_scores.append(acc[ranked])
        res_ptr[q + 1] = res_ptr[q] + len(ranked)
    if not out_docs:
        return res_ptr, np.zeros(0, dtype=np.int32), np.zeros(0)
    return res_ptr, np.concatenate(out_docs), np.concatenate(out_scores)


# ------------------------------------------------------------------------------------------------- run_rows


def run_rows(
    res_ptr: np.ndarray,
    docs: np.ndarray,
    scores: np.ndarray,
    doc_rank: np.ndarray,
    query_order: np.ndarray,
    *,
    use_native: bool = True,
) -> np.ndarray | None:
    """The rows of search results in trec_eval's order, as positions into ``docs`` and ``scores`` (int32; int64
    from 2**31 - 1 rows): the queries in ``query_order``, each query's rows by score descending compared as C
    floats, then doc id descending in byte order (``doc_rank[d]`` is document ``d``'s place among the ids in
    byte order). ``None`` when a query's results are not best first (the caller then sorts them itself)."""
    taken = run_columns(res_ptr, docs, scores, doc_rank, query_order, None, use_native=use_native)
    return None if taken is None else taken[0]


def run_columns(
    res_ptr: np.ndarray,
    docs: np.ndarray,
    scores: np.ndarray,
    doc_rank: np.ndarray,
    query_order: np.ndarray,
    doc_ids: tuple[np.ndarray, np.ndarray] | None,
    *,
    use_native: bool = True,
) -> tuple[np.ndarray, np.ndarray | None, bytes | None, np.ndarray | None] | None:
    """:func:`run_rows`, and with ``doc_ids`` (the index's id column: offsets int64, UTF-8 bytes) also the taken
    rows' doc ids (offsets, bytes: a string column) and scores, gathered in the same compiled pass: ``(rows,
    id offsets, id bytes, scores)``; without, ``(rows, None, None, None)``. ``None`` as :func:`run_rows`."""
    res_ptr = np.ascontiguousarray(res_ptr, dtype=np.int64)
    query_order = np.ascontiguousarray(query_order, dtype=np.int64)
    if native is not None and use_native:
        total = int(np.diff(res_ptr)[query_order].sum()) if len(query_order) else 0
        index = np.int64 if total >= 2**31 - 1 else np.int32
        if doc_ids is None:
            ids = out = (None, None)
        else:
            ids = (np.ascontiguousarray(doc_ids[0], dtype=np.int64), doc_ids[1])
            out = (np.empty(total + 1, dtype=np.int64), np.empty(total, dtype=np.float64))
        taken = native.run_rows(
            res_ptr,
            np.ascontiguousarray(docs, dtype=np.int32),
            np.ascontiguousarray(scores, dtype=np.float64),
            np.ascontiguousarray(doc_rank, dtype=np.int32),
            query_order,
            *ids,
            *out,
        )
        if taken is None:
            return None
        if doc_ids is None:
            return np.frombuffer(taken, dtype=index), None, None, None
        return np.frombuffer(taken[0], dtype=index), out[0], taken[1], out[1]
    rows = _numpy_run_rows(res_ptr, np.asarray(docs), np.asarray(scores, dtype=np.float64), doc_rank, query_order)
    if rows is None or doc_ids is None:
        return None if rows is None else (rows, None, None, None)
    from stagewise.data.strings import StringColumn

    taken = StringColumn(np.asarray(doc_ids[0], dtype=np.int64), bytes(doc_ids[1])).take(np.asarray(docs)[rows])
    return rows, taken.offsets, taken.data, np.asarray(scores, dtype=np.float64)[rows]


def _numpy_run_rows(
    res_ptr: np.ndarray, docs: np.ndarray, scores: np.ndarray, doc_rank: np.ndarray, query_order: np.ndarray
) -> np.ndarray | None:
    counts = np.diff(res_ptr)[query_order]
    starts = res_ptr[:-1][query_order]
    taken = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    with np.errstate(over="ignore"):
        single = scores[taken].astype(np.float32)
    block = np.repeat(np.arange(len(query_order), dtype=np.int64), counts)
    same_block = block[1:] == block[:-1]
    if np.isnan(single).any() or (same_block & (single[1:] > single[:-1])).any():
        return None
    # rows of one query: -score then -rank; the query blocks keep their order (the last key sorts first)
    order = np.lexsort((-doc_rank[docs[taken]].astype(np.int64), -single.astype(np.float64), block))
    return taken[order].astype(np.int64 if len(taken) >= 2**31 - 1 else np.int32)


# ------------------------------------------------------------------------------------------------- checksum

_M64 = (1 << 64) - 1


def _hash_more(h: int, data: bytes) -> int:
    n = len(data)
    h ^= (n * 0x9E3779B97F4A7C15) & _M64
    full = n - n % 8
    for i in range(0, full, 8):
        h = ((h ^ int.from_bytes(data[i : i + 8], "little")) * 0xFF51AFD7ED558CCD) & _M64
        h ^= h >> 32
    rest = n - full
    h = ((h ^ int.from_bytes(data[full:], "little") ^ ((rest << 56) & _M64)) * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 29)


def _finish(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def checksum(ids: Sequence[str], texts: Sequence[str], start: int, *, use_native: bool = True) -> int:
    """Sum modulo 2**128 of a 128-bit hash of each (start + i, id, text): additive over batches."""
    if native is not None and use_native:
        low, high = native.checksum(ids, texts, start)
        return low | (high << 64)
    low = high = 0
    for i, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
        if not isinstance(text, str):
            raise TypeError(f"document {i} is {type(text).__name__}, not str")
        position = start + i
        raw_id, raw_text = doc_id.encode("utf-8"), text.encode("utf-8")
        a = _finish(position ^ 0x5EED5EED5EED5EED)
        b = _finish((position + 0x243F6A8885A308D3) & _M64)
        a = _finish(_hash_more(_hash_more(a, raw_id), raw_text))
        b = _finish(_hash_more(_hash_more(b, raw_text), raw_id) ^ 0x13198A2E03707344)
        low, high = low + a, high + b
    return ((low & _M64) | ((high + (low >> 64)) << 64)) & ((1 << 128) - 1)
