"""Bad input fails clearly: an InputError naming ``file:line`` and the expected form, from the library, and
through the CLI exit code 2 with one ``stagewise: error:`` line on stderr and never a traceback.

Also the inputs other tools get wrong: labels below -1 (trec_eval and pytrec_eval crash on them) behave
exactly like -1, and judged queries absent from a run are scored 0 and counted, left out, or an error.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.errors import InputError, StagewiseError
from stagewise.report import render
from tests.clean_failure import assert_clean_failure

# ---------------------------------------------------------------------------------------------------------
# Building files: good lines from a generator, one bad line placed after comments, blanks or 5,000 lines
# ---------------------------------------------------------------------------------------------------------


def run_line(i: int) -> str:
    return f"q{i // 100} Q0 d{i} {i % 100 + 1} {100 - i % 100}.5 tag"


def qrels_line(i: int) -> str:
    return f"q{i // 100} 0 d{i} {i % 3}"


# (kind, bad line, words the message must contain besides file:line)
RUN_CASES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "five fields": (b"q0 Q0 dx 1 0.5", ("6",)),
    "one field": (b"q0", ("6",)),
    "non-numeric score": (b"q0 Q0 dx 1 abc tag", ("abc",)),
    "score with a comma": (b"q0 Q0 dx 1 0,5 tag", ("0,5",)),
    "NaN score": (b"q0 Q0 dx 1 NaN tag", ("NaN",)),
    "nan score": (b"q0 Q0 dx 1 nan tag", ("nan",)),
    "inf score": (b"q0 Q0 dx 1 inf tag", ("inf",)),
    "-Infinity score": (b"q0 Q0 dx 1 -Infinity tag", ("Infinity",)),
    "overflowing score": (b"q0 Q0 dx 1 1e999 tag", ("1e999",)),
    "duplicate document": (b"q0 Q0 d1 7 0.25 tag", ("d1", "q0")),
    "invalid UTF-8 doc id": (b"q0 Q0 d\xff\xfe 1 0.5 tag", ("UTF-8",)),
    "invalid UTF-8 query id": (b"q\xc3\x28 Q0 dx 1 0.5 tag", ("UTF-8",)),
}
QRELS_CASES: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "three fields": (b"q0 0 dx", ("4",)),
    "one field": (b"q0", ("4",)),
    "fractional label": (b"q0 0 dx 1.5", ("1.5", "integer")),
    "word label": (b"q0 0 dx rel", ("rel", "integer")),
    "nan label": (b"q0 0 dx nan", ("nan", "integer")),
    "label beyond 32 bits": (b"q0 0 dx 99999999999", ("99999999999",)),
    "label beyond 32 bits, as a decimal": (b"q0 0 dx 3e9", ("3e9",)),
    "duplicate document": (b"q0 0 d1 2", ("d1", "q0")),
    "invalid UTF-8 doc id": (b"q0 0 d\xff 1", ("UTF-8",)),
}

# Where the bad line goes: (name, builder of the file's lines around it, the bad line's 1-based number).
COMMENT_PREFIX = [b"# header comment", b"", b"# q0 Q0 fake 1 nan tag  (a comment, not data)", b"   \t"]


def _layout(kind: str, good: Callable[[int], str], bad: bytes) -> tuple[bytes, int]:
    lines = [good(i).encode() for i in range(6000)]
    if kind == "plain":
        body, line = [*lines[:2], bad], 3
    elif kind == "after comments and blank lines":
        body, line = [*COMMENT_PREFIX, lines[0], b"# between", lines[1], b"", bad], 9
    elif kind == "crlf":
        return b"\r\n".join([b"# c", lines[0], lines[1], bad]) + b"\r\n", 4
    elif kind == "large, bad line at the end":  # the fast path: 5,000 good lines then the bad one at 5,003
        body, line = [b"# c1", b"# c2", *lines[:5000], bad], 5003
    elif kind == "large, bad line in the middle":
        body, line = [b"# c1", b"# c2", *lines[:2500], bad, *lines[2500:5000]], 2503
    else:  # pragma: no cover
        raise AssertionError(kind)
    return b"\n".join(body) + b"\n", line


LAYOUTS = [
    "plain",
    "after comments and blank lines",
    "crlf",
    "large, bad line at the end",
    "large, bad line in the middle",
]


def _check_message(message: str, path: Path, line: int | None, words: tuple[str, ...]) -> None:
    where = f"{path}:{line}" if line is not None else str(path)
    assert where in message, message
    if line is not None:
        assert re.search(rf"{re.escape(str(path))}:{line}\b", message), message
    for word in words:
        assert word in message, (word, message)
    assert "\n" not in message


@pytest.fixture
def fast_path_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records whether the polars fast path accepted each TREC file (when that implementation is present)."""
    from stagewise.data import trec

    calls: list[bool] = []
    original = getattr(trec, "_fast_frame", None)
    if original is not None:

        def spy(*args, **kwargs):
            frame = original(*args, **kwargs)
            calls.append(frame is not None)
            return frame

        monkeypatch.setattr(trec, "_fast_frame", spy)
    return calls


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", list(RUN_CASES))
def test_bad_trec_run_names_file_and_line(tmp_path: Path, case: str, layout: str, trec_reader: str) -> None:
    bad, words = RUN_CASES[case]
    data, line = _layout(layout, run_line, bad)
    path = tmp_path / "bad.run"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, line, words)
    if "UTF-8" not in words:
        assert "expected" in str(err.value)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", list(QRELS_CASES))
