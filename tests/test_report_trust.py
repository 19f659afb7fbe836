"""How far the qrels can be trusted, in the HTML report: the library's trust report, rendered as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.assess.qrels_trust import trust
from stagewise.cli import app
from stagewise.errors import StagewiseError
from stagewise.report.html import render

pytest.importorskip("matplotlib")
ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


def _collection() -> tuple[dict, dict]:
    qrels = {f"q{q}": {f"d{d}": int((q + d) % 3 == 0) for d in range(12)} for q in range(6)}
    runs = {
        name: {f"q{q}": {f"d{(d * step + q) % 15}": 20.0 - d for d in range(10)} for q in range(6)}
        for name, step in (("A", 1), ("B", 2), ("C", 4))
    }
    return qrels, runs


def test_the_section_shows_the_trust_report_of_the_library() -> None:
    qrels, runs = _collection()
    study = stagewise.study(qrels, runs, ["map"], trust={"depth": 5}, cutoffs=(5,))
    expected = trust(qrels, runs, metric="map", depth=5)
    assert study.trust.to_dict() == expected.to_dict()
    page = render(study)
    assert 'id="trust"' in page and "How far the qrels can be trusted" in page
    lead = re.search(r"<strong>(\d+) of (\d+)</strong> runs change rank", page)
    assert lead and (int(lead.group(1)), int(lead.group(2))) == (expected.rank_changes, 3)
    for row in expected.left_out:
        assert f'data-v="{row.reduced_score!r}"' in page or f'data-v="{row.reduced_score}"' in page


def test_no_trust_section_unless_asked_and_one_run_is_refused() -> None:
    qrels, runs = _collection()
    assert 'id="trust"' not in render(stagewise.study(qrels, runs, ["map"], cutoffs=(5,)))
    with pytest.raises(StagewiseError, match="two or more runs"):
        stagewise.study(qrels, {"A": runs["A"]}, ["map"], trust=True, cutoffs=(5,))


@pytest.mark.skipif(not ROBUST.exists(), reason="the TREC 2003 Robust runs (../shared/data) are absent")
def test_the_command_line_adds_the_section_on_robust(tmp_path: Path) -> None:
    runs = sorted(str(p) for p in (ROBUST / "runs").glob("input.*.gz"))[:4]
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(ROBUST / "robust03_qrels.txt"), *runs, "-m", "map", "--trust", "--trust-depth", "50",
              "-o", str(out), "--resamples", "200"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "How far the qrels can be trusted" in page and "depth-50 pool" in page
