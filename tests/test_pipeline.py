"""The stage protocols and the Pipeline value: one search protocol for BM25 and dense, a canonical name, every
stage's run kept and equal to the stage run alone, a retriever of your own plugged in with no other edit, and an
index folder opened and searched by what it holds (the library behind `stagewise search`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.dense.index import DenseIndex
from stagewise.errors import ConventionError, InputError
from stagewise.fusion import fuse
from stagewise.hybrid import hybrid, hybrid_pipeline
from stagewise.pipeline import (
    Fuse,
    Fuser,
    Fusion,
    Judge,
    Pipeline,
    Rerank,
    Reranker,
    Retrieve,
    Retriever,
    SearchOptions,
    StageEvent,
    index_kind,
    open_index,
    search_index,
)
from stagewise.rerank import make_reranker
from stagewise.retrieval import BM25Index
from tests.dense_helpers import TEXTS, Letters

DOCS = {f"d{i}": t for i, t in enumerate(TEXTS[:7])}
QUERIES = {"q1": "heat in a slab", "q2": "wing lift angle", "q3": "aspirin trial"}


class Keyword:
    """A retriever of one's own, written the way docs/architecture.md says: name, search, describe. Nothing
    else in the library is edited for a pipeline to run it."""

    name = "keyword"

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs

    def search(self, queries, *, k: int = 1000, name: str | None = None):
        from stagewise.data.readers import read_run

        scores = {
            q: {d: float(sum(w in text.lower() for w in query.lower().split())) for d, text in self.docs.items()}
            for q, query in dict(queries).items()
        }
        top = {q: dict(sorted(((d, s) for d, s in row.items() if s > 0), key=lambda x: -x[1])[:k]) for q, row in
               scores.items()}  # fmt: skip
        return read_run({q: row for q, row in top.items() if row}, name=name or self.name)

    def describe(self) -> dict:
        return {"retriever": "keyword", "documents": len(self.docs)}


def test_both_indexes_and_the_fusion_and_reranker_satisfy_the_stage_protocols() -> None:
    bm25, dense = BM25Index.build(DOCS), DenseIndex.build(DOCS, Letters(normalized=True))
    assert isinstance(bm25, Retriever) and isinstance(dense, Retriever) and isinstance(Keyword(DOCS), Retriever)
    assert isinstance(Fusion("rrf"), Fuser)
    assert isinstance(make_reranker("bm25-proximity"), Reranker)
    assert Judge.__name__ == "SupportJudge"  # the RAG judge protocol, named with the others, not copied
    assert bm25.name == "bm25-lucene(k1=1.2,b=0.75)" == bm25.search(QUERIES, k=3).name
    assert dense.name == dense.search(QUERIES, k=3).name
    assert bm25.describe()["documents"] == len(DOCS) and dense.describe()["dimension"] == dense.dimension


def test_the_name_is_canonical_in_the_spec_grammar() -> None:
    bm25 = BM25Index.build(DOCS)
    p = Pipeline(
        [Retrieve("bm25", bm25), Retrieve("kw", Keyword(DOCS))],
        Fuse("fused", Fusion("wsum(weights=(0.3,0.7))", norm="zscore")),
        Rerank("ce", "bm25-proximity(alpha=0.5)", depth=50),
    )
    assert p.name == str(p) == "wsum(bm25,kw,weights=(0.3,0.7),norm=zscore)>>bm25-proximity(alpha=0.5,depth=50)"
    assert Pipeline(Retrieve("bm25", bm25)).name == "bm25"
    assert (Pipeline.of(Retrieve("a", bm25), Retrieve("b", bm25)) >> Fuse("f", "rrf") >> Rerank("r", "x")).name == (
        "rrf(a,b)>>x(depth=100)"
    )
    assert Pipeline(Retrieve("a", bm25)) == Pipeline(Retrieve("a", bm25))  # a value: equal when its stages are


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda b: Pipeline([Retrieve("a", b), Retrieve("a", b)]), "two stages are labelled 'a'"),
        (lambda b: Pipeline([Retrieve("a", b), Retrieve("b", b)], rerank=Rerank("r", "x")), "fuse the retrieval"),
        (lambda b: Pipeline([Retrieve("a", b)], Fuse("f", inputs=("z",))), "fusion input 'z' is no retrieval"),
        (lambda b: Pipeline([]), "one or more Retrieve"),
        (lambda b: Retrieve("a b", b), "label must be a non-empty word"),
        (lambda b: Retrieve("a", b, k=0), "The 'k' parameter of retrieve must be an int >= 1"),
        (lambda b: Pipeline(Retrieve("a", b)) >> Retrieve("b", b), "cannot add Retrieve"),
    ],
)
def test_a_pipeline_that_cannot_run_is_refused_when_made(make, message: str) -> None:
    with pytest.raises(ConventionError, match=message):
        make(BM25Index.build(DOCS))


def test_every_stage_run_is_kept_and_equals_the_stage_alone() -> None:
    bm25 = BM25Index.build(DOCS)
    events: list[StageEvent] = []
    built: list[str] = []

    def make_dense() -> DenseIndex:  # built when its stage runs, so the build is in the stage's time
        built.append("dense")
        return DenseIndex.build(DOCS, Letters(normalized=True))

    p = Pipeline(
        [Retrieve("bm25", bm25, k=5, run_name="bm25"), Retrieve("dense", make_dense, k=5, run_name="dense")],
        Fuse("fused", Fusion("combsum", norm="minmax")),
        Rerank("reranked", "bm25-proximity", depth=3, run_name="reranked"),
    )
    assert built == []
    result = p.run(QUERIES, docs=DOCS, progress=events.append)
    assert list(result.runs) == ["bm25", "dense", "fused", "reranked"] == list(result.seconds)
    assert [(e.label, e.done) for e in events][:3] == [("bm25", False), ("bm25", True), ("dense", False)]
    dense = result.components["dense"]
    alone = {"bm25": bm25.search(QUERIES, k=5, name="bm25"), "dense": dense.search(QUERIES, k=5, name="dense")}
    assert result["bm25"].to_dict() == alone["bm25"].to_dict()
    assert result["dense"].to_dict() == alone["dense"].to_dict()
    fused = fuse(alone, "combsum", norm="minmax")
    assert result["fused"].to_dict() == fused.to_dict()
    reranked = make_reranker("bm25-proximity").rerank(QUERIES, fused, DOCS, 3)
    assert result.final.to_dict() == reranked.to_dict() and result.final.name == "reranked"
    described = result.describe()
    assert described["pipeline"] == "combsum(bm25,dense,norm=minmax)>>bm25-proximity(depth=3)"
    assert described["stages"]["dense"]["retriever"]["retriever"] == "dense"
    assert described["stages"]["fused"]["fusion"]["method"] == "combsum"
    assert described["stages"]["reranked"]["rerank"]["depth"] == 3
    json.dumps(described, default=str)
    with pytest.raises(ConventionError, match="give docs"):
        p.run(QUERIES)


def test_a_retriever_of_ones_own_runs_in_a_pipeline_and_in_hybrid() -> None:
    """The docs' worked example: the Keyword class above is the whole change."""
    p = Pipeline([Retrieve("bm25", BM25Index.build(DOCS)), Retrieve("kw", Keyword(DOCS))], Fuse("rrf", "rrf"))
    result = p.run(QUERIES)
    assert result["kw"].name == "keyword" and result.describe()["stages"]["kw"]["retriever"]["documents"] == 7
    assert set(result.final.to_dict()) == set(QUERIES)
    mixed = hybrid(QUERIES, BM25Index.build(DOCS), Keyword(DOCS), k=3)  # any Retriever where dense goes
    assert mixed.dense.name == "dense" and mixed.pipeline.name == "rrf(bm25,dense)"


