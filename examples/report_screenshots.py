"""Screenshots of the HTML reports shown in the README: the report ``stagewise demo`` writes (CLAP NQ dev, the
whole pipeline, without the dense extra as ``make demo`` runs it) and the 17 TREC 2003 Robust runs. Chromium is
Debian's (``/usr/bin/chromium``), driven by Playwright with the network blocked, the same way as
``tests/test_report_browser.py``.

    python examples/report_screenshots.py [--demo-only]   # docs/demo_report*.png, and docs/report_robust*.png
"""

from __future__ import annotations

import glob
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path[:0] = [str(REPO), str(REPO / "examples")]


def section_shot(page, selector: str, path: Path, max_height: int) -> None:
    """The top of one section of the page, at most ``max_height`` pixels of it."""
    box = page.evaluate(
        f"""() => {{ const r = document.querySelector('{selector}').getBoundingClientRect();
                    return {{x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height}}; }}"""
    )
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], max_height)}
    page.screenshot(path=path, full_page=True, clip=clip)


def robust_shots(tmp: Path, docs: Path) -> list[str]:
    from tests.browser_helpers import open_report

    import stagewise

    robust = tmp / "robust.html"
    runs = sorted(glob.glob(str(DATA / "trec_robust03_runs" / "runs" / "*.gz")))
    stagewise.report(str(DATA / "trec_robust03_runs" / "robust03_qrels.txt"), runs, output=robust)
    with open_report(robust, width=1280, height=1000) as opened:
        assert not opened.console_errors and not opened.page_errors and not opened.blocked
        opened.page.screenshot(path=docs / "report_robust.png")
        opened.page.locator("#curves").screenshot(path=docs / "report_robust_curves.png")
        section_shot(opened.page, "#per-query", docs / "report_robust_per_query.png", 760)
    return ["report_robust.png", "report_robust_curves.png", "report_robust_per_query.png"]


def demo_shots(tmp: Path, docs: Path) -> list[str]:
    from tests.browser_helpers import open_report

    from stagewise.demo import run_demo

    demo = run_demo(tmp / "demo", dense="off")
    with open_report(demo.out / "report.html", width=1280, height=760) as opened:
        assert not opened.console_errors and not opened.page_errors and not opened.blocked
        opened.page.screenshot(path=docs / "demo_report.png")
        section_shot(opened.page, "#rag", docs / "demo_report_rag.png", 700)
    return ["demo_report.png", "demo_report_rag.png"]


def main() -> None:
    from tests.browser_helpers import missing

    reason = missing()
    if reason:
        sys.exit(reason)
    docs = REPO / "docs"
    with tempfile.TemporaryDirectory() as tmp:
        written = demo_shots(Path(tmp), docs)
        if "--demo-only" not in sys.argv[1:]:
            written += robust_shots(Path(tmp), docs)
    for name in written:
        print(f"wrote docs/{name} ({(docs / name).stat().st_size / 1e3:.0f} KB)")


if __name__ == "__main__":
    main()
