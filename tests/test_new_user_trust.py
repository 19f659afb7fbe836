"""`stagewise trust` takes one metric and a grouping or a file: two metrics (`-m map,ndcg@10`) read as one unknown
metric 'map,ndcg', and a --group-by typo as "cannot be read (FileNotFoundError)"; both now say what to give."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN, TRUNC = (str(SAMPLE / name) for name in ("qrels.test", "results.test", "results.trunc"))


@pytest.mark.parametrize(
    ("metric", "listed"), [("map,ndcg@10", "map, ndcg@10"), ("ndcg_cut.10,20", "ndcg_cut_10, ndcg_cut_20")]
)
def test_two_metrics_are_refused_as_two(metric: str, listed: str) -> None:
    done = CliRunner().invoke(app, ["trust", QRELS, RUN, TRUNC, "-m", metric])
    assert done.exit_code == 2
    assert done.output == (
        f"stagewise: error: --metric: 2 metrics were given ({listed}); expected one metric "
        "(trust measures one metric a run; run it once per metric)\n"
    )


def test_a_grouping_typo_names_the_choices() -> None:
    done = CliRunner().invoke(app, ["trust", QRELS, RUN, TRUNC, "--group-by", "prefx"])
    assert done.exit_code == 2
    assert done.output == (
        "stagewise: error: prefx: is neither a grouping nor a file; "
        "expected --group-by run, prefix, prefix:N or a run-to-group file\n"
    )


def test_a_group_file_and_one_metric_still_work(tmp_path: Path) -> None:
    groups = tmp_path / "groups.txt"
    groups.write_text("results.test a\nresults.trunc b\n")
    done = CliRunner().invoke(app, ["trust", QRELS, RUN, TRUNC, "-m", "P@10(rel=2)", "--group-by", str(groups)])
    assert done.exit_code == 0, done.output
    assert "on P@10(rel=2)" in done.output.splitlines()[0]
