"""``stagewise index`` and ``stagewise search``: files written, exit codes, one-line errors, and the run they write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from stagewise.cli import app as main_app
from stagewise.cli import index_cmd, search_cmd

runner = CliRunner()


def _app() -> typer.Typer:
    """The main app once `index` and `search` are registered there; until then, an app with just the two."""
    names = {command.name for command in main_app.registered_commands}
    if {"index", "search"} <= names:
        return main_app
    app = typer.Typer()
    app.command("index")(index_cmd.index_command)
    app.command("search")(search_cmd.search_command)
    return app


def invoke(*args: str):
    return runner.invoke(_app(), list(args), env={"COLUMNS": "200"})


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [
        {"_id": "d1", "title": "Wing", "text": "lift of a wing in a slipstream"},
        {"_id": "d2", "title": "Plate", "text": "shear flow past a flat plate"},
        {"_id": "d3", "title": "Heat", "text": "transient heat conduction in a slab"},
        {"_id": "d4", "title": "", "text": "wing flutter and heat"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    path = tmp_path / "queries.tsv"
    path.write_text("q1\twings in slipstreams\nq2\theat conduction\nq3\tzebra\n")
    return path


def test_index_then_search_writes_a_trec_run(tmp_path: Path, corpus: Path, queries: Path) -> None:
    result = invoke("index", str(corpus), "-o", str(tmp_path / "idx"), "--k1", "0.9", "--b", "0.4")
    assert result.exit_code == 0, result.output
    assert "indexed BM25Index(4 documents" in result.stderr
    meta = json.loads((tmp_path / "idx" / "meta.json").read_text())
    assert meta["scoring"] == {"variant": "lucene", "k1": 0.9, "b": 0.4}
    result = invoke("search", str(tmp_path / "idx"), str(queries), "-k", "2", "-o", str(tmp_path / "bm25.run"))
    assert result.exit_code == 0, result.output
    assert "searched 3 queries, 1 with no indexed term" in result.stderr
    lines = (tmp_path / "bm25.run").read_text().splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["q1", "Q0", "d1", "1"],
        ["q1", "Q0", "d4", "2"],
        ["q2", "Q0", "d3", "1"],
        ["q2", "Q0", "d4", "2"],
    ]
    assert all(line.endswith("bm25-lucene(k1=0.9,b=0.4)") for line in lines)


def test_search_to_stdout_with_overridden_parameters(tmp_path: Path, corpus: Path, queries: Path) -> None:
    assert invoke("index", str(corpus), "-o", str(tmp_path / "idx")).exit_code == 0
    result = invoke("search", str(tmp_path / "idx"), str(queries), "-k", "1", "--variant", "bm25+", "--delta", "0.5")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split()[-1] == "bm25-bm25+(k1=1.2,b=0.75,delta=0.5)"


def test_index_add_equals_one_build(tmp_path: Path, corpus: Path, queries: Path) -> None:
    lines = corpus.read_text().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "b.jsonl").write_text("".join(lines[2:]))
    assert invoke("index", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "grown")).exit_code == 0
    result = invoke("index", str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "grown"), "--add")
    assert result.exit_code == 0, result.output
    assert invoke("index", str(corpus), "-o", str(tmp_path / "whole")).exit_code == 0
    grown = json.loads((tmp_path / "grown" / "meta.json").read_text())
    whole = json.loads((tmp_path / "whole" / "meta.json").read_text())
    assert grown == whole
    runs = [invoke("search", str(tmp_path / name), str(queries)).stdout for name in ("grown", "whole")]
    assert runs[0] == runs[1] and runs[0]


def test_analyser_options_and_user_stopwords(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "stop.txt").write_text("wing\nheat\n")
    result = invoke(
        "index",
        str(corpus),
        "-o",
        str(tmp_path / "idx"),
        "--stemmer",
        "none",
        "--stopwords",
        f"@{tmp_path / 'stop.txt'}",
    )
    assert result.exit_code == 0, result.output
    meta = json.loads((tmp_path / "idx" / "meta.json").read_text())
    assert meta["analyser"]["stemmer"] == "none" and meta["analyser"]["stopwords"] == ["wing", "heat"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["index", "{corpus}", "-o", "{tmp}/i", "--variant", "bm26"], "unknown BM25 variant 'bm26'; choose one of"),
        (["index", "{corpus}", "-o", "{tmp}/i", "--b", "2"], "The 'b' parameter of BM25 variant 'lucene'"),
        (["index", "{tmp}/missing.jsonl", "-o", "{tmp}/i"], "missing.jsonl: no such file"),
        (["index", "{corpus}", "-o", "{tmp}/i", "--stemmer", "snowball"], "unknown stemmer 'snowball'"),
        (["search", "{tmp}", "{corpus}"], "is not a stagewise BM25 index"),
    ],
)
def test_errors_are_one_line_and_exit_2(tmp_path: Path, corpus: Path, args: list[str], message: str) -> None:
    filled = [a.format(corpus=corpus, tmp=tmp_path) for a in args]
    result = invoke(*filled)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("stagewise: error: ") and message in result.stderr
    assert "Traceback" not in result.output


def test_help_has_examples() -> None:
    for command in ("index", "search"):
        result = invoke(command, "--help")
        assert result.exit_code == 0 and "Examples" in result.stdout
