"""A query's terms to index term ids (issue 26): text queries are analysed straight to ids (no sorted list of
distinct terms), and terms are found through a hash table of the vocabulary built once per index.

Oracles: ``find_terms`` (a binary search of the sorted vocabulary, compiled and in Python) for the table; for
the ids, the analyser's own :meth:`Analyser.analyse_many` followed by ``find_terms``, the way queries were
analysed before."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.retrieval import BM25Index, _kernels
from stagewise.retrieval.analysis import Analyser

native = pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")

WORDS = st.text(st.sampled_from("abcé ß🎉xyz"), max_size=6)
TEXTS = st.lists(
    st.sampled_from(["The", "will", "wills", "running", "runs", "ÉTÉ", "été", "a", "x", "12", "Straße", "wa", "is"])
    | WORDS,
    max_size=8,
).map(" ".join)


def _vocabulary(terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = sorted({t.encode() for t in terms})
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.int64)
    return offsets, np.frombuffer(b"".join(encoded), dtype=np.uint8)


@native
@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, max_size=60), st.lists(WORDS, max_size=30))
def test_the_term_table_finds_what_binary_search_finds(vocabulary: list[str], probe: list[str]) -> None:
    offsets, data = _vocabulary(vocabulary)
    table = _kernels.vocab_table(offsets, data)
    assert len(table) >= 16 and len(table) & (len(table) - 1) == 0 and len(table) * 2 >= 3 * (len(offsets) - 1)
    found = _kernels.lookup_terms(offsets, data, table, probe + vocabulary)
    reference = np.maximum(_kernels.find_terms(offsets, data, probe + vocabulary, use_native=False), -1)
    assert found.tolist() == reference.tolist()
    assert (found[len(probe) :] >= 0).all()  # every vocabulary term is found


@native
def test_a_damaged_term_table_is_an_error_not_a_crash() -> None:
    offsets, data = _vocabulary(["apple", "pear"])
    table = _kernels.vocab_table(offsets, data)
    with pytest.raises(ValueError, match="damaged index"):
        _kernels.lookup_terms(offsets, data, np.full(16, 7, dtype=np.int32), ["apple"])  # ids beyond the vocabulary
    with pytest.raises(ValueError, match="damaged index"):
        _kernels.lookup_terms(offsets, data, table[:3].copy(), ["apple"])  # not a power of two
    bad = offsets.copy()
    bad[1] = 10_000
    with pytest.raises(ValueError, match="damaged index"):
        _kernels.vocab_table(bad, data)
    assert _kernels.lookup_terms(offsets, data, np.full(16, -1, dtype=np.int32), ["apple"]).tolist() == [-1]


def _reference_ids(index: BM25Index, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    analysed = index.analyser.analyse_many(texts, source="queries")
    found = _kernels.find_terms(index.vocab_offsets, index.vocab_data, analysed.terms)
    ids = found[analysed.term_ids] if len(analysed.term_ids) else np.zeros(0, dtype=np.int32)
    keep = ids >= 0
    counts = [int(keep[a:e].sum()) for a, e in zip(analysed.offsets[:-1], analysed.offsets[1:], strict=True)]
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), ids[keep]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(TEXTS, min_size=1, max_size=20),
    st.lists(TEXTS, max_size=12),
    st.sampled_from([Analyser(), Analyser(stemmer="none", stopwords="none", min_length=1), Analyser(stemmer="porter")]),
)
def test_queries_analysed_to_ids_are_the_analysers_terms(docs: list[str], queries: list[str], analyser) -> None:
    """Stopwords are dropped before stemming (the stopword "will", not "wills", which stems to "will"), unknown
    terms dropped, order kept."""
    index = BM25Index.build(docs, analyser=analyser)
    offsets, ids = index._query_terms(queries)
    ref_offsets, ref_ids = _reference_ids(index, queries)
    assert offsets.tolist() == ref_offsets.tolist()
    assert ids.tolist() == ref_ids.tolist()
    tokens = [analyser.analyse(q) for q in queries]
    tok_offsets, tok_ids = index._query_terms(tokens)  # the same queries as term lists
    assert tok_offsets.tolist() == ref_offsets.tolist()
    assert tok_ids.tolist() == ref_ids.tolist()


def test_a_stopword_that_is_an_indexed_stem_is_still_dropped() -> None:
    index = BM25Index.build(["other text", "wills and testaments"], ids=["d1", "d2"])  # "wills" stems to "will"
    assert "will" in index.terms()
    assert index.topk(["will"], ["q"], k=5).docs.tolist() == []  # the stopword, dropped before stemming
    assert index.topk(["wills"], ["q"], k=5).docs.tolist() == [1]
