"""`stagewise trec_eval -m nDCG@10` (an ir_measures or ranx spelling) is refused as trec_eval refuses it, and the
error now ends with trec_eval's own spelling of it; that spelling, run through the drop-in, gives the number
stagewise eval gives for the name as typed (so the hint is checked, not just printed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN = str(SAMPLE / "qrels.test"), str(SAMPLE / "results.test")


@pytest.mark.parametrize(
    ("typed", "theirs", "printed"),
    [
        ("nDCG@10", "ndcg_cut.10", "ndcg_cut_10"),
        ("P@10", "P.10", "P_10"),
        ("map@100", "map_cut.100", "map_cut_100"),
        ("R@100", "recall.100", "recall_100"),
        ("MRR", "recip_rank", "recip_rank"),
    ],
)
def test_the_hinted_spelling_gives_the_same_number(typed: str, theirs: str, printed: str) -> None:
    refused = CliRunner().invoke(app, ["trec_eval", "-m", typed, QRELS, RUN])
    assert refused.exit_code == 2
    assert refused.output.endswith(f"; trec_eval writes it {theirs} (stagewise eval -m takes {typed!r} as written)\n")
    done = CliRunner().invoke(app, ["trec_eval", "-m", theirs, QRELS, RUN])
    assert done.exit_code == 0, done.output
    line = next(line for line in done.output.splitlines() if line.split()[0] == printed)
    ours = stagewise.evaluate(QRELS, [RUN], [typed]).means[Path(RUN).name][typed]
    assert float(line.split()[2]) == pytest.approx(ours, abs=5e-5)  # trec_eval prints 4 decimals


def test_a_name_trec_eval_cannot_say_is_said_so() -> None:
    refused = CliRunner().invoke(app, ["trec_eval", "-m", "ndcg@10(gain=exp)", QRELS, RUN])
    assert refused.output.endswith(
        "; trec_eval has no spelling of it (stagewise eval -m takes 'ndcg@10(gain=exp)' as written)\n"
    )


def test_a_name_nobody_knows_gets_no_hint() -> None:
    refused = CliRunner().invoke(app, ["trec_eval", "-m", "foo", QRELS, RUN])
    assert refused.exit_code == 2 and "writes it" not in refused.output and "spelling" not in refused.output
