"""The exhaustive kernel's dense path on corpora large enough to reach it in every form (issue 26): each posting
marks its document, a pass over the marks collects them in index order, and a deep top k (k >= 64) is taken
above a threshold placed from a sample of one slot in 16, or, when the sample misleads, from every document.
Equal-length documents make thousands of exact ties, which the top k must break by the smaller index.

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


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1500, 6000),
    st.sampled_from([None, 4, 8]),
    st.sampled_from([64, 100, 333, 1000]),
    st.sampled_from(["lucene", "bm25l"]),
)
def test_deep_top_k_on_the_dense_path_is_the_numpy_one(seed: int, n_docs: int, length, k: int, variant: str) -> None:
    rng = np.random.default_rng(seed)
    vocab = 40
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    docs = [[f"t{i}" for i in rng.choice(vocab, size=length or int(rng.integers(2, 16)), p=p)] for _ in range(n_docs)]
    queries = [[f"t{i}" for i in rng.choice(vocab, size=int(rng.integers(1, 6)))] for _ in range(6)]
    index = BM25Index.from_tokens(docs, variant=variant)
    reference = numpy_topk(index, queries, k=k)
    for strategy in ("auto", "exhaustive", "maxscore"):
        assert_same_topk(index.topk(queries, k=k, strategy=strategy), reference)


@pytest.mark.parametrize(("n_docs", "stride", "k"), [(4000, 16, 100), (4000, 16, 300), (4000, 16, 600),
                                                     (70000, 32, 1000), (70000, 32, 3000)])  # fmt: skip
def test_a_misleading_sample_falls_back_to_every_document(n_docs: int, stride: int, k: int) -> None:
    """Every document the sample reads (one in 16, one in 32 from 65,536 documents) holds the query term 5
    times, the others once: the sample puts the threshold at the 5-times score, which only n_docs / stride
    documents reach (250; 2,188), fewer than k = 300 or 600 (3,000), so the kernel must reset and collect every
    document; at k = 100 (1,000) the threshold holds."""
    docs = [["hot"] * (5 if d % stride == 0 else 1) + ["pad"] * (5 if d % stride else 1) for d in range(n_docs)]
    index = BM25Index.from_tokens(docs)
    queries = [["hot"], ["hot", "pad"]]
    reference = numpy_topk(index, queries, k=k)
    top5 = min(k, -(-n_docs // stride))  # hand-worked: the first query's best are the 5-times documents
    assert np.array_equal(reference.docs[:top5], np.arange(0, stride * top5, stride))
    assert_same_topk(index.topk(queries, k=k, strategy="exhaustive"), reference)
    assert_same_topk(index.topk(queries, k=k), reference)


def test_deep_top_k_on_a_large_corpus() -> None:
    """70,000 documents of 6 words from a skewed vocabulary (the sample's larger stride), k = 100 and 1,000."""
    rng = np.random.default_rng(70)
    p = 1.0 / np.arange(1, 301)
    p /= p.sum()
    docs = [[f"t{i}" for i in row] for row in rng.choice(300, size=(70000, 6), p=p)]
    queries = [[f"t{i}" for i in rng.choice(300, size=int(rng.integers(1, 6)))] for _ in range(8)]
    index = BM25Index.from_tokens(docs)
    for k in (100, 1000):
        assert_same_topk(index.topk(queries, k=k, strategy="exhaustive"), numpy_topk(index, queries, k=k))


def test_every_document_tied() -> None:
    """One score for all 5,000 documents: the top k are the first k, in index order."""
    index = BM25Index.from_tokens([["same", "words"]] * 5000)
    top = index.topk([["same"]], k=700, strategy="exhaustive")
    assert top.docs.tolist() == list(range(700))
    assert_same_topk(top, numpy_topk(index, [["same"]], k=700))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**32 - 1),
    st.integers(8000, 16000),
    st.sampled_from([None, 4]),
    st.sampled_from([64, 100]),
)
def test_deep_top_k_of_a_few_hundred_candidates_is_the_numpy_one(seed: int, n_docs: int, length, k: int) -> None:
    """A top k from two or more times k candidates sorts only the k best of them (a selection first), on both
    paths: the sparse one (a query's postings under an eighth of the corpus: rare terms of a large vocabulary)
    and the dense one (a common term: the candidates above the sample's threshold). Short documents of equal
    length make whole buckets of tied scores, which the selection must still break by the smaller index."""
    rng = np.random.default_rng(seed)
    vocab = 1000
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    docs = [[f"t{i}" for i in rng.choice(vocab, size=length or int(rng.integers(2, 9)), p=p)] for _ in range(n_docs)]
    rare = [[f"t{i}" for i in rng.choice(np.arange(10, 200), size=int(rng.integers(1, 4)))] for _ in range(5)]
    common = [[f"t{i}" for i in rng.choice(8, size=int(rng.integers(1, 4)))] for _ in range(3)]
    index = BM25Index.from_tokens(docs)
    queries = rare + common
    reference = numpy_topk(index, queries, k=k)
    for strategy in ("auto", "exhaustive", "maxscore"):
        assert_same_topk(index.topk(queries, k=k, strategy=strategy), reference)
