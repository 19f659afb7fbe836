"""A misspelt name (a metric, a test, a fusion method...) is refused with every name there is, and, when one is
close, the one meant: `-m ndgc@10` ends "did you mean 'ndcg'?". Names from other tools' spellings are taken as
those tools mean them (checked against the peers where installed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.errors import StagewiseError
from stagewise.metrics.measures import Measure

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN = str(SAMPLE / "qrels.test"), str(SAMPLE / "results.test")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("ndgc@10", "'ndcg'"), ("sucess@5", "'success'"), ("recal@100", "'recall'"), ("mpa", "'map'")],
)
def test_a_misspelt_metric_says_which_was_meant(typed: str, meant: str) -> None:
    with pytest.raises(StagewiseError, match="choose one of map, P, recall") as error:
        Measure.parse(typed)
    assert str(error.value).endswith("?") and f"did you mean {meant}" in str(error.value)


def test_a_name_close_to_nothing_gets_no_guess() -> None:
    with pytest.raises(StagewiseError) as error:
        Measure.parse("xyzzy@10")
    assert "did you mean" not in str(error.value)


def test_the_command_line_says_it_in_one_line() -> None:
    done = CliRunner().invoke(app, ["compare", QRELS, RUN, RUN, "-t", "wilcox"])
    assert done.exit_code == 2
    assert done.output.startswith("stagewise: error: unknown statistical test 'wilcox'; choose one of t, wilcoxon")
    assert done.output.endswith("; did you mean 'wilcoxon'?\n") and done.output.count("\n") == 1


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [("ndcg_cut.10", "ndcg@10"), ("P.10", "P@10"), ("nDCG@10", "ndcg@10"), ("recip_rank", "mrr"), ("AP", "map")],
)
def test_other_tools_spellings_give_our_numbers(theirs: str, ours: str) -> None:
    result = stagewise.evaluate(QRELS, [RUN], [theirs, ours]).means[Path(RUN).name]
    assert result[theirs] == result[ours]


def test_trec_eval_and_ir_measures_spellings_agree_with_ir_measures() -> None:
    ir_measures = pytest.importorskip("ir_measures")
    qrels = list(ir_measures.read_trec_qrels(QRELS))
    run = list(ir_measures.read_trec_run(RUN))
    theirs = ir_measures.calc_aggregate(
        [ir_measures.parse_measure("nDCG@10"), ir_measures.parse_measure("P@10")], qrels, run
    )
    ours = stagewise.evaluate(QRELS, [RUN], ["ndcg_cut.10", "P.10"]).means[Path(RUN).name]
    assert ours["ndcg_cut.10"] == pytest.approx(theirs[ir_measures.parse_measure("nDCG@10")], abs=1e-9)
    assert ours["P.10"] == pytest.approx(theirs[ir_measures.parse_measure("P@10")], abs=1e-9)


def test_an_unquoted_url_in_a_judge_says_to_quote_it(tmp_path: Path) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_text('{"id": "c1", "claim": "The sky is blue.", "passages": ["The sky is blue."]}\n')
    done = CliRunner().invoke(app, ["judge", "support", str(claims), "--judge", "llm(url=http://127.0.0.1:9/v1)"])
    assert done.exit_code == 2
    assert done.output.endswith("(quote a value holding ':', '/' or a space: url='http://127.0.0.1:8000/v1')\n")
    quoted = ["judge", "support", str(claims), "--judge", "llm(url='http://127.0.0.1:9/v1',model=x)", "--dry-run"]
    assert CliRunner().invoke(app, quoted).exit_code == 0  # as the hint says, it reads (no call is made)


def test_a_value_with_both_quotes_and_a_backslash_reads_back() -> None:
    # found by tests/test_spec.py's hypothesis test: the closing parenthesis was looked for past an escaped quote
    from stagewise.spec import canonical, parse_call

    for value in ["'\"", "a\\'b", 'x")y', "(')"]:
        assert parse_call(canonical("x", None, [("v", value)]), "thing", "x").params["v"] == value