def test_bad_trec_qrels_names_file_and_line(tmp_path: Path, case: str, layout: str, trec_reader: str) -> None:
    bad, words = QRELS_CASES[case]
    data, line = _layout(layout, qrels_line, bad)
    path = tmp_path / "bad.qrels"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        stagewise.read_qrels(path)
    _check_message(str(err.value), path, line, words)
    if "UTF-8" not in words:
        assert "expected" in str(err.value)


@pytest.mark.parametrize("case", ["non-numeric score", "NaN score", "duplicate document"])
def test_large_file_errors_come_from_the_fast_path(tmp_path: Path, case: str, fast_path_calls: list[bool]) -> None:
    """The large layouts really exercise the fast reader, and it still names line 5,003."""
    bad, words = RUN_CASES[case]
    data, _ = _layout("large, bad line at the end", run_line, bad)
    path = tmp_path / "big.run"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, 5003, words)
    if fast_path_calls:  # the polars implementation is in use: it must have accepted the layout
        assert fast_path_calls == [True]


def test_duplicate_names_the_second_occurrence(tmp_path: Path) -> None:
    path = tmp_path / "dup.run"
    path.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 a 1 2 t\n# note\n\nq1 Q0 a 3 1 t\nq1 Q0 b 4 0.5 t\n")
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, 6, ("'a'", "'q1'"))
    qpath = tmp_path / "dup.qrels"
    qpath.write_text("q1 0 a 1\nq2 0 a 1\n\n# c\nq2 0 a 0\n")
    with pytest.raises(InputError) as err:
        stagewise.read_qrels(qpath)
    _check_message(str(err.value), qpath, 5, ("'a'", "'q2'"))


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"", "empty"),
        (b"\n\n   \n\t\n", "empty"),
        (b"# only\n# comments\n", "comments"),
        (b"# only\n\n   # indented comment\n\n", "comments"),
    ],
)
@pytest.mark.parametrize("reader", ["run", "qrels"])
def test_empty_or_comment_only_files(tmp_path: Path, content: bytes, what: str, reader: str) -> None:
    path = tmp_path / f"x.{reader}"
    path.write_bytes(content)
    read = stagewise.read_run if reader == "run" else stagewise.read_qrels
    with pytest.raises(InputError) as err:
        read(path)
    message = str(err.value)
    assert str(path) in message
    assert "expected" in message
    assert re.search(r"empty|no data|comment", message), message


@pytest.mark.parametrize(
    ("name", "content"), [("e.json", b""), ("e.jsonl", b"\n\n"), ("e.csv", b""), ("o.json", b"{}")]
)
def test_empty_structured_files(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=re.escape(str(path))):
        stagewise.read_run(path)


