"""The rerank stage: the protocol with a tiny deterministic reranker (batches packed across queries and sorted
by length, the score cache in memory and on disk, depth), BM25 with proximity against a naive reference, names
that round-trip, and, with the dense extra, the bi-encoder and a cross-encoder built at random in a tmp folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise.data.readers import read_run
from stagewise.errors import ConventionError, InputError
from stagewise.rerank import (
    BM25ProximityReranker,
    PairReranker,
    RerankedRun,
    Reranker,
    ScoreCache,
    make_reranker,
)
from tests.dense_helpers import TEXTS, needs_model

runner = CliRunner()

QUERIES = {"q1": "wing lift", "q2": "heat conduction slab"}
DOCS = {
    "d1": "lift of a wing at an angle",
    "d2": "wing " + "far " * 30 + "lift",
    "d3": "heat conduction in a slab",
    "d4": "short",
    "d5": "slab heat",
}
RUN = {"q1": {"d1": 1.0, "d2": 3.0, "d4": 2.0, "d5": 0.5}, "q2": {"d3": 0.1, "d5": 0.2, "d4": 0.3}}


class Length(PairReranker):
    """Scores a pair by its document's length; records each batch."""

    name = "length"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.batches: list[list[int]] = []

    def score_pairs(self, query_texts, doc_texts):
        self.batches.append([len(q) + len(d) for q, d in zip(query_texts, doc_texts, strict=True)])
        return np.array([len(d) for d in doc_texts], dtype=float)


def test_the_protocol_is_small():
    class Reverse:
        name = "reverse"

        def rerank(self, queries, run, docs, depth=100):
            return run

    assert isinstance(Reverse(), Reranker) and isinstance(Length(), Reranker)


def test_pairs_are_packed_across_queries_in_length_order_and_depth_cuts():
    reranker = Length(batch_size=3)
    out = reranker.rerank(QUERIES, RUN, DOCS, depth=2)
    assert isinstance(out, RerankedRun)
    got = out.to_dict()
    # q1's first two by score are d2, d4; q2's are d4, d5: rescored by document length
    assert got == {"q1": {"d2": float(len(DOCS["d2"])), "d4": 5.0}, "q2": {"d4": 5.0, "d5": 9.0}}
    assert list(got["q1"]) == ["d2", "d4"]
    flat = [n for batch in reranker.batches for n in batch]
    assert flat == sorted(flat) and [len(b) for b in reranker.batches] == [3, 1]  # 4 pairs of 2 queries, packed
    assert out.rerank["depth"] == 2 and out.rerank["pairs"] == 4 and out.rerank["below_depth"] == "dropped"


def test_cache_makes_a_rerun_free_in_memory_and_on_disk(tmp_path: Path):
    path = tmp_path / "scores.sqlite"
    first = Length(cache=path)
    a = first.rerank(QUERIES, RUN, DOCS, depth=3)
    assert first.last_stats["scored"] == 6 and first.last_stats["from_cache"] == 0
    again = first.rerank(QUERIES, RUN, DOCS, depth=3)
    assert first.last_stats["scored"] == 0 and again.to_dict() == a.to_dict()
    fresh = Length(cache=path)  # a new process would see the same file
    b = fresh.rerank(QUERIES, RUN, DOCS, depth=4)
    assert fresh.last_stats["from_cache"] == 6 and fresh.last_stats["scored"] == 1
    assert b.to_dict()["q1"]["d1"] == len(DOCS["d1"])
    changed = dict(DOCS, d2="a new text")  # the cache is keyed by the document's text, not its id
    Length(cache=path).rerank(QUERIES, RUN, changed, depth=1)
    assert len(ScoreCache(path)) == 8


def test_missing_texts_and_bad_depth_are_errors():
    with pytest.raises(InputError, match="'d5' of run"):
        Length().rerank(QUERIES, RUN, {k: v for k, v in DOCS.items() if k != "d5"}, depth=10)
    with pytest.raises(InputError, match="query 'q2'"):
        Length().rerank({"q1": "x"}, RUN, DOCS)
    with pytest.raises(ConventionError, match="'depth' parameter"):
        Length().rerank(QUERIES, RUN, DOCS, depth=0)


