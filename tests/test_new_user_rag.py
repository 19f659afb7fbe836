"""`stagewise rag` given a file that is no JSONL says what the file looks like: a TREC run or qrels (a common
slip: the run goes to --run), or RAGChecker's one JSON document over many lines (read with --from ragchecker).
It said only "invalid JSON (Extra data at column 21)"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from tests.conftest import SHARED

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
RUN = str(SAMPLE / "results.test")
RAGCHECKER = SHARED / "data" / "ragchecker" / "checking_inputs.json"


def test_a_trec_run_as_rag_records_points_to_run() -> None:
    done = CliRunner().invoke(app, ["rag", RUN])
    assert done.exit_code == 2
    assert done.output.startswith(f"stagewise: error: {RUN}:1: invalid JSON (")
    assert done.output.endswith(
        "(RAG records are JSON objects, one a line; stagewise rag takes a TREC run or qrels as --run or --qrels)\n"
    )


def test_a_bad_line_after_good_ones_keeps_the_plain_message(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "1", "answer": "a", "gold_answers": ["a"]}\n{broken\n')
    done = CliRunner().invoke(app, ["rag", str(path)])
    assert done.exit_code == 2
    assert done.output == (
        f"stagewise: error: {path}:2: invalid JSON (Expecting property name enclosed in double quotes at column 2)\n"
    )


@pytest.mark.skipif(not RAGCHECKER.exists(), reason=f"{RAGCHECKER} is not here (the shared RAGChecker examples)")
def test_ragchecker_json_read_as_jsonl_names_from_ragchecker() -> None:
    done = CliRunner().invoke(app, ["rag", str(RAGCHECKER)])
    assert done.exit_code == 2
    assert "this looks like one JSON document over many lines" in done.output
    assert done.output.endswith("RAGChecker's files are read with --from ragchecker)\n")
    read = CliRunner().invoke(app, ["rag", str(RAGCHECKER), "--from", "ragchecker", "-f", "json"])
    assert read.exit_code == 0, read.output
