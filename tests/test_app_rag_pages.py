"""The web app's RAG pages: every passage a person may mark as gold shows its text (its own record's, another
record's, or the corpus's) and where it stands (in the context, retrieved only, not retrieved); sample and passage
ids holding ``/``, ``..`` and white space open and are marked; without ``--rag`` the link answers a page saying
how to start the server with RAG records."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient

from stagewise.app.ids import to_segment
from stagewise.app.open import open_rag
from stagewise.app.server import create_app

RECORDS = [
    {
        "id": "s/../1",
        "question": "who wrote it?",
        "retrieved": ["p/1", "..", "a b", "gold ü"],
        "context": ["p/1", ".."],
        "gold_evidence": ["gold ü"],
        "passages": {"p/1": "first passage text", "..": "dots passage text"},
        "answer": "Nobody [p/1].",
        "gold_answers": ["Austen"],
    },
    {
        "id": "s 2",
        "retrieved": ["gold ü"],
        "gold_evidence": ["gold ü"],
        "passages": {"gold ü": "Jane Austen wrote it."},
        "answer": "Austen [gold ü]",
        "gold_answers": ["Austen"],
    },
    {
        "id": "s3",
        "retrieved": ["x1"],
        "gold_evidence": ["from-corpus"],
        "passages": {"x1": "unrelated"},
        "answer": "no idea",
        "gold_answers": ["Emma"],
    },
]


def _client(app):
    return TestClient(app, base_url="http://127.0.0.1:8765")


def _write(tmp_path):
    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "from-corpus", "text": "Emma is by Austen."}) + "\n", encoding="utf-8")
    return path, corpus


def _page_data(html: str) -> dict:
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert blob is not None
    return json.loads(blob.group(1))


def _passages(client, sid):
    res = client.get(f"/rag/{to_segment(sid)}")
    assert res.status_code == 200
    return {p["id"]: p for p in _page_data(res.text)["context"]}


def test_every_passage_shows_its_text_and_where_it_stands(tmp_path):
    path, corpus = _write(tmp_path)
    client = _client(create_app(None, rag=open_rag(str(path), tmp_path / "l.sqlite", corpus=str(corpus))))
    listing = client.get("/rag").text
    for record in RECORDS:  # each listed sample's link opens it, whatever its id holds
        assert f"href='/rag/{to_segment(record['id'])}'" in listing
    first = _passages(client, "s/../1")
    assert list(first) == ["p/1", "..", "a b", "gold ü"]
    assert first["p/1"]["where"] == "in the context (retrieved at rank 1)"
    assert first["a b"]["where"] == "retrieved only (rank 3), not in the context"
    # the gold passage, outside the context: its text from the record that holds it, said to be from there
    gold = first["gold ü"]
    assert gold["where"] == "retrieved only (rank 4), not in the context"
    assert (gold["text"], gold["text_from"]) == ("Jane Austen wrote it.", "sample s 2")
    assert (first["a b"]["text"], first["a b"]["text_from"]) == ("", None)  # nobody holds it: said so, not hidden
    assert (first["p/1"]["text"], first["p/1"]["text_from"]) == ("first passage text", "this sample")
    # a gold passage never retrieved is listed, with the corpus's text
    third = _passages(client, "s3")
    assert third["from-corpus"]["where"] == "not retrieved"
    assert (third["from-corpus"]["text"], third["from-corpus"]["text_from"]) == ("Emma is by Austen.", "the corpus")
    page = client.get(f"/rag/{to_segment('s3')}").text
    assert "<script src='/static/rag.js'>" in page  # the page's script, served from the package
    script = client.get("/static/rag.js").text
    assert "no text: neither the records nor a corpus hold this passage" in script  # the page's words for it


def test_passages_with_path_like_ids_are_marked_and_the_label_recomputed(tmp_path):
    path, _ = _write(tmp_path)
    samples = open_rag(str(path), tmp_path / "l.sqlite")
    client = _client(create_app(None, rag=samples))
    sid = "s/../1"
    before = samples.samples[sid]["label"]
    res = client.put(f"/api/rag/{to_segment(sid)}/evidence/{to_segment('..')}", json={"gold": True})
    assert res.status_code == 200, res.text
    assert res.json()["gold"] == ["..", "gold ü"] and res.json()["label"] != before
    res = client.put(f"/api/rag/{to_segment(sid)}/evidence/{to_segment('a b')}", json={"gold": True})
    assert res.status_code == 200 and "a b" in res.json()["gold"]
    assert samples.store.labels(sid)[sid] == {"..": 1, "a b": 1, "gold ü": 1}
    wrong = client.put(f"/api/rag/{to_segment('s 2')}/evidence/{to_segment('..')}", json={"gold": True})
    assert wrong.status_code == 404 and "unknown passage id '..' for sample 's 2'" in wrong.json()["error"]


def test_without_rag_records_the_link_answers_a_page_saying_how_to_start_with_them(tmp_path):
    client = _client(create_app(None))
    res = client.get("/rag")
    assert res.status_code == 404 and res.headers["content-type"].startswith("text/html")
    assert "stagewise serve --rag RECORDS.jsonl" in res.text and "<nav>" in res.text
    # the API keeps answering JSON
    api = client.put("/api/rag/x/evidence/y", json={"gold": True})
    assert api.status_code == 404 and "error" in api.json()
    # the other pages' links the same: a page, not raw JSON
    queries = client.get("/queries")
    assert queries.status_code == 404 and "stagewise serve --qrels Q" in queries.text and "<nav>" in queries.text


def test_serve_with_rag_and_a_corpus_shows_the_corpus_text_in_chromium(tmp_path):
    from tests import browser_helpers

    if browser_helpers.missing() is not None:
        pytest.skip(str(browser_helpers.missing()))
    from tests.app_helpers import browser, serving
    from tests.browser_helpers import open_page

    path, corpus = _write(tmp_path)
    args = ["--rag", str(path), "--corpus", str(corpus), "--db", str(tmp_path / "labels.sqlite")]
    with serving(args) as server, browser() as context:
        opened = open_page(context, server.url + "/rag")
        page = opened.page
        page.get_by_role("link", name="s3").click()
        passage = page.locator("[data-testid=passage][data-pid=from-corpus]")
        assert passage.get_by_test_id("passage-text").inner_text() == "Emma is by Austen."
        assert "not retrieved, gold evidence" in passage.get_by_test_id("passage-where").inner_text()
        page.goto(server.url + "/rag")
        page.get_by_role("link", name="s/../1").click()
        dots = page.locator('[data-testid=passage][data-pid=".."]')
        assert dots.get_attribute("data-gold") == "0"
        dots.get_by_test_id("toggle-gold").click()
        page.locator('[data-pid=".."][data-gold="1"]').wait_for()
        assert "..: stage label" in page.locator("#status").inner_text()
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []
