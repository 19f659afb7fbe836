"""A BM25 search's Run gathers its doc id strings from the index only when they are first read (issue 26: for
a million result rows they were about half the cost of building the Run). Whatever reads them must see the
bytes an eager gather gives, and a pickled Run (Dask ships runs between processes) must carry the ids, not
the index's whole id column.

Oracles: the compiled pass that gathered the ids eagerly before (``_kernels.run_columns`` with the index's id
column), compared byte for byte (offsets and data); ``TopK._to_run_sorted`` (the reader's path, which sorts
and checks), compared through every reader: values, polars, pair keys, the TREC file written; ``pickle``
round trips."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.data.columns import byte_order
from stagewise.data.strings import DeferredTake, StringColumn
from stagewise.data.writers import write_trec_run
from stagewise.retrieval import BM25Index, _kernels

ID_ALPHABET = st.sampled_from(["a", "b", "Z", "0", "9", "-", "é", "ß", "中", "\x7f"])


def _trec_bytes(run) -> bytes:
    sink = io.BytesIO()
    write_trec_run(run, sink)
    return sink.getvalue()


def _eager_ids(index: BM25Index, top) -> StringColumn:
    """The doc ids as the compiled pass gathered them eagerly, rows in the same order as ``to_run``'s."""
    with_results = np.flatnonzero(np.diff(top.offsets))
    _, by_bytes = byte_order([top.query_ids[i] for i in with_results.tolist()])
    order = with_results if by_bytes is None else with_results[by_bytes]
    ids = (index.doc_ids_offsets, index.doc_ids_data)
    _, offsets, data, _ = _kernels.run_columns(top.offsets, top.docs, top.scores, index.doc_id_rank(), order, ids)
    return StringColumn(offsets, data)


@st.composite
def searches(draw):
    n_docs = draw(st.integers(1, 80))
    doc_ids = draw(st.lists(st.text(ID_ALPHABET, min_size=1, max_size=5), min_size=n_docs, max_size=n_docs,
                            unique=True))  # fmt: skip
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vocab = draw(st.integers(1, 10))
    docs = [[f"t{i}" for i in rng.integers(0, vocab, size=int(rng.integers(1, 9)))] for _ in doc_ids]
    n_queries = draw(st.integers(1, 8))
    queries = [[f"t{i}" for i in rng.integers(0, vocab + 2, size=int(rng.integers(1, 4)))] for _ in range(n_queries)]
    return doc_ids, docs, queries, draw(st.sampled_from([1, 3, 1000]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(searches())
def test_deferred_ids_are_the_eager_bytes_through_every_reader(search) -> None:
    doc_ids, docs, queries, k = search
    index = BM25Index.from_tokens(docs, doc_ids)
    top = index.topk(queries, k=k)
    if len(top.docs) == 0:
        return
    run, reference = top.to_run(index), top._to_run_sorted(index)
    assert isinstance(run.docs, DeferredTake) and not run.docs.gathered
    assert len(run.docs) == len(reference.docs) and not run.docs.gathered
    if _kernels.native is not None:
        eager = _eager_ids(index, top)
        assert np.array_equal(run.docs.offsets, eager.offsets)
        assert bytes(run.docs.data) == bytes(eager.data)
        assert run.docs.gathered
    assert run.docs.values() == reference.docs.values()
    assert np.array_equal(run.pair_keys, reference.pair_keys)
    assert run.to_polars().equals(reference.to_polars())
    assert _trec_bytes(run) == _trec_bytes(reference)


def test_written_before_anything_else_reads_the_ids() -> None:
    """The first reader may be the writer (``stagewise search -o``): the file is the eager run's."""
    index = BM25Index.from_tokens([["a", "b"], ["b"], ["a", "a", "c"], ["c"]], ["d-1", "d2é", "D3", "d4"])
    top = index.topk([["a"], ["b", "c"]], ["q2", "q1"], k=10)
    run = top.to_run(index)
    assert not run.docs.gathered
    assert _trec_bytes(run) == _trec_bytes(top._to_run_sorted(index))


def test_a_pickled_run_carries_its_ids_not_the_index_column() -> None:
    n_docs = 20_000
    ids = [f"document-{i:06d}-with-a-long-identifier" for i in range(n_docs)]  # about 800 kB of ids
    docs = [["common", f"w{i % 50}"] for i in range(n_docs)]
    index = BM25Index.from_tokens(docs, ids)
    run = index.search([["w7"], ["w3", "common"]], ["q1", "q2"], k=3)
    assert not run.docs.gathered
    payload = pickle.dumps(run)
    assert len(payload) < 20_000  # six ids, not the index's 20,000
    back = pickle.loads(payload)
    assert type(back.docs) is StringColumn
    assert back.docs.values() == run.docs.values()
    assert back.to_polars().equals(run.to_polars())


def test_deferred_take_length_and_pickle_without_an_index() -> None:
    source = StringColumn.from_strings(["a", "bb", "", "dddd"])
    taken = DeferredTake(source, np.array([3, 1, 2, 0], dtype=np.int32), np.array([1, 2, 0], dtype=np.int32))
    assert len(taken) == 3 and not taken.gathered
    assert taken.values() == ["bb", "", "dddd"]
    plain = DeferredTake(source, np.array([2, 3], dtype=np.int64))
    back = pickle.loads(pickle.dumps(plain))
    assert type(back) is StringColumn and back.values() == ["", "dddd"]
    assert np.array_equal(back.offsets, [0, 0, 4])


@pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")
def test_the_numpy_path_defers_the_same_ids() -> None:
    """Without the C extension (run_rows and the gather in numpy) the run is the compiled one."""
    index = BM25Index.from_tokens([["x", "y"], ["y", "y"], ["x"], ["z", "x"]], ["b", "a", "é", "A"])
    top = index.topk([["x", "y"], ["z"]], ["q", "p"], k=3)
    compiled = top.to_run(index)
    saved = _kernels.native
    try:
        _kernels.native = None
        fallback = top.to_run(index)
    finally:
        _kernels.native = saved
    assert fallback.docs.values() == compiled.docs.values()
    assert np.array_equal(fallback.scores.view(np.uint64), compiled.scores.view(np.uint64))
