"""What a new user meets first: --version, per-query tables with their means, plain tables on a pipe."""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app

runner = CliRunner()
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))
BOX_DRAWING = re.compile("[\u2500-\u257f]")


def invoke(*args: str):
    # CliRunner's stdout is not a terminal: what a pipe or a redirect to a file gets.
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_version_is_the_package_metadata() -> None:
    try:
        expected = importlib.metadata.version("stagewise")
    except importlib.metadata.PackageNotFoundError:
        from stagewise import __version__ as expected
    for flag in ("--version", "-V"):
        result = invoke(flag)
        assert result.exit_code == 0, result.output
        assert result.stdout == f"stagewise {expected}\n"


def test_version_by_the_entry_point_builds_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    # the console script builds only what a line names: --version needs the root alone, and still wins over
    # what follows it
    from stagewise.cli import application, main

    for argv in (["--version"], ["-V", "eval"], ["--version", "--help"]):
        assert application.app_for(argv).registered_commands == []
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0
        assert capsys.readouterr().out == f"stagewise {application.package_version()}\n"


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line and not line.startswith(("#", "-", "stagewise"))]


def test_per_query_table_ends_each_run_with_its_mean_as_all() -> None:
    result = invoke("eval", QRELS, RUN, TRUNC, "-m", "map,P@10", "-q")
    assert result.exit_code == 0, result.output
    rows = _rows(result.stdout)
    assert rows[0] == ["run", "query_id", "map", "P@10"]
    by_run: dict[str, list[list[str]]] = {}
    for row in rows[1:]:
        by_run.setdefault(row[0], []).append(row)
    # 3 judged queries, then "all"; the mean row equals the mean of the shown values (to the printed digits)
    for run, body in by_run.items():
        assert [r[1] for r in body] == ["301", "302", "303", "all"], run
        for col in (2, 3):
            values = [float(r[col].rstrip("*")) for r in body[:3]]
            assert float(body[3][col].rstrip("*")) == pytest.approx(sum(values) / 3, abs=1e-4)
    # only the mean rows compete for the best-value marker
    starred = [r for r in rows[1:] if any(c.endswith("*") for c in r[2:])]
    assert [(r[0], r[1]) for r in starred] == [("results.test", "all")]


def test_per_query_mean_row_in_every_table_format() -> None:
    md = invoke("eval", QRELS, RUN, "-m", "map", "-q", "-f", "markdown").stdout
    assert "| results.test | all | 0.1785 |" in md
    tex = invoke("eval", QRELS, RUN, "-m", "map", "-q", "-f", "latex").stdout
    assert "results.test & all & 0.1785" in tex
    csv = invoke("eval", QRELS, RUN, "-m", "map", "-q", "-f", "csv").stdout
    rows = [line.split(",") for line in csv.splitlines()[1:]]
    assert [row[1] for row in rows] == ["301", "302", "303", "all"]
    assert float(rows[3][2]) == pytest.approx(sum(float(row[2]) for row in rows[:3]) / 3)


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_tables_on_a_pipe_are_ascii_with_a_best_marker(command: str) -> None:
    result = invoke(command, QRELS, RUN, TRUNC, "-m", "map,P@10")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not BOX_DRAWING.search(out)
    assert out.isascii()
    best = [r for r in _rows(out) if "results.test" in r]
    assert best and all(c.endswith("*") for c in best[0] if re.fullmatch(r"[\d.]+\*?", c))
    assert not any(c.endswith("*") for r in _rows(out) if "results.trunc" in r for c in r[:4])
    assert ("* marks the best value" in out) if command == "eval" else ("best value per metric followed by *" in out)


def test_one_run_has_no_best_marker() -> None:
    out = invoke("eval", QRELS, RUN, "-m", "map").stdout
    assert "*" not in out


def test_markdown_and_latex_mark_the_best_in_bold() -> None:
    md = invoke("eval", QRELS, RUN, TRUNC, "-m", "map", "-f", "markdown").stdout
    assert "| results.test | **0.1785** |" in md and "| results.trunc | 0.1016 |" in md
    tex = invoke("eval", QRELS, RUN, TRUNC, "-m", "map", "-f", "latex").stdout
    assert "results.test & \\textbf{0.1785}" in tex


