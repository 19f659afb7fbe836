"""A BM25 search's Run built straight from the kernel's order (issue 26): ``TopK.to_run`` puts only the rows
whose scores tie as C floats in doc id order (``_kernels.run_rows``, through the index's byte-order rank of
each doc id) and takes the Run as it is, where it used to hand every row to ``Run.from_columns`` to be sorted
and checked again.

Oracles: ``Run.from_columns`` (the reader's path, which sorts into trec_eval's order and checks) over the same
results, compared column by column and bit for bit; Python's ``sorted`` of the UTF-8 ids for the rank; the
numpy ``run_rows`` against the compiled one; and hand-made results with ties that exist only in single
precision, which trec_eval 9 and pytrec_eval break by doc id descending."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.errors import InputError
from stagewise.retrieval import BM25Index, _kernels

ID_ALPHABET = st.sampled_from(["a", "b", "Z", "0", "9", "-", "é", "ß", "中", "\x7f", " "])


def _assert_same_run(fast, reference) -> None:
    """Every column of the two runs equal, dtypes too; scores bit for bit."""
    for slot in ("query_ids", "query_codes", "offsets", "pair_keys", "input_position"):
        a, b = getattr(fast, slot), getattr(reference, slot)
        assert a.dtype == b.dtype, slot
        assert np.array_equal(a, b), slot
    assert np.array_equal(fast.scores.view(np.uint64), reference.scores.view(np.uint64))
    assert fast.docs.values() == reference.docs.values()
    assert (fast.ranks, fast.name, fast.duplicates_dropped) == (reference.ranks, reference.name, 0)
    assert fast.to_polars().equals(reference.to_polars())


@st.composite
def searches(draw):
    """A corpus with ids drawn from a mixed alphabet (byte order unlike index order), documents of equal length
    when asked (exact ties in score), queries with ids in any order, and a k."""
    n_docs = draw(st.integers(1, 120))
    doc_ids = draw(st.lists(st.text(ID_ALPHABET, min_size=1, max_size=4), min_size=n_docs, max_size=n_docs,
                            unique=True))  # fmt: skip
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vocab = draw(st.integers(1, 12))
    size = draw(st.sampled_from([None, 3, 8]))
    docs = [[f"t{i}" for i in rng.integers(0, vocab, size=size or int(rng.integers(1, 12)))] for _ in doc_ids]
    n_queries = draw(st.integers(1, 12))
    query_ids = draw(st.lists(st.text(ID_ALPHABET, min_size=1, max_size=3), min_size=n_queries,
                              max_size=n_queries, unique=True))  # fmt: skip
    queries = [[f"t{i}" for i in rng.integers(0, vocab + 2, size=int(rng.integers(1, 5)))] for _ in query_ids]
    return doc_ids, docs, query_ids, queries, draw(st.sampled_from([1, 2, 5, 10, 1000]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches(), st.sampled_from(["auto", "maxscore", "exhaustive"]), st.booleans())
def test_search_run_is_the_sorted_run(search, strategy: str, all_documents: bool) -> None:
    doc_ids, docs, query_ids, queries, k = search
    index = BM25Index.from_tokens(docs, doc_ids)
    top = index.topk(queries, query_ids, k=k, strategy=strategy, all_documents=all_documents)
    if len(top.docs) == 0:
        return
    _assert_same_run(top.to_run(index), top._to_run_sorted(index))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches())
def test_numpy_run_rows_is_the_compiled_one(search) -> None:
    if _kernels.native is None:
        pytest.skip("the C extension is not built")
    doc_ids, docs, query_ids, queries, k = search
    index = BM25Index.from_tokens(docs, doc_ids)
    top = index.topk(queries, query_ids, k=k)
    order = np.argsort(np.array([q.encode() for q in query_ids], dtype=object))
    args = (top.offsets, top.docs, top.scores, index.doc_id_rank(), order)
    compiled, numpy = _kernels.run_rows(*args), _kernels.run_rows(*args, use_native=False)
    assert compiled.dtype == numpy.dtype == np.int32
    assert np.array_equal(compiled, numpy)


@given(st.lists(st.text(ID_ALPHABET, min_size=0, max_size=5), min_size=1, max_size=60, unique=True))
def test_doc_id_rank_is_byte_order(ids: list[str]) -> None:
    index = BM25Index.from_tokens([["x"]] * len(ids), ids)
    by_bytes = sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8"))
    expected = np.empty(len(ids), dtype=np.int32)
    expected[by_bytes] = np.arange(len(ids))
    assert np.array_equal(index.doc_id_rank(), expected)


@pytest.mark.parametrize("use_native", [True, False])
def test_ties_in_single_precision_go_by_doc_id_descending(use_native: bool) -> None:
    """Hand-worked: scores 1 + 2**-40 and 1 differ as doubles (the kernel ranks the first higher) but are one C
    float, so trec_eval 9 orders those two rows by doc id descending; 0.5 stays last."""
    if use_native and _kernels.native is None:
        pytest.skip("the C extension is not built")
    rank = np.array([0, 1, 2], dtype=np.int32)  # ids "a", "b", "c": byte order is index order here
    offsets = np.array([0, 3], dtype=np.int64)
    docs = np.array([0, 2, 1], dtype=np.int32)  # a (1 + 2**-40), c (1.0), b (0.5): best first as doubles
    scores = np.array([1 + 2**-40, 1.0, 0.5])
    rows = _kernels.run_rows(offsets, docs, scores, rank, np.array([0]), use_native=use_native)
    assert docs[rows].tolist() == [2, 0, 1]  # c before a (doc id descending), then b


@pytest.mark.parametrize("use_native", [True, False])
def test_results_not_best_first_are_left_to_the_run(use_native: bool) -> None:
    if use_native and _kernels.native is None:
        pytest.skip("the C extension is not built")
    rank = np.array([0, 1], dtype=np.int32)
    args = (np.array([0, 2], dtype=np.int64), np.array([0, 1], dtype=np.int32), np.array([1.0, 2.0]), rank)
    assert _kernels.run_rows(*args, np.array([0]), use_native=use_native) is None


def test_queries_in_byte_order_and_empty_queries_left_out() -> None:
    """Hand-worked: equal lengths, so x in d10 and z in d1 tie, as y in d10 and d9 do: doc id descending."""
    index = BM25Index.from_tokens([["x", "y"], ["y", "w"], ["z", "w"]], ["d10", "d9", "d1"])
    top = index.topk([["y"], ["nothing"], ["x", "z"]], ["q2", "q10", "Q"], k=5)
    run = top.to_run(index)
    assert run.query_ids.tolist() == ["Q", "q2"]  # q10 matched nothing; "Q" < "q2" in bytes
    assert run.to_polars()["doc_id"].to_list() == ["d10", "d1", "d9", "d10"]
    _assert_same_run(run, top._to_run_sorted(index))


def test_a_damaged_doc_in_the_results_is_an_input_error() -> None:
    if _kernels.native is None:
        pytest.skip("the C extension is not built")
    index = BM25Index.from_tokens([["x"], ["x"]], ["a", "b"])
    top = index.topk([["x"]], k=2)
    damaged = type(top)(top.query_ids, top.offsets, np.array([0, 7], dtype=np.int32), np.array([1.0, 1.0]),
                        top.scoring, 0)  # fmt: skip
    with pytest.raises(InputError, match="damaged index"):
        damaged.to_run(index)
