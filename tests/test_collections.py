"""Collection readers: the formats on small files written here, and the real collections of ../shared/data
(counts from each SOURCE.md, and each known pitfall)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from stagewise.data.collections import (
    Documents,
    load_collection,
    parse_smart,
    read_beir,
    read_classic,
    read_corpus,
    read_queries,
    read_scifact,
    read_smart,
)
from stagewise.errors import ConventionError, InputError

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the collections are not at {SHARED_DATA} (../shared is absent)")
    return SHARED_DATA


# ------------------------------------------------------------------------------------------- small files


def test_smart_records_fields_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "docs.all"
    path.write_bytes(
        b".I 1\r\n.T\r\nA Title\r\n.A\r\nSomeone\r\n.W\r\n  first line\r\nsecond   line\r\n"
        b".I 002\r\n.W\r\nonly text\r\n.X\r\n1 2 3\r\n"
    )
    records = parse_smart(path)
    assert [r[0] for r in records] == ["1", "2"]  # ids as integers, without leading zeros
    assert records[0][1] == {"T": "A Title", "A": "Someone", "W": "first line second line"}
    docs = read_smart(path)
    assert docs.texts == ["A Title first line second line", "only text"]
    assert read_corpus(path).texts == docs.texts  # recognised by its ".I " start


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        (".T\nx\n", "field .T before any .I", 1),
        (".I 1\nstray text\n", "text outside a field", 2),
        (".I 1\n.W\na\n.I 1\n.W\nb\n", "record id 1 repeats", 4),
        (".I x1\n.W\na\n", "id 'x1' is not an integer", 1),
    ],
)
def test_smart_errors_name_the_line(tmp_path: Path, content: str, message: str, line: int) -> None:
    path = tmp_path / "bad.all"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        parse_smart(path)
    assert info.value.line == line


def test_jsonl_corpus_fields_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        json.dumps({"_id": "d1", "title": "Wing", "text": "lift in a slipstream"})
        + "\n\n"
        + json.dumps({"_id": 2, "title": "", "text": "heat"})
        + "\n"
    )
    docs = read_corpus(path)
    assert docs.ids == ["d1", "2"] and docs.texts == ["Wing lift in a slipstream", "heat"]
    assert read_corpus(path, text_fields=["text"]).texts == ["lift in a slipstream", "heat"]
    gz = tmp_path / "corpus.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_corpus(gz) == docs
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "contents": "x"}\n{"id": "b", "contents": 5}\n')
    with pytest.raises(InputError, match="field 'contents' is int") as info:
        read_corpus(tmp_path / "bad.jsonl")
    assert info.value.line == 2
    (tmp_path / "bad2.jsonl").write_text('{"id": "a", "contents": "x"}\n{"id": "b", \n')
    with pytest.raises(InputError, match="not valid JSON") as info:
        read_corpus(tmp_path / "bad2.jsonl")
    assert info.value.line == 2
    (tmp_path / "bad3.jsonl").write_text('{"name": "a", "contents": "x"}\n')
    with pytest.raises(InputError, match="no id field"):
        read_corpus(tmp_path / "bad3.jsonl")


def test_tsv_corpus_and_queries(tmp_path: Path) -> None:
    path = tmp_path / "collection.tsv"
    path.write_text("id\ttitle\ttext\nd1\tWing\tlift\nd2\t\theat flux\n")
    docs = read_corpus(path)
    assert docs.ids == ["d1", "d2"] and docs.texts == ["Wing lift", "heat flux"]
    topics = tmp_path / "topics.tsv.gz"
    topics.write_bytes(gzip.compress(b"1\tfirst query\n3\tthird query\n"))
    assert read_queries(topics) == Documents(["1", "3"], ["first query", "third query"])
    assert read_queries(topics, renumber=True).ids == ["1", "2"]
    (tmp_path / "bad.tsv").write_text("d1\tok\nd2\n")
    with pytest.raises(InputError, match="one field only") as info:
        read_corpus(tmp_path / "bad.tsv")
    assert info.value.line == 2


def test_beir_folder(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "T1", "text": "wing lift"}\n{"_id": "d2", "title": "T2", "text": "heat"}\n'
    )
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "lift"}\n{"_id": "q2", "text": "heat"}\n{"_id": "q3", "text": "unjudged"}\n'
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n")
    collection = read_beir(tmp_path)
    assert collection.documents.texts == ["T1 wing lift", "T2 heat"]
    assert collection.queries.ids == ["q1", "q2"]
    assert collection.qrels == {"q1": {"d1": 1}, "q2": {"d2": 2}}
    assert len(read_beir(tmp_path, judged_only=False).queries) == 3
    assert collection.read_qrels().label_histogram() == {1: 1, 2: 1}
    with pytest.raises(InputError, match=r"no qrels/dev\.tsv"):
        read_beir(tmp_path, "dev")
    assert read_queries(tmp_path).ids == ["q1", "q2", "q3"]


def test_unknown_names() -> None:
    with pytest.raises(ConventionError, match="cranfield, cisi, medline, cacm, adi, npl"):
        read_classic("trec8")
    with pytest.raises(ConventionError, match="unknown collection"):
        load_collection("no-such-thing")
    with pytest.raises(ConventionError, match="unknown corpus format"):
        read_corpus("x.jsonl", format="xml")


# ------------------------------------------------------------------------------------- real collections

COUNTS = {  # documents, judged queries, judgements: each folder's SOURCE.md
    "cranfield": (1400, 225, 1837),
    "cisi": (1460, 76, 3114),
    "medline": (1033, 30, 696),
    "cacm": (3204, 52, 796),
    "npl": (11429, 93, 2083),
    "adi": (82, 35, 170),
}


@pytest.mark.parametrize("name", list(COUNTS))
def test_classic_counts(shared_data: Path, name: str) -> None:
    collection = read_classic(name, shared_data)
    docs, queries, judgements = COUNTS[name]
    assert len(collection.documents) == docs
    assert len(set(collection.documents.ids)) == docs
    assert len(collection.queries) == queries
    assert sum(len(v) for v in collection.qrels.values()) == judgements
    assert set(collection.qrels) <= set(collection.queries.ids)


def test_cranfield_pitfalls(shared_data: Path) -> None:
    collection = read_classic("cranfield", shared_data)
    # .I 001, 002, 004 ... become 1, 2, 3 ...; the third query in the file is cranqrel's query 3
    assert collection.queries.ids[:3] == ["1", "2", "3"]
    assert collection.queries.texts[2].startswith("what problems of heat conduction in composite slabs")
    assert len(collection.queries) == 225 and collection.queries.ids[-1] == "225"
    # Cleverdon's grades: 1 = complete answer -> label 4; cranqrel line "1 184 2" -> 3; -1 -> 0
    assert collection.qrels["1"]["184"] == 3
    labels = [label for judged in collection.qrels.values() for label in judged.values()]
    assert sorted(set(labels)) == [0, 1, 2, 3, 4] and labels.count(0) == 225
    ir_datasets = read_classic("cranfield", shared_data, cranfield_grading="ir_datasets")
    assert ir_datasets.qrels["1"]["184"] == 2
    assert any("renumbered" in note for note in collection.notes)
    # documents 471 and 995 are empty records (no title either): kept, with no text
    texts = collection.documents.to_dict()
    assert texts["471"] == texts["995"] == ""


def test_cisi_cacm_and_npl_pitfalls(shared_data: Path) -> None:
    cisi = read_classic("cisi", shared_data, judged_only=False)
    assert len(cisi.queries) == 112 and len(cisi.qrels) == 76
    cacm = read_classic("cacm", shared_data)
    assert "1410" in cacm.qrels["1"]  # "01 1410" in qrels.text, compared as integers
    assert cacm.documents.to_dict()["1"] == "Preliminary Report-International Algebraic Language"
    npl = read_classic("npl", shared_data)
    assert npl.queries.texts[0] == "MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES"
    assert max(int(d) for judged in npl.qrels.values() for d in judged) == 11411
    medline = read_classic("medline", shared_data)
    assert set(medline.qrels["1"].values()) == {1}


def test_scifact(shared_data: Path) -> None:
    collection = read_scifact(shared_data)
    assert len(collection.documents) == 5183
    assert len(collection.queries) == 300
    assert sum(len(v) for v in collection.qrels.values()) == 339
    assert collection.queries.texts[0] == "0-dimensional biomaterials show inductive properties."
    judged = {d for v in collection.qrels.values() for d in v}
    assert judged <= set(collection.documents.ids)


def test_bm25_on_cranfield_is_pinned(shared_data: Path) -> None:
    """A regression pin: the figures of benchmarks/bm25_quality.py (the same as bm25s's for nDCG@10)."""
    from stagewise import evaluate
    from stagewise.retrieval import BM25Index

    collection = read_classic("cranfield", shared_data)
    index = BM25Index.build(collection.documents)
    run = index.search(collection.queries, k=1000)
    means = evaluate(collection.read_qrels(), run, ["ndcg@10", "map"]).means[run.name]
    assert means["ndcg@10"] == pytest.approx(0.3695, abs=5e-5)
    assert means["map"] == pytest.approx(0.3062, abs=5e-5)


@pytest.mark.parametrize(("name", "text"), [("empty.jsonl", ""), ("empty.tsv", "\n"), ("blank.jsonl", "\n\n")])
def test_a_corpus_without_documents_is_refused(tmp_path, name: str, text: str) -> None:
    """Indexing nothing used to succeed with 0 documents (exit 0) and every search then found nothing."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match="has no documents"):
        read_corpus(path)