def test_rich_table_on_a_terminal() -> None:
    # FORCE_COLOR makes rich treat the output as a terminal
    result = runner.invoke(app, ["eval", QRELS, RUN, TRUNC, "-m", "map"], env={"COLUMNS": "120", "FORCE_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert BOX_DRAWING.search(result.stdout)
    assert "0.1785*" not in result.stdout


def test_trec_eval_cutoff_lists_expand_to_trec_eval_names_and_values() -> None:
    from stagewise.trec_eval.command import run_trec_eval

    result = invoke("eval", QRELS, RUN, "-m", "ndcg_cut.10,20,map", "-m", "P.5,10", "-f", "json")
    assert result.exit_code == 0, result.output
    means = json.loads(result.stdout)["runs"]["results.test"]
    assert list(means) == ["ndcg_cut_10", "ndcg_cut_20", "map", "P_5", "P_10"]
    reference = {}
    for line in run_trec_eval(["-m", "ndcg_cut.10,20", "-m", "P.5,10", "-m", "map", QRELS, RUN]).splitlines():
        name, _, value = line.split()
        reference[name] = float(value)
    for name, value in means.items():
        assert value == pytest.approx(reference[name], abs=5e-5), name


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("10", "give it a metric, as in ndcg@10 or P@10"),
        ("ndcg@10,20", "as in ndcg@10,ndcg@20, or use trec_eval's list ndcg_cut.10,20"),
    ],
)
def test_a_bare_cutoff_is_an_error_in_stagewise_spelling(metric: str, message: str) -> None:
    result = invoke("eval", QRELS, RUN, "-m", metric)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def _help_text(*args: str) -> str:
    """--help with the rich frame and line breaks taken out."""
    out = invoke(*args, "--help").stdout
    return " ".join(BOX_DRAWING.sub(" ", out).replace("│", " ").split())


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_help_and_behaviour_share_one_default_metric_list(command: str) -> None:
    from stagewise.metrics.evaluate import DEFAULT_METRICS, evaluate
    from stagewise.stats import compare

    assert f"Default: {', '.join(DEFAULT_METRICS)}." in _help_text(command)
    # one tuple, not equal copies
    assert evaluate.__defaults__[0] is DEFAULT_METRICS and compare.__defaults__[0] is DEFAULT_METRICS
    result = invoke(command, QRELS, RUN, TRUNC, "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    shown = list(data["runs"]["results.test"]) if command == "eval" else list(data["means"]["results.test"])
    assert shown == list(DEFAULT_METRICS)


@pytest.fixture
def same_name(tmp_path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two different runs both called run.trec, in folders a and b (paths relative to the working folder)."""
    lines = Path(RUN).read_text().splitlines()
    for folder, kept in (("a", lines), ("b", [ln for ln in lines if not ln.startswith("302")])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.trec").write_text("\n".join(kept) + "\n")
    monkeypatch.chdir(tmp_path)
    return ["a/run.trec", "b/run.trec"]


def test_run_labels_tell_same_named_files_apart() -> None:
    from stagewise.cli.common import run_labels

    assert run_labels(["a/run.trec", "b/run.trec"]) == ["a/run.trec", "b/run.trec"]
    assert run_labels(["/x/a/run.trec", "/y/a/run.trec", "z.run"]) == ["x/a/run.trec", "y/a/run.trec", "z.run"]
    assert run_labels(["a/run.trec", "run.trec"]) == ["a/run.trec", "run.trec"]
    assert run_labels(["r.run", "./r.run", "r.run"]) == ["r.run", "r.run#2", "r.run#3"]
    assert run_labels(["-"]) == ["stdin"]


def test_eval_and_compare_name_runs_by_their_folders(same_name: list[str]) -> None:
    data = json.loads(invoke("eval", QRELS, *same_name, "-m", "map", "-f", "json").stdout)
    assert list(data["runs"]) == same_name
    assert data["runs"]["a/run.trec"]["map"] != data["runs"]["b/run.trec"]["map"]
    cmp = invoke("compare", QRELS, *same_name, "-m", "map", "-b", "./b/run.trec", "-f", "json")
    assert cmp.exit_code == 0, cmp.output
    pairs = json.loads(cmp.stdout)["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [("b/run.trec", "a/run.trec")]
    table = invoke("eval", QRELS, *same_name, "-m", "map").stdout
    assert "a/run.trec" in table and "b/run.trec" in table and "#2" not in table


def test_fuse_records_the_runs_by_their_folders(same_name: list[str]) -> None:
    result = invoke("fuse", *same_name, "-o", "fused.run")
    assert result.exit_code == 0, result.output
    assert json.loads(Path("fused.run.meta.json").read_text())["runs"] == same_name
