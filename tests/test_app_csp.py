"""The web app's pages run no inline script: every answer carries a Content-Security-Policy, a page's scripts are
served from ``/static/`` (strings of the package, looked up by name), its data travels in JSON blobs, and every
text from the data goes in as text, so a document id, query, passage or question holding ``<script>`` shows those
characters and runs nothing.

Oracles: the HTML as a real parser reads it (``html.parser``: every ``<script>`` has a ``src`` under ``/static/``
or is a JSON blob; no ``on...=`` handler, no ``style=`` attribute); the report page's policy allows exactly the
SHA-256 of each inline script of the served report, computed here from the served text; and Chromium (Playwright
driving Debian's package): each page renders what its script builds, with no console error (Chromium logs every
CSP violation as one), no page error, no dialog, no script element but the served ones, and the hostile texts
shown as the characters they are.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from html.parser import HTMLParser

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient
from typer.testing import CliRunner

from stagewise.app.audits import JudgeAudits
from stagewise.app.ids import to_segment
from stagewise.app.open import open_rag, open_workspace
from stagewise.app.page_scripts import SCRIPTS
from stagewise.app.server import create_app
from stagewise.cli import app as cli
from tests import browser_helpers

HOSTILE = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
QUERIES = [{"_id": "q1", "text": f"what is {HOSTILE}?"}, {"_id": "q2", "text": "plain"}]
WORDS = ["austen", "emma", "novel", "published", "dickens", "london", "paris", "wrote", "year", "letters"]
RECORD = {
    "id": "s1",
    "question": f"who wrote {HOSTILE}?",
    "retrieved": ["p1", "p2"],
    "passages": {"p1": f"Jane Austen wrote Emma. {HOSTILE}", "p2": IMG},
    "answer": "Jane Austen wrote Emma [p1].",
    "gold_answers": ["Jane Austen"],
    "gold_evidence": ["p1"],
}


def _inputs(tmp_path) -> dict[str, str]:
    """Qrels, a run, query texts, a corpus, RAG records and a judge's audit, each holding hostile text."""
    files = {
        "qrels": f"q1 0 {HOSTILE} 2\nq1 0 d2 0\nq2 0 d3 1\n",
        "run": f"q1 Q0 {HOSTILE} 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d4 2 0.5 t\n",
        "queries.jsonl": "".join(json.dumps(q) + "\n" for q in QUERIES),
        "corpus.jsonl": json.dumps({"_id": HOSTILE, "text": f"doc text {IMG}"}) + "\n",
        "rag.jsonl": json.dumps(RECORD) + "\n",
    }
    paths = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths[name.split(".")[0]] = str(tmp_path / name)
    rng = random.Random(5)
    claims = []
    for i in range(30):
        claim = " ".join(rng.sample(WORDS, 4))
        passage = " ".join(rng.sample(claim.split(), rng.randint(0, 4)) + rng.sample(WORDS, 2))
        claims.append(json.dumps({"id": f"c{i}", "claim": claim, "passages": [passage], "label": rng.random() < 0.6}))
    (tmp_path / "claims.jsonl").write_text("\n".join(claims) + "\n")
    paths["audit"] = str(tmp_path / "audit.json")
    done = CliRunner().invoke(cli, ["judge", "audit", str(tmp_path / "claims.jsonl"), "--judge", "lexical", "-B",
                                    "50", "-f", "json", "-o", paths["audit"]])  # fmt: skip
    assert done.exit_code == 0, done.output
    return paths


PAGES = ["/playground", "/queries", f"/queries/{to_segment('q1')}", "/rag", f"/rag/{to_segment('s1')}", "/audits/1"]


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of each inline script."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script" and "src" not in dict(attrs)
        if self._in_script:
            self.inline.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline[-1] += data


def _parsed(html: str) -> _Tags:
    tags = _Tags()
    tags.feed(html)
    return tags


def _directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d}


