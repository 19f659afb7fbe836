"""Hybrid in one call: each kept stage equals the stage run on its own; the CLI writes every stage's run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.data.readers import read_run
from stagewise.dense.index import DenseIndex
from stagewise.errors import ConventionError
from stagewise.fusion import fuse
from stagewise.hybrid import hybrid
from stagewise.rerank import make_reranker
from stagewise.retrieval import BM25Index
from tests.dense_helpers import TEXTS, Letters, needs_onnx

DOCS = {f"d{i}": t for i, t in enumerate(TEXTS[:7])}
QUERIES = {"q1": "heat in a slab", "q2": "wing lift angle", "q3": "aspirin trial"}


def test_each_stage_is_kept_and_equals_the_stage_alone():
    bm25, dense = BM25Index.build(DOCS), DenseIndex.build(DOCS, Letters(normalized=True))
    result = hybrid(QUERIES, bm25, dense, k=5, fusion="combsum", norm="minmax", reranker="bm25-proximity",
                    rerank_depth=3, docs=DOCS)  # fmt: skip
    assert list(result.runs()) == ["bm25", "dense", "fused", "reranked"]
    alone_bm25 = bm25.search(QUERIES, k=5)
    alone_dense = dense.search(QUERIES, k=5)
    assert result.bm25.to_dict() == alone_bm25.to_dict()
    assert result.dense.to_dict() == alone_dense.to_dict()
    fused = fuse({"bm25": alone_bm25, "dense": alone_dense}, "combsum", norm="minmax")
    assert result.fused.to_dict() == fused.to_dict()
    reranked = make_reranker("bm25-proximity").rerank(QUERIES, fused, DOCS, 3)
    assert result.reranked.to_dict() == reranked.to_dict()
    described = result.describe()
    assert described["fusion"]["method"] == "combsum" and described["rerank"]["depth"] == 3
    assert described["pipeline"] == "combsum(bm25,dense,norm=minmax)>>bm25-proximity(depth=3)"
    with pytest.raises(ConventionError, match="--corpus"):
        hybrid(QUERIES, bm25, dense, reranker="bm25-proximity")


@needs_onnx
def test_cli_hybrid_writes_every_stage(tmp_path: Path):
    from stagewise.cli import app

    runner = CliRunner()
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    assert runner.invoke(app, ["index", str(corpus), "-o", str(tmp_path / "b")]).exit_code == 0
    assert runner.invoke(app, ["encode", str(corpus), "-o", str(tmp_path / "d"), "--backend", "onnx"]).exit_code == 0
    out = tmp_path / "h"
    args = ["hybrid", str(queries), "--bm25", str(tmp_path / "b"), "--dense", str(tmp_path / "d"), "-o", str(out)]
    result = runner.invoke(app, [*args, "-k", "5", "--reranker", "bi-encoder", "--corpus", str(corpus),
                                 "--depth", "4", "--cache", str(tmp_path / "s.sqlite")])  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = {name: read_run(out / f"{name}.run") for name in ("bm25", "dense", "fused", "reranked")}
    assert all(len(r.to_dict()["q3"]) <= 5 for r in runs.values())
    assert max(len(v) for v in runs["reranked"].to_dict().values()) == 4
    assert next(iter(runs["reranked"].to_dict()["q3"])) == "d3"  # the aspirin trial
    stages = json.loads((out / "stages.json").read_text())
    assert stages["fusion"]["method"] == "rrf(rrf_k=60)" and stages["rerank"]["reranker"] == "bi-encoder"
    assert stages["pipeline"] == "rrf(bm25,dense)>>bi-encoder(depth=4)"  # the canonical name of what ran
    result = runner.invoke(app, [*args, "--reranker", "bm25-proximity"])
    assert result.exit_code == 2 and "--corpus" in result.output


def test_cli_hybrid_refuses_mistakes_before_the_search(tmp_path: Path):
    """A folder of someone's runs with hybrid's file names, indexes of two corpora, a --cache that is an input
    or sits in the folder replaced whole, --corpus without --reranker, and the two indexes swapped."""
    from stagewise.cli import app

    runner = CliRunner()
    BM25Index.build(DOCS).save(tmp_path / "b")
    DenseIndex.build(dict(list(DOCS.items())[:3]), Letters(normalized=True)).save(tmp_path / "d3")
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    mine = tmp_path / "myruns"
    mine.mkdir()
    (mine / "fused.run").write_text("q1 Q0 d1 1 1.0 mine\n")
    base = ["hybrid", str(queries), "--bm25", str(tmp_path / "b"), "--dense", str(tmp_path / "d3")]
    cases = [
        (["-o", str(mine)], "not a stagewise hybrid output folder"),
        (["-o", str(tmp_path / "h")], "indexes 3 documents and --bm25"),
        (["-o", str(tmp_path / "h"), "--corpus", str(corpus)], "only used with --reranker"),
        (["-o", str(tmp_path / "h"), "--reranker", "bm25-proximity", "--corpus", str(corpus), "--cache", str(corpus)],
         "is the input"),
        (["-o", str(tmp_path / "h"), "--reranker", "bm25-proximity", "--corpus", str(corpus),
          "--cache", str(tmp_path / "h" / "s.sqlite")], "inside --output"),
    ]  # fmt: skip
    for extra, message in cases:
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 2 and message in result.output, (extra, result.output)
        assert result.output.count("\n") == 1
    assert (mine / "fused.run").read_text() == "q1 Q0 d1 1 1.0 mine\n"
    assert not (tmp_path / "h").exists()
    swapped = ["hybrid", str(queries), "--bm25", str(tmp_path / "d3"), "--dense", str(tmp_path / "b"), "-o", "x"]
    result = runner.invoke(app, swapped)
    assert result.exit_code == 2 and "is a dense index" in result.output and "rebuild" not in result.output
