"""A run where qrels belong (or qrels where a run belongs) is refused naming the file and line, with a hint that
is true for the command at hand: agreement and merge take only qrels, fuse only runs, pool and trust a second
qrels file by an option, so "the qrels come first" (the old message) misled there."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN, RUN2 = (str(SAMPLE / name) for name in ("qrels.test", "results.test", "results.trunc"))
HINT = (
    "(check which file goes where: a command that takes both wants the qrels first, as in stagewise eval QRELS RUN...)"
)


@pytest.mark.parametrize(
    ("args", "culprit", "looks"),
    [
        (["eval", RUN, RUN], RUN, "looks like a run, not qrels"),
        (["eval", QRELS, QRELS], QRELS, "looks like qrels, not a run"),
        (["agreement", QRELS, RUN], RUN, "looks like a run, not qrels"),
        (["merge", QRELS, RUN], RUN, "looks like a run, not qrels"),
        (["pool", RUN, "--qrels", RUN], RUN, "looks like a run, not qrels"),
        (["trust", QRELS, RUN, RUN2, "--other-qrels", RUN], RUN, "looks like a run, not qrels"),
        (["fuse", QRELS, RUN, "-o", "fused.run"], QRELS, "looks like qrels, not a run"),
    ],
)
def test_a_swapped_file_is_named_with_a_hint_true_for_every_command(
    args: list[str], culprit: str, looks: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2, done.output
    assert done.output.startswith(f"stagewise: error: {culprit}:1: this {looks} ('301 ")
    assert done.output.endswith(HINT + "\n")
    assert "come first" not in done.output
    assert not (tmp_path / "fused.run").exists()
