"""The web app end to end in Debian's headless Chromium (Playwright), against ``stagewise serve`` on 127.0.0.1.

The playground reproduces the lesson's numbers and moves them on a click; a relabel on a query page changes the
numbers shown, persists across a server restart, and undo restores the previous label.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from stagewise._bundled import sample_path
from tests import browser_helpers
from tests.app_helpers import browser, serving
from tests.browser_helpers import open_page

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytestmark = pytest.mark.skipif(browser_helpers.missing() is not None, reason=str(browser_helpers.missing()))

QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))


def _texts(page, *ids):
    return [page.get_by_test_id(i).inner_text() for i in ids]


def test_playground_shows_the_lessons_numbers_and_moves_them():
    with serving(["--playground"]) as server, browser() as context:
        opened = open_page(context, server.url + "/playground")
        page = opened.page
        assert [r.get_attribute("data-label") for r in page.get_by_test_id("result").all()] == ["1", "0", "2"]
        assert _texts(page, "dcg", "ideal-dcg", "ndcg-exp", "ndcg-linear", "rr") == [
            "2.5000",
            "3.6309",
            "0.6885",
            "0.7602",
            "1.0000",
        ]
        page.get_by_test_id("result").first.click()
        page.locator('body[data-ready="2,0,2/exp"]').wait_for(state="attached")
        assert [r.get_attribute("data-label") for r in page.get_by_test_id("result").all()] == ["2", "0", "2"]
        # [2, 0, 2]: DCG 3 + 3/2 = 4.5; ideal [2, 2, 0]: 3 + 3/log2(3) = 4.8928; linear nDCG 3 / (2 + 2/log2 3)
        assert _texts(page, "dcg", "ideal-dcg", "ndcg-exp", "ndcg-linear", "rr") == [
            "4.5000",
            "4.8928",
            "0.9197",
            "0.9197",
            "1.0000",
        ]
        page.get_by_test_id("gain-toggle").click()
        page.locator('body[data-ready="2,0,2/linear"]').wait_for(state="attached")
        assert _texts(page, "dcg", "ideal-dcg") == ["3.0000", "3.2619"]
        page.get_by_test_id("gain-toggle").click()
        page.locator('body[data-ready="2,0,2/exp"]').wait_for(state="attached")
        assert _texts(page, "dcg") == ["4.5000"]
        page.get_by_test_id("add-result").click()
        page.locator('body[data-ready="2,0,2,0/exp"]').wait_for(state="attached")
        for _ in range(3):  # the new fourth result: 0 -> 3, a gain of 7 at a discount of log2(5)
            page.get_by_test_id("result").nth(3).click()
        page.locator('body[data-ready="2,0,2,3/exp"]').wait_for(state="attached")
        assert page.get_by_test_id("ideal-dcg").inner_text() == "10.3928"
        page.get_by_test_id("remove-result").click()
        page.locator('body[data-ready="2,0,2/exp"]').wait_for(state="attached")
        assert page.get_by_test_id("quiz-answer").is_hidden()
        page.get_by_test_id("quiz-yes").click()
        assert "yes, they can" in page.get_by_test_id("quiz-answer").inner_text()
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []


def _metric(page, testid, run, metric):
    return page.locator(f'[data-testid="{testid}"][data-run="{run}"][data-metric="{metric}"]').inner_text()


def test_relabel_on_a_query_page_moves_the_numbers_persists_across_a_restart_and_undoes(tmp_path):
    db = str(tmp_path / "labels.sqlite")
    args = ["--qrels", QRELS, "--run", RUN, "--run", TRUNC, "--db", db]
    with serving(args) as server, browser() as context:
        opened = open_page(context, server.url + "/queries")
        page = opened.page
        page.get_by_test_id("query-row").first.wait_for()
        page.get_by_test_id("query-row").first.locator("a").click()
        page.wait_for_url("**/queries/*")
        qid = page.url.rsplit("/", 1)[1]
        doc = page.get_by_test_id("doc").first
        docid, old = doc.get_attribute("data-docid"), doc.get_attribute("data-label")
        new = "3" if old != "3" else "0"
        before = _metric(page, "metric", "results.test", "ndcg@10(gain=exp)")
        mean_before = _metric(page, "mean", "results.test", "ndcg@10")
        doc.get_by_test_id(f"set-{new}").click()
        page.locator(f'[data-testid=doc][data-docid="{docid}"][data-label="{new}"]').first.wait_for()
        assert _metric(page, "metric", "results.test", "ndcg@10(gain=exp)") != before
        assert _metric(page, "mean", "results.test", "ndcg@10") != mean_before
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []
    with serving(args) as server, browser() as context:  # a fresh process reads the database
        page = open_page(context, f"{server.url}/queries/{qid}").page
        doc = page.locator(f'[data-testid=doc][data-docid="{docid}"]').first
        assert doc.get_attribute("data-label") == new
        assert _metric(page, "metric", "results.test", "ndcg@10(gain=exp)") != before
        page.get_by_test_id("undo").click()
        page.locator(f'[data-testid=doc][data-docid="{docid}"][data-label="{old or ""}"]').first.wait_for()
        assert _metric(page, "metric", "results.test", "ndcg@10(gain=exp)") == before
        exported = tmp_path / "now.qrels"
        exported.write_bytes(urllib.request.urlopen(server.url + "/api/qrels").read())
    from stagewise.data.readers import read_qrels
    from stagewise.store import LabelStore

    assert read_qrels(str(exported)).to_dict() == read_qrels(QRELS).to_dict()
    assert LabelStore(db).labels() == read_qrels(QRELS).to_dict()


def test_marking_evidence_on_a_rag_page_changes_the_stage_label(tmp_path):
    from tests.report_helpers import RAG_RECORDS

    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RAG_RECORDS))
    with serving(["--rag", str(path), "--db", str(tmp_path / "labels.sqlite")]) as server, browser() as context:
        opened = open_page(context, server.url + "/rag/r1")
        page = opened.page
        assert page.get_by_test_id("rag-label").inner_text() == "ok"
        page.locator('[data-testid=passage][data-pid="p9"]').get_by_test_id("toggle-gold").click()
        page.locator('[data-pid=p9][data-gold="0"]').wait_for()
        page.locator('[data-testid=passage][data-pid="p1"]').get_by_test_id("toggle-gold").click()
        page.locator('[data-pid=p1][data-gold="1"]').wait_for()
        assert page.get_by_test_id("rag-label").inner_text() == "lucky"
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []
