"""The campaign server's API and pages through Starlette's test client (httpx): tokens and roles, blind views, the
query's terms highlighted as text segments, judging, skipping, undo, retries, bad bodies refused, the admin's
figures against sklearn, the export against the merge policy; and the CLI around them."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient

from stagewise.app.campaign import create_campaign_app
from stagewise.assess.campaign_build import CampaignOptions, create_campaign
from stagewise.store.campaigns import CampaignStore
from tests.test_campaign import write_campaign_inputs

BASE = "http://testserver"


@pytest.fixture
def served(tmp_path):
    pool, topics, collection = write_campaign_inputs(tmp_path)
    store = CampaignStore(tmp_path / "campaign.sqlite")
    made = create_campaign(
        store, "trial 1", pool=pool, collection=collection, topics=topics, assessors=["ann", "bob"],
        options=CampaignOptions(overlap=0.5, seed=3), prelabel=lambda items: [1] * len(items), prelabel_name="always",
    )  # fmt: skip
    client = TestClient(create_campaign_app(store), base_url=BASE)
    yield store, made, client
    store.close()


def _headers(token):
    return {"X-Stagewise-Token": token, "Content-Type": "application/json", "Origin": BASE}


def _judge(client, made, who, item, label, spent=2.0, request=None):
    body = {"item": item, "label": label, "spent": spent}
    if request is not None:
        body["request"] = request
    return client.post("/c/~dHJpYWwgMQ/api/judge", content=json.dumps(body), headers=_headers(made.tokens[who]))


def test_tokens_decide_who_sees_what(served):
    _, made, client = served
    api = "/c/~dHJpYWwgMQ/api"  # "trial 1" as an id segment
    assert client.get(f"{api}/next").status_code == 401
    assert client.get(f"{api}/next", headers=_headers("x" * 24)).status_code == 401
    assert client.get(f"{api}/admin", headers=_headers(made.tokens["ann"])).status_code == 401  # not the admin
    assert client.get(f"{api}/next", headers=_headers(made.admin_token)).status_code == 401  # not an assessor
    assert client.get("/c/nope/api/next", headers=_headers(made.tokens["ann"])).status_code == 404
    page = client.get(f"/c/~dHJpYWwgMQ/?token={made.tokens['bob']}", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/c/~dHJpYWwgMQ/"
    cookie = page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/c/~dHJpYWwgMQ/" in cookie
    shown = client.get("/c/~dHJpYWwgMQ/")  # the cookie now carries the token
    assert shown.status_code == 200 and ">bob</b>" in shown.text
    assert "script-src 'self'" in shown.headers["content-security-policy"]
    assert "<script src='/static/campaign.js'>" in shown.text and "<script>" not in shown.text  # no inline script
    script = client.get("/static/campaign.js")
    assert script.status_code == 200 and script.headers["cache-control"] == "no-cache"
    assert client.get("/static/campaign.js", headers={"If-None-Match": script.headers["etag"]}).status_code == 304


def test_the_view_is_blind_and_the_text_comes_as_segments(served):
    store, made, client = served
    view = client.get("/c/~dHJpYWwgMQ/api/next", headers=_headers(made.tokens["ann"])).json()
    assert view["item"] == store.queue("trial 1", "ann")[0]["item"]
    assert set(view) == {"item", "progress", "judgement", "query", "doc"}  # no pool note, no pre-label, no run
    assert view["query"]["title"].startswith("apple banana")
    assert view["query"]["narrative"] == "Documents about <b>fruit</b> & trees."  # as data, never as markup
    segments = view["doc"]["segments"]
    assert "".join(piece for piece, _ in segments) == store.item("trial 1", view["item"])["text"]
    assert "<script>x</script>" in store.item("trial 1", view["item"])["text"]
    assert [piece for piece, term in segments if term] == ["apple"]
    total = made.queue_lengths["ann"]
    assert view["progress"] == {"total": total, "labelled": 0, "skipped": 0, "left": total}


def test_a_missing_document_is_served_without_segments(served):
    store, made, client = served
    queue = store.queue("trial 1", "ann")
    missing = [e["item"] for e in queue if store.item("trial 1", e["item"])["text"] is None]
    for entry in queue:
        if entry["item"] == missing[0]:
            break
        assert _judge(client, made, "ann", entry["item"], 1).status_code == 200
    view = client.get("/c/~dHJpYWwgMQ/api/next", headers=_headers(made.tokens["ann"])).json()
    assert view["item"] == missing[0] and view["doc"]["segments"] is None


def test_judge_skip_undo_and_retry_through_the_api(served):
    store, made, client = served
    first = client.get("/c/~dHJpYWwgMQ/api/next", headers=_headers(made.tokens["ann"])).json()["item"]
    out = _judge(client, made, "ann", first, 2, spent=3.25, request="k1")
    assert out.status_code == 200 and out.json()["old"] is None and out.json()["next"]["item"] != first
    again = _judge(client, made, "ann", first, 2, spent=3.25, request="k1")
    assert again.json()["repeated"] is True
    second = out.json()["next"]["item"]
    assert _judge(client, made, "ann", second, "skip").json()["new"] == -1
    undone = client.post("/c/~dHJpYWwgMQ/api/undo", content="{}", headers=_headers(made.tokens["ann"])).json()
    assert undone["item"] == second and undone["next"]["item"] == second
    history = store.history("trial 1")
    assert [(h["action"], h["spent"], h["request"]) for h in history] == [
        ("label", 3.25, "k1"),
        ("skip", 2.0, None),
        ("undo", 0.0, None),
    ]
    assert all(h["assessor"] == "ann" and h["time"] > 0 and h["prelabel_shown"] == 0 for h in history)
    assert _judge(client, made, "ann", 10_000, 1).status_code == 422  # not in the queue
    assert _judge(client, made, "bob", first, 1, request="k1").status_code in (200, 422)  # ids are per assessor


@pytest.mark.parametrize(
    "body, status",
    [
        ({"item": 0, "label": 4, "spent": 1}, 422),
        ({"item": 0, "label": True, "spent": 1}, 422),
        ({"item": "0", "label": 1, "spent": 1}, 422),
        ({"item": 0, "label": 1, "spent": -1}, 422),
        ({"item": 0, "label": 1, "spent": 1e9}, 422),
        ({"item": 0, "label": 1}, 400),
        ({"item": 0, "label": 1, "spent": 1, "who": "bob"}, 400),
        ({"item": 0, "label": 1, "spent": 1, "request": ""}, 422),
    ],
)
def test_bad_bodies_are_refused_and_change_nothing(served, body, status):
    store, made, client = served
    answer = client.post("/c/~dHJpYWwgMQ/api/judge", content=json.dumps(body), headers=_headers(made.tokens["ann"]))
    assert answer.status_code == status and "error" in answer.json()
    assert store.history("trial 1") == []


def test_cross_site_and_non_json_posts_are_refused(served):
    store, made, client = served
    headers = {**_headers(made.tokens["ann"]), "Origin": "http://evil.example"}
    body = json.dumps({"item": 0, "label": 1, "spent": 1})
    assert client.post("/c/~dHJpYWwgMQ/api/judge", content=body, headers=headers).status_code == 403
    headers = {**_headers(made.tokens["ann"]), "Content-Type": "text/plain"}
    assert client.post("/c/~dHJpYWwgMQ/api/judge", content=body, headers=headers).status_code == 415
    big = json.dumps({"item": 0, "label": 1, "spent": 1, "request": "x" * 5000})
    assert client.post("/c/~dHJpYWwgMQ/api/judge", content=big, headers=_headers(made.tokens["ann"])).status_code == 413
    assert store.history("trial 1") == []


def test_admin_figures_and_export_match_sklearn_and_the_merge(served):
    from sklearn.metrics import cohen_kappa_score

    from stagewise.assess.merge import merge_max

    store, made, client = served
    given = {}
    for who, shift in (("ann", 0), ("bob", 1)):
        for n, entry in enumerate(store.queue("trial 1", who)):
            label = (n + shift * (n % 2)) % 4
            assert _judge(client, made, who, entry["item"], label).status_code == 200
            given[(who, entry["item"])] = label
    admin = client.get("/c/~dHJpYWwgMQ/api/admin", headers=_headers(made.admin_token)).json()
    rows = {a["name"]: a for a in admin["assessors"]}
    assert rows["ann"]["labelled"] == made.queue_lengths["ann"] and rows["bob"]["left"] == 0
    assert rows["bob"]["address"] == f"/c/~dHJpYWwgMQ/?token={made.tokens['bob']}"
    assert rows["ann"]["median_spent"] == 2.0  # every judgement above took 2 s
    shared = sorted(i for who, i in given if who == "ann" and ("bob", i) in given)
    [pair] = admin["agreement"]["pairs"]
    assert pair["both"] == len(shared) == 9
    x, y = [given[("ann", i)] for i in shared], [given[("bob", i)] for i in shared]
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(x, y))
    assert pair["kappa_linear"] == pytest.approx(cohen_kappa_score(x, y, weights="linear"))
    text = client.get("/c/~dHJpYWwgMQ/api/export?merge=max", headers=_headers(made.admin_token)).text
    assert text.startswith("# merged by stagewise: campaign trial 1; policy max; assessors ann, bob\n")
    expected = merge_max(store.labels("trial 1")).qrels.to_dict()
    got = {}
    for line in text.splitlines()[1:]:
        q, _, d, lab = line.split()
        got.setdefault(q, {})[d] = int(lab)
    assert got == expected and sum(map(len, got.values())) == 18
    bad = client.get("/c/~dHJpYWwgMQ/api/export?merge=vote", headers=_headers(made.admin_token))
    assert bad.status_code == 422 and "merge policy" in bad.json()["error"]


def test_shown_prelabels_are_shown_and_recorded(tmp_path):
    pool, topics, collection = write_campaign_inputs(tmp_path)
    store = CampaignStore(tmp_path / "c.sqlite")
    made = create_campaign(
        store, "p", pool=pool, collection=collection, topics=topics, assessors=["ann"],
        options=CampaignOptions(show_prelabels=True, blind=False), prelabel=lambda items: [3] * len(items),
        prelabel_name="three",
    )  # fmt: skip
    client = TestClient(create_campaign_app(store), base_url=BASE)
    view = client.get("/c/p/api/next", headers=_headers(made.tokens["ann"])).json()
    assert view["prelabel"] == 3 and view["pool"] == "pool order 1, priority 1.0000"
    body = json.dumps({"item": view["item"], "label": 0, "spent": 1})
    assert client.post("/c/p/api/judge", content=body, headers=_headers(made.tokens["ann"])).status_code == 200
    assert store.history("p")[0]["prelabel_shown"] == 1
    assert store.campaign("p").settings["prelabels"] == "three"
    store.close()


def test_cli_create_status_export_and_agreement_from_the_store(tmp_path, capsys):
    from stagewise.cli import main

    pool, topics, collection = write_campaign_inputs(tmp_path)
    db = tmp_path / "c.sqlite"
    args = ["campaign", "create", str(pool), "--collection", str(collection), "--topics", str(topics)]
    with pytest.raises(SystemExit) as done:
        main([*args, "-a", "ann", "-a", "bob", "--overlap", "1", "--seed", "7", "--store", str(db), "--name", "t"])
    assert done.value.code == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert [line.split()[0] for line in lines] == ["ann", "bob", "admin"]
    assert lines[0].split()[1].startswith("http://127.0.0.1:8765/c/t/?token=")
    assert "18 items, 18 of them judged by several assessors" in out.err
    store = CampaignStore(db)
    for who in ("ann", "bob"):
        for n, entry in enumerate(store.queue("t", who)):
            store.judge("t", who, entry["item"], n % 4 if who == "ann" else (n // 2) % 4, spent=1.0)
    labels = store.labels("t")
    store.close()
    with pytest.raises(SystemExit) as done:
        main(["campaign", "export", str(db), "--merge", "adjudicator(name=bob)", "-o", str(tmp_path / "q.txt")])
    assert done.value.code == 0
    exported = (tmp_path / "q.txt").read_text().splitlines()
    assert "; policy adjudicator(name=bob," in exported[0] and exported[0].endswith("; assessors ann, bob")
    assert {(x.split()[0], x.split()[2], x.split()[3]) for x in exported[1:]} == {
        (q, d, str(lab)) for q, docs in labels["bob"].items() for d, lab in docs.items()
    }
    for name, qrels in labels.items():  # the same labels as files: the store's agreement must equal theirs
        lines = [f"{q} 0 {d} {lab}\n" for q, docs in qrels.items() for d, lab in docs.items()]
        (tmp_path / name).write_text("".join(lines))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["agreement", str(tmp_path / "ann"), str(tmp_path / "bob"), "--format", "json"])
    from_files = json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["agreement", "--store", str(db), "--campaign", "t", "--format", "json"])
    from_store = json.loads(capsys.readouterr().out)
    assert from_store["pairs"] == from_files["pairs"] and from_store["assessors"] == ["ann", "bob"]
    with pytest.raises(SystemExit) as done:
        main(["campaign", "status", str(db)])
    assert done.value.code == 0
    status = capsys.readouterr().out
    assert "ann" in status and "Cohen's kappa per pair" in status
    with pytest.raises(SystemExit) as done:
        main(["campaign", "status", str(db), "--format", "json"])
    status = json.loads(capsys.readouterr().out)
    assert status["progress"]["ann"] == {"total": 18, "labelled": 18, "skipped": 0, "left": 0}
    assert status["median_spent_seconds"] == {"ann": 1.0, "bob": 1.0} and status["overlap_items"] == 18
    assert status["agreement"]["pairs"] == from_files["pairs"]
    with pytest.raises(SystemExit) as done:
        main(["campaign", "status", str(db), "--campaign", "nope"])
    assert done.value.code == 2 and "holds no campaign named 'nope'" in capsys.readouterr().err


def _exit(args, capsys):
    from stagewise.cli import main

    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


def test_cli_bad_inputs_are_one_line_errors_and_leave_no_store(tmp_path, capsys):
    pool, topics, collection = write_campaign_inputs(tmp_path)
    db = tmp_path / "c.sqlite"
    base = ["campaign", "create", str(pool), "--collection", str(collection), "--topics", str(topics), "-a", "ann"]
    cases = [
        (["campaign", "create", str(tmp_path / "nope.txt"), *base[3:]], "nope.txt: no such pool file"),
        ([*base, "--show-prelabels"], "--show-prelabels: has no pre-labels to show"),
        ([*base, "--prelabel", "gold"], "judge 'gold' cannot pre-label a document"),
        ([*base, "--prelabel", "oracle"], "oracle"),
        ([*base, "-a", "ann"], "assessor 'ann' is given twice"),
        ([*base, "--overlap", "0.5", "--per-overlap", "3", "-a", "bob"], "'per_overlap' parameter"),
    ]
    for args, message in cases:
        code, _, err = _exit([*args, "--store", str(db)], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (args, err)
        assert not db.exists()  # nothing written before every input was read
    short = tmp_path / "short-topics.txt"
    short.write_text("<top>\n<num> Number: q0\n<title> apple\n</top>\n")
    code, _, err = _exit([*base[:6], str(short), *base[7:], "--store", str(db)], capsys)
    assert code == 2 and "no topic for 2 pooled queries" in err and not db.exists()
    code, _, err = _exit([*base, "--store", str(pool)], capsys)
    assert code == 2 and "--store" in err
    code, _, err = _exit(["campaign", "serve", str(db)], capsys)
    assert code == 2 and "no such campaign store" in err
    not_ours = tmp_path / "notes.txt"
    not_ours.write_text("hello\n")
    code, _, err = _exit([*base, "--store", str(not_ours)], capsys)
    assert code == 2 and "is not an SQLite database" in err and "give --store a new file name" in err
    assert not_ours.read_text() == "hello\n"
    code, _, err = _exit(["agreement", "--campaign", "x"], capsys)
    assert code == 2 and "--campaign: names a campaign of a store" in err


def test_cli_prelabels_are_the_lexical_judges_verdicts(tmp_path, capsys):
    from stagewise.rag.judges import LexicalJudge, Passage

    pool, topics, collection = write_campaign_inputs(tmp_path)
    topics.write_text(
        "".join(f"<top>\n<num> Number: q{q}\n<title> apple day {'doc' if q else 'zebra'}\n</top>\n" for q in range(3))
    )
    db = tmp_path / "c.sqlite"
    args = ["campaign", "create", str(pool), "--collection", str(collection), "--topics", str(topics), "-a", "ann"]
    code, _, err = _exit([*args, "--prelabel", "lexical(threshold=0.9)", "--store", str(db)], capsys)
    assert code == 0, err
    store = CampaignStore(db)
    try:
        assert store.campaign("pool").settings["prelabels"] == "lexical(threshold=0.9)"
        judge = LexicalJudge(threshold=0.9)
        marks = set()
        for item in range(18):
            row = store.item("pool", item)
            expected = None if row["text"] is None else int(judge.supports([Passage("d", row["text"])], row["title"]))
            assert row["prelabel"] == expected
            marks.add(row["prelabel"])
        assert marks == {0, 1, None}  # 'zebra' is in no document: its query's documents are not supported
        assert store.campaign("pool").settings["prelabel_rule"].startswith("1 when the judge finds")
    finally:
        store.close()
    db2 = tmp_path / "graded.sqlite"
    code, _, err = _exit([*args, "--prelabel", "query-coverage", "--store", str(db2)], capsys)
    assert code == 0, err
    store = CampaignStore(db2)
    try:
        # query coverage: 'apple day doc' has all three words in every document (grade 3); 'apple day zebra'
        # two of three, 0.67 >= 0.5 (grade 2); the missing documents have no pre-label
        grades = {(store.item("pool", i)["qid"], store.item("pool", i)["prelabel"]) for i in range(18)}
        assert grades == {("q0", 2), ("q1", 3), ("q2", 3), ("q0", None), ("q1", None), ("q2", None)}
        assert store.campaign("pool").settings["prelabel_rule"] == "the judge's relevance grade 0-3"
    finally:
        store.close()
    code, _, err = _exit(["campaign", "export", str(db), "--merge", "vote"], capsys)
    assert code == 2 and "merge policy" in err
