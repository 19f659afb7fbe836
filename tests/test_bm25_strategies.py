"""BM25's per-query strategy (issue 26): the cost model ("auto"), MaxScore and exhaustive accumulation, and the
weight cache they share, all give the same top k, to the last bit of every score and in the same tie order.

Oracles: the numpy search path (``_kernels.search`` without the C extension), which computes every weight as
it goes and ranks with ``np.lexsort``, and the three compiled strategies against one another."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError, StagewiseError
from stagewise.retrieval import BM25Index, _kernels
from tests.bm25_oracle import assert_same_topk, numpy_topk

pytestmark = pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")

STRATEGIES = ("auto", "maxscore", "exhaustive")


@st.composite
def corpora(draw):
    """Token lists over a small vocabulary with a Zipf-like skew, plus (sometimes) a term in nearly every
    document: the case where the cost model prunes. Equal-length documents make exact ties in score."""
    n_docs = draw(st.integers(1, 400))
    vocab = draw(st.integers(2, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** draw(st.sampled_from([0.0, 1.0, 1.5]))
    p /= p.sum()
    same_length = draw(st.booleans())
    common = draw(st.booleans())
    docs = []
    for _ in range(n_docs):
        size = 6 if same_length else int(rng.integers(1, 40))
        words = [f"t{i}" for i in rng.choice(vocab, size=size, p=p)]
        if common and rng.random() < 0.95:
            words.append("common")
        docs.append(words)
    n_queries = draw(st.integers(1, 25))
    queries = []
    for _ in range(n_queries):
        words = [f"t{i}" for i in rng.choice(vocab + 3, size=int(rng.integers(1, 9)))]  # some not indexed
        if common and rng.random() < 0.7:
            words.append("common")
        queries.append(words)
    return docs, queries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from([1, 2, 3, 5, 10, 50, 100, 1000]), st.sampled_from(["lucene", "bm25+", "bm25l"]))
def test_every_strategy_gives_the_numpy_top_k(corpus, k: int, variant: str) -> None:
    docs, queries = corpus
    index = BM25Index.from_tokens(docs, variant=variant)
    reference = numpy_topk(index, queries, k=k)
    for strategy in STRATEGIES:
        assert_same_topk(index.topk(queries, k=k, strategy=strategy), reference)
    assert_same_topk(index.topk(queries, k=k, exhaustive=True), reference)


def _skewed_index() -> tuple[BM25Index, list[list[str]]]:
    """A corpus where the cost model does prune: a term in every document, 3,000 documents, top 1 and 3."""
    rng = np.random.default_rng(26)
    docs = [["common", *(f"w{i}" for i in rng.integers(0, 300, size=int(rng.integers(3, 30))))] for _ in range(3000)]
    queries = [["common", "common", *(f"w{i}" for i in rng.integers(0, 300, size=3))] for _ in range(60)]
    return BM25Index.from_tokens(docs), queries


@pytest.mark.parametrize("k", [1, 3, 10, 400, 3000])
def test_strategies_agree_where_pruning_pays(k: int) -> None:
    index, queries = _skewed_index()
    reference = numpy_topk(index, queries, k=k)
    for strategy in STRATEGIES:
        assert_same_topk(index.topk(queries, k=k, strategy=strategy), reference)


def test_the_weight_cache_follows_the_parameters() -> None:
    """Weights cached for one (k1, b) are never used for another: alternating overrides give what a fresh index
    gives, and what the numpy path (no cache) gives."""
    index, queries = _skewed_index()
    fresh, _ = _skewed_index()
    for params in ({}, {"k1": 0.9, "b": 0.4}, {}, {"variant": "bm25+", "delta": 0.5}, {"k1": 0.9, "b": 0.4}):
        got = index.topk(queries, k=10, **params)
        assert_same_topk(got, fresh.topk(queries, k=10, **params))
        assert_same_topk(got, numpy_topk(index, queries, k=10, **params))
        fresh = _skewed_index()[0]  # a new index each time: nothing cached yet


def test_arrays_swapped_in_memory_drop_the_cached_weights() -> None:
    docs = [["a", "b"], ["a", "a", "c"], ["b", "c", "c"]]
    index = BM25Index.from_tokens(docs)
    before = index.topk([["a", "c"]], k=3)
    tf = np.array(index.post_tf)
    tf[:] = 1  # every term once in each document: a different score for "a" in document 1 and "c" in 2
    index.post_tf = tf
    after = index.topk([["a", "c"]], k=3)
    assert_same_topk(after, numpy_topk(index, [["a", "c"]], k=3))
    assert not np.array_equal(before.scores, after.scores)


def test_workers_share_one_cache() -> None:
    index, queries = _skewed_index()
    many = queries * 20
    assert_same_topk(index.topk(many, k=5, workers=4), numpy_topk(index, many, k=5))


def test_an_unknown_strategy_is_refused_with_the_choices() -> None:
    index, queries = _skewed_index()
    with pytest.raises((ConventionError, StagewiseError), match="'auto', 'maxscore', 'exhaustive'"):
        index.topk(queries, k=3, strategy="wand")


def test_building_a_run_leaves_the_top_k_as_it_was() -> None:
    """The Run reorders its columns in place (query blocks into byte order of their ids): it must get copies,
    or a second to_run of the same TopK would read scores already moved."""
    index, queries = _skewed_index()
    ids = [str(100 - i) for i in range(len(queries))]  # not in byte order: the blocks move
    top = index.topk(queries, ids, k=5)
    scores = top.scores.copy()
    first = top.to_run(index).to_polars()
    assert np.array_equal(top.scores, scores)
    assert top.to_run(index).to_polars().equals(first)