@pytest.fixture
def client(tmp_path):
    paths = _inputs(tmp_path)
    ws = open_workspace(paths["qrels"], {"run": paths["run"]}, tmp_path / "labels.sqlite", paths["corpus"],
                        paths["queries"])  # fmt: skip
    rag = open_rag(paths["rag"], tmp_path / "labels.rag.sqlite")
    rag.audits = JudgeAudits.read([paths["audit"]])
    with TestClient(create_app(ws, rag=rag), base_url="http://127.0.0.1:8765") as c:
        yield c


def test_every_page_answers_with_a_policy_and_loads_only_served_scripts(client):
    for path in [*PAGES, "/no-such-page", "/queries/~!!"]:
        res = client.get(path)
        assert res.status_code in (200, 404), path
        policy = _directives(res.headers["content-security-policy"])
        assert policy["default-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"], path
        assert policy.get("script-src", ["'self'"]) == ["'self'"], path  # absent: default-src 'none', no script
        assert "'unsafe-inline'" not in policy.get("style-src", []), path
        tags = _parsed(res.text)
        for tag, attrs in tags.tags:
            assert not any(a.startswith("on") for a in attrs), (path, tag, attrs)  # no inline handler
            assert "style" not in attrs, (path, tag, attrs)  # style-src 'self' would refuse it
            if tag == "script":
                assert attrs.get("type") == "application/json" or str(attrs.get("src")).startswith("/static/"), path
        assert "<script>alert" not in res.text and "<img src=x" not in res.text, path
        for _, attrs in (t for t in tags.tags if t[0] == "script" and t[1].get("src")):
            script = client.get(attrs["src"])
            assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
            assert "content-security-policy" in script.headers
    # the JSON blob keeps "</" out of the page: the hostile text comes back whole through a JSON parser
    page = client.get(f"/rag/{to_segment('s1')}").text
    blob = page.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(blob)["question"] == RECORD["question"]


def test_static_serves_names_of_the_package_not_paths(client):
    assert client.get("/static/app.css").headers["content-type"].startswith("text/css")
    for path in ["/static/pages.py", "/static/server.py", "/static/%2e%2e%2fpages.py", "/static/..%2Fserver.py",
                 "/static/SCRIPTS", "/static/common.js.map"]:  # fmt: skip
        res = client.get(path)
        assert res.status_code == 404 and "import" not in res.text, path
        assert "content-security-policy" in res.headers


