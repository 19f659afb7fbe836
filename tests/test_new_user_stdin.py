"""stdin ('-') can feed one input of a command; given for two, the second would read nothing and its error would
blame an empty file. Each command refuses it up front, naming the inputs, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN = str(SAMPLE / "qrels.test"), str(SAMPLE / "results.test")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["eval", "-", "-"], "QRELS and RUNS"),
        (["eval", QRELS, "-", "-"], "2 of RUNS"),
        (["compare", "-", RUN, "-"], "QRELS and RUNS"),
        (["validate", "-", "-"], "QRELS and RUNS"),
        (["fuse", "-", "-", "-o", "fused.run"], "2 of RUNS"),
        (["rag", "-", "--run", "-"], "RECORDS and --run"),
        (["trec_eval", "-", "-"], "2 of its files"),
    ],
)
def test_stdin_for_two_inputs_is_refused_by_name(args: list[str], named: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, args, input=Path(QRELS).read_text())
    assert done.exit_code == 2, done.output
    assert done.output == (
        f"stagewise: error: -: stdin is given for {named}; it can be read only once"
        " (save all but one of them to a file first)\n"
    )
    assert not (tmp_path / "fused.run").exists()


def test_stdin_for_one_input_still_reads_it() -> None:
    # the same numbers as from the file: the check must not take away the one '-' that works
    from_file = CliRunner().invoke(app, ["eval", QRELS, RUN, "-m", "map", "-f", "csv"])
    from_stdin = CliRunner().invoke(app, ["eval", QRELS, "-", "-m", "map", "-f", "csv"], input=Path(RUN).read_text())
    assert from_file.exit_code == from_stdin.exit_code == 0, from_stdin.output
    value = lambda out: out.splitlines()[1].split(",")[1]  # noqa: E731
    assert value(from_stdin.output) == value(from_file.output)