def test_input_error_is_a_value_error_and_a_stagewise_error() -> None:
    assert issubclass(InputError, ValueError)
    assert issubclass(InputError, StagewiseError)
    err = InputError("runs/a.txt", "score 'x' is not a finite number", line=12, expected="a decimal number")
    assert str(err).startswith("runs/a.txt:12: ")
    assert "expected a decimal number" in str(err)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=re.escape(str(tmp_path / "nope.run"))):
        stagewise.read_run(tmp_path / "nope.run")
    with pytest.raises(InputError, match=re.escape(str(tmp_path / "nope.qrels"))):
        stagewise.read_qrels(tmp_path / "nope.qrels")


def test_not_a_source() -> None:
    with pytest.raises(InputError):
        stagewise.read_run(42)
    with pytest.raises(InputError):
        stagewise.read_qrels([("q", "d", 1)])


# ---------------------------------------------------------------------------------------------------------
# Structured formats: the line is named where there is one
# ---------------------------------------------------------------------------------------------------------


def _jsonl(*records: dict | str) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


GOOD_RECORD = {"query_id": "q1", "doc_id": "d1", "score": 1.0}


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        (_jsonl(GOOD_RECORD, {"query_id": "q1", "doc_id": "d2", "score": "high"}), 2, ("high",)),
        (_jsonl(GOOD_RECORD, '{"query_id": "q1", "doc_id": "d2",'), 2, ("JSON",)),
        (_jsonl(GOOD_RECORD, "[1, 2, 3]"), 2, ("JSON",)),
        (_jsonl(GOOD_RECORD, "", "", {"query_id": "q1", "doc_id": "d2", "score": "high"}), 4, ("high",)),
        (_jsonl(GOOD_RECORD, "", GOOD_RECORD), 3, ("d1", "q1")),
    ],
    ids=["non-numeric score", "truncated JSON", "not an object", "after blank lines", "duplicate after a blank line"],
)
def test_bad_jsonl_names_line(tmp_path: Path, content: str, line: int, words: tuple[str, ...]) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, line, words)


@pytest.mark.parametrize(
    ("name", "content", "line", "words"),
    [
        ("run.csv", "qid,docno,score\nq1,d1,1\nq1,d2,abc\n", 3, ("abc",)),
        ("run.tsv", "qid\tdocno\tscore\nq1\td1\t1\nq1\td2\tnan\n", 3, ("nan",)),
        ("run.csv", "qid,docno,score\nq1,d1,1\nq1,d2,2\nq1,d1,3\n", 4, ("d1",)),
    ],
)
def test_bad_csv_run_names_line(tmp_path: Path, name: str, content: str, line: int, words: tuple[str, ...]) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, line, words)


def test_bad_csv_qrels_label_names_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels.csv"
    path.write_text("qid,docno,label\nq1,d1,1\nq1,d2,0.5\n")
    with pytest.raises(InputError) as err:
        stagewise.read_qrels(path)
    _check_message(str(err.value), path, 3, ("0.5", "integer"))


def test_csv_missing_columns_names_what_is_expected(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    path.write_text("qid,docno\nq1,d1\n")
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    assert str(path) in str(err.value)
    assert "score" in str(err.value)


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        (
            "run.jsonl",
            b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d\xff", "score": 2}\n',
            2,
        ),
        ("run.csv", b"qid,docno,score\nq1,d1,1\nq1,d\xff,2\n", 3),
        ("run.json", b'{"q1": {"d1": 1,\n "d\xff": 2}}', 2),
    ],
)
def test_invalid_utf8_in_structured_files(tmp_path: Path, name: str, content: bytes, line: int) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    _check_message(str(err.value), path, line, ("UTF-8",))


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"q1": {"d1": "high"}}', ("high",)),
        ('{"q1": {"d1": NaN}}', ("nan",)),
        ('{"q1": {"d1": Infinity}}', ("inf",)),
        ('{"q1": [1, 2]}', ("q1",)),
        ('{"q1": {"d1": 1.0}', ("JSON",)),
    ],
)
def test_bad_nested_json(tmp_path: Path, content: str, words: tuple[str, ...]) -> None:
    path = tmp_path / "run.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        stagewise.read_run(path)
    assert str(path) in str(err.value)
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    "bad",
    [
        {"q1": {"d1": float("nan")}},
        {"q1": {"d1": float("inf")}},
        {"q1": {"d1": np.float32("nan")}},
        {"q1": {"d1": "0.5x"}},
        {"q1": {"d1": None}},
        {"q1": 0.5},
        {},
    ],
)
def test_bad_dict_runs(bad: dict) -> None:
    with pytest.raises(InputError):
        stagewise.read_run(bad)


