"""Library functions check their cheap arguments (metrics, conventions, test options) before they read a file,
so the command line need not pre-check them: a misspelt metric fails at once, naming the metric, whatever the
state of the files."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import stagewise
from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.errors import ConventionError, MetricError, StagewiseError

QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))


def _never() -> None:
    raise AssertionError("a file was read before the arguments were checked")


def test_evaluate_checks_metrics_and_conventions_before_reading(tmp_path: Path) -> None:
    absent = str(tmp_path / "absent.qrels")
    with pytest.raises(MetricError, match="nosuch"):
        stagewise.evaluate(absent, absent, ["map", "nosuch@10"])
    with pytest.raises(MetricError):
        stagewise.evaluate(_never, _never, [])
    with pytest.raises(ConventionError, match="ties"):
        stagewise.evaluate(_never, _never, ["map"], ties="random")
    with pytest.raises(ConventionError, match="max_ret"):
        stagewise.evaluate(_never, _never, ["map"], max_ret=0)


def test_evaluate_reads_sources_given_as_functions() -> None:
    direct = stagewise.evaluate(QRELS, RUN, ["map", "P@10"])
    deferred = stagewise.evaluate(lambda: QRELS, lambda: [RUN], ["map", "P@10"])
    assert deferred.means["results.test"] == direct.means["results.test"]
    assert direct.means["results.test"]["map"] > 0


def test_compare_checks_its_options_before_reading(tmp_path: Path) -> None:
    absent = str(tmp_path / "absent.run")
    with pytest.raises(StagewiseError, match="alpha"):
        stagewise.compare(absent, [absent, absent], ["map"], alpha=2.0)
    with pytest.raises(StagewiseError, match="resamples"):
        stagewise.compare(_never, _never, ["map"], resamples=0)
    with pytest.raises(MetricError, match="nosuch"):
        stagewise.compare(_never, _never, ["nosuch"])
    with pytest.raises(StagewiseError, match="at least two runs"):
        stagewise.compare(absent, [absent], ["map"])


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_the_cli_names_the_metric_not_the_missing_file(tmp_path: Path, command: str) -> None:
    absent = str(tmp_path / "absent.run")
    done = CliRunner().invoke(app, [command, absent, absent, absent, "-m", "map,nosuch@10"])
    assert done.exit_code == 2, done.output
    assert "nosuch" in done.output and "absent" not in done.output


def test_compare_cli_still_resolves_a_baseline_by_path_before_reading() -> None:
    import json

    done = CliRunner().invoke(app, ["compare", QRELS, RUN, TRUNC, "-m", "map", "--baseline", TRUNC, "-f", "json"])
    assert done.exit_code == 0, done.output
    pair = json.loads(done.stdout)["pairs"][0]
    assert (pair["a"], pair["b"]) == ("results.trunc", "results.test")