def naive_bm25_proximity(query: str, doc: str, docs: dict, k1=1.2, b=0.75, alpha=0.3) -> float:
    from stagewise.retrieval.analysis import Analyser

    an = Analyser()
    toks = {i: an.analyse(t) for i, t in docs.items()}
    avgdl = sum(len(t) for t in toks.values()) / len(toks)
    d = an.analyse(doc)
    terms = list(dict.fromkeys(an.analyse(query)))
    score = 0.0
    for t in terms:
        tf = d.count(t)
        if tf:
            df = sum(t in v for v in toks.values())
            score += (
                math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                * tf
                * (k1 + 1)
                / (tf + k1 * (1 - b + b * len(d) / avgdl))
            )
    dist = float(len(d))
    for i, x in enumerate(d):
        for j, y in enumerate(d):
            if x in terms and y in terms and x != y:
                dist = min(dist, abs(i - j))
    return score + math.log(alpha + math.exp(-dist))


def test_bm25_proximity_equals_a_naive_reference_and_prefers_close_terms():
    reranker = BM25ProximityReranker()
    out = reranker.rerank(QUERIES, RUN, DOCS, depth=10).to_dict()
    for q, docs in out.items():
        for d, score in docs.items():
            assert score == pytest.approx(naive_bm25_proximity(QUERIES[q], DOCS[d], DOCS), rel=1e-12)
    close, apart = reranker.score_pairs(["wing lift"] * 2, ["wing lift far far far far", "wing far far far far lift"])
    assert close - apart == pytest.approx(math.log(0.3 + math.exp(-1)) - math.log(0.3 + math.exp(-5)))


def test_names_round_trip():
    for spec in ["bm25-proximity", "bm25-proximity(k1=0.9,b=0.4)", "bi-encoder(model='/m',backend=onnx)"]:
        assert str(make_reranker(spec)) == spec
        assert str(make_reranker(str(make_reranker(spec)))) == spec
    assert str(make_reranker("BM25_Proximity(alpha=0.3)")) == "bm25-proximity"
    with pytest.raises(ConventionError, match="choose one of bm25-proximity, bi-encoder, cross-encoder"):
        make_reranker("colbert")
    with pytest.raises(ConventionError, match="local model folder"):
        make_reranker("cross-encoder")
    with pytest.raises(ConventionError, match="'b' parameter"):
        make_reranker("bm25-proximity(b=2)")
    # the grammar's own messages, never a Python TypeError's text
    with pytest.raises(ConventionError, match=r"The 'k1' parameter of bm25-proximity must be a finite number >= 0"):
        make_reranker('bm25-proximity(k1="x")')
    with pytest.raises(ConventionError, match="'bm25-proximity' has no parameter 'k'; its parameters: k1, b, alpha"):
        make_reranker("bm25-proximity(k=1)")