@pytest.mark.parametrize(
    "bad",
    [{"q1": {"d1": 1.5}}, {"q1": {"d1": "rel"}}, {"q1": {"d1": np.int64(2**40)}}, {"q1": {"d1": float("nan")}}, {}],
)
def test_bad_dict_qrels(bad: dict) -> None:
    with pytest.raises(InputError):
        stagewise.read_qrels(bad)


# ---------------------------------------------------------------------------------------------------------
# The CLI: exit code 2, one line on stderr, no traceback
# ---------------------------------------------------------------------------------------------------------

runner = CliRunner()


@pytest.fixture(scope="module")
def good_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("good")
    (d / "good.qrels").write_text("\n".join(qrels_line(i) for i in range(300)) + "\n")
    (d / "good.run").write_text("\n".join(run_line(i) for i in range(300)) + "\n")
    return d / "good.qrels", d / "good.run"


def test_cli_good_input_succeeds(good_files: tuple[Path, Path]) -> None:
    qrels, run = good_files
    result = runner.invoke(app, ["eval", str(qrels), str(run), "-m", "map", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["runs"]["good.run"]["map"] > 0


@pytest.mark.parametrize("layout", ["plain", "after comments and blank lines", "large, bad line at the end"])
@pytest.mark.parametrize("case", list(RUN_CASES))
def test_cli_bad_run(tmp_path: Path, good_files: tuple[Path, Path], case: str, layout: str) -> None:
    data, line = _layout(layout, run_line, RUN_CASES[case][0])
    path = tmp_path / "bad.run"
    path.write_bytes(data)
    result = runner.invoke(app, ["eval", str(good_files[0]), str(path), "-m", "map"])
    assert_clean_failure(result, f"{path}:{line}")


@pytest.mark.parametrize("layout", ["plain", "after comments and blank lines", "large, bad line at the end"])
@pytest.mark.parametrize("case", list(QRELS_CASES))
def test_cli_bad_qrels(tmp_path: Path, good_files: tuple[Path, Path], case: str, layout: str) -> None:
    data, line = _layout(layout, qrels_line, QRELS_CASES[case][0])
    path = tmp_path / "bad.qrels"
    path.write_bytes(data)
    result = runner.invoke(app, ["eval", str(path), str(good_files[1]), "-m", "map"])
    assert_clean_failure(result, f"{path}:{line}")


@pytest.mark.parametrize(("content", "what"), [(b"", "run"), (b"# c\n", "run"), (b"", "qrels"), (b"#\n\n", "qrels")])
def test_cli_empty_files(tmp_path: Path, good_files: tuple[Path, Path], content: bytes, what: str) -> None:
    path = tmp_path / f"empty.{what}"
    path.write_bytes(content)
    args = [str(good_files[0]), str(path)] if what == "run" else [str(path), str(good_files[1])]
    assert_clean_failure(runner.invoke(app, ["eval", *args, "-m", "map"]), str(path))


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        ("bad.jsonl", b'{"query_id": "q0", "doc_id": "d1", "score": 1}\n{"query_id": "q0", "doc_id": "d2",\n', 2),
        (
            "bad.jsonl",
            b'{"query_id": "q0", "doc_id": "d1", "score": 1}\n{"query_id": "q0", "doc_id": "d\xff", "score": 1}\n',
            2,
        ),
        ("bad.csv", b"qid,docno,score\nq0,d1,1\nq0,d2,oops\n", 3),
    ],
    ids=["truncated jsonl", "invalid UTF-8 jsonl", "csv score"],
)
def test_cli_bad_structured_run(
    tmp_path: Path, good_files: tuple[Path, Path], name: str, content: bytes, line: int
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = runner.invoke(app, ["eval", str(good_files[0]), str(path), "-m", "map"])
    assert_clean_failure(result, f"{path}:{line}")


@pytest.mark.parametrize(
    ("metric", "offending"),
    [
        ("ndcg@ten", "ten"),
        ("foo", "foo"),
        ("ndcg@10(gain=cubic)", "cubic"),
        ("P@10(bogus=1)", "bogus"),
        ("map,P@x", "x"),
        ("ndcg@0", "0"),
        ("P@10(rel=high)", "high"),
    ],
)
def test_cli_bad_metric(good_files: tuple[Path, Path], metric: str, offending: str) -> None:
    result = runner.invoke(app, ["eval", str(good_files[0]), str(good_files[1]), "-m", metric])
    assert_clean_failure(result, offending)


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_cli_missing_file(tmp_path: Path, good_files: tuple[Path, Path], which: str) -> None:
    missing = tmp_path / "does-not-exist.txt"
    args = [str(missing), str(good_files[1])] if which == "qrels" else [str(good_files[0]), str(missing)]
    assert_clean_failure(runner.invoke(app, ["eval", *args, "-m", "map"]), str(missing))


def test_cli_reads_qrels_from_stdin(good_files: tuple[Path, Path]) -> None:
    qrels = good_files[0].read_bytes()
    result = runner.invoke(app, ["eval", "-", str(good_files[1]), "-m", "map", "-f", "json"], input=qrels)
    assert result.exit_code == 0, result.output
    bad = qrels + b"q0 0 dx 1.5\n"
    result = runner.invoke(app, ["eval", "-", str(good_files[1]), "-m", "map"], input=bad)
    assert_clean_failure(result, "<stdin>:301")


@pytest.mark.parametrize(
    ("qrels_bad", "content", "line"),
    [
        (False, b"q0 Q0 d1 1 1.0 t\nq0 Q0 d2 2 zero t\n", 2),
        (False, b"# c\nq0 Q0 d1 1 1.0 t\nq0 Q0 d2 2\n", 3),
        (True, b"q0 0 d1 1\n\nq0 0 d1 0\n", 3),
        (True, b"q0 0 d1 1\nq0 0 d2 -\n", 2),
    ],
)
def test_cli_trec_eval_bad_file(
    tmp_path: Path, good_files: tuple[Path, Path], qrels_bad: bool, content: bytes, line: int
) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    args = [str(path), str(good_files[1])] if qrels_bad else [str(good_files[0]), str(path)]
    result = runner.invoke(app, ["trec_eval", *args])
    output = (result.stdout or "") + (result.stderr or "")
    assert "Traceback" not in output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2
    assert f"{path}:{line}" in result.stderr
    assert result.stdout == ""


def test_cli_trec_eval_missing_file(tmp_path: Path, good_files: tuple[Path, Path]) -> None:
    result = runner.invoke(app, ["trec_eval", str(good_files[0]), str(tmp_path / "nope")])
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2
    assert "Traceback" not in (result.stdout or "") + (result.stderr or "")
    assert str(tmp_path / "nope") in result.stderr


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "stagewise"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from stagewise.cli import main; main()"]


@pytest.mark.parametrize(
    ("what", "content", "line"),
    [
        ("run", b"q0 Q0 d1 1 1.0 t\n# c\n\nq0 Q0 d2 2 NaN t\n", 4),
        ("qrels", b"q0 0 d1 1\nq0 0 d2 99999999999\n", 2),
        (
            "run.jsonl",
            b'{"query_id": "q0", "doc_id": "d1", "score": 1}\n{"query_id": "q0", "doc_id": "\xff", "score": 1}\n',
            2,
        ),
    ],
    ids=["nan score", "label beyond 32 bits", "invalid UTF-8 jsonl"],
)
def test_console_script_bad_file(
    tmp_path: Path, good_files: tuple[Path, Path], what: str, content: bytes, line: int
) -> None:
    """The installed ``stagewise`` command, in a real process: exit 2, one stderr line, no traceback."""
    path = tmp_path / f"bad.{what}"
    path.write_bytes(content)
    args = [str(path), str(good_files[1])] if what == "qrels" else [str(good_files[0]), str(path)]
    proc = subprocess.run([*_console_script(), "eval", *args, "-m", "map"], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("stagewise: error:")
    assert f"{path}:{line}" in lines[0]


def test_console_script_unknown_metric(good_files: tuple[Path, Path]) -> None:
    proc = subprocess.run(
        [*_console_script(), "eval", str(good_files[0]), str(good_files[1]), "-m", "ndcg@10(gain=cubic)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("stagewise: error:")
    assert "cubic" in proc.stderr


# ---------------------------------------------------------------------------------------------------------
# Labels below -1: judged, neither relevant nor non-relevant, exactly like -1
# ---------------------------------------------------------------------------------------------------------

NEGATIVE_QRELS = {
    "q1": {"d1": 1, "d2": -5, "d3": 0, "d4": 2, "d5": -2, "d6": -1000},
    "q2": {"a": -2, "b": 1, "e": 3, "f": 0},
    "q3": {"z": 1, "y": -7},
    "q4": {"n": -3},  # a query whose only judgement is negative
}
AS_MINUS_ONE = {q: {d: max(v, -1) for d, v in ds.items()} for q, ds in NEGATIVE_QRELS.items()}
NEGATIVE_RUN = {
    "q1": {"d2": 3.0, "d1": 2.0, "d9": 1.5, "d3": 1.0, "d5": 0.9, "d6": 0.8, "d8": 0.1},
    "q2": {"a": 2.0, "b": 1.0, "c": 0.5, "f": 0.25},
    "q4": {"n": 1.0, "m": 0.5},
}
METRICS = [
    "map",
    "bpref",
    "judged@10",
    "infAP",
    "ndcg@10",
    "P@5",
    "ndcg@10(gain=exp)",
    "ndcg",
    "recall@100",
    "mrr@10",
    "Rprec",
    "success@5",
    "err@20",
    "rbp(p=0.8)",
    "P@5(rel=2)",
]


@pytest.mark.parametrize(
    "conventions",
    [{}, {"judged_only": True}, {"relevance_level": 2}, {"missing": "skip"}, {"max_ret": 3}],
    ids=["default", "judged_only", "level 2", "skip missing", "max_ret 3"],
)
def test_labels_below_minus_one_behave_like_minus_one(conventions: dict) -> None:
    below = stagewise.evaluate(NEGATIVE_QRELS, NEGATIVE_RUN, METRICS, **conventions)
    minus_one = stagewise.evaluate(AS_MINUS_ONE, NEGATIVE_RUN, METRICS, **conventions)
    assert below.per_query() == minus_one.per_query()
    assert below.means == minus_one.means


def test_labels_below_minus_one_from_trec_files(tmp_path: Path) -> None:
    below, minus_one, run = tmp_path / "below.qrels", tmp_path / "m1.qrels", tmp_path / "r.run"
    below.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in NEGATIVE_QRELS.items() for d, v in ds.items()))
    minus_one.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in AS_MINUS_ONE.items() for d, v in ds.items()))
    run.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {s} t\n"
            for q, ds in NEGATIVE_RUN.items()
            for rank, (d, s) in enumerate(sorted(ds.items(), key=lambda x: -x[1]), start=1)
        )
    )
    qrels = stagewise.read_qrels(below)
    assert len(qrels) == sum(len(ds) for ds in NEGATIVE_QRELS.values())
    a = stagewise.evaluate(below, run, METRICS)
    b = stagewise.evaluate(minus_one, run, METRICS)
    assert a.per_query()["r.run"] == b.per_query()["r.run"]


