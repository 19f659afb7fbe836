"""Every command that writes a whole folder (index, encode, hybrid) refuses, before any work, a non-empty folder
that is not its own, the current folder and a folder holding an input; nothing in them is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from tests.clean_failure import assert_clean_failure

runner = CliRunner()


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "wing lift"}\n')
    (tmp_path / "q.jsonl").write_text('{"_id": "q1", "text": "lift"}\n')
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.pdf").write_bytes(b"years of work")
    (tmp_path / "notes.txt").write_text("notes")
    monkeypatch.chdir(tmp_path)
    return tmp_path


COMMANDS = {
    "index": ["index", "corpus.jsonl", "-o"],
    "encode": ["encode", "corpus.jsonl", "-o"],
    "hybrid": ["hybrid", "q.jsonl", "--bm25", "b", "--dense", "d", "-o"],
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("thesis", "is a non-empty folder that is not a stagewise"),
        (".", "is the current folder"),
        ("missing/out", "does not exist"),
        ("notes.txt", "is a file, not a folder"),
    ],
)
def test_a_folder_output_that_is_not_ours_is_refused_before_any_work(work, command, target, message) -> None:
    before = _snapshot(work)
    result = runner.invoke(app, [*COMMANDS[command], target])
    assert_clean_failure(result, message)
    assert _snapshot(work) == before
    assert not (work / "missing").exists()  # a typo in a path is not created


@pytest.mark.parametrize("command", ["index", "encode"])
def test_a_folder_holding_the_corpus_is_refused_even_with_force(work, command) -> None:
    (work / "data").mkdir()
    os.replace(work / "corpus.jsonl", work / "data" / "corpus.jsonl")
    result = runner.invoke(app, [command, "data/corpus.jsonl", "-o", "data", "--force"])
    assert_clean_failure(result, "holds an input")
    assert (work / "data" / "corpus.jsonl").is_file()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_force_replaces_a_folder_of_files_never_a_tree(work, command) -> None:
    """--force may replace a folder of someone's files, but not one holding a folder (a project, a home)."""
    (work / "project" / "src").mkdir(parents=True)
    (work / "project" / "src" / "main.py").write_text("print('mine')\n")
    before = _snapshot(work)
    result = runner.invoke(app, [*COMMANDS[command], "project", "--force"])
    assert_clean_failure(result, "holds a folder (src)")
    assert _snapshot(work) == before


def test_an_output_that_is_the_input_says_so(work) -> None:
    result = runner.invoke(app, ["index", "corpus.jsonl", "-o", "corpus.jsonl"])
    assert result.exit_code == 2 and "is an input" in result.output
