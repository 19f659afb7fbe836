"""Documents added to a BM25 index: their postings merged into the index's arrays (:meth:`BM25Index.add`).

The result equals, array for array, a rebuild over all the documents: the vocabulary stays sorted, each term's
postings stay in document order, and per-term bounds (largest tf, shortest document) are combined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stagewise.retrieval import _kernels
from stagewise.retrieval.analysis import Analysed
from stagewise.retrieval.storage import _narrow_tf, _strings_to_column, _take_column

if TYPE_CHECKING:
    from stagewise.retrieval.index import BM25Index


def merged_arrays(index: BM25Index, analysed: Analysed, new_ids: list[str]) -> dict[str, np.ndarray]:
    """The arrays of ``index`` with the documents ``analysed`` (ids ``new_ids``) appended: the two sorted
    vocabularies united, each term's old postings followed by its new ones (documents after the old ones), so
    the arrays equal a rebuild's over all the documents."""
    new = _kernels.build_postings(analysed.offsets, analysed.term_ids, len(analysed.terms))
    # Union of the two sorted vocabularies: where each new term sits in the old one.
    found = _kernels.find_terms(index.vocab_offsets, index.vocab_data, analysed.terms)
    absent = found < 0
    insert_at = np.where(absent, -found.astype(np.int64) - 1, found)
    n_old, n_added = index.n_terms, int(absent.sum())
    # old term i moves up by the number of absent new terms inserted at or before it
    old_map = np.arange(n_old, dtype=np.int64) + np.searchsorted(insert_at[absent], np.arange(n_old), "right")
    new_map = np.empty(len(analysed.terms), dtype=np.int64)
    new_map[~absent] = old_map[found[~absent]]
    new_map[absent] = insert_at[absent] + np.arange(n_added)
    n_union = n_old + n_added
    # vocabulary bytes in union order
    source_rows = np.empty(n_union, dtype=np.int64)
    source_rows[old_map] = np.arange(n_old)
    source_rows[new_map[absent]] = n_old + np.arange(n_added)
    added_off, added_data = _strings_to_column([t for t, a in zip(analysed.terms, absent.tolist(), strict=True) if a])
    both_off = np.concatenate([index.vocab_offsets, added_off[1:] + index.vocab_offsets[-1]])
    both_data = np.concatenate([np.asarray(index.vocab_data), added_data])
    vocab_offsets, vocab_data = _take_column(both_off, both_data, source_rows)
    # postings: each term's old postings, then its new ones (documents after the old ones)
    old_df, new_df = np.diff(index.term_ptr), np.diff(new.term_ptr)
    df = np.zeros(n_union, dtype=np.int64)
    df[old_map] += old_df
    df[new_map] += new_df
    ptr = np.zeros(n_union + 1, dtype=np.int64)
    np.cumsum(df, out=ptr[1:])
    old_dest = scatter_positions(index.term_ptr, ptr[old_map])
    old_in_union = np.zeros(n_union, dtype=np.int64)
    old_in_union[old_map] = old_df
    new_dest = scatter_positions(new.term_ptr, ptr[new_map] + old_in_union[new_map])
    n_post = int(ptr[-1])
    docs = np.empty(n_post, dtype=np.int32)
    docs[old_dest] = index.post_docs
    docs[new_dest] = new.docs + np.int32(index.n_docs)
    tf_dtype = np.result_type(index.post_tf.dtype, _narrow_tf(new.tf).dtype)
    tf = np.empty(n_post, dtype=tf_dtype)
    tf[old_dest] = index.post_tf
    tf[new_dest] = new.tf
    max_tf = np.zeros(n_union, dtype=np.int32)
    max_tf[old_map] = index.max_tf
    max_tf[new_map] = np.maximum(max_tf[new_map], new.max_tf)
    min_dl = np.full(n_union, np.iinfo(np.int32).max, dtype=np.int32)
    min_dl[old_map] = index.min_dl
    min_dl[new_map] = np.minimum(min_dl[new_map], new.min_dl)
    ids_off, ids_data = _strings_to_column(new_ids)
    arrays = {
        "term_ptr": ptr,
        "post_docs": docs,
        "post_tf": _narrow_tf(tf),
        "doc_len": np.concatenate([np.asarray(index.doc_len), new.doc_len]).astype(np.int32),
        "max_tf": max_tf,
        "min_dl": min_dl,
        "vocab_offsets": vocab_offsets,
        "vocab_data": vocab_data,
        "doc_ids_offsets": np.concatenate([index.doc_ids_offsets, ids_off[1:] + index.doc_ids_offsets[-1]]),
        "doc_ids_data": np.concatenate([np.asarray(index.doc_ids_data), ids_data]),
    }
    return arrays


def scatter_positions(src_ptr: np.ndarray, dest_start: np.ndarray) -> np.ndarray:
    """Destination of every posting of a CSR whose term ``t`` block moves to start at ``dest_start[t]``."""
    lengths = np.diff(src_ptr)
    within = np.arange(int(src_ptr[-1]), dtype=np.int64) - np.repeat(src_ptr[:-1], lengths)
    return np.repeat(dest_start, lengths) + within
