"""``--qrels-format subtopics``: ndeval's qrels read by every command, the same numbers as the library."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.data.readers import read_qrels
from stagewise.data.subtopics import SubtopicQrels, read_subtopic_qrels


def _files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "sub.qrels"
    qrels.write_text("1 1 d1 1\n1 2 d2 1\n1 2 d3 0\n1 3 d5 1\n2 1 d4 1\n2 2 d6 2\n")
    run = tmp_path / "sub.run"
    run.write_text("1 Q0 d3 1 9 r\n1 Q0 d2 2 8 r\n1 Q0 d1 3 7 r\n2 Q0 d6 1 5 r\n2 Q0 x 2 4 r\n")
    return qrels, run


def test_the_format_reads_subtopics_for_the_library_and_the_command_line(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path)
    read = read_qrels(qrels, format="subtopics")
    assert isinstance(read, SubtopicQrels) and read.n_subtopics == read_subtopic_qrels(qrels).n_subtopics
    metrics = ["alpha_ndcg@5", "strec@2", "map"]
    expected = stagewise.evaluate(read_subtopic_qrels(qrels), run, metrics).means["sub.run"]
    for engine in ("local", "stream"):
        out = CliRunner().invoke(app, ["eval", str(qrels), str(run), "-m", ",".join(metrics),
                                       "--qrels-format", "subtopics", "--engine", engine, "-f", "json"])  # fmt: skip
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["runs"]["sub.run"] == expected


def test_without_the_format_the_error_says_which_to_give(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path)
    out = CliRunner().invoke(app, ["eval", str(qrels), str(run), "-m", "alpha_ndcg@5"])
    assert out.exit_code == 2 and "--qrels-format subtopics" in out.stderr


def test_ordinary_qrels_read_as_subtopics_are_warned_about(tmp_path: Path) -> None:
    _, run = _files(tmp_path)
    plain = tmp_path / "plain.qrels"  # trec_eval's layout: the iteration column is 0 on every line
    plain.write_text("1 0 d1 1\n1 0 d2 1\n2 0 d4 1\n")
    out = CliRunner().invoke(app, ["eval", str(plain), str(run), "-m", "alpha_ndcg@5", "--qrels-format", "subtopics"])
    assert out.exit_code == 0 and "every query has a single subtopic" in out.stderr
    qrels, _ = _files(tmp_path)
    real = CliRunner().invoke(app, ["eval", str(qrels), str(run), "-m", "alpha_ndcg@5", "--qrels-format", "subtopics"])
    assert real.exit_code == 0 and "warning" not in real.stderr
