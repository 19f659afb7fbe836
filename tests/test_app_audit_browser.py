"""A judge's audit in the web app, end to end in Debian's headless Chromium (Playwright) against ``stagewise serve
--rag R --judge-audit AUDIT.json`` on 127.0.0.1: the RAG sample page shows the judge of its citation labels and
the audit's figures, which equal the audit file's numbers; its link opens the audit's own page (served under a
Content-Security-Policy with no script), whose figures, confusion matrix and calibration bins equal the file's."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from stagewise.cli import app as cli
from tests import browser_helpers
from tests.app_helpers import browser, serving
from tests.browser_helpers import open_page

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytestmark = pytest.mark.skipif(browser_helpers.missing() is not None, reason=str(browser_helpers.missing()))

WORDS = ["austen", "emma", "novel", "published", "dickens", "london", "paris", "wrote", "year", "letters", "sister"]
RECORD = {  # passage texts: the auto judge is lexical, and every word of the claim is in p1 (recall 1, precision 1)
    "id": "good",
    "question": "who wrote Emma?",
    "retrieved": ["p1", "p2"],
    "passages": {"p1": "Jane Austen wrote Emma in 1815.", "p2": "Paris is the capital of France."},
    "answer": "Jane Austen wrote Emma [p1].",
    "gold_answers": ["Jane Austen"],
    "gold_evidence": ["p1"],
}


def _n3(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(figure: list[float | None]) -> str:
    return f"{_n3(figure[0])} [{_n3(figure[1])}, {_n3(figure[2])}]"


def _audit_file(tmp_path):
    rng = random.Random(11)
    lines = []
    for i in range(40):
        claim = " ".join(rng.sample(WORDS, 4))
        passage = " ".join(rng.sample(claim.split(), rng.randint(0, 4)) + rng.sample(WORDS, 2))
        lines.append(json.dumps({"id": f"c{i}", "claim": claim, "passages": [passage], "label": rng.random() < 0.6}))
    labelled = tmp_path / "claims.jsonl"
    labelled.write_text("\n".join(lines) + "\n")
    audit = tmp_path / "lexical-audit.json"
    done = CliRunner().invoke(
        cli, ["judge", "audit", str(labelled), "--judge", "lexical", "-B", "100", "-f", "json", "-o", str(audit)]
    )
    assert done.exit_code == 0, done.output
    return audit


def test_the_rag_page_shows_the_audit_of_its_judge_and_the_audit_page_the_files_numbers(tmp_path):
    audit_path = _audit_file(tmp_path)
    audit = json.loads(audit_path.read_text())
    records = tmp_path / "rag.jsonl"
    records.write_text(json.dumps(RECORD) + "\n")
    args = ["--rag", str(records), "--db", str(tmp_path / "labels.sqlite"), "--judge-audit", str(audit_path)]
    with serving(args) as server, browser() as context:
        opened = open_page(context, server.url + "/rag/good")
        page = opened.page
        role = page.get_by_test_id("judged-role")
        assert role.get_attribute("data-judge") == "lexical" and "by judge lexical" in role.inner_text()
        values = [v.inner_text() for v in page.get_by_test_id("judged-value").all()]
        assert values == ["1.0000", "1.0000"]  # worked by hand: the claim's every word is in the cited p1
        summary = page.get_by_test_id("audit-summary").inner_text()
        figures = audit["figures"]
        assert f"Cohen's kappa with people: {_interval(figures['kappa'])}" in summary
        assert f"n = {audit['n']:,}" in summary and audit["n"] == 40
        assert f"accuracy {_interval(figures['accuracy'])}" in summary
        assert f"macro-F1 {_interval(figures['macro_f1'])}" in summary
        assert "measured on claims.jsonl" in summary
        for g in audit["gullibility"]:
            assert f"fooled by {g['attack']}: {_interval(g['rate'])} of {g['n']:,}" in summary
        assert opened.console_errors == [] and opened.page_errors == []

        page.get_by_test_id("audit-link").click()
        page.wait_for_url(server.url + "/audits/1")
        assert page.get_by_test_id("audit-judge").inner_text() == audit["judge"]
        for key, (value, low, high) in figures.items():
            cells = page.locator(f'[data-testid=figure][data-figure="{key}"] td').all_inner_texts()
            assert cells[1:] == [_n3(value), _n3(low), _n3(high)], key
        shown = [int(c.replace(",", "")) for c in page.get_by_test_id("confusion-cell").all_inner_texts()]
        assert shown == [x for row in audit["confusion"]["counts"] for x in row]
        bins = page.get_by_test_id("calibration-bin").all()
        assert len(bins) == len(audit["calibration"]["bins"])
        for row, b in zip(bins, audit["calibration"]["bins"], strict=True):
            assert row.locator("td").all_inner_texts()[1:] == [
                f"{b['count']:,}",
                _n3(b["mean_score"]),
                _n3(b["observed"]),
            ]
        assert page.get_by_test_id("ece").inner_text() == _n3(audit["calibration"]["ece"])
        # the stylesheet loaded under the policy (a table cell is bordered), and the page raised nothing
        border = page.locator("td").first.evaluate("e => getComputedStyle(e).borderTopStyle")
        assert border == "solid"
        assert opened.console_errors == [] and opened.page_errors == [] and context.blocked == []
