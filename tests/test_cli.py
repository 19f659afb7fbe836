"""The command line: the JSON contract, every output format, files written whole, and the demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app

runner = CliRunner()
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_json_contract_without_per_query() -> None:
    result = invoke("eval", QRELS, RUN, TRUNC, "-m", "map", "-m", "ndcg@10(gain=exp)", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"conventions", "runs"}
    assert set(data["runs"]) == {"results.test", "results.trunc"}
    assert set(data["runs"]["results.test"]) == {"map", "ndcg@10(gain=exp)"}
    assert data["runs"]["results.test"]["map"] == pytest.approx(0.1785, abs=5e-5)
    conv = data["conventions"]
    assert conv["relevance_level"] == 1
    assert conv["metrics"]["ndcg@10(gain=exp)"]["gain"] == "exp"
    assert conv["queries_missing_from_run"] == {"results.test": 0, "results.trunc": 1}
    assert "missing_queries" in conv and "ties" in conv


def test_json_contract_with_per_query() -> None:
    data = json.loads(invoke("eval", QRELS, TRUNC, "-m", "P@10", "--per-query", "--format", "json").stdout)
    per_query = data["per_query"]["results.trunc"]["P@10"]
    assert set(per_query) == {"301", "302", "303"}
    assert per_query["302"] == 0.0  # judged, absent from the run: scored 0 by default
    assert data["runs"]["results.trunc"]["P@10"] == pytest.approx(sum(per_query.values()) / 3)


def test_metric_names_as_written_and_comma_lists() -> None:
    data = json.loads(invoke("eval", QRELS, RUN, "-m", "ndcg_cut_10,P@5(rel=1)", "-f", "json").stdout)
    assert list(data["runs"]["results.test"]) == ["ndcg_cut_10", "P@5(rel=1)"]


@pytest.mark.parametrize("fmt", ["csv", "markdown", "latex", "table"])
def test_text_formats(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"scores.{fmt}"
    result = invoke("eval", QRELS, RUN, TRUNC, "-m", "map,P@10", "--format", fmt, "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "results.trunc" in text
    if fmt == "csv":
        assert text.splitlines()[0] == "run,map,P@10"
    if fmt == "markdown":
        assert text.startswith("| run | map | P@10 |")
        assert "absent from the run, scored 0" in text
    if fmt == "latex":
        assert "\\begin{tabular}" in text and "results.trunc" in text
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left behind


def test_table_states_conventions() -> None:
    result = invoke("eval", QRELS, RUN, TRUNC, "-m", "ndcg@10,map")
    assert result.exit_code == 0
    assert "gain: linear" in result.stdout
    assert "doc id descending" in result.stdout
    assert "1 judged query absent from the run, scored 0" in result.stdout


def test_validate_reports_and_exits_1_on_missing_queries() -> None:
    result = invoke("validate", QRELS, TRUNC)
    assert result.exit_code == 1
    assert "judged queries absent from the run: 1 (302" in result.stdout
    ok = invoke("validate", QRELS, RUN, "--format", "json")
    assert ok.exit_code == 0
    assert json.loads(ok.stdout)["qrels"]["label_histogram"] == {"0": 3120, "1": 561}
    old = invoke("validate", QRELS, RUN, "--json")  # the old spelling still works, with a note
    assert old.exit_code == 0 and old.stdout == ok.stdout
    assert "--json is deprecated; use --format json" in old.stderr


def test_validate_counts_scores_equal_only_in_single_precision(tmp_path) -> None:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q 0 a 1\n")
    run.write_text("q Q0 b 1 0.1 t\nq Q0 a 2 0.1000000000001 t\nq Q0 c 3 0.05 t\nq Q0 d 4 0.05 t\n")
    result = invoke("validate", str(qrels), str(run))
    assert result.exit_code == 0, result.output
    assert "adjacent results with tied scores: 66.7% (scores compared in single precision" in result.stdout
    assert "of which equal only in single precision: 1 " in result.stdout
    report = json.loads(invoke("validate", str(qrels), str(run), "--format", "json").stdout)["runs"]["run.txt"]
    assert report["single_precision_ties"] == 1


def test_help_teaches() -> None:
    result = invoke("eval", "--help")
    assert result.exit_code == 0
    assert "ndcg@10(gain=exp)" in result.stdout
    assert "--missing" in result.stdout


def test_help_prose_reflows_and_examples_keep_their_lines() -> None:
    from stagewise.cli.command import reflowed_help

    def documented() -> None:
        """First line
        goes on.

        A paragraph
        in two lines.

        Examples:

          stagewise eval q.txt a.run
          stagewise eval q.txt b.run

        - one item
        - another
        """

    assert reflowed_help(documented).split("\n\n") == [
        "First line goes on.",
        "A paragraph in two lines.",
        "Examples:",
        "  stagewise eval q.txt a.run\n  stagewise eval q.txt b.run",
        "- one item\n- another",
    ]
    search = invoke("search", "--help")
    assert "printf 'q1\\tlift of wings\\n' | stagewise search" in search.stdout