def test_cli_rerank_writes_the_reranked_run(tmp_path: Path):
    from stagewise.cli import app

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    run = tmp_path / "in.run"
    run.write_text("".join(f"{q} Q0 {d} 0 {s} x\n" for q, ds in RUN.items() for d, s in ds.items()))
    out = tmp_path / "out.run"
    args = ["rerank", str(run), "--corpus", str(corpus), "--queries", str(queries), "--depth", "3", "-o", str(out)]
    result = runner.invoke(app, [*args, "--cache", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 0, result.output
    assert "6 pairs, 6 scored, 0 from the cache" in result.output
    expected = BM25ProximityReranker().rerank(QUERIES, RUN, DOCS, depth=3).to_dict()
    assert read_run(out).to_dict() == expected  # scores are written exactly
    result = runner.invoke(app, [*args, "--cache", str(tmp_path / "s.sqlite")])
    assert "0 scored, 6 from the cache" in result.output
    result = runner.invoke(app, [*args, "--reranker", "nope"])
    assert result.exit_code == 2 and "unknown reranker 'nope'" in result.output


# ------------------------------------------------------------------------- with the dense extra


@needs_model
def test_bi_encoder_is_the_cosine_of_the_packaged_model():
    from stagewise.dense.encoders import load_encoder

    # float32: in bfloat16 (the default where the CPU has it) a text's vector moves by ~1e-4 with the batch it
    # is encoded in, so a batched score and a one-text encoding differ past this tolerance
    encoder = load_encoder(precision="float32")
    reranker = make_reranker("bi-encoder", encoder=encoder)
    docs = {f"d{i}": t for i, t in enumerate(TEXTS[:6])}
    run = {"q": {d: 1.0 for d in docs}}
    out = reranker.rerank({"q": "aspirin heart attack"}, run, docs, depth=10).to_dict()["q"]
    q = encoder.encode(["aspirin heart attack"])[0]
    for d, score in out.items():
        assert score == pytest.approx(float(encoder.encode([docs[d]])[0] @ q), abs=1e-5)
    assert next(iter(out)) == "d3"


@needs_model
def test_cross_encoder_from_a_tiny_random_bert_in_a_tmp_folder(tmp_path: Path):
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = sorted({w for t in [*DOCS.values(), *QUERIES.values()] for w in t.lower().replace(":", "").split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=1)  # fmt: skip
    model = BertForSequenceClassification(config).eval()
    folder = tmp_path / "ce"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    reranker = make_reranker(f"cross-encoder(path={str(folder)!r})", batch_size=2)
    assert str(make_reranker(str(reranker))) == str(reranker)
    out = reranker.rerank(QUERIES, RUN, DOCS, depth=3)
    # independent reference: the same weights through transformers directly, one pair at a time, sigmoid
    for q, docs in out.to_dict().items():
        for d, score in docs.items():
            enc = tokenizer(QUERIES[q], DOCS[d], return_tensors="pt", truncation=True)
            with torch.no_grad():
                logit = model(**enc).logits[0, 0].item()
            assert score == pytest.approx(1 / (1 + math.exp(-logit)), abs=1e-5)
    assert reranker.last_stats["scored"] == 6
    assert CrossEncoder(str(folder)).predict([("a", "b")]).shape == (1,)


def test_bm25_proximity_recomputes_its_statistics_for_another_corpus() -> None:
    """Corpus statistics are keyed by the corpus's content, not by the object's id (Python reuses ids)."""
    from stagewise.rerank.rerankers import BM25ProximityReranker

    queries = {"q": "wing lift"}
    run = read_run({"q": {"d1": 2.0, "d2": 1.0}})
    corpus_a = {"d1": "wing lift wing", "d2": "lift of a wing", "d3": "heat"}
    corpus_b = {"d1": "wing lift wing", "d2": "lift of a wing", "d3": "wing wing wing lift lift", "d4": "lift"}
    reused = BM25ProximityReranker()
    reused.rerank(queries, run, dict(corpus_a), 2)
    again = reused.rerank(queries, run, dict(corpus_b), 2).to_dict()
    fresh = BM25ProximityReranker().rerank(queries, run, dict(corpus_b), 2).to_dict()
    assert again == fresh
    assert again != BM25ProximityReranker().rerank(queries, run, dict(corpus_a), 2).to_dict()


def test_model_cache_names_follow_the_folder_and_its_weights(tmp_path, monkeypatch) -> None:
    """Two models typed as the same relative path from different folders, or one model saved again, must not
    share cached scores."""
    from stagewise.dense.encoders import folder_stamp
    from stagewise.rerank.rerankers import CrossEncoderReranker

    for side in ("a", "b"):
        (tmp_path / side / "ce").mkdir(parents=True)
        (tmp_path / side / "ce" / "model.safetensors").write_bytes(side.encode() * 10)
    names = []
    for side in ("a", "b"):
        monkeypatch.chdir(tmp_path / side)
        names.append(CrossEncoderReranker(path="ce").cache_name())
    assert names[0] != names[1]
    before = folder_stamp(tmp_path / "a" / "ce")
    (tmp_path / "a" / "ce" / "model.safetensors").write_bytes(b"retrained weights, another size")
    assert folder_stamp(tmp_path / "a" / "ce") != before


def test_cli_cache_is_checked_as_an_output(tmp_path: Path, monkeypatch) -> None:
    from stagewise.cli import app

    monkeypatch.chdir(tmp_path)
    Path("r.run").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    Path("c.jsonl").write_text('{"_id": "d1", "text": "wing lift"}\n{"_id": "d2", "text": "heat"}\n')
    Path("q.tsv").write_text("q1\twing\n")
    base = ["rerank", "r.run", "--corpus", "c.jsonl", "--queries", "q.tsv", "-o", "rr.run"]
    for cache, message in [("rr.run", "also the --output"), ("c.jsonl", "is the input"), ("nodir/c.sqlite", "mkdir")]:
        result = CliRunner().invoke(app, [*base, "--cache", cache])
        assert result.exit_code == 2 and message in result.output, result.output
    assert not Path("rr.run").exists() and not Path("nodir").exists()
