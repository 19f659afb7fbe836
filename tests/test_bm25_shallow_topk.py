"""The exhaustive kernel's dense path at a shallow top k (k < 64, issue 26): the maximum of each block of 64
slots places a threshold (the k-th largest positive block maximum), and only the documents at or above it are
offered to the heap; with fewer than k blocks holding a positive score, or a NaN or infinite score, every
marked document is offered as before. Equal-length documents make blocks whose maxima tie with the threshold,
and terms in every document (Robertson's IDF clamps them to 0) make matched documents that score exactly 0.

Oracle: the numpy search path (``_kernels.search`` without the C extension: every weight computed as it goes,
ranked with ``np.lexsort``), bit for bit, every strategy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.retrieval import BM25Index, _kernels
from tests.bm25_oracle import assert_same_topk, numpy_topk

pytestmark = pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 3000),
    st.sampled_from([None, 3, 6]),
    st.sampled_from([1, 2, 5, 10, 33, 63]),
    st.sampled_from(["lucene", "robertson", "bm25l", "bm25+"]),
    st.booleans(),
)
def test_shallow_top_k_on_the_dense_path_is_the_numpy_one(
    seed: int, n_docs: int, length, k: int, variant: str, everywhere: bool
) -> None:
    rng = np.random.default_rng(seed)
    vocab = 30
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    docs = [[f"t{i}" for i in rng.choice(vocab, size=length or int(rng.integers(1, 12)), p=p)] for _ in range(n_docs)]
    if everywhere:  # a term in every document: idf 0 under Robertson's clamp, so matched documents score 0
        docs = [[*words, "all"] for words in docs]
    queries = [[f"t{i}" for i in rng.choice(vocab, size=int(rng.integers(1, 7)))] for _ in range(6)]
    queries += [["all"], ["all", "t0"], ["t0", "t1", "t2", "t3"]]
    index = BM25Index.from_tokens(docs, variant=variant)
    reference = numpy_topk(index, queries, k=k)
    for strategy in ("auto", "exhaustive", "maxscore"):
        assert_same_topk(index.topk(queries, k=k, strategy=strategy), reference)


@pytest.mark.parametrize("k", [1, 10, 63])
def test_every_block_maximum_tied(k: int) -> None:
    """One score for all 4,000 documents: every block's maximum is the threshold, and the top k are the first k
    documents, in index order."""
    index = BM25Index.from_tokens([["same", "words"]] * 4000)
    top = index.topk([["same"]], k=k, strategy="exhaustive")
    assert top.docs.tolist() == list(range(k))
    assert_same_topk(top, numpy_topk(index, [["same"]], k=k))


def test_the_best_documents_in_one_block() -> None:
    """The ten best documents (the term 3 times) all in the last block of 64: the threshold from the block
    maxima is then below the tenth best, and the top 10 are still exactly those ten, in index order."""
    n_docs = 3000
    docs = [["hot"] * (3 if d >= n_docs - 10 else 1) + ["pad"] * (3 if d < n_docs - 10 else 1) for d in range(n_docs)]
    index = BM25Index.from_tokens(docs)
    top = index.topk([["hot"]], k=10, strategy="exhaustive")
    assert top.docs.tolist() == list(range(n_docs - 10, n_docs))
    assert_same_topk(top, numpy_topk(index, [["hot"]], k=10))


def test_a_weight_that_is_not_finite_takes_the_marked_path() -> None:
    """A NaN in the length norms (which the parameters' checks rule out; here passed to the kernel directly)
    makes a NaN term weight: the block maxima would skip that document, so the query goes the marked way,
    which offers it, and the result is what the kernel gave before the block maxima (recorded from it)."""
    index = BM25Index.from_tokens([["t", "u"] if d % 7 else ["t", "v", "w"] for d in range(800)])
    norm = np.array(index._norm(index.scoring.b), dtype=np.float64)
    norm[3] = np.nan
    term = int(_kernels.find_terms(index.vocab_offsets, index.vocab_data, ["t"])[0])
    postings = _kernels.Postings(index.term_ptr, index.post_docs, index.post_tf, index.doc_len, index.max_tf,
                                 index.min_dl)  # fmt: skip
    q = (np.array([0, 1]), np.array([term], dtype=np.int32), np.array([1.0]), np.array([10.0]))
    for strategy in (_kernels.STRATEGY_EXHAUSTIVE, _kernels.STRATEGY_AUTO):
        _, docs, scores = _kernels.search(postings, norm, *q, 10, 0, 1.2, 0.0, strategy)
        assert docs.tolist() == list(range(1, 11))
        assert (
            np.isnan(scores[2])
            and scores[6] == 0.8595512017314045
            and (np.delete(scores, [2, 6]) == 1.0282054775855023).all()
        )
