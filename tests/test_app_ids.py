"""Ids are route data, never paths: query and document ids holding ``/``, ``.``, ``..``, ``%2F``, white space,
``?``, ``#`` and unicode open, relabel, read back and export through the real ASGI app (httpx, no socket) and in
Chromium; JSON bodies nested too deep or otherwise malformed get a 400 with a message, never a 500."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient

from stagewise.app.ids import from_segment, to_segment
from stagewise.app.open import open_workspace
from stagewise.app.server import MAX_BODY, create_app

STAGEWISE = str(Path(sys.executable).with_name("stagewise"))

# (query id, doc id): every kind of id a path would mangle
PAIRS = [
    ("q/1", "a/b"),
    ("..", "."),
    (".", ".."),
    ("q%2F2", "d%2Fe"),
    ("q 3", "doc with spaces"),
    ("é/ü ☃", "ünï/../cödé"),
    ("q?x=1#f", "d#frag?y"),
    ("~q", "~"),
    ("__proto__", "constructor"),
    ("plain", "http://example.org/a/b?c=d"),
]


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    qrels, run = folder / "qrels.jsonl", folder / "a.jsonl"
    with open(qrels, "w", encoding="utf-8") as q, open(run, "w", encoding="utf-8") as r:
        for qid, doc in PAIRS:
            q.write(json.dumps({"query_id": qid, "doc_id": doc, "relevance": 1}) + "\n")
            for rank, d in enumerate([doc, f"{doc}/other", "x"], start=1):
                r.write(json.dumps({"query_id": qid, "doc_id": d, "score": 10.0 - rank}) + "\n")
    return qrels, run


@pytest.fixture
def served(tmp_path):
    qrels, run = _write_inputs(tmp_path)
    ws = open_workspace(str(qrels), {"a": str(run)}, tmp_path / "labels.sqlite")
    return ws, TestClient(create_app(ws), base_url="http://127.0.0.1:8765"), tmp_path


def test_every_id_is_one_segment_that_decodes_to_itself():
    for qid, doc in PAIRS:
        for value in (qid, doc):
            segment = to_segment(value)
            assert "/" not in segment and segment not in (".", "..") and from_segment(segment) == value
            assert all(c.isascii() and (c.isalnum() or c in "._-~") for c in segment)
    assert to_segment("q1") == "q1"  # a plain id is its own segment: the old URLs still work
    assert from_segment("~!!") is None and from_segment("~YR") is None  # not base64url; non-canonical bits


def test_a_label_on_every_id_is_set_read_back_and_exported(served):
    ws, client, tmp_path = served
    rows = {r["qid"]: r for r in client.get("/api/queries").json()["queries"]}
    assert set(rows) == {q for q, _ in PAIRS}
    for qid, doc in PAIRS:
        key = rows[qid]["key"]
        assert client.get(f"/queries/{key}").status_code == 200
        page = client.get(f"/api/queries/{key}").json()
        assert page["qid"] == qid
        listed = {d["docid"]: d["key"] for d in page["runs"]["a"]}
        assert set(listed) == {doc, f"{doc}/other", "x"}
        res = client.put(f"/api/labels/{key}/{listed[doc]}", json={"label": 3})
        assert res.status_code == 200, res.text
        assert (res.json()["qid"], res.json()["docid"], res.json()["old"], res.json()["label"]) == (qid, doc, 1, 3)
        res = client.put(f"/api/labels/{key}/{listed[f'{doc}/other']}", json={"label": 2})
        assert res.status_code == 200 and res.json()["metrics"]["a"]["P@10"] == pytest.approx(2 / 10)
        assert client.get(f"/api/queries/{key}").json()["labels"] == {doc: 3, f"{doc}/other": 2}
    # another query's document is not this one's: ids are looked up, not resolved like paths
    wrong = client.put(f"/api/labels/{rows['..']['key']}/{to_segment('a/b')}", json={"label": 1})
    assert wrong.status_code == 404 and "unknown document id 'a/b' for query '..'" in wrong.json()["error"]
    expected = {q: {d: 3, f"{d}/other": 2} for q, d in PAIRS}
    assert ws.store.labels() == expected
    # the JSONL export holds every pair; a path-like id did not escape into another query or document
    lines = client.get("/api/qrels?format=jsonl").text.splitlines()
    exported: dict[str, dict[str, int]] = {}
    for line in lines:
        row = json.loads(line)
        exported.setdefault(row["query_id"], {})[row["doc_id"]] = row["relevance"]
    assert exported == expected
    # and as a user exports them, through the console entry point
    out = tmp_path / "labels.jsonl"
    done = subprocess.run(
        [STAGEWISE, "labels", "export", "--db", str(tmp_path / "labels.sqlite"), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    from stagewise.data.readers import read_qrels

    assert read_qrels(str(out)).to_dict() == expected


def test_the_trec_qrels_export_refuses_white_space_as_labels_export_does(served):
    _, client, tmp_path = served
    res = client.get("/api/qrels")
    assert res.status_code == 422
    error = res.json()["error"]
    assert "white space" in error and "'q 3'" in error and "format=jsonl" in error and ".jsonl" in error
    done = subprocess.run(
        [STAGEWISE, "labels", "export", "--db", str(tmp_path / "labels.sqlite"), "-o", str(tmp_path / "x.qrels")],
        capture_output=True,
        text=True,
    )
    # the same rule, the same first id named
    assert done.returncode == 2 and "'q 3'" in done.stderr and "white space" in done.stderr
    assert not (tmp_path / "x.qrels").exists()
    assert client.get("/api/qrels?format=xml").status_code == 400


def test_the_trec_qrels_export_of_ids_it_can_hold_is_unchanged(tmp_path):
    from stagewise.app.model import Workspace
    from stagewise.store import LabelStore

    store = LabelStore(tmp_path / "l.sqlite", {"q/1": {"..": 2, "a%2Fb": 0}, "é": {"ü": 1}})
    client = TestClient(create_app(Workspace(store, {})), base_url="http://127.0.0.1:8765")
    res = client.get("/api/qrels")
    assert res.status_code == 200
    assert res.text == "q/1 0 .. 2\nq/1 0 a%2Fb 0\né 0 ü 1\n" == store.qrels_text()  # in the store's order


def test_a_segment_that_is_not_an_encoded_id_is_a_404_naming_it(served):
    _, client, _ = served
    res = client.get("/api/queries/~!!")
    assert res.status_code == 404 and "'~!!' is not a query id" in res.json()["error"]
    page = client.get("/queries/~!!")  # a page answers a page, not raw JSON
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "is not a query id" in page.text
    # the request, an id put in the URL as it is: refused, saying how ids go in URLs
    raw = client.put("/api/labels/q1/a%2Fb", json={"label": 1})
    assert raw.status_code == 404 and "no such page or API route" in raw.json()["error"]
    assert "base64url" in raw.json()["error"]


NESTED = b"[" * 2000 + b"]" * 2000
BODIES = [
    (NESTED, "nested too deeply"),
    (b'{"label": ' + b"[" * 1500 + b"]" * 1500 + b"}", "nested too deeply"),
    (b'{"label": NaN}', "not valid JSON"),
    (b'{"label": Infinity}', "not valid JSON"),
    ('{"label": 1}'.encode("utf-16"), "not UTF-8"),
    (b'{"label": "\xff"}', "not UTF-8"),
    (b"\xef\xbb\xbf{}", "not valid JSON"),  # a UTF-8 byte-order mark
]


@pytest.mark.parametrize(("body", "message"), BODIES)
def test_a_malformed_json_body_is_a_400_with_a_message_on_every_route(served, body, message):
    ws, client, _ = served
    assert len(body) <= MAX_BODY
    key, doc = "plain", "x"  # ids that need no encoding
    client.put(f"/api/labels/{key}/{doc}", json={"label": 2})  # something undo could take back
    before, history = ws.store.labels(), ws.store.history()
    headers = {"content-type": "application/json"}
    for method, url in (("PUT", f"/api/labels/{key}/{doc}"), ("POST", "/api/undo")):
        res = client.request(method, url, content=body, headers=headers)
        assert res.status_code == 400, (method, res.text)
        assert message in res.json()["error"]
    assert ws.store.labels() == before and ws.store.history() == history


def test_numbers_and_types_a_label_cannot_be_get_a_short_4xx(served):
    _, client, _ = served
    key, doc = "plain", "x"
    headers = {"content-type": "application/json"}
    digits = b"9" * 4000
    for body in (
        b'{"label": ' + digits + b"}",
        b'{"label": 1e999}',
        b'{"label": {"a": ' + b"[" * 900 + b"]" * 900 + b"}}",
    ):
        res = client.put(f"/api/labels/{key}/{doc}", content=body, headers=headers)
        assert res.status_code == 422 and "is not one of 0, 1, 2, 3" in res.json()["error"]
        assert len(res.json()["error"]) < 120  # the value is named, cut short, not echoed whole
    for body in (b"[1]", b'"label"', b"3", b"null"):
        assert client.put(f"/api/labels/{key}/{doc}", content=body, headers=headers).status_code == 400


def test_in_chromium_a_label_on_a_doc_whose_id_holds_slashes_and_dots_is_set_and_kept(tmp_path):
    from tests import browser_helpers

    if browser_helpers.missing() is not None:
        pytest.skip(str(browser_helpers.missing()))
    from tests.app_helpers import browser, serving
    from tests.browser_helpers import open_page

    qrels, run = _write_inputs(tmp_path)
    db = tmp_path / "labels.sqlite"
    qid, docid = "é/ü ☃", "ünï/../cödé"
    with serving(["--qrels", str(qrels), "--run", str(run), "--db", str(db)]) as server, browser() as context:
        opened = open_page(context, server.url + "/queries")
        page = opened.page
        page.get_by_test_id("search").fill("☃")
        rows = page.get_by_test_id("query-row")
        rows.first.wait_for()
        assert rows.count() == 1
        rows.first.locator("a").click()  # the link the page made
        page.wait_for_url(f"**/queries/{to_segment(qid)}")
        doc = page.locator(f'[data-testid=doc][data-docid="{docid}"]').first
        assert doc.get_attribute("data-docid") == docid and doc.get_attribute("data-label") == "1"
        doc.get_by_test_id("set-3").click()
        page.locator(f'[data-testid=doc][data-docid="{docid}"][data-label="3"]').first.wait_for()
        assert page.locator("#status").inner_text() == f"{docid}: 1 → 3"
        page.reload()  # the page as the server now serves it
        assert page.locator(f'[data-testid=doc][data-docid="{docid}"]').first.get_attribute("data-label") == "3"
        # ids that name an object's own properties are labels like any other (__proto__, constructor)
        page.goto(f"{server.url}/queries/{to_segment('__proto__')}")
        proto = page.locator('[data-testid=doc][data-docid="constructor"]').first
        assert proto.get_attribute("data-label") == "1"
        proto.get_by_test_id("set-2").click()
        page.locator('[data-docid=constructor][data-label="2"]').first.wait_for()
        other = page.locator('[data-testid=doc][data-docid="constructor/other"]').first
        assert other.get_attribute("data-label") == ""
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []
    from stagewise.store import LabelStore

    store = LabelStore(db)
    try:
        assert store.get(qid, docid) == 3 and store.get(qid, f"{docid}/other") is None
        assert store.get("__proto__", "constructor") == 2
    finally:
        store.close()


def test_empty_query_and_document_ids_round_trip(tmp_path):
    from stagewise.app.model import Workspace
    from stagewise.store import LabelStore

    store = LabelStore(tmp_path / "l.sqlite", {"": {"": 1, "d": 0}})
    client = TestClient(
        create_app(Workspace(store, {"a": {"": {"": 2.0, "d": 1.0}}})), base_url="http://127.0.0.1:8765"
    )
    (row,) = client.get("/api/queries").json()["queries"]
    assert (row["qid"], row["key"]) == ("", "~")
    assert client.get("/queries/~").status_code == 200
    docs = {d["docid"]: d["key"] for d in client.get("/api/queries/~").json()["runs"]["a"]}
    assert docs == {"": "~", "d": "d"}
    res = client.put("/api/labels/~/~", json={"label": 3})
    assert res.status_code == 200 and (res.json()["qid"], res.json()["docid"], res.json()["old"]) == ("", "", 1)
    assert client.get("/api/queries/~").json()["labels"] == {"": 3, "d": 0}
    assert [json.loads(x) for x in client.get("/api/qrels?format=jsonl").text.splitlines()] == [
        {"query_id": "", "doc_id": "", "relevance": 3},
        {"query_id": "", "doc_id": "d", "relevance": 0},
    ]
    refused = client.get("/api/qrels")  # an empty TREC field would shift the line's columns
    assert refused.status_code == 422 and "empty" in refused.json()["error"]
