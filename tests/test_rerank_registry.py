"""Rerankers as registry entries (issue 20): a reranker declared once, in its entry, is taken by the library,
by `stagewise rerank` and listed by its --help with no other edit; a module dropped into the package is found;
bm25-proximity's BM25 part is retrieval.variants' own formulas; listing the rerankers imports no numpy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise.rerank
from stagewise.cli import app
from stagewise.cli.command import undeprecated
from stagewise.data.readers import read_run
from stagewise.errors import ConventionError
from stagewise.rerank import RERANKERS, PairReranker, make_reranker, reranker
from stagewise.rerank.registry import DEFAULT_FORMS
from stagewise.spec import Param
from tests.dense_helpers import needs_model

QUERIES = {"q1": "wing lift", "q2": "heat conduction slab"}
DOCS = {
    "d1": "lift of a wing at an angle",
    "d2": "wing " + "far " * 30 + "lift",
    "d3": "heat conduction in a slab",
    "d4": "short",
    "d5": "slab heat",
}
RUN = {"q1": {"d1": 1.0, "d2": 3.0, "d4": 2.0, "d5": 0.5}, "q2": {"d3": 0.1, "d5": 0.2, "d4": 0.3}}


class ShortestFirst(PairReranker):
    """A toy reranker, as a user would write one: shorter documents first, plus a bonus."""

    def __init__(self, *, bonus: float | None = None, **options) -> None:
        self.configure({"bonus": bonus})
        super().__init__(**options)

    def score_pairs(self, query_texts, doc_texts):
        return np.array([self.params["bonus"] - len(d) for d in doc_texts], dtype=float)


@pytest.fixture
def shortest_first():
    """ShortestFirst registered the documented way (the @reranker decorator), removed after the test."""
    params = {"bonus": Param(float, 0.0, "added to every score", "a finite number")}
    reranker("shortest-first", help="shorter documents first (a test's toy)", params=params)(ShortestFirst)
    yield RERANKERS["shortest-first"]
    RERANKERS.unregister("shortest-first")


def files(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    run = tmp_path / "in.run"
    run.write_text("".join(f"{q} Q0 {d} 0 {s} x\n" for q, ds in RUN.items() for d, s in ds.items()))
    return ["rerank", str(run), "--corpus", str(corpus), "--queries", str(queries), "--no-cache"]


def test_a_new_reranker_is_one_entry_for_the_library_and_the_cli(shortest_first, tmp_path: Path) -> None:
    # the library: by name, parameters checked by the entry's Param, a name that round-trips, provenance
    toy = make_reranker("Shortest_First(bonus=100)")
    assert str(toy) == "shortest-first(bonus=100)" and str(make_reranker(str(toy))) == str(toy)
    out = toy.rerank(QUERIES, RUN, DOCS, depth=10)
    assert list(out.to_dict()["q1"]) == ["d4", "d5", "d1", "d2"]
    assert out.rerank["kind"] == "shortest-first" and out.rerank["params"] == {"bonus": 100.0}
    assert out.rerank["version"] == "1" and out.rerank["reranker"] == "shortest-first(bonus=100)"
    with pytest.raises(ConventionError, match="The 'bonus' parameter of shortest-first must be a finite number"):
        make_reranker("shortest-first(bonus='x')")
    with pytest.raises(
        ConventionError, match="choose one of bm25-proximity, bi-encoder, cross-encoder, shortest-first"
    ):
        make_reranker("nope")
    # the command line: the same spec, no edit to the CLI
    runner = CliRunner()
    result = runner.invoke(app, [*files(tmp_path), "--reranker", "shortest-first(bonus=1)", "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert (
        read_run(tmp_path / "o").to_dict()
        == make_reranker("shortest-first(bonus=1)").rerank(QUERIES, RUN, DOCS, depth=100).to_dict()
    )
    help_text = " ".join(runner.invoke(app, ["rerank", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "bm25-proximity, bi-encoder, cross-encoder, shortest-first;" in help_text
    assert "shortest-first(bonus=0)" in help_text  # its parameters at their defaults
    result = runner.invoke(app, [*files(tmp_path), "--reranker", "shortest-first(bonsu=1)"])
    assert result.exit_code == 2 and "has no parameter 'bonsu'; its parameters: bonus" in result.output


def test_a_module_added_to_the_package_is_found_with_no_other_edit(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "tiny_rerank_plugin.py").write_text(
        "from stagewise.rerank.base import PairReranker\n"
        "from stagewise.rerank.registry import reranker\n\n\n"
        "@reranker('tiny', help='every pair scores its query length')\n"
        "class Tiny(PairReranker):\n"
        "    def __init__(self, **options):\n"
        "        self.configure({})\n"
        "        super().__init__(**options)\n\n"
        "    def score_pairs(self, query_texts, doc_texts):\n"
        "        return [float(len(q)) for q in query_texts]\n"
    )
    monkeypatch.setattr(stagewise.rerank, "__path__", [*stagewise.rerank.__path__, str(tmp_path)])
    try:
        RERANKERS.discover(again=True)
        assert "tiny" in RERANKERS.names() and "tiny" in DEFAULT_FORMS.names()
        assert make_reranker("tiny").rerank(QUERIES, RUN, DOCS, depth=1).to_dict() == {
            "q1": {"d2": 9.0},
            "q2": {"d4": 20.0},
        }
        result = CliRunner().invoke(app, [*files(tmp_path), "--reranker", "tiny"])
        assert result.exit_code == 0 and "q2 Q0 d5 1 20.0 tiny" in result.output, result.output
    finally:
        RERANKERS.unregister("tiny")
        sys.modules.pop("stagewise.rerank.tiny_rerank_plugin", None)


@pytest.mark.parametrize("variant", ["lucene", "robertson", "atire", "bm25l", "bm25+", "okapi-rank_bm25"])
def test_bm25_proximity_is_the_variants_own_bm25_plus_the_bonus(variant: str) -> None:
    """The BM25 part is retrieval.variants' IDF and term-frequency functions, to the last bit: the same sum of
    Scoring.weight over the query's distinct terms, in query order."""
    import math

    from stagewise.retrieval.analysis import Analyser
    from stagewise.retrieval.variants import Scoring

    r = make_reranker(f"bm25-proximity(k1=0.9,b=0.4,variant={variant!r})")
    assert str(make_reranker(str(r))) == str(r)
    assert r.scoring == Scoring.of(variant, k1=0.9, b=0.4)
    docs = {**DOCS, "d6": "wing wing lift lift slab", "d7": "conduction"}
    out = r.rerank(QUERIES, RUN, docs, depth=10).to_dict()
    an = Analyser()
    toks = {i: an.analyse(t) for i, t in docs.items()}
    avgdl = float(np.mean([len(t) for t in toks.values()]))
    vocab = list(dict.fromkeys(t for v in toks.values() for t in v))
    df = np.array([sum(t in v for v in toks.values()) for t in vocab])
    idf = dict(zip(vocab, r.scoring.idf(df, len(docs)).tolist(), strict=True))
    for q, ranked in out.items():
        for d, score in ranked.items():
            bm25 = 0.0
            for term in dict.fromkeys(an.analyse(QUERIES[q])):
                tf = toks[d].count(term)
                if tf:
                    if variant == "okapi-rank_bm25":  # its IDF needs the whole vocabulary
                        bm25 += idf[term] * float(r.scoring.tf(tf, len(toks[d]), avgdl))
                    else:
                        bm25 += r.scoring.weight(tf=tf, dl=len(toks[d]), avgdl=avgdl, df=idf_df(df, vocab, term),
                                                 n_docs=len(docs))  # fmt: skip
            bonus = score - bm25
            assert bonus == pytest.approx(math.log(0.3 + math.exp(-bonus_distance(toks[d], QUERIES[q], an))))
            assert score == bm25 + math.log(0.3 + math.exp(-bonus_distance(toks[d], QUERIES[q], an)))