def test_the_report_page_allows_exactly_its_own_inline_scripts(client):
    pytest.importorskip("matplotlib", reason="the report extra is not installed (make test installs it)")
    res = client.get("/report")
    assert res.status_code == 200
    policy = _directives(res.headers["content-security-policy"])
    inline = _parsed(res.text).inline
    assert inline, "the report has its own script (sorting and filtering)"
    hashes = {"'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in inline}
    assert set(policy["script-src"]) == hashes  # those scripts and nothing else: no 'unsafe-inline', no 'self'
    assert policy["sandbox"] == ["allow-scripts"] and policy["connect-src"] == ["'none'"]
    assert policy["default-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert "<script>alert" not in res.text


def _clean(opened, dialogs) -> None:
    page = opened.page
    assert page.locator("script:not([src]):not([type='application/json'])").count() == 0
    assert opened.console_errors == [] and opened.page_errors == [] and opened.blocked == [] and dialogs == []


@pytest.mark.skipif(browser_helpers.missing() is not None, reason=str(browser_helpers.missing()))
def test_every_page_works_in_chromium_under_its_policy_and_shows_hostile_text_as_text(tmp_path):
    from tests.app_helpers import browser, serving
    from tests.browser_helpers import open_page

    paths = _inputs(tmp_path)
    given = ("qrels", "run", "queries", "corpus", "rag")
    args = [*(x for name in given for x in (f"--{name}", paths[name])), "--judge-audit", paths["audit"]]
    args += ["--db", str(tmp_path / "l.sqlite")]
    with serving(args) as server, browser() as context:
        dialogs: list[str] = []
        context.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        opened = open_page(context, server.url + "/playground")
        page = opened.page
        assert page.get_by_test_id("result").count() == 3 and page.get_by_test_id("dcg").inner_text() == "2.5000"
        page.get_by_test_id("result").first.click()
        page.locator('body[data-ready="2,0,2/exp"]').wait_for(state="attached")
        _clean(opened, dialogs)

        opened = open_page(context, server.url + "/queries")
        page = opened.page
        page.get_by_test_id("query-row").first.wait_for()
        assert page.get_by_test_id("query-row").count() == 2
        assert f"what is {HOSTILE}?" in page.get_by_test_id("query-row").first.inner_text()
        _clean(opened, dialogs)

        opened = open_page(context, f"{server.url}/queries/{to_segment('q1')}")
        page = opened.page
        assert page.get_by_test_id("query-text").inner_text() == f"what is {HOSTILE}?"
        doc = page.locator(f'[data-testid=doc][data-docid="{HOSTILE}"]').first
        assert doc.locator("b").inner_text() == HOSTILE and doc.get_attribute("data-label") == "2"
        assert doc.get_by_test_id("doc-text").inner_text() == f"doc text {IMG}"
        doc.get_by_test_id("set-3").click()
        page.locator(f'[data-testid=doc][data-docid="{HOSTILE}"][data-label="3"]').first.wait_for()
        assert page.locator("#status").inner_text() == f"{HOSTILE}: 2 → 3"
        assert page.locator("#cols img").count() == 0
        _clean(opened, dialogs)

        opened = open_page(context, f"{server.url}/rag/{to_segment('s1')}")
        page = opened.page
        assert page.locator("#question").inner_text() == RECORD["question"]
        p1, p2 = (page.locator(f"[data-testid=passage][data-pid={p}]") for p in ("p1", "p2"))
        assert p1.get_by_test_id("passage-text").inner_text() == RECORD["passages"]["p1"]
        assert p2.get_by_test_id("passage-text").inner_text() == IMG and page.locator("#passages img").count() == 0
        p2.get_by_test_id("toggle-gold").click()
        page.locator('[data-pid=p2][data-gold="1"]').wait_for()
        assert page.locator("#status").inner_text().startswith("p2: stage label")
        _clean(opened, dialogs)

        for path in ["/rag", "/audits/1", "/no-such-page"]:
            opened = open_page(context, server.url + path)
            assert opened.page.locator("nav a").count() == 4
            if path == "/no-such-page":  # the page's own 404, the one error Chromium logs for it
                assert [e for e in opened.console_errors if "404" in e] == opened.console_errors[:1]
                opened.console_errors = opened.console_errors[1:]
            _clean(opened, dialogs)


@pytest.mark.skipif(browser_helpers.missing() is not None, reason=str(browser_helpers.missing()))
def test_the_report_page_sorts_its_tables_in_chromium_under_its_policy(tmp_path):
    pytest.importorskip("matplotlib", reason="the report extra is not installed (make test installs it)")
    from tests.app_helpers import browser, serving
    from tests.browser_helpers import open_page

    paths = _inputs(tmp_path)
    args = ["--qrels", paths["qrels"], "--run", paths["run"], "--db", str(tmp_path / "l.sqlite")]
    with serving(args) as server, browser() as context:
        opened = open_page(context, server.url + "/report")
        page = opened.page
        header = page.locator("table.sortable thead th:has(button)").first
        assert header.get_attribute("aria-sort") in (None, "none")
        header.locator("button").click()  # the report's own inline script, allowed by its hash, sorts
        page.locator("table.sortable thead th[aria-sort=ascending]").first.wait_for()
        assert page.locator("script:not([src])").count() == 1
        assert opened.console_errors == [] and opened.page_errors == [] and opened.blocked == []


def test_static_files_are_revalidated_by_etag(client):
    # a browser keeps the file and asks again with If-None-Match: the same bytes come back as 304 without a body
    first = client.get("/static/app.css")
    etag = first.headers["etag"]
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache" and first.text
    again = client.get("/static/app.css", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert client.get("/static/app.css", headers={"If-None-Match": f'"stale", W/{etag}'}).status_code == 304
    assert client.get("/static/app.css", headers={"If-None-Match": '"stale"'}).status_code == 200
    scripts = {client.get(f"/static/{name}").headers["etag"] for name in SCRIPTS}
    assert len(scripts) == len(SCRIPTS) and etag not in scripts  # one tag a file
