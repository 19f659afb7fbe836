"""Screenshots of the web app shown in the README: the playground, a query page (three TREC 2003 Robust runs)
and a RAG sample page (CLAP NQ questions with their gold passage). Debian's Chromium through Playwright, as in
``tests/test_app_browser.py``; the server runs on 127.0.0.1 and is stopped at the end.

    python examples/app_screenshots.py      # writes docs/app_playground.png, app_query.png, app_rag.png
"""

from __future__ import annotations

import glob
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path[:0] = [str(REPO)]


def clapnq_records(n: int = 6) -> list[dict]:
    """A few CLAP NQ questions as RAG records: the gold passage retrieved second behind another question's
    passage, and an answer taken from the gold passage (or not), so the stage labels differ."""
    lines = (DATA / "clapnq" / "clapnq_dev_answerable.jsonl").read_text(encoding="utf-8").splitlines()[: n + 1]
    items = [json.loads(line) for line in lines]
    records = []
    for i, item in enumerate(items[:n]):
        gold, other = f"p{i}", f"p{i + 1}"
        answers = [o["answer"] for o in item["output"] if o["answer"].strip()]
        context = [other, gold] if i % 3 else [other]
        records.append(
            {
                "id": f"clapnq-{i + 1}",
                "question": item["input"],
                "retrieved": [other, gold],
                "context": context,
                "gold_evidence": [gold],
                "passages": {gold: item["passages"][0]["text"], other: items[i + 1]["passages"][0]["text"]},
                "answer": (answers[0] if i % 2 == 0 else "I could not find it in the passages.")
                + (f" [{gold}]" if gold in context else ""),
                "citations": [gold] if gold in context else [],
                "gold_answers": answers,
            }
        )
    return records


def main() -> None:
    from tests.app_helpers import browser, serving
    from tests.browser_helpers import missing, open_page

    reason = missing()
    if reason:
        sys.exit(reason)
    docs = REPO / "docs"
    robust = DATA / "trec_robust03_runs"
    runs = sorted(glob.glob(str(robust / "runs" / "*.gz")))[:3]
    with tempfile.TemporaryDirectory() as tmp:
        rag = Path(tmp) / "clapnq.jsonl"
        rag.write_text("".join(json.dumps(r) + "\n" for r in clapnq_records()))
        args = ["--qrels", str(robust / "robust03_qrels.txt"), "--rag", str(rag), "--db", str(Path(tmp) / "l.sqlite")]
        for run in runs:
            args += ["--run", run]
        with serving(args) as server, browser(width=1280, height=1000) as context:
            page = open_page(context, server.url + "/playground").page
            page.get_by_test_id("quiz-yes").click()
            page.screenshot(path=str(docs / "app_playground.png"), full_page=True)
            page = open_page(context, server.url + "/queries").page
            page.get_by_test_id("query-row").first.wait_for()
            qid = page.get_by_test_id("query-row").nth(2).locator("a").inner_text()
            page = open_page(context, f"{server.url}/queries/{qid}").page
            page.get_by_test_id("doc").nth(1).get_by_test_id("set-2").click()
            page.wait_for_timeout(300)
            page.screenshot(path=str(docs / "app_query.png"))
            page = open_page(context, server.url + "/rag/clapnq-2").page
            page.screenshot(path=str(docs / "app_rag.png"), full_page=True)
    print("wrote docs/app_playground.png, docs/app_query.png, docs/app_rag.png")


if __name__ == "__main__":
    main()
