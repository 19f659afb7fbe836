"""A two-assessor campaign end to end in Debian's headless Chromium (Playwright) against ``stagewise campaign serve``
on 127.0.0.1: made by ``stagewise campaign create`` with overlap; both assessors label by keyboard (0-3, s, u); the
server is restarted in the middle and the page resumes where it was; the administrator's page shows progress and
Cohen's kappa; the export (downloaded from the page and written by the CLI) holds the labels that were typed,
merged by the policy it names, and the agreement equals scikit-learn's on the items both labelled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import browser_helpers
from tests.app_helpers import browser
from tests.browser_helpers import open_page
from tests.campaign_helpers import CampaignServer, create_by_cli
from tests.test_campaign import write_campaign_inputs

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytestmark = pytest.mark.skipif(browser_helpers.missing() is not None, reason=str(browser_helpers.missing()))


def label_for(who: str, docid: str) -> int:
    """What each assessor types for a document (``d{q}-{d}``): they agree on some items, not on all."""
    q, d = (int(x) for x in docid[1:].split("-"))
    return (q + d) % 4 if who == "ann" else (2 * q + d) % 4


def _state(page) -> str:
    return page.evaluate("document.body.dataset.state || ''")


def _press(page, key: str) -> None:
    """Press ``key`` and wait until the page shows what the server answered."""
    before = _state(page)
    page.keyboard.press(key)
    # a selector, not wait_for_function: the page's Content-Security-Policy forbids the eval that one needs
    page.locator(f"body:not([data-state='{before}'])").wait_for(state="attached")


def _label_some(page, who: str, count: int | None, typed: dict, skipped: set) -> None:
    """Label ``count`` items (None: until the queue is done) by keyboard; the first missing document met is
    skipped once (it must come back at the end)."""
    done = 0
    while (count is None or done < count) and page.get_by_test_id("done").is_hidden():
        docid = page.get_by_test_id("docid").inner_text()
        missing = "missing from the collection" in page.get_by_test_id("doc").inner_text()
        if missing and not skipped:
            skipped.add(docid)
            _press(page, "s")
            continue
        typed[docid] = label_for(who, docid)
        _press(page, str(typed[docid]))
        done += 1


def test_two_assessors_label_by_keyboard_across_a_restart_and_the_export_holds_their_labels(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    pool, topics, collection = write_campaign_inputs(tmp_path)
    store = tmp_path / "campaign.sqlite"
    args = [str(pool), "--collection", str(collection), "--topics", str(topics), "-a", "ann", "-a", "bob"]
    addresses = create_by_cli([*args, "--overlap", "0.5", "--seed", "7", "--store", str(store), "--name", "fruit"])
    typed: dict[str, dict[str, int]] = {"ann": {}, "bob": {}}
    server = CampaignServer(store)
    try:
        with browser() as ann_context:
            opened = open_page(ann_context, server.url + addresses["ann"])
            page = opened.page
            page.wait_for_selector("body[data-state]", state="attached")
            assert page.url == server.url + "/c/fruit/"  # the token moved into a cookie, out of the address
            # blind: no pool order, priority or strategy anywhere on the page
            assert not any(word in page.content() for word in ("priority", "pool order", "depth("))
            assert page.get_by_test_id("narrative").inner_text() == "Documents about <b>fruit</b> & trees."
            assert page.locator("#doc mark").all_inner_texts() == ["apple"]  # the query's term, highlighted
            assert "<script>x</script>" in page.get_by_test_id("doc").inner_text()  # shown as text, never run
            assert page.locator("#doc script, #narrative b").count() == 0
            skipped: set[str] = set()
            _label_some(page, "ann", 5, typed["ann"], skipped)
            # u takes back the last label: the same document comes back, one label fewer
            last = list(typed["ann"])[-1]
            labelled = int(_state(page).split(":")[1])
            _press(page, "u")
            assert page.get_by_test_id("docid").inner_text() == last
            assert int(_state(page).split(":")[1]) == labelled - 1
            _press(page, str(typed["ann"][last]))
            before_restart = _state(page)
            shown = page.get_by_test_id("docid").inner_text()
            server.kill()  # a restart in the middle of the campaign
            server = CampaignServer(store, server.port)
            page.reload()
            page.wait_for_selector("body[data-state]", state="attached")
            assert _state(page) == before_restart and page.get_by_test_id("docid").inner_text() == shown
            _label_some(page, "ann", None, typed["ann"], skipped)
            assert skipped and skipped <= set(typed["ann"])  # the skipped document came back and was labelled
            assert page.get_by_test_id("progress").inner_text().startswith(f"{len(typed['ann'])} of ")
            assert opened.page_errors == [] and opened.console_errors == [] and opened.blocked == []
        with browser() as bob_context:  # one Playwright at a time: bob's browser opens after ann's closed
            bob = open_page(bob_context, server.url + addresses["bob"]).page
            bob.wait_for_selector("body[data-state]", state="attached")
            _label_some(bob, "bob", None, typed["bob"], set())
            assert bob.get_by_test_id("done").is_visible()
        both = sorted(set(typed["ann"]) & set(typed["bob"]))
        assert len(both) == 9  # the overlap: half of the 18 items
        x, y = [typed["ann"][d] for d in both], [typed["bob"][d] for d in both]
        with browser() as admin_context:
            admin = open_page(admin_context, server.url + addresses["admin"]).page
            admin.wait_for_selector("tr[data-pair='ann|bob']")
            cells = admin.locator("tr[data-pair='ann|bob'] td").all_inner_texts()
            assert cells[1] == "9" and cells[2] == f"{cohen_kappa_score(x, y):.3f}"
            row = admin.locator("tr[data-assessor='bob'] td").all_inner_texts()
            assert row[2] == str(len(typed["bob"])) and row[4] == "0" and row[6] == server.url + addresses["bob"]
            with admin.expect_download() as download:
                admin.get_by_test_id("export").click()
            downloaded = Path(download.value.path()).read_text(encoding="utf-8")
    finally:
        server.kill()
    _check_export(store, tmp_path, typed, downloaded)
    agreement = _cli("agreement", "--store", str(store), "--format", "json")
    [pair] = json.loads(agreement)["pairs"]
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(x, y))
    assert pair["kappa_quadratic"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"))


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "stagewise", *args], capture_output=True, text=True, check=True)
    return done.stdout


def _check_export(store, tmp_path, typed, downloaded: str) -> None:
    out = tmp_path / "qrels.txt"
    _cli("campaign", "export", str(store), "--merge", "majority", "-o", str(out))
    text = out.read_text()
    assert text == downloaded
    assert (
        text.splitlines()[0] == "# merged by stagewise: campaign fruit; policy majority(ties=max); assessors ann, bob"
    )
    got = {line.split()[2]: int(line.split()[3]) for line in text.splitlines()[1:]}
    # majority of two with ties to the higher label: the higher of two labels, or the one label given
    expected = {d: max(typed[w][d] for w in ("ann", "bob") if d in typed[w]) for d in {*typed["ann"], *typed["bob"]}}
    assert got == expected and len(got) == 18
