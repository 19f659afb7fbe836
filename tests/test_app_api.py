"""The web app's JSON API (Starlette's test client, no socket): metrics after a relabel equal evaluate() on the
exported labels; bad labels, ids, bodies and cross-site requests get a 4xx and leave the database unchanged."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient

import stagewise
from stagewise._bundled import sample_path
from stagewise.app.model import METRICS
from stagewise.app.server import MAX_BODY, create_app
from stagewise.cli.serve_cmd import build_workspace

QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))


@pytest.fixture
def served(tmp_path):
    ws = build_workspace(QRELS, [RUN], tmp_path / "labels.sqlite")
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
    return ws, client, tmp_path


def _check_against_evaluate(ws, client, tmp_path):
    qrels = tmp_path / "now.qrels"
    qrels.write_text(client.get("/api/qrels").text)
    expected = stagewise.evaluate(str(qrels), {"results.test": RUN}, list(METRICS)).means["results.test"]
    got = client.get("/api/queries").json()["means"]["results.test"]
    assert got == pytest.approx(expected, abs=1e-12)


def test_means_and_query_metrics_follow_every_relabel_as_evaluate_computes_them(served):
    ws, client, tmp_path = served
    _check_against_evaluate(ws, client, tmp_path)
    qid = client.get("/api/queries").json()["queries"][0]["qid"]
    page = client.get(f"/api/queries/{qid}").json()
    top = [d["docid"] for d in page["runs"]["results.test"][:3]]
    before = page["metrics"]["results.test"]
    res = client.put(f"/api/labels/{qid}/{top[0]}", json={"label": 3}).json()
    assert res["label"] == 3 and res["metrics"]["results.test"] != before
    # both gain conventions move, and differently, once a label of 3 sits in the top 10
    assert res["metrics"]["results.test"]["ndcg@10"] != res["metrics"]["results.test"]["ndcg@10(gain=exp)"]
    _check_against_evaluate(ws, client, tmp_path)
    assert client.delete(f"/api/labels/{qid}/{top[1]}").json()["label"] is None
    _check_against_evaluate(ws, client, tmp_path)
    undone = client.post("/api/undo", json={}).json()
    assert (undone["docid"], undone["label"]) == (top[1], page["labels"].get(top[1]))
    client.post("/api/undo", json={})
    assert client.get(f"/api/queries/{qid}").json()["metrics"]["results.test"] == pytest.approx(before)
    _check_against_evaluate(ws, client, tmp_path)
    assert client.post("/api/undo", json={}).status_code == 409


BAD = [
    ("put", "/api/labels/{q}/{d}", {"json": {"label": 4}}, 422, "not one of 0, 1, 2, 3"),
    ("put", "/api/labels/{q}/{d}", {"json": {"label": -1}}, 422, "not one of"),
    ("put", "/api/labels/{q}/{d}", {"json": {"label": "2"}}, 422, "not one of"),
    ("put", "/api/labels/{q}/{d}", {"json": {"label": True}}, 422, "not one of"),
    ("put", "/api/labels/{q}/{d}", {"json": {"label": 1, "x": 2}}, 400, "send"),
    ("put", "/api/labels/{q}/{d}", {"json": [1]}, 400, "send"),
    (
        "put",
        "/api/labels/{q}/{d}",
        {"content": b"{bad", "headers": {"content-type": "application/json"}},
        400,
        "not valid JSON",
    ),
    (
        "put",
        "/api/labels/{q}/{d}",
        {"content": b"\xff\xfe", "headers": {"content-type": "application/json"}},
        400,
        "not valid JSON",
    ),
    (
        "put",
        "/api/labels/{q}/{d}",
        {"content": b'{"label": 1' + b" " * MAX_BODY + b"}", "headers": {"content-type": "application/json"}},
        413,
        "too large",
    ),
    (
        "put",
        "/api/labels/{q}/{d}",
        {"content": b'{"label": 1}', "headers": {"content-type": "text/plain"}},
        415,
        "JSON",
    ),
    (
        "put",
        "/api/labels/{q}/{d}",
        {"json": {"label": 1}, "headers": {"origin": "http://evil.example"}},
        403,
        "cross-site",
    ),
    ("put", "/api/labels/nosuchquery/{d}", {"json": {"label": 1}}, 404, "unknown query id"),
    ("put", "/api/labels/{q}/nosuchdoc", {"json": {"label": 1}}, 404, "unknown document id"),
    ("put", "/api/labels/{q}/..%2F..%2Fetc%2Fpasswd", {"json": {"label": 1}}, 404, "no such"),
    ("delete", "/api/labels/{q}/nosuchdoc", {}, 404, "unknown document id"),
    ("get", "/api/queries/..%2Fpyproject.toml", {}, 404, "no such"),
    ("get", "/api/queries/pyproject.toml", {}, 404, "unknown query id"),
    ("post", "/api/queries", {"json": {}}, 405, "not allowed"),
    ("get", "/api/playground?labels=1,9", {}, 400, "0 to 3"),
    ("get", "/api/playground?gain=cubic", {}, 400, "unknown gain"),
]


@pytest.mark.parametrize(("method", "url", "kwargs", "status", "message"), BAD)
def test_bad_requests_get_a_4xx_with_a_message_and_change_nothing(served, method, url, kwargs, status, message):
    ws, client, _ = served
    qid = client.get("/api/queries").json()["queries"][0]["qid"]
    doc = client.get(f"/api/queries/{qid}").json()["runs"]["results.test"][0]["docid"]
    before, history = ws.store.qrels_text(), ws.store.history()
    response = getattr(client, method)(url.format(q=qid, d=doc), **kwargs)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert ws.store.qrels_text() == before and ws.store.history() == history


def test_without_a_token_a_foreign_host_name_is_refused(served):
    # DNS rebinding: evil.example resolving to 127.0.0.1 makes its pages same-origin with the server
    _, client, _ = served
    for host in ("evil.example:8765", "evil.example", "10.0.0.5:8765"):
        response = client.get("/api/queries", headers={"host": host})
        assert response.status_code == 421 and "loopback addresses or localhost" in response.json()["error"]
    # every loopback address the CLI accepts without a token is one the server answers to
    for host in ("localhost:8765", "127.0.0.1", "[::1]:8765", "127.0.0.2:8765"):
        assert client.get("/api/queries", headers={"host": host}).status_code == 200


def test_with_a_token_every_request_must_carry_it(tmp_path):
    ws = build_workspace(QRELS, [RUN], tmp_path / "labels.sqlite")
    client = TestClient(create_app(ws, token="s3cret-token"), base_url="http://10.0.0.5:8765")
    assert client.get("/api/queries").status_code == 401
    assert client.get("/playground").status_code == 401
    assert client.get("/api/queries", headers={"x-stagewise-token": "wrong-token"}).status_code == 401
    assert client.get("/api/queries", headers={"x-stagewise-token": "s3cret-token"}).status_code == 200
    # ?token= once sets a same-site cookie, so the page's own requests carry it from then on
    first = client.get("/playground?token=s3cret-token")
    assert first.status_code == 200 and "samesite=strict" in first.headers["set-cookie"].lower()
    assert client.get("/api/queries").status_code == 200


def test_the_playground_alone_has_no_label_api(tmp_path):
    client = TestClient(create_app(None), base_url="http://127.0.0.1:8765")
    assert client.get("/", follow_redirects=False).headers["location"] == "/playground"
    page = client.get("/playground")
    assert page.status_code == 200 and 'data-testid="ndcg-exp"' in page.text
    assert client.get("/api/queries").status_code == 404
    assert client.put("/api/labels/q/d", json={"label": 1}).status_code == 404
    p = client.get("/api/playground?labels=1,0,2&gain=exp").json()
    assert (p["dcg"], round(p["ideal_dcg"], 4), round(p["ndcg_exp"], 4), round(p["ndcg_linear"], 4), p["rr"]) == (
        2.5,
        3.6309,
        0.6885,
        0.7602,
        1.0,
    )
    assert [round(t["discount"], 4) for t in p["terms"]] == [1.0, 1.585, 2.0]
    assert p["ideal"] == [2, 1, 0]
    assert client.get("/api/playground?labels=0,0,3&gain=linear").json()["rr"] == pytest.approx(1 / 3)


def test_rag_sample_pages_show_the_stage_label_and_marking_evidence_recomputes_it(tmp_path):
    import json

    from stagewise.app.open import open_rag as read_rag
    from stagewise.rag.diagnose import evaluate_rag
    from tests.report_helpers import RAG_RECORDS

    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RAG_RECORDS))
    samples = read_rag(str(path), tmp_path / "labels.sqlite")
    client = TestClient(create_app(None, rag=samples), base_url="http://127.0.0.1:8765")
    assert client.get("/", follow_redirects=False).headers["location"] == "/rag"
    listing = client.get("/rag").text
    expected = {row.id: row for row in evaluate_rag(RAG_RECORDS).rows}
    for sid, row in expected.items():
        assert f"href='/rag/{sid}'" in listing and row.label in listing
    assert samples.samples["r1"]["label"] == expected["r1"].label == "ok"
    assert samples.samples["r1"]["gold"] == ["p9"] and "Jane Austen wrote it [p9]." in client.get("/rag/r1").text
    # p9 is no longer gold, p3 is (both in the context): still ok; then nothing gold in the context
    res = client.put("/api/rag/r1/evidence/p9", json={"gold": False}).json()
    assert res["gold"] == [] and res["label"] == evaluate_rag([dict(RAG_RECORDS[0], gold_evidence=[])]).rows[0].label
    res = client.put("/api/rag/r1/evidence/p1", json={"gold": True}).json()  # retrieved third, outside the context
    assert res["gold"] == ["p1"] and res["label"] == "lucky"
    assert res["label"] == evaluate_rag([dict(RAG_RECORDS[0], gold_evidence=["p1"])]).rows[0].label
    # kept: a fresh start reads the marks back
    again = read_rag(str(path), tmp_path / "labels.sqlite")
    assert again.samples["r1"]["gold"] == ["p1"] and again.samples["r1"]["label"] == "lucky"
    for url, body, status in [
        ("/api/rag/nope/evidence/p1", {"gold": True}, 404),
        ("/api/rag/r1/evidence/p77", {"gold": True}, 404),
        ("/api/rag/r1/evidence/p1", {"gold": 1}, 400),
    ]:
        assert client.put(url, json=body).status_code == status
    assert client.get("/rag/nope").status_code == 404


def test_document_and_query_texts_are_shown_when_given(tmp_path):
    qrels = tmp_path / "q.qrels"
    qrels.write_text("1 0 d1 2\n1 0 d2 0\n2 0 d3 1\n")
    run = tmp_path / "a.run"
    run.write_text("1 Q0 d2 1 2.0 a\n1 Q0 d1 2 1.0 a\n2 Q0 d3 1 1.0 a\n")
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("d1\tthe <b>first</b> document\nd2\tsecond\nd3\tthird\nd4\tnever ranked\n")
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\twhat is first\n2\tthird things\n")
    ws = build_workspace(str(qrels), [str(run)], tmp_path / "l.sqlite", corpus=str(corpus), queries=str(topics))
    assert "d4" not in ws.texts
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
    rows = {r["qid"]: r["text"] for r in client.get("/api/queries").json()["queries"]}
    assert rows == {"1": "what is first", "2": "third things"}
    page = client.get("/api/queries/1").json()
    assert page["text"] == "what is first"
    assert [(d["docid"], d["text"]) for d in next(iter(page["runs"].values()))] == [
        ("d2", "second"),
        ("d1", "the <b>first</b> document"),
    ]
    html = client.get("/queries/1").text
    assert "<b>first</b>" not in html  # texts travel as escaped JSON and are escaped again when shown


def test_the_report_page_is_the_html_report_over_the_current_labels(served):
    pytest.importorskip("matplotlib", reason="the report extra is not installed (make test installs it)")
    _, client, _ = served
    before = client.get("/report")
    assert before.status_code == 200 and before.text.count("<svg") >= 3
    qid = client.get("/api/queries").json()["queries"][0]["qid"]
    doc = client.get(f"/api/queries/{qid}").json()["runs"]["results.test"][0]["docid"]
    client.put(f"/api/labels/{qid}/{doc}", json={"label": 3})
    mean = client.get("/api/queries").json()["means"]["results.test"]["ndcg@10"]
    assert f"{mean:.4f}" in client.get("/report").text


def test_a_page_ranks_results_in_the_order_its_metrics_count(tmp_path):
    """Scores equal in single precision tie, and the doc id decides (trec_eval's order): the page must show that
    order, or the rank beside a result would not be the rank its reciprocal rank counts."""
    from stagewise.app.model import Workspace
    from stagewise.store import LabelStore

    store = LabelStore(tmp_path / "l.sqlite", {"q1": {"a": 1}})
    ws = Workspace(store, {"run": {"q1": {"a": 1.00000001, "b": 1.0}}})
    shown = [r["docid"] for r in ws.query("q1")["runs"]["run"]]
    expected = stagewise.read_run({"q1": {"a": 1.00000001, "b": 1.0}}).rankings()["q1"]
    assert shown == expected == ["b", "a"]
    assert ws.metrics("q1")["run"]["mrr@10"] == 1 / (shown.index("a") + 1)


def test_every_page_states_its_conventions_and_an_unjudged_query_has_no_values(tmp_path):
    from stagewise.app.model import Workspace
    from stagewise.store import LabelStore

    store = LabelStore(tmp_path / "l.sqlite", {"q1": {"a": 1}})
    ws = Workspace(store, {"run": {"q1": {"a": 1.0}, "q9": {"a": 2.0}}})
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
    listed = client.get("/api/queries").json()
    assert any("ties: score descending compared in single precision" in c for c in listed["conventions"])
    assert any("2^label - 1" in c for c in listed["conventions"])
    rows = {r["qid"]: r["runs"]["run"] for r in listed["queries"]}
    assert rows["q1"]["ndcg@10"] == 1.0 and rows["q9"]["ndcg@10"] is None  # q9 has no judgements, no value
    assert listed["means"]["run"]["ndcg@10"] == 1.0  # nor is it in the mean
    assert client.get("/api/queries/q9").json()["metrics"]["run"]["map"] is None