@pytest.mark.parametrize(
    "flags", [["-q", "-c", "-m", "all_trec"], ["-q", "-J", "-m", "all_trec"], ["-l", "2", "-m", "all_trec"]]
)
def test_trec_eval_labels_below_minus_one(tmp_path: Path, flags: list[str]) -> None:
    below, minus_one, run = tmp_path / "below.qrels", tmp_path / "m1.qrels", tmp_path / "r.run"
    below.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in NEGATIVE_QRELS.items() for d, v in ds.items()))
    minus_one.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in AS_MINUS_ONE.items() for d, v in ds.items()))
    run.write_text("".join(f"{q} Q0 {d} 1 {s} t\n" for q, ds in NEGATIVE_RUN.items() for d, s in ds.items()))
    a = runner.invoke(app, ["trec_eval", *flags, str(below), str(run)])
    b = runner.invoke(app, ["trec_eval", *flags, str(minus_one), str(run)])
    assert a.exit_code == 0, a.output
    assert b.exit_code == 0, b.output
    assert a.stdout == b.stdout
    assert "map" in a.stdout


# ---------------------------------------------------------------------------------------------------------
# Judged queries absent from the run
# ---------------------------------------------------------------------------------------------------------

JUDGED = {"q1": {"a": 1, "b": 0}, "q2": {"c": 1}, "q3": {"d": 2}, "q4": {"e": 1}}
PARTIAL_RUN = {"q1": {"a": 2.0, "b": 1.0}, "q3": {"x": 1.0, "d": 0.5}, "q9": {"zz": 1.0}}