class Interleave:
    """A fuser of one's own (a Fuser: name and fuse): the inputs' rankings taken in turn, first seen kept."""

    name = "interleave"

    def fuse(self, runs):
        from stagewise.data.readers import read_run

        out: dict[str, dict[str, float]] = {}
        rankings = [run.rankings() for run in runs.values()]
        for q in dict.fromkeys(q for r in rankings for q in r):
            order: list[str] = []
            for rank in range(max(len(r.get(q, [])) for r in rankings)):
                order += [r[q][rank] for r in rankings if rank < len(r.get(q, [])) and r[q][rank] not in order]
            out[q] = {d: float(len(order) - i) for i, d in enumerate(order)}
        return read_run(out, name=self.name)


def test_a_fuser_of_ones_own_runs_in_a_pipeline() -> None:
    bm25 = BM25Index.build(DOCS)
    p = Pipeline([Retrieve("bm25", bm25, k=3), Retrieve("kw", Keyword(DOCS), k=3)], Fuse("mixed", Interleave()))
    assert isinstance(Interleave(), Fuser) and p.name == "interleave(bm25,kw)"
    result = p.run(QUERIES)
    first = bm25.search(QUERIES, k=3).rankings()
    assert all(result.final.rankings()[q][0] == first[q][0] for q in first)


