"""BM25: every variant against its closed form, the compiled kernels against plain references, the index's
life cycle (save, load, add), search semantics, and the lesson's worked number."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError, InputError, StagewiseError
from stagewise.retrieval import _kernels
from stagewise.retrieval.analysis import Analyser
from stagewise.retrieval.index import BM25Index
from stagewise.retrieval.variants import VARIANTS, Scoring, saturating_tf

RTOL = 1e-9

# ------------------------------------------------------------------------------------- naive references


def naive_idf(variant: str, df: int, n: int, all_df: list[int], epsilon: float | None) -> float:
    if variant == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if variant == "robertson":
        return max(0.0, math.log((n - df + 0.5) / (df + 0.5)))
    if variant == "atire":
        return math.log(n / df)
    if variant == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    if variant == "bm25+":
        return math.log((n + 1) / df)
    if variant == "okapi-rank_bm25":
        raw = [math.log(n - f + 0.5) - math.log(f + 0.5) for f in all_df]
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        return epsilon * sum(raw) / len(raw) if idf < 0 else idf
    raise AssertionError(variant)


def naive_tf(variant: str, tf: int, dl: int, avgdl: float, k1: float, b: float, delta: float | None) -> float:
    norm = 1 - b + b * dl / avgdl
    if variant == "bm25l":
        c = tf / norm
        return (k1 + 1) * (c + delta) / (k1 + c + delta)
    part = tf * (k1 + 1) / (tf + k1 * norm)
    return part + delta if variant == "bm25+" else part


def naive_scores(docs: list[list[str]], query: list[str], scoring: Scoring) -> list[float]:
    """Every document's score from the closed form: a sum over the query's tokens (repeats counted)."""
    n = len(docs)
    avgdl = sum(map(len, docs)) / n
    df = Counter(t for d in docs for t in set(d))
    all_df = list(df.values())
    scores = []
    for doc in docs:
        tf = Counter(doc)
        total = 0.0
        for term in query:
            if tf[term]:
                idf = naive_idf(scoring.variant, df[term], n, all_df, scoring.epsilon)
                total += idf * naive_tf(
                    scoring.variant, tf[term], len(doc), avgdl, scoring.k1, scoring.b, scoring.delta
                )
        scores.append(total)
    return scores


def random_corpus(seed: int, n_docs: int = 40, vocab: int = 25, max_len: int = 30) -> list[list[str]]:
    """Zipf-ish documents; term w0 occurs in most documents (negative Robertson IDF, rank_bm25's floor)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    docs = []
    for _ in range(n_docs):
        length = int(rng.integers(1, max_len))
        doc = [words[i] for i in rng.choice(vocab, size=length, p=p)]
        if rng.random() < 0.8:
            doc.append("w0")
        docs.append(doc)
    return docs


def random_queries(seed: int, vocab: int = 25, n: int = 12) -> list[list[str]]:
    rng = np.random.default_rng(seed + 1000)
    return [[f"w{i}" for i in rng.integers(0, vocab, size=int(rng.integers(1, 6)))] for _ in range(n)]


def assert_close(ours, expected, rtol: float = RTOL) -> None:
    ours, expected = np.asarray(ours, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert ours.shape == expected.shape
    bad = np.abs(ours - expected) > rtol * np.maximum(np.abs(expected), 1e-300)
    assert not bad.any(), f"first mismatch at {np.flatnonzero(bad)[:5]}: {ours[bad][:5]} vs {expected[bad][:5]}"


PARAMS = [
    {"k1": 1.2, "b": 0.75},
    {"k1": 0.9, "b": 0.4},
    {"k1": 2.0, "b": 1.0},
    {"k1": 0.0, "b": 0.3},
    {"k1": 1.5, "b": 0.0},
]


# ------------------------------------------------------------------------------------------------ lesson


def test_lesson_frequency_factor() -> None:
    """A term twice in an average-length document, k1 = 1.2, b = 0.75: factor 2 * 2.2 / (2 + 1.2) = 1.375."""
    assert math.isclose(saturating_tf(2, 100, 100, 1.2, 0.75), 1.375)
    assert math.isclose(Scoring.of("lucene").tf(2, 100, 100.0), 1.375)
    # through the index: every document has the average length, the term occurs twice in d0
    index = BM25Index.from_tokens([["wing", "wing", "lift"], ["heat", "flux", "plate"]], ids=["d0", "d1"])
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    assert math.isclose(index.score(["wing"])[0], idf * 1.375, rel_tol=1e-12)


# ----------------------------------------------------------------------------------- closed-form variants


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_variant_matches_its_closed_form(variant: str, seed: int) -> None:
    docs = random_corpus(seed)
    index = BM25Index.from_tokens(docs, variant=variant)
    for params in PARAMS:
        extra = {}
        if VARIANTS[variant].delta is not None:
            extra["delta"] = [0.5, 1.0, 0.25][seed]
        if VARIANTS[variant].epsilon is not None:
            extra["epsilon"] = [0.25, 0.5, 0.1][seed]
        scoring = Scoring.of(variant, **params, **extra)
        for query in random_queries(seed):
            expected = naive_scores(docs, query, scoring)
            assert_close(index.score(query, **params, **extra), expected)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_top_k_is_the_closed_form_ranking(variant: str) -> None:
    docs = random_corpus(7, n_docs=60)
    index = BM25Index.from_tokens(docs, variant=variant)
    scoring = index.scoring
    for query in random_queries(7, n=20):
        expected = np.array(naive_scores(docs, query, scoring))
        matched = np.array([any(t in set(d) for t in query) for d in docs])
        for k in (1, 3, 10, 1000):
            top = index.topk([query], k=k)
            docs_found, scores = top.docs, top.scores
            assert len(docs_found) == min(k, int(matched.sum()))
            assert np.all(np.diff(scores) <= 0)
            assert_close(scores, expected[docs_found])
            # the k best closed-form scores, up to ties at the boundary
            best = np.sort(expected[matched])[::-1][: len(docs_found)]
            assert_close(np.sort(scores)[::-1], best)


def test_scoring_names_round_trip_and_parameters_are_checked() -> None:
    for name in VARIANTS:
        scoring = Scoring.of(name)
        assert Scoring.parse(str(scoring)) == scoring
    assert str(Scoring.of("bm25+", k1=0.9, b=0.4, delta=0.5)) == "bm25+(k1=0.9,b=0.4,delta=0.5)"
    assert Scoring.of("okapi-rank_bm25").params() == {"k1": 1.5, "b": 0.75, "epsilon": 0.25}
    with pytest.raises(ConventionError, match="lucene, robertson, atire, bm25l, bm25\\+, okapi-rank_bm25"):
        Scoring.of("bm26")
    with pytest.raises(ConventionError, match="The 'b' parameter of BM25 variant 'lucene' must be"):
        Scoring.of("lucene", b=1.5)
    with pytest.raises(ConventionError, match="'k1'"):
        Scoring.of("lucene", k1=-1)
    with pytest.raises(ConventionError, match="no 'delta'"):
        Scoring.of("lucene", delta=0.5)
    with pytest.raises(ConventionError, match="unknown BM25 parameter"):
        Scoring.parse("lucene(k3=1)")


def test_parameters_change_at_search_time_without_reindexing() -> None:
    docs = random_corpus(3)
    index = BM25Index.from_tokens(docs, k1=1.2, b=0.75)
    query = ["w1", "w3", "w0"]
    for variant in VARIANTS:
        scoring = Scoring.of(variant, k1=0.7, b=0.2)
        assert_close(index.score(query, variant=variant, k1=0.7, b=0.2), naive_scores(docs, query, scoring))
    assert index.scoring == Scoring.of("lucene")  # the stored default is untouched


# -------------------------------------------------------------------------------------------- the peers


@pytest.mark.parametrize("variant", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_bm25s_scores_reproduced(variant: str) -> None:
    bm25s = pytest.importorskip("bm25s")
    docs = random_corpus(11, n_docs=50)
    for k1, b, delta in ((1.5, 0.75, 0.5), (0.9, 0.4, 1.0), (1.2, 1.0, 0.25)):
        retriever = bm25s.BM25(method=variant, k1=k1, b=b, delta=delta)
        retriever.index(docs, show_progress=False)
        use_delta = delta if variant in ("bm25l", "bm25+") else None
        index = BM25Index.from_tokens(docs, variant=variant, k1=k1, b=b, delta=use_delta)
        n = len(docs)
        df = Counter(t for d in docs for t in set(d))
        for query in random_queries(11, n=15):
            theirs = np.asarray(retriever.get_scores(query), dtype=np.float64)
            ours = index.score(query)
            if variant in ("lucene", "robertson"):
                # bm25s drops the constant factor (k1 + 1) of the tf part (as Lucene 8 does)
                ours = ours / (k1 + 1)
            elif variant in ("bm25l", "bm25+"):
                # bm25s adds idf * tf_part(tf = 0) for every query term a document lacks ("delta everywhere")
                zero = (k1 + 1) * delta / (k1 + delta) if variant == "bm25l" else delta
                idf = {t: math.log((n + 1) / (df[t] + (0.5 if variant == "bm25l" else 0.0))) for t in df}
                ours = ours + np.array([sum(idf[t] * zero for t in query if t not in set(d)) for d in docs])
            assert_close(ours, theirs, rtol=1e-5)


def test_rank_bm25_okapi_reproduced_to_1e9() -> None:
    rank_bm25 = pytest.importorskip("rank_bm25")
    for seed in range(4):
        docs = random_corpus(seed, n_docs=30 + 10 * seed)
        for k1, b, epsilon in ((1.5, 0.75, 0.25), (1.2, 0.5, 0.5), (2.0, 1.0, 0.1)):
            theirs_model = rank_bm25.BM25Okapi(docs, k1=k1, b=b, epsilon=epsilon)
            index = BM25Index.from_tokens(docs, variant="okapi-rank_bm25", k1=k1, b=b, epsilon=epsilon)
            for query in [*random_queries(seed, n=10), ["w0"], ["w0", "w0", "w1"]]:
                assert_close(index.score(query), theirs_model.get_scores(query))


def test_rank_bm25_negative_floor_uses_the_exhaustive_path() -> None:
    """A corpus where most terms are in most documents: the mean IDF, hence the floor, is negative."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    docs = [["a", "b", "c"], ["a", "b", "c", "d"], ["a", "b"], ["a", "c", "e"], ["a", "b", "c"]]
    model = rank_bm25.BM25Okapi(docs)
    assert model.average_idf < 0
    index = BM25Index.from_tokens(docs, variant="okapi-rank_bm25")
    for query in (["a"], ["a", "b"], ["d", "a"], ["e", "c", "b"]):
        assert_close(index.score(query), model.get_scores(query))
        top = index.topk([query], k=3)
        assert np.all(np.diff(top.scores) <= 0)


# ------------------------------------------------------------------------------- kernels vs references


def _search_both(index: BM25Index, queries, **kwargs):
    native = index.topk(queries, **kwargs)
    saved = _kernels.native
    try:
        _kernels.native = None
        fallback = index.topk(queries, **kwargs)
    finally:
        _kernels.native = saved
    return native, fallback


@pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compiled_search_equals_numpy_search_bit_for_bit(variant: str) -> None:
    # equal-length documents make many exact ties in score
    rng = np.random.default_rng(5)
    docs = [[f"t{i}" for i in rng.integers(0, 15, size=8)] for _ in range(300)]
    index = BM25Index.from_tokens(docs, variant=variant)
    queries = [[f"t{i}" for i in rng.integers(0, 18, size=int(rng.integers(1, 7)))] for _ in range(40)]
    for k in (1, 5, 10, 50, 1000):
        for kwargs in ({}, {"all_documents": True}, {"exhaustive": True}):
            native, fallback = _search_both(index, queries, k=k, **kwargs)
            assert np.array_equal(native.offsets, fallback.offsets)
            assert np.array_equal(native.docs, fallback.docs)
            assert np.array_equal(native.scores, fallback.scores)  # the same sums, in the same order


@pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")
def test_maxscore_equals_exhaustive_on_a_skewed_corpus() -> None:
    rng = np.random.default_rng(9)
    vocab = 400
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    docs = [[f"v{i}" for i in rng.choice(vocab, size=int(rng.integers(5, 80)), p=p)] for _ in range(3000)]
    queries = [[f"v{i}" for i in rng.choice(vocab, size=5, p=p)] for _ in range(200)]
    index = BM25Index.from_tokens(docs)
    for k in (1, 10, 100):
        pruned = index.topk(queries, k=k)
        full = index.topk(queries, k=k, exhaustive=True)
        assert np.array_equal(pruned.offsets, full.offsets)
        assert np.array_equal(pruned.docs, full.docs)
        assert np.array_equal(pruned.scores, full.scores)


@pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")
def test_compiled_postings_equal_numpy_postings() -> None:
    rng = np.random.default_rng(2)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 20, size=200))]).astype(np.int64)
    ids = rng.integers(-1, 30, size=int(offsets[-1])).astype(np.int32)
    a = _kernels.build_postings(offsets, ids, 30)
    b = _kernels.build_postings(offsets, ids, 30, use_native=False)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


@pytest.mark.skipif(_kernels.native is None, reason="the C extension is not built")
def test_checksum_and_find_terms_equal_their_references() -> None:
    ids, texts = ["a", "é", "x" * 17, ""], ["hello", "ünïcode 🎉 text", "y" * 33, ""]
    assert _kernels.checksum(ids, texts, 3) == _kernels.checksum(ids, texts, 3, use_native=False)
    split = (_kernels.checksum(ids[:2], texts[:2], 3) + _kernels.checksum(ids[2:], texts[2:], 5)) % (1 << 128)
    assert split == _kernels.checksum(ids, texts, 3)
    terms = sorted(["apple", "banana", "cherry", "é", "ß"])
    encoded = [t.encode() for t in terms]
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.int64)
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    probe = ["apple", "aardvark", "cherry", "zebra", "é", "ß", "c"]
    found = _kernels.find_terms(offsets, data, probe)
    assert found.tolist() == _kernels.find_terms(offsets, data, probe, use_native=False).tolist()
    assert found.tolist() == [0, -1, 2, -4, 4, 3, -3]  # "ß" (U+00DF) sorts before "é" (U+00E9)


# ---------------------------------------------------------------------------------------------- analyser


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=6), st.integers(1, 3), st.booleans())
def test_compiled_tokeniser_equals_python_re(texts: list[str], min_length: int, lowercase: bool) -> None:
    analyser = Analyser(stemmer="none", stopwords="none", min_length=min_length, lowercase=lowercase)
    analysed = analyser.analyse_many(texts)
    for i, text in enumerate(texts):
        assert analysed.tokens(i) == analyser.analyse(text)


@pytest.mark.parametrize("stemmer", ["english", "porter", "none"])
def test_analyse_many_equals_analyse_per_text(stemmer: str) -> None:
    texts = [
        "The wings' lift-curves, in 2 slipstreams",
        "Über große Flügel: naïve café résumé",
        "",
        "THE AND OF",
        "running runs ran runner_up x y z 42 4.5",
        "Ωmega ΣΙΓΜΑ straße İstanbul",
    ]
    analyser = Analyser(stemmer=stemmer)
    analysed = analyser.analyse_many(texts)
    chunked = analyser.analyse_many(texts, chunk_size=2)
    for i, text in enumerate(texts):
        assert analysed.tokens(i) == analyser.analyse(text) == chunked.tokens(i)
    assert analyser.analyse("The running of the wings") == (
        ["run", "wing"] if stemmer != "none" else ["running", "wings"]
    )


def test_analyser_settings_round_trip_and_user_stopwords() -> None:
    analyser = Analyser(stemmer="porter", stopwords=("wing", "lift"), lowercase=False, min_length=3)
    assert Analyser.from_settings(json.loads(json.dumps(analyser.settings()))) == analyser
    assert analyser.analyse("Wing wing lifts of it") == ["Wing", "lift"]
    with pytest.raises(ConventionError, match="english, porter, none"):
        Analyser(stemmer="snowball")
    with pytest.raises(ConventionError, match="english, none"):
        Analyser(stopwords="french")
    with pytest.raises(ConventionError, match="min_length"):
        Analyser(min_length=0)


def test_non_string_document_is_named() -> None:
    with pytest.raises(StagewiseError, match="document 3 is NoneType"):
        BM25Index.build(["a b", "c d", "e f", None])
    with pytest.raises(StagewiseError, match="document 3 is int"):
        Analyser().analyse_many(["x", "y", "z", 5], chunk_size=2)


# --------------------------------------------------------------------------------- index life cycle


def _assert_same_index(a: BM25Index, b: BM25Index) -> None:
    for name in ("term_ptr", "post_docs", "post_tf", "doc_len", "max_tf", "min_dl", "vocab_offsets", "vocab_data",
                 "doc_ids_offsets", "doc_ids_data"):  # fmt: skip
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y), name
    assert a.metadata() == b.metadata()


def test_add_gives_the_arrays_and_results_of_a_rebuild(tmp_path: Path) -> None:
    texts = [
        "experimental investigation of the aerodynamics of a wing in a slipstream",
        "simple shear flow past a flat plate in an incompressible fluid",
        "the boundary layer in simple shear flow past a flat plate",
        "approximate solutions of the incompressible laminar boundary layer equations for a plate",
        "one-dimensional transient heat conduction into a double-layer slab",
        "zebra quokka aardvark wing",  # new terms that sort before and after the old ones
        "heat transfer at the wing surface, supersonic",
    ]
    ids = [f"doc-{i}" for i in range(len(texts))]
    rebuilt = BM25Index.build(texts, ids, k1=0.9, b=0.4)
    grown = BM25Index.build(texts[:3], ids[:3], k1=0.9, b=0.4)
    grown.save(tmp_path / "idx")
    grown = BM25Index.load(tmp_path / "idx").add(texts[3:5], ids[3:5])
    grown.save(tmp_path / "idx")  # over the memory-mapped files it was loaded from
    grown = BM25Index.load(tmp_path / "idx").add(dict(zip(ids[5:], texts[5:], strict=True)))
    _assert_same_index(grown, rebuilt)
    queries = {"q1": "wing slipstream", "q2": "boundary layer plate", "q3": "aardvark heat"}
    a, b = grown.search(queries, k=10), rebuilt.search(queries, k=10)
    assert a.to_polars().equals(b.to_polars())


def test_add_tokens_in_many_batches_equals_a_rebuild() -> None:
    docs = random_corpus(4, n_docs=90, vocab=60)
    rebuilt = BM25Index.from_tokens(docs, variant="bm25+")
    grown = BM25Index.from_tokens(docs[:10], variant="bm25+")
    for start in range(10, 90, 17):
        grown = grown.add_tokens(docs[start : start + 17])
    _assert_same_index(grown, rebuilt)


def test_add_rejects_an_id_already_indexed() -> None:
    index = BM25Index.build(["a b", "c d"], ["x", "y"])
    with pytest.raises(InputError, match="'y' is already in the index"):
        index.add(["e f"], ["y"])
    with pytest.raises(InputError, match="appears twice"):
        BM25Index.build(["a", "b", "c"], ["x", "y", "x"])


def test_save_load_memory_maps_and_keeps_metadata(tmp_path: Path) -> None:
    index = BM25Index.build(
        ["Wing lift in a slipstream", "Heat flux at the plate", "Lift curves"],
        ["d1", "d2", "d3"],
        analyser=Analyser(stemmer="porter", stopwords=("lift",)),
        variant="bm25l",
        delta=0.3,
    )
    path = index.save(tmp_path / "bm25")
    loaded = BM25Index.load(path)
    assert isinstance(loaded.post_docs, np.memmap)
    meta = json.loads((path / "meta.json").read_text())
    assert meta["scoring"] == {"variant": "bm25l", "k1": 1.2, "b": 0.75, "delta": 0.3}
    assert meta["scoring_name"] == "bm25l(k1=1.2,b=0.75,delta=0.3)"
    assert meta["analyser"]["stemmer"] == "porter" and meta["analyser"]["stopwords"] == ["lift"]
    assert meta["documents"] == 3 and meta["checksum"].startswith("stagewise-hash128-sum:")
    assert loaded.analyser == index.analyser and loaded.scoring == index.scoring
    _assert_same_index(loaded, index)
    assert loaded.search(["lift wing"]).to_polars().equals(index.search(["lift wing"]).to_polars())


def test_load_rejects_what_is_not_an_index(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no meta\.json"):
        BM25Index.load(tmp_path)
    (tmp_path / "meta.json").write_text('{"format": "other"}')
    with pytest.raises(InputError, match="index format 'other'"):
        BM25Index.load(tmp_path)


def test_empty_index_and_empty_documents(tmp_path: Path) -> None:
    index = BM25Index.build(["", "the of and", "wing"], ["a", "b", "c"])
    assert index.doc_len.tolist() == [0, 0, 1]
    index.save(tmp_path / "i")
    loaded = BM25Index.load(tmp_path / "i")
    assert loaded.search(["wings"]).to_polars()["doc_id"].to_list() == ["c"]


# -------------------------------------------------------------------------------------------- searching


def test_k_above_corpus_size_and_all_documents() -> None:
    index = BM25Index.build(["wing lift", "wing", "heat", "plate heat"], ["a", "b", "c", "d"])
    run = index.search({"q": "wing"}, k=100)
    assert sorted(run.to_polars()["doc_id"].to_list()) == ["a", "b"]  # only documents containing a query term
    run = index.search({"q": "wing"}, k=100, all_documents=True)
    frame = run.to_polars()
    assert frame.height == 4 and frame["score"].to_list()[2:] == [0.0, 0.0]
    assert index.search({"q": "wing"}, k=3, all_documents=True).to_polars().height == 3


def test_queries_without_indexed_terms() -> None:
    index = BM25Index.build(["wing lift", "heat"], ["a", "b"])
    top = index.topk({"q1": "zebra", "q2": "the of", "q3": "heat"}, k=5)
    assert top.empty_queries == 2
    assert top.to_run(index).query_ids.tolist() == ["q3"]
    with pytest.raises(StagewiseError, match="no query matched any document"):
        index.search({"q1": "zebra"})


def test_repeated_query_terms_count_each_time() -> None:
    docs = random_corpus(1)
    index = BM25Index.from_tokens(docs)
    assert_close(index.score(["w2", "w2", "w5"]), 2 * index.score(["w2"]) + index.score(["w5"]), rtol=1e-12)


def test_ties_keep_the_document_indexed_first() -> None:
    index = BM25Index.from_tokens([["x", "y"], ["x", "z"], ["x", "w"], ["q", "r"]], ids=["d9", "d1", "d5", "d0"])
    top = index.topk([["x"]], k=2)
    assert top.docs.tolist() == [0, 1]


def test_threads_give_the_same_results() -> None:
    docs = random_corpus(6, n_docs=200, vocab=80)
    queries = random_queries(6, vocab=80, n=300)
    index = BM25Index.from_tokens(docs)
    one, many = index.topk(queries, k=7), index.topk(queries, k=7, workers=3)
    assert np.array_equal(one.offsets, many.offsets) and np.array_equal(one.docs, many.docs)
    assert np.array_equal(one.scores, many.scores)


def test_search_returns_a_run_that_evaluates(tmp_path: Path) -> None:
    from stagewise import evaluate, read_run, write_run

    index = BM25Index.build(
        {"d1": "wing lift slipstream", "d2": "heat flux plate", "d3": "wing heat"},
    )
    run = index.search({"q1": "wing", "q2": "heat plate"}, k=2, k1=0.9, b=0.4)
    assert run.name == "bm25-lucene(k1=0.9,b=0.4)"
    write_run(run, tmp_path / "run.trec")
    again = read_run(tmp_path / "run.trec")
    assert again.scores.tolist() == run.scores.tolist()
    result = evaluate({"q1": {"d1": 1}, "q2": {"d2": 2}}, run, ["ndcg@10"])
    assert 0 < result.means[run.name]["ndcg@10"] <= 1


def test_search_argument_errors() -> None:
    index = BM25Index.build(["a b"], ["x"])
    with pytest.raises(ConventionError, match="'k' parameter of search"):
        index.search(["a"], k=0)
    with pytest.raises(ConventionError, match="not one string"):
        index.search("a b")
    tokens_index = BM25Index.from_tokens([["a"]])
    with pytest.raises(StagewiseError, match="built from tokens"):
        tokens_index.search(["a"])
    with pytest.raises(InputError, match="appears twice"):
        index.search(["a", "b"], ids=["q", "q"])


def test_the_package_exports() -> None:
    # the docstring examples run in tests/test_doctests.py
    import stagewise.retrieval as package

    assert sorted(package.__all__) == sorted(package._EXPORTS)
    for name in package.__all__:
        assert getattr(package, name) is not None