def test_missing_queries_score_zero_and_are_counted() -> None:
    result = stagewise.evaluate(JUDGED, PARTIAL_RUN, ["map", "P@1"])
    assert result.means["run"]["map"] == pytest.approx((1.0 + 0.5) / 4)
    per_query = result.per_query()["run"]["map"]
    assert per_query["q2"] == 0.0
    assert per_query["q4"] == 0.0
    assert "q9" not in per_query
    assert result.to_dict()["conventions"]["queries_missing_from_run"] == {"run": 2}
    text = render(result)
    assert any(re.search(r"\b2\b", line) and re.search(r"absent|missing", line) for line in text.splitlines()), text


def test_missing_queries_counted_per_run() -> None:
    result = stagewise.evaluate(JUDGED, {"full": {q: {"a": 1.0} for q in JUDGED}, "half": PARTIAL_RUN}, ["map"])
    assert result.to_dict()["conventions"]["queries_missing_from_run"] == {"full": 0, "half": 2}
    notes = [line for line in render(result).splitlines() if re.search(r"absent|missing", line) and "half" in line]
    assert notes and re.search(r"\b2\b", notes[0]), render(result)


def test_missing_queries_skip_leaves_them_out() -> None:
    result = stagewise.evaluate(JUDGED, PARTIAL_RUN, ["map"], missing="skip")
    assert result.means["run"]["map"] == pytest.approx((1.0 + 0.5) / 2)
    assert set(result.per_query()["run"]["map"]) == {"q1", "q3"}