def idf_df(df: np.ndarray, vocab: list[str], term: str) -> int:
    return int(df[vocab.index(term)])


def bonus_distance(doc: list[str], query: str, an) -> float:
    terms = set(an.analyse(query))
    dist = float(len(doc))
    for i, x in enumerate(doc):
        for j, y in enumerate(doc):
            if x in terms and y in terms and x != y:
                dist = min(dist, abs(i - j))
    return dist


def test_an_unknown_variant_is_the_variants_own_error() -> None:
    with pytest.raises(ConventionError, match="unknown BM25 variant 'bm26'; choose one of lucene"):
        make_reranker("bm25-proximity(variant=bm26)")
    assert str(make_reranker("bm25-proximity(variant=LUCENE)")) == "bm25-proximity"


def test_every_entry_declares_its_parameters_once() -> None:
    """The canonical name, the checks and --help's defaults all come from the entry's Params."""
    for name in ("bm25-proximity", "bi-encoder", "cross-encoder"):
        entry = RERANKERS[name]
        assert entry.describe().startswith(name) and entry.help
    bm25 = make_reranker("bm25-proximity")
    assert str(RERANKERS["bm25_proximity"](k1=0.9, batch_size=8)) == "bm25-proximity(k1=0.9)"  # as the classes were
    assert bm25.params == {k: p.default for k, p in RERANKERS["bm25-proximity"].params.items()}
    assert "bm25-proximity(k1=1.2,b=0.75,alpha=0.3,variant=lucene)" in DEFAULT_FORMS.names()
    with pytest.raises(ConventionError, match="'backend' parameter of bi-encoder must be one of torch, onnx"):
        make_reranker("bi-encoder(backend=tf)")


