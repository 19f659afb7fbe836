"""``stagewise fuse``: golden outputs, metadata, errors on one line, the optimisation report."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from stagewise.cli import fuse_cmd

RUN_A = "q1 Q0 A 1 0.9 a\nq1 Q0 B 2 0.8 a\nq1 Q0 C 3 0.7 a\nq2 Q0 X 1 5 a\n"
RUN_B = "q1 Q0 B 1 12 b\nq1 Q0 D 2 11 b\nq1 Q0 A 3 10 b\nq2 Q0 Y 1 1 b\n"
QRELS = "q1 0 B 1\nq1 0 A 0\nq2 0 Y 1\n"


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    app.command("fuse")(fuse_cmd.fuse_command)

    @app.command("other")
    def other() -> None:  # a second command keeps "fuse" a subcommand, as in the real CLI
        """Placeholder."""

    return app


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path


def invoke(app, *args):
    return CliRunner().invoke(app, ["fuse", *map(str, args)], terminal_width=100)


def test_rrf_golden_output(app, files):
    out = files / "fused.run"
    result = invoke(app, files / "a.run", files / "b.run", "--method", "rrf", "--rrf-k", "60", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text() == (
        "q1 Q0 B 1 0.03252247488101534 rrf\n"
        "q1 Q0 A 2 0.032266458495966696 rrf\n"
        "q1 Q0 D 3 0.016129032258064516 rrf\n"
        "q1 Q0 C 4 0.015873015873015872 rrf\n"
        "q2 Q0 Y 1 0.01639344262295082 rrf\n"
        "q2 Q0 X 2 0.01639344262295082 rrf\n"
    )
    meta = json.loads((files / "fused.run.meta.json").read_text())
    assert meta["method"] == "rrf(rrf_k=60)"
    assert meta["runs"] == ["a.run", "b.run"]
    assert meta["missing"] == "zero" and meta["queries"] == "union"
    assert "fused 2 run(s) with rrf(rrf_k=60), norm none: 2 queries, 6 results" in result.output


def test_stdout_when_no_output_file(app, files):
    result = invoke(app, files / "a.run", files / "b.run", "-m", "combsum", "--norm", "none", "--no-meta")
    assert result.exit_code == 0
    lines = [line for line in result.stdout.splitlines() if line.startswith("q")]
    assert lines[0] == "q1 Q0 B 1 12.8 combsum"
    assert not list(files.glob("*.meta.json"))


def test_options_reach_the_method(app, files):
    out = files / "w.run"
    result = invoke(
        app,
        files / "a.run",
        files / "b.run",
        "-m",
        "wsum",
        "-w",
        "1,0",
        "--norm",
        "none",
        "--depth",
        "2",
        "--missing",
        "zero",
        "--queries",
        "intersection",
        "--name",
        "hybrid",
        "-o",
        out,
        "--meta",
        files / "m.json",
    )
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines()[0] == "q1 Q0 A 1 0.9 hybrid"
    meta = json.loads((files / "m.json").read_text())
    assert meta["parameters"]["weights"] == [1.0, 0.0] and meta["depth"] == 2
    result = invoke(app, files / "a.run", files / "b.run", "-m", "rbc", "-p", "phi=0.5", "-o", files / "r.run")
    assert result.exit_code == 0
    assert json.loads((files / "r.run.meta.json").read_text())["method"] == "rbc(phi=0.5)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "combfoo"], "unknown fusion method 'combfoo'; choose one of rrf, combsum"),
        (["-m", "rrf", "-p", "k=10"], "RRF's constant is called rrf_k, not k"),
        (["-m", "wsum", "-w", "1,2,3"], "3 weights for 2 runs"),
        (["-m", "posfuse"], "posfuse learns from judgements"),
        (["--optimize"], "--optimize needs training judgements"),
        (["--norm", "l2"], "unknown normalisation 'l2'"),
    ],
)
def test_user_errors_are_one_line(app, files, args, message):
    result = invoke(app, files / "a.run", files / "b.run", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.output.count("stagewise: error:") == 1


def test_missing_file_is_a_clean_error(app, files):
    result = invoke(app, files / "a.run", files / "nope.run")
    assert result.exit_code == 2 and "no such file" in result.output


def test_list_methods_comes_from_the_registry(app):
    from stagewise.fusion import method_names, normalization_names

    result = CliRunner().invoke(app, ["fuse", "--list-methods"])
    assert result.exit_code == 0
    for name in method_names() + normalization_names():
        assert f"  {name}: " in result.stdout


def test_optimize_with_folds_reports_each_fold(app, files):
    out = files / "cv.run"
    result = invoke(
        app,
        files / "a.run",
        files / "b.run",
        "-m",
        "wsum",
        "--optimize",
        "--qrels",
        files / "qrels.txt",
        "--metric",
        "mrr",
        "--step",
        "0.5",
        "--folds",
        "2",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    assert "metric: mrr; search: grid (step 0.5, 3 points)" in result.stdout
    assert "held-out mrr over all folds" in result.stdout
    meta = json.loads((files / "cv.run.meta.json").read_text())
    assert len(meta["optimization"]["folds"]) == 2
    assert "cross-validated" in meta["optimization"]["note"]


def test_optimize_report_as_json(app, files):
    result = invoke(
        app,
        files / "a.run",
        files / "b.run",
        "-m",
        "rrf",
        "--optimize",
        "--qrels",
        files / "qrels.txt",
        "--metric",
        "mrr",
        "--step",
        "0.5",
        "--report-format",
        "json",
        "-o",
        files / "o.run",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["metric"] == "mrr" and report["folds"] == [] and len(report["weights"]) == 2


def test_supervised_method_trains_on_qrels(app, files):
    result = invoke(
        app, files / "a.run", files / "b.run", "-m", "posfuse", "--qrels", files / "qrels.txt", "-o", files / "p.run"
    )
    assert result.exit_code == 0, result.output
    meta = json.loads((files / "p.run.meta.json").read_text())
    assert meta["trained"]["in_sample"] is True


def test_help_is_quick_and_shows_examples(app):
    result = CliRunner().invoke(app, ["fuse", "--help"], terminal_width=120)
    assert result.exit_code == 0
    assert "--rrf-k" in result.output and "stagewise fuse bm25.run dense.run" in result.output


def test_command_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = "import sys, stagewise.cli.fuse_cmd; print('polars' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