def test_missing_queries_error_names_them() -> None:
    with pytest.raises(StagewiseError) as err:
        stagewise.evaluate(JUDGED, PARTIAL_RUN, ["map"], missing="error")
    assert "q2" in str(err.value)
    assert "q4" in str(err.value)
    # a complete run is fine under the same policy
    full = {q: {d: label + 1.0 for d, label in ds.items()} for q, ds in JUDGED.items()}
    assert stagewise.evaluate(JUDGED, full, ["map"], missing="error").means["run"]["map"] == 1.0


def test_cli_reports_missing_queries(tmp_path: Path) -> None:
    qrels, run = tmp_path / "q.txt", tmp_path / "partial.run"
    qrels.write_text("".join(f"{q} 0 {d} {v}\n" for q, ds in JUDGED.items() for d, v in ds.items()))
    run.write_text("".join(f"{q} Q0 {d} 1 {s} t\n" for q, ds in PARTIAL_RUN.items() for d, s in ds.items()))
    table = runner.invoke(app, ["eval", str(qrels), str(run), "-m", "map"])
    assert table.exit_code == 0, table.output
    flat = " ".join(table.stdout.split())
    assert re.search(r"\b2 judged quer", flat) or re.search(r"\b2\b[^.]*(absent|missing)", flat), table.stdout
    as_json = runner.invoke(app, ["eval", str(qrels), str(run), "-m", "map", "-f", "json"])
    assert json.loads(as_json.stdout)["conventions"]["queries_missing_from_run"] == {"partial.run": 2}
    failed = runner.invoke(app, ["eval", str(qrels), str(run), "-m", "map", "--missing", "error"])
    assert_clean_failure(failed, "q2", "q4")


# ---------------------------------------------------------------------------------------------------------
# Valid extremes are not errors
# ---------------------------------------------------------------------------------------------------------


def test_extreme_scores_read_without_warnings(tmp_path: Path) -> None:
    """The largest finite doubles are valid scores: no overflow warning leaks to the user."""
    path = tmp_path / "x.run"
    path.write_text("q Q0 a 1 -1.7976931348623157e308 t\nq Q0 b 2 1.7976931348623157e308 t\nq Q0 c 3 5e-324 t\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = stagewise.read_run(path)
        stagewise.read_run({"q": {"a": -1.7976931348623157e308, "b": 1.7976931348623157e308}})
    assert run.to_dict() == {"q": {"b": 1.7976931348623157e308, "c": 5e-324, "a": -1.7976931348623157e308}}
