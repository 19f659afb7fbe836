"""The encoders' precision: names checked, ``auto`` following the CPU, bfloat16 vectors within cosine 0.9999 of a
plain float32 sentence-transformers ``encode`` on real SciFact abstracts (most of them cut at 256 tokens), and the
precision named in the report, the index's meta.json and the index's own query encoder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise.dense.backends import PRECISIONS
from stagewise.dense.encoders import _check_precision, load_encoder
from stagewise.errors import ConventionError
from tests.conftest import SHARED
from tests.dense_helpers import TEXTS, needs_model

runner = CliRunner()
SCIFACT = SHARED / "data" / "scifact"


def test_precision_names_are_checked():
    assert [_check_precision(p) for p in ("AUTO", "fp32", " bf16", "bfloat16")] == [
        "auto", "float32", "bfloat16", "bfloat16",
    ]  # fmt: skip
    with pytest.raises(ConventionError, match=r"must be one of auto, float32, bfloat16\. Got 'half'"):
        _check_precision("half")
    assert PRECISIONS == ("auto", "float32", "bfloat16")


def test_onnx_refuses_bfloat16_before_any_export(tmp_path: Path):
    with pytest.raises(ConventionError, match="onnx backend computes in float32 only"):
        load_encoder(backend="onnx", precision="bfloat16", onnx_cache=tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


@pytest.fixture(scope="module")
def torch_mod():
    return pytest.importorskip("torch")


@needs_model
def test_auto_is_bfloat16_exactly_where_the_cpu_has_it(torch_mod, monkeypatch):
    from stagewise.dense import encoders

    native = encoders.native_bfloat16(torch_mod)
    assert load_encoder().precision == ("bfloat16" if native else "float32")
    monkeypatch.setattr(encoders, "native_bfloat16", lambda torch: False)
    fallback = load_encoder()
    assert fallback.precision == "float32" and "float32" in repr(fallback)


def _scifact_abstracts(n: int) -> list[str]:
    if not (SCIFACT / "scifact.zip").is_file():
        pytest.skip(f"SciFact is absent ({SCIFACT}: ../shared/data is not checked out here)")
    from stagewise.retrieval import read_scifact

    return list(read_scifact(SCIFACT).documents.texts[:n])


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@needs_model
def test_bfloat16_vectors_agree_with_plain_float32_sentence_transformers(torch_mod):
    from stagewise.dense import encoders

    if not encoders.native_bfloat16(torch_mod):
        pytest.skip("this CPU has no native bfloat16 (AVX512-BF16 or AMX): auto is float32 here, and emulated "
                    "bfloat16 is too slow for a test")  # fmt: skip
    texts = _scifact_abstracts(40) + TEXTS[:7]
    bf16 = load_encoder(precision="bfloat16", batch_size=16)
    plain = bf16.model.encode(texts, batch_size=16)  # sentence-transformers' own call: float32, no autocast
    vectors = bf16.encode(texts)
    assert bf16.last_report.precision == "bfloat16" and bf16.last_report.truncated >= 20
    cosine = _cosines(vectors, plain)
    assert cosine.min() >= 0.9999
    assert cosine.min() < 0.9999999  # bfloat16 did run: float32 agrees to ~1e-7 (below)
    float32 = load_encoder(precision="float32", batch_size=16).encode(texts)
    assert _cosines(float32, plain).min() >= 0.999999
    # What retrieval sees: each text's nearest other text is the same under both precisions.
    np.fill_diagonal(sims_plain := plain @ plain.T, -2)
    np.fill_diagonal(sims_bf16 := vectors @ vectors.T, -2)
    assert (sims_plain.argmax(axis=1) == sims_bf16.argmax(axis=1)).all()


@needs_model
def test_cli_precision_is_named_in_the_report_and_the_index(tmp_path: Path):
    from stagewise.cli import app
    from stagewise.dense.index import DenseIndex

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS[:5])))
    out = tmp_path / "idx"
    result = runner.invoke(app, ["encode", str(corpus), "-o", str(out), "--precision", "float32"])
    assert result.exit_code == 0, result.output
    assert "(torch, float32)" in result.output
    meta = json.loads((out / "meta.json").read_text())
    assert meta["backend"] == "torch" and meta["precision"] == "float32"
    index = DenseIndex.load(out)
    assert index.encoder().precision == "float32"  # queries in the documents' arithmetic
    query = index.encoder().encode(["aspirin and heart attacks"])
    rows, _ = index.topk(query, 1)
    assert index.doc_ids[int(rows[0, 0])] == "d3"
    bad = runner.invoke(app, ["encode", str(corpus), "-o", str(tmp_path / "x"), "--precision", "half"])
    assert bad.exit_code == 2 and "half" in bad.output
