"""A number field that does not read says what it most likely is (a decimal comma, an integer too large for a
label), and a TSV run without a header says so, instead of listing its first data line as the columns found."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app


def _eval(tmp_path: Path, qrels: str, run: str, run_name: str = "run.txt") -> tuple[int, str]:
    (tmp_path / "qrels.txt").write_text(qrels)
    (tmp_path / run_name).write_text(run)
    done = CliRunner().invoke(app, ["eval", str(tmp_path / "qrels.txt"), str(tmp_path / run_name), "-m", "map"])
    return done.exit_code, done.output


def test_a_decimal_comma_in_a_score_is_named(tmp_path: Path) -> None:
    code, out = _eval(tmp_path, "1 0 d1 1\n", "1 Q0 d1 1 1,5 r\n")
    assert code == 2 and "run.txt:1: score '1,5'" in out and "decimal comma" in out


def test_a_label_too_large_is_named_as_such(tmp_path: Path) -> None:
    code, out = _eval(tmp_path, "1 0 d1 99999999999999999999\n", "1 Q0 d1 1 1.5 r\n")
    assert code == 2 and "qrels.txt:1: relevance label" in out and "too large for a label" in out


@pytest.mark.parametrize(("field", "hinted"), [("abc", False), ("1.5.2", False)])
def test_other_bad_scores_get_no_guess(tmp_path: Path, field: str, hinted: bool) -> None:
    code, out = _eval(tmp_path, "1 0 d1 1\n", f"1 Q0 d1 1 {field} r\n")
    assert code == 2 and f"score '{field}'" in out
    assert ("decimal comma" in out) is hinted


def test_a_tsv_run_without_a_header_says_so(tmp_path: Path) -> None:
    code, out = _eval(tmp_path, "301 0 docA 1\n", "301\tdocA\t2.5\n301\tdocB\t1.5\n", run_name="run.tsv")
    assert code == 2 and "first line looks like data, not a header" in out


def test_a_tsv_run_with_a_wrong_header_gets_no_such_hint(tmp_path: Path) -> None:
    code, out = _eval(tmp_path, "301 0 docA 1\n", "topic\tdocument\tvalue\n301\tdocA\t2.5\n", run_name="run.tsv")
    assert code == 2 and "missing column" in out and "looks like data" not in out


def test_the_frame_readers_give_the_same_hints(tmp_path: Path) -> None:
    # TSV files go through the polars readers, not the compiled TREC parser: the hint comes from one place
    code, out = _eval(tmp_path, "1 0 d1 1\n", "query_id\tdoc_id\tscore\n1\td1\t1,5\n", run_name="run.tsv")
    assert code == 2 and "run.tsv:2" in out and "decimal comma" in out
    (tmp_path / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\n1\td1\t99999999999999999999\n")
    (tmp_path / "run.txt").write_text("1 Q0 d1 1 1.5 r\n")
    done = CliRunner().invoke(app, ["eval", str(tmp_path / "qrels.tsv"), str(tmp_path / "run.txt"), "-m", "map"])
    assert done.exit_code == 2 and "qrels.tsv:2" in done.output and "too large for a label" in done.output
