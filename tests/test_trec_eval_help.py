"""``stagewise trec_eval -h``: the flags and every measure of the table, each with a line of description."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.trec_eval import measures as M
from stagewise.trec_eval.command import run_trec_eval

runner = CliRunner()


def _measure_lines(text: str) -> dict[str, str]:
    body = text.split("printed in this order.", 1)[1].split("Sets (-m SET):", 1)[0]
    return {line.split()[0]: line for line in body.splitlines() if line.strip()}


def test_every_measure_of_the_table_has_a_description_and_no_other() -> None:
    assert list(M.DESCRIPTIONS) == list(M.TABLE_ORDER)
    assert all(text and text == text.strip() for text in M.DESCRIPTIONS.values())


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_lists_the_flags_and_every_measure_in_printing_order(flag: str) -> None:
    result = runner.invoke(app, ["trec_eval", flag])
    assert result.exit_code == 0, result.output
    text = result.stdout
    flags = ("-q", "-c", "-n", "-J", "-l LEVEL", "-M MAX", "-N NUM_DOCS", "-m MEASURE", "-R FORMAT", "-Z ZSCORES")
    for option in flags:
        assert f"  {option}" in text
    lines = _measure_lines(text)
    assert list(lines) == list(M.TABLE_ORDER)
    assert lines["P"].endswith("default P.5,10,15,20,30,100,200,500,1000")
    assert lines["success"].endswith("default success.1,5,10")
    assert "recip_rank" in text.split("Sets (-m SET):")[1]  # the sets name their members


def test_help_with_measures_lists_only_those() -> None:
    text = run_trec_eval(["-h", "-m", "ndcg_cut.10", "-m", "official"])
    assert list(_measure_lines(text)) == [m for m in M.TABLE_ORDER if m in {*M.NICKNAMES["official"], "ndcg_cut"}]


def test_a_misuse_is_one_line_that_points_at_help() -> None:
    result = runner.invoke(app, ["trec_eval", "qrels-only"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "expected two files" in result.output and "trec_eval -h" in result.output