def test_hybrid_is_a_use_of_the_pipeline() -> None:
    bm25, dense = BM25Index.build(DOCS), DenseIndex.build(DOCS, Letters(normalized=True))
    pipeline = hybrid_pipeline(bm25, dense, k=4, fusion="rrf(rrf_k=20)", reranker="bm25-proximity", rerank_depth=2)
    assert pipeline.name == "rrf(bm25,dense,rrf_k=20)>>bm25-proximity(depth=2)"
    result = hybrid(QUERIES, bm25, dense, k=4, fusion="rrf(rrf_k=20)", reranker="bm25-proximity", rerank_depth=2,
                    docs=DOCS)  # fmt: skip
    again = pipeline.run(QUERIES, docs=DOCS)
    assert {n: r.to_dict() for n, r in result.runs().items()} == {n: r.to_dict() for n, r in again.runs.items()}
    assert result.pipeline == pipeline


def test_an_index_folder_opens_and_searches_by_what_it_holds(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(DenseIndex, "encoder", lambda self, backend=None: Letters(normalized=True))  # no model
    BM25Index.build(DOCS).save(tmp_path / "b")
    DenseIndex.build(DOCS, Letters(normalized=True)).save(tmp_path / "d")
    assert index_kind(tmp_path / "b") == "bm25" and index_kind(tmp_path / "d") == "dense"
    assert isinstance(open_index(tmp_path / "b"), BM25Index) and isinstance(open_index(tmp_path / "d"), DenseIndex)
    found = search_index(tmp_path / "b", QUERIES, SearchOptions(k=2), k1=0.9)
    assert found.kind == "bm25" and found.scoring == "lucene(k1=0.9,b=0.75)"
    assert found.run.to_dict() == BM25Index.load(tmp_path / "b").search(QUERIES, k=2, k1=0.9).to_dict()
    dense = search_index(tmp_path / "d", QUERIES, k=2)
    assert dense.kind == "dense" and dense.scoring.endswith("(exact inner product)")
    assert SearchOptions(k1=0.5).check("dense") == ["BM25 options are ignored for a dense index"]
    assert SearchOptions(approximate=True).check("bm25") == [
        "--approximate and --backend are for dense indexes; ignored here"
    ]
    with pytest.raises(InputError, match="--engine dask searches BM25 indexes only"):
        search_index(tmp_path / "d", QUERIES, engine="dask")
    with pytest.raises(InputError, match="only used with --engine dask"):
        SearchOptions(scheduler="tcp://x:1").check("bm25")
    with pytest.raises(InputError, match="is not a stagewise BM25 index"):
        open_index(tmp_path)


def test_search_reads_input_format_and_still_takes_the_old_flag(tmp_path: Path) -> None:
    from stagewise.cli import app

    BM25Index.build(DOCS).save(tmp_path / "b")
    queries = tmp_path / "q.txt"
    queries.write_text("".join(f"{k}\t{v}\n" for k, v in QUERIES.items()))
    runner = CliRunner()
    new = runner.invoke(app, ["search", str(tmp_path / "b"), str(queries), "--input-format", "tsv", "-k", "2"])
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.stderr
    old = runner.invoke(app, ["search", str(tmp_path / "b"), str(queries), "-f", "tsv", "-k", "2"])
    assert old.exit_code == 0, old.output
    assert old.stdout == new.stdout
    assert "-f for --input-format is deprecated; use --input-format" in old.stderr
    assert "--input-format" in runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout
