"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright, the file opened from disk
with every request that is not the file aborted. No console error, no page error, no request left the page,
every plot drawn (its SVG elements counted), the per-query table sorts and filters, the RAG table filters by
label. Skipped, with the reason, where Chromium or Playwright is absent (``make test`` installs both)."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from tests.browser_helpers import missing, open_report
from tests.conftest import SHARED
from tests.report_helpers import RAG_RECORDS, small_inputs

pytest.importorskip("matplotlib", reason="the HTML report's plots need matplotlib: pip install 'stagewise[report]'")
pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

ROBUST = SHARED / "data" / "trec_robust03_runs"


def check_clean(opened, plots: int) -> None:
    page = opened.page
    assert opened.console_errors == [] and opened.page_errors == []
    assert opened.blocked == [], f"requests left the page: {opened.blocked[:3]}"
    assert page.locator("figure.plot").count() == plots
    assert page.locator("svg.plot").count() == plots
    # every plot drawn: each SVG holds drawn paths and its axis text, and takes up room on the page
    counts = page.evaluate(
        """() => Array.from(document.querySelectorAll('svg.plot')).map(s => {
             const r = s.getBoundingClientRect();
             return [s.querySelectorAll('path,rect,line,polyline,use').length, s.querySelectorAll('text').length,
                     r.width, r.height]; })"""
    )
    for shapes, texts, width, height in counts:
        assert shapes >= 5 and texts >= 3 and width > 100 and height > 50, (shapes, texts, width, height)


def column_values(page, table_id: str, col: int) -> list[float]:
    return page.evaluate(
        """([id, col]) => Array.from(document.getElementById(id).tBodies[0].rows)
             .filter(r => !r.hidden).map(r => parseFloat(r.cells[col].getAttribute('data-v')))""",
        [table_id, col],
    )


def check_sort_and_filter(page, table_id: str = "per-query-table-0") -> None:
    table = page.locator(f"#{table_id}")
    means = column_values(page, table_id, 1)
    assert means == sorted(means), "worst queries first"
    table.locator("thead th").nth(2).locator("button").click()  # spread, ascending
    spread = column_values(page, table_id, 2)
    assert spread == sorted(spread)
    table.locator("thead th").nth(2).locator("button").click()  # and descending: biggest differences first
    spread = column_values(page, table_id, 2)
    assert spread == sorted(spread, reverse=True)
    assert table.locator("thead th").nth(2).get_attribute("aria-sort") == "descending"
    table.locator("thead th").nth(0).locator("button").click()  # query ids, as text
    ids = page.evaluate(
        f"() => Array.from(document.getElementById('{table_id}').tBodies[0].rows).map(r => r.cells[0].textContent)"
    )
    assert ids == sorted(ids, key=str.lower)
    target = ids[len(ids) // 2]
    box = page.locator(f'.controls[data-table="{table_id}"] input[type=search]')
    box.fill(target)
    shown = page.evaluate(
        f"() => Array.from(document.getElementById('{table_id}').tBodies[0].rows).filter(r => !r.hidden)"
        ".map(r => [r.cells[0].textContent, r.textContent])"
    )
    assert target in [first for first, _ in shown] and len(shown) < len(ids)
    assert all(target.lower() in text.lower() for _, text in shown)  # every row left holds what was typed
    assert (
        f"{len(shown)} of {len(ids)} rows shown"
        in page.locator(f'.controls[data-table="{table_id}"] .count').inner_text()
    )
    box.fill("")
    assert len(column_values(page, table_id, 1)) == len(ids)


def check_label_filter(page) -> None:
    select = page.locator('.controls[data-table="rag-samples"] select')
    labels = page.evaluate(
        "() => Array.from(document.getElementById('rag-samples').tBodies[0].rows).map(r => r.dataset.label)"
    )
    for label in sorted(set(labels)):
        select.select_option(label)
        shown = page.evaluate(
            "() => Array.from(document.getElementById('rag-samples').tBodies[0].rows).filter(r => !r.hidden)"
            ".map(r => r.dataset.label)"
        )
        assert shown == [label] * labels.count(label)
    select.select_option("")
    shown = page.evaluate(
        "() => Array.from(document.getElementById('rag-samples').tBodies[0].rows).filter(r => !r.hidden).length"
    )
    assert shown == len(labels)


def test_small_report(tmp_path: Path) -> None:
    import stagewise

    qrels, runs = small_inputs()
    out = tmp_path / "small.html"
    stagewise.report(qrels, runs, ["map", "ndcg@10"], cutoffs=(1, 5, 10, 30), rag=RAG_RECORDS, output=out)
    with open_report(out) as opened:
        check_clean(opened, plots=3 + 2 + 2 + 1)
        check_sort_and_filter(opened.page)
        check_label_filter(opened.page)
        # the pairs table (folded under <details>) sorts numbers as numbers
        opened.page.locator("#comparison details > summary").first.click()
        opened.page.locator("#pairs-table thead th").nth(3).locator("button").click()
        diffs = column_values(opened.page, "pairs-table", 3)
        assert diffs == sorted(diffs)


def robust_report(out: Path) -> Path:
    import stagewise

    if not ROBUST.is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    runs = sorted(glob.glob(str(ROBUST / "runs" / "*.gz")))
    stagewise.report(str(ROBUST / "robust03_qrels.txt"), runs, output=out)
    return out


def test_robust_report(tmp_path: Path) -> None:
    out = robust_report(tmp_path / "robust.html")
    assert out.stat().st_size < 8 * 1024 * 1024
    with open_report(out) as opened:
        check_clean(opened, plots=3 + 16 + 2)
        assert opened.page.locator("#comparison-table tbody tr").count() == 17
        assert opened.page.locator("#per-query-table-0 tbody tr").count() == 100
        check_sort_and_filter(opened.page)


def clapnq_report(out: Path) -> Path:
    """The RAG report of the demo's pipeline on the bundled CLAP NQ dev (BM25, RRF, rerank, extractive answerer)."""
    import stagewise
    from stagewise.demo import run_demo

    demo = run_demo(out.parent / "demo", dense="off", report=False)
    stagewise.report(rag=demo.rag, output=out, title="stagewise report: CLAP NQ dev, the demo's RAG diagnosis")
    return out


def test_clapnq_rag_report(tmp_path: Path) -> None:
    out = clapnq_report(tmp_path / "clapnq.html")
    with open_report(out) as opened:
        check_clean(opened, plots=1)
        assert opened.page.locator("#rag-samples tbody tr").count() == 600
        check_label_filter(opened.page)