def test_listing_the_rerankers_imports_no_numpy() -> None:
    """`stagewise rerank --help` lists every reranker (the registry imports the package's modules) without
    numpy, polars or scipy: the modules keep them inside their functions."""
    code = (
        "import sys\n"
        "from stagewise.cli import main\n"
        "try:\n    main(['rerank', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'polars', 'scipy', 'torch') if m in sys.modules))\n"
    )
    env = {**os.environ, "COLUMNS": "250"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert "bm25-proximity, bi-encoder, cross-encoder" in " ".join(done.stdout.split())
    assert done.stdout.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------------------------------- encoder backends


def test_encoder_backends_are_a_registry_the_cli_reads() -> None:
    from stagewise.dense.backends import BACKENDS
    from stagewise.dense.encoders import load_encoder

    assert BACKENDS.names() == ["torch", "onnx"]
    with pytest.raises(ConventionError, match="unknown encoder backend 'tf'; choose one of torch, onnx"):
        load_encoder(backend="tf")
    runner = CliRunner()
    help_text = " ".join(runner.invoke(app, ["encode", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "The encoder backend: torch, onnx" in help_text
    assert "--input-format" in help_text and "--format" not in help_text.replace("--input-format", "")
    assert undeprecated("encode", ["c.txt", "-ftsv", "--format=tsv"]) == [
        "c.txt",
        "--input-format",
        "tsv",
        "--input-format=tsv",
    ]
    result = runner.invoke(app, ["encode", "c.jsonl", "-o", "out", "--backend", "tf"])
    assert result.exit_code == 2 and "unknown encoder backend 'tf'; choose one of torch, onnx" in result.output


@needs_model
@pytest.mark.parametrize("flag", ["--input-format", "--format"])
def test_encode_reads_its_input_format_from_input_format_and_the_old_flag_with_a_note(tmp_path: Path, flag) -> None:
    corpus = tmp_path / "c.txt"  # no telling extension: the format must be stated
    corpus.write_text("".join(f"{k}\t{v}\n" for k, v in DOCS.items()))
    result = CliRunner().invoke(app, ["encode", str(corpus), "-o", str(tmp_path / "d"), flag, "tsv"])
    assert result.exit_code == 0, result.output
    note = f"stagewise: {flag} for --input-format is deprecated; use --input-format"
    assert (note in result.stderr) == (flag != "--input-format")
    assert json.loads((tmp_path / "d" / "meta.json").read_text())["documents"] == len(DOCS)
