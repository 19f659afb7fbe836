"""`stagewise eval ... -o results.html` wrote a plain text table into a file a browser shows as one line of
garbled text; every command that writes text tables now refuses a .html name without --format, pointing at
stagewise report (which writes the HTML page)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN, TRUNC = (str(SAMPLE / name) for name in ("qrels.test", "results.test", "results.trunc"))


@pytest.mark.parametrize(
    "args",
    [
        ["eval", QRELS, RUN, "-m", "map"],
        ["compare", QRELS, RUN, TRUNC, "-m", "map"],
        ["gate", QRELS, TRUNC, "-b", RUN, "-m", "map"],
    ],
)
@pytest.mark.parametrize("name", ["results.html", "results.HTM"])
def test_a_web_page_name_is_refused_before_any_work(args: list[str], name: str, tmp_path: Path) -> None:
    out = tmp_path / name
    done = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert done.exit_code == 2, done.output
    assert done.output.startswith(f"stagewise: error: {out}: is named as a web page, but this command writes no HTML")
    assert done.output.endswith("(stagewise report writes one HTML page of runs and their comparison)\n")
    assert not out.exists()


def test_an_explicit_format_is_the_users_choice(tmp_path: Path) -> None:
    out = tmp_path / "table.html"
    done = CliRunner().invoke(app, ["eval", QRELS, RUN, "-m", "map", "-f", "markdown", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_text().startswith("| run | map |")


def test_report_still_writes_html(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = CliRunner().invoke(app, ["report", QRELS, RUN, TRUNC, "-m", "map", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_text().lstrip().lower().startswith("<!doctype html>")
