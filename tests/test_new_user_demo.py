"""`stagewise demo --generator notaurl` ran seven steps (BM25, fusion, reranking, evaluation, tests) before saying
the URL was no URL; it is now refused first, with nothing written."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from stagewise.cli import app


def test_a_generator_that_is_no_url_is_refused_before_any_step(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = CliRunner().invoke(app, ["demo", "--out", str(out), "--no-dense", "--no-report", "--generator", "notaurl"])
    assert done.exit_code == 2
    assert done.output == (
        "stagewise: error: The 'url' parameter of the endpoint must be an http:// or https:// URL. "
        "Got 'notaurl' instead.\n"
    )  # no "[ 1/10] bm25-stem ..." line before it: nothing ran
    assert not out.exists()
