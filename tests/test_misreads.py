"""Files that parse but would be misread, and malformed files that used to escape as tracebacks.

Each misread is an error (or, where the file may be sound, a ``validate`` warning) naming ``file:line``; each
file of the malformed corpus below makes every reader and the CLI fail with one ``stagewise: error:`` line and
exit code 2. The TREC cases run under both readers (the C parser and the polars one, see ``conftest.py``).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stagewise
from stagewise.checks import validate
from stagewise.cli import app
from stagewise.data.readers import read_qrels, read_run
from stagewise.data.writers import write_qrels, write_run
from stagewise.errors import InputError, StagewiseError
from tests.clean_failure import assert_clean_failure

from .conftest import SHARED

runner = CliRunner()

RUN = "".join(f"q{q} Q0 d{q * 10 + r} {r + 1} {20 - r}.5 bm25\n" for q in range(1, 4) for r in range(6)).encode()
QRELS = "".join(f"q{q} 0 d{q * 10 + r} {r % 3}\n" for q in range(1, 4) for r in (0, 2, 4, 7)).encode()


def _clean_failure(args: list[str], *must_contain: str) -> str:
    """Run the CLI; it must exit 2 with one 'stagewise: error:' line holding ``must_contain`` and no traceback."""
    return assert_clean_failure(runner.invoke(app, args), *must_contain)


@pytest.fixture
def good(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "good.qrels").write_bytes(QRELS)
    (tmp_path / "good.run").write_bytes(RUN)
    return tmp_path / "good.qrels", tmp_path / "good.run"


def _map(qrels: object, run: object) -> float:
    result = stagewise.evaluate(qrels, [run], ["map"])
    return next(iter(result.means.values()))["map"]


# ---------------------------------------------------------------------------------------------------------
# Silent misreads, now refused
# ---------------------------------------------------------------------------------------------------------


def test_run_given_as_qrels(trec_reader: str, good: tuple[Path, Path]) -> None:
    """`stagewise eval bm25.run dense.run` used to score MAP 0.4987 with the rank column read as labels."""
    _, run = good
    with pytest.raises(InputError, match=r"good\.run:1: this looks like a run, not qrels"):
        read_qrels(run)
    _clean_failure(["eval", str(run), str(run), "-m", "map"], f"{run}:1", "looks like a run")
    _clean_failure(["trec_eval", str(run), str(run)], f"{run}:1", "looks like a run")


def test_run_with_integer_scores_given_as_qrels(tmp_path: Path) -> None:
    path = tmp_path / "int.run"
    path.write_text("".join(f"q1 Q0 d{r} {r + 1} {100 - r} sys\n" for r in range(5)))
    with pytest.raises(InputError, match="looks like a run"):
        read_qrels(path)


def test_qrels_given_as_run(trec_reader: str, good: tuple[Path, Path]) -> None:
    qrels, _ = good
    with pytest.raises(InputError, match=r"good\.qrels:1: this looks like qrels, not a run"):
        read_run(qrels)
    _clean_failure(["eval", str(qrels), str(qrels), "-m", "map"], f"{qrels}:1", "looks like qrels")


def test_doc_id_and_q0_swapped(trec_reader: str, tmp_path: Path, good: tuple[Path, Path]) -> None:
    """Used to fail as 'document Q0 appears more than once', and validate passed it with a duplicate count."""
    path = tmp_path / "swapped.run"
    path.write_text("".join(f"q1 d{r} Q0 {r + 1} {9 - r}.5 sys\n" for r in range(5)))
    with pytest.raises(InputError, match=r"swapped\.run:1: .*'Q0' on every line.*doc id and Q0 columns look swapped"):
        read_run(path)
    _clean_failure(["validate", str(good[0]), str(path)], f"{path}:1", "swapped")


def test_sound_run_and_qrels_pass_the_shape_checks(trec_reader: str, good: tuple[Path, Path]) -> None:
    assert len(read_run(good[1])) == 18 and len(read_qrels(good[0])) == 12
    assert 0 < _map(*good) < 1


@pytest.mark.parametrize(
    ("content", "option"),
    [
        ("1 184 2\n1 29 2\n1 31 2\n2 12 3\n", "cranfield"),  # Cranfield's cranqrel
        ("     1     28\t0\t0.000000\n     1     35\t0\t0.000000\n     2     38\t0\t0.000000\n", "cisi"),  # CISI.REL
        ("01 1410  0 0\n01 1572  0 0\n01 1605  0 0\n", "cisi"),  # CACM's qrels.text
    ],
)
def test_classic_qrels_read_as_trec_name_the_option(
    trec_reader: str, tmp_path: Path, good: tuple[Path, Path], content: str, option: str
) -> None:
    path = tmp_path / "classic.rel"
    path.write_text(content)
    with pytest.raises(InputError, match=f"classic.rel:1: .*--qrels-format {option}"):
        read_qrels(path)
    _clean_failure(["eval", str(path), str(good[1]), "-m", "map"], f"{path}:1", f"--qrels-format {option}")
    # ... and reads with it: every judged pair is there, labels as the layout defines them
    qrels = read_qrels(path, format=option).to_dict()
    if option == "cranfield":
        assert qrels == {"1": {"184": 3, "29": 3, "31": 3}, "2": {"12": 2}}
    else:
        first = content.split()[0].lstrip("0")
        assert all(set(labels.values()) == {1} for labels in qrels.values()) and first in qrels


def test_qrels_format_option_on_the_cli(tmp_path: Path) -> None:
    qrels = tmp_path / "cranqrel"
    qrels.write_text("1 11 1\n1 12 4\n1 13 -1\n2 21 2\n")
    run = tmp_path / "r.run"
    run.write_text("1 Q0 12 1 3.0 s\n1 Q0 11 2 2.0 s\n1 Q0 13 3 1.0 s\n2 Q0 21 1 1.0 s\n")
    result = runner.invoke(
        app, ["eval", str(qrels), str(run), "--qrels-format", "cranfield", "-m", "ndcg", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    # labels 4 (grade 1), 1 (grade 4), 0 (grade -1): the run puts the label-1 document above the label-4 one
    ideal = 4 + 1 / np.log2(3)
    got = 1 / 1 + 4 / np.log2(3)
    ndcg = json.loads(result.stdout)["runs"]["r.run"]["ndcg"]
    assert ndcg == pytest.approx((got / ideal + 1.0) / 2)
    args = ["validate", str(qrels), str(run), "--qrels-format", "cranfield", "--format", "json"]
    validated = runner.invoke(app, args)
    assert json.loads(validated.stdout)["qrels"]["label_histogram"] == {"0": 1, "1": 1, "3": 1, "4": 1}


@pytest.mark.skipif(not (SHARED / "data" / "cranfield").is_dir(), reason="../shared/data is absent")
@pytest.mark.parametrize(
    ("name", "file", "layout"), [("cranfield", "cranqrel", "cranfield"), ("cisi", "CISI.REL", "cisi")]
)
def test_qrels_format_matches_the_collection_reader(name: str, file: str, layout: str) -> None:
    """One parser for the classic layouts: the CLI's --qrels-format and read_classic agree judgement for judgement."""
    from stagewise.data.collections import read_classic

    path = SHARED / "data" / name / file
    with pytest.raises(InputError, match=f"--qrels-format {layout}"):
        read_qrels(path)
    assert read_qrels(path, format=layout).to_dict() == read_classic(name, SHARED / "data").qrels


@pytest.mark.parametrize("kind", ["qrels", "run"])
def test_utf8_byte_order_mark_is_skipped(trec_reader: str, tmp_path: Path, good: tuple[Path, Path], kind: str) -> None:
    """A BOM used to make the first query id '\\ufeffq1' (MAP 0.375 instead of 0.667)."""
    original = good[0] if kind == "qrels" else good[1]
    marked = tmp_path / f"bom.{kind}"
    marked.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
    qrels, run = (marked, good[1]) if kind == "qrels" else (good[0], marked)
    assert _map(qrels, run) == _map(*good)
    reader = read_qrels if kind == "qrels" else read_run
    assert list(reader(marked).query_ids) == ["q1", "q2", "q3"]
    # also from stdin and inside gzip
    gz = tmp_path / f"bom.{kind}.gz"
    gz.write_bytes(gzip.compress(marked.read_bytes()))
    assert list(reader(gz).query_ids) == ["q1", "q2", "q3"]


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "json"])
def test_byte_order_mark_in_other_text_formats(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bom.{suffix}"
    body = {
        "jsonl": '{"query_id": "q1", "doc_id": "d1", "score": 1.0}\n',
        "csv": "query_id,doc_id,score\nq1,d1,1.0\n",
        "json": '{"q1": {"d1": 1.0}}',
    }[suffix]
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    assert list(read_run(path).query_ids) == ["q1"]


@pytest.mark.parametrize("kind", ["qrels", "run"])
def test_cr_only_line_ends_are_line_ends(trec_reader: str, tmp_path: Path, good: tuple[Path, Path], kind: str) -> None:
    original = good[0] if kind == "qrels" else good[1]
    mac = tmp_path / f"mac.{kind}"
    mac.write_bytes(original.read_bytes().replace(b"\n", b"\r"))
    reader = read_qrels if kind == "qrels" else read_run
    assert len(reader(mac)) == len(reader(original))
    qrels, run = (mac, good[1]) if kind == "qrels" else (good[0], mac)
    assert _map(qrels, run) == _map(*good)
    # and errors still name the right line
    broken = tmp_path / f"broken.{kind}"
    lines = original.read_bytes().split(b"\n")
    lines[4] = b"q1 0 dz"
    broken.write_bytes(b"\r".join(lines))
    with pytest.raises(InputError, match=rf"broken\.{kind}:5: "):
        reader(broken)


@pytest.mark.parametrize(
    ("encoding", "words"),
    [("utf-16", "UTF-16 byte-order mark"), ("utf-32", "UTF-32 byte-order mark"), ("utf-16-le", "NUL bytes")],
)
def test_wide_encodings_are_named(trec_reader: str, tmp_path: Path, good: tuple[Path, Path], encoding: str, words: str):
    path = tmp_path / "wide.qrels"
    path.write_bytes(QRELS.decode().encode(encoding))
    with pytest.raises(InputError, match=f"wide.qrels:1: .*{words}.*UTF-8"):
        read_qrels(path)
    _clean_failure(["eval", str(path), str(good[1]), "-m", "map"], f"{path}:1", "UTF-8")


def test_nul_byte_beyond_the_head_is_refused(trec_reader: str, tmp_path: Path) -> None:
    path = tmp_path / "nul.run"
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} s" for i in range(5000)]
    lines[4000] = "q40 Q0 d\x004000 1 1000 s"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"nul\.run:4001: .*NUL"):
        read_run(path)


# ---------------------------------------------------------------------------------------------------------
# validate: rank and score columns that disagree
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ([f"q1 Q0 d{r} {9 - r}.5 {r + 1} s" for r in range(5)], "look swapped"),  # fractional ranks, 1..n scores
        ([f"q1 Q0 d{r} {10 - r} {r + 1} s" for r in range(5)], "counts 1, 2, 3"),  # integer scores 1..n
        ([f"q1 Q0 d{r} {r + 1} 0.{r + 1} s" for r in range(5)], "scores rise with the rank"),  # distances
    ],
)
def test_validate_warns_on_rank_and_score_disagreeing(tmp_path: Path, lines: list[str], words: str) -> None:
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d0 1\nq1 0 d4 0\n")
    run = tmp_path / "odd.run"
    run.write_text("\n".join(lines) + "\n")
    report = validate(qrels, [run])
    assert len(report.runs[0].warnings) == 1 and words in report.runs[0].warnings[0]
    assert report.runs[0].warnings[0].startswith(f"{run}:1: ")
    assert not report.ok
    result = runner.invoke(app, ["validate", str(qrels), str(run)])
    assert result.exit_code == 1 and f"warning: {run}:1:" in result.stdout


def test_validate_compares_ranks_and_scores_of_in_memory_runs() -> None:
    run = pl.DataFrame(
        {"query_id": ["q1"] * 4, "doc_id": list("abcd"), "score": [0.1, 0.2, 0.3, 0.4], "rank": [1, 2, 3, 4]}
    )
    report = validate({"q1": {"a": 1}}, [run])
    assert "scores rise with the rank in 3 of 3" in report.runs[0].warnings[0]
    sound = run.with_columns(pl.col("score").reverse())
    assert validate({"q1": {"a": 1}}, [sound]).runs[0].warnings == []


def test_sound_runs_have_no_warnings(good: tuple[Path, Path]) -> None:
    assert validate(good[0], [good[1]]).runs[0].warnings == []


# ---------------------------------------------------------------------------------------------------------
# Writers refuse what would not read back
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "doc", "words"),
    [
        ("#q", "d1", "starts with '#'"),
        ("", "d1", "query_id is empty"),
        ("q 1", "d1", "query_id contains white space"),
        ("q1", "", "doc_id is empty"),
        ("q1", "d\t1", "doc_id contains white space"),
    ],
)
def test_trec_writers_refuse_ids_that_would_not_read_back(tmp_path: Path, query: str, doc: str, words: str) -> None:
    run = read_run(pl.DataFrame({"query_id": ["q0", query], "doc_id": ["d0", doc], "score": [2.0, 1.0]}))
    with pytest.raises(StagewiseError, match=rf"{words}.*output row \d"):
        write_run(run, tmp_path / "out.run")
    assert not (tmp_path / "out.run").exists()
    qrels = read_qrels(pl.DataFrame({"query_id": ["q0", query], "doc_id": ["d0", doc], "relevance": [1, 0]}))
    with pytest.raises(StagewiseError, match=words):
        write_qrels(qrels, tmp_path / "out.qrels")
    write_run(run, tmp_path / "out.jsonl")  # JSONL holds any id
    assert read_run(tmp_path / "out.jsonl").to_dict() == run.to_dict()


def test_fuse_refuses_a_query_id_that_would_vanish(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"query_id": "#7", "doc_id": "d1", "score": 1.0}\n{"query_id": "q8", "doc_id": "d1", "score": 1.0}\n'
    )
    out = tmp_path / "fused.run"
    _clean_failure(["fuse", str(source), "-o", str(out)], "'#7'", "comment")
    assert not out.exists()


def test_written_runs_read_back(trec_reader: str, tmp_path: Path, good: tuple[Path, Path]) -> None:
    run = read_run(good[1])
    write_run(run, tmp_path / "again.run")
    assert read_run(tmp_path / "again.run").to_dict() == run.to_dict()


# ---------------------------------------------------------------------------------------------------------
# Hints speak the CLI
# ---------------------------------------------------------------------------------------------------------


def test_duplicate_hint_names_an_option_that_exists(tmp_path: Path, good: tuple[Path, Path]) -> None:
    path = tmp_path / "dup.run"
    path.write_bytes(RUN + b"q1 Q0 d10 7 0.5 bm25\n")
    line = _clean_failure(["eval", str(good[0]), str(path), "-m", "map"], f"{path}:19", "--duplicates first")
    assert "duplicates='first'" in line  # the library's spelling too, for Python users
    help_text = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).stdout
    assert "--duplicates" in help_text and "--qrels-format" in help_text
    result = runner.invoke(app, ["eval", str(good[0]), str(path), "-m", "map", "--duplicates", "first", "-f", "json"])
    assert result.exit_code == 0, result.output
    compared = runner.invoke(
        app, ["compare", str(good[0]), str(path), str(good[1]), "--duplicates", "best", "-b", str(path), "-f", "json"]
    )
    assert compared.exit_code == 0, compared.output


def test_qrels_duplicate_says_qrels(tmp_path: Path, good: tuple[Path, Path]) -> None:
    path = tmp_path / "dup.qrels"
    path.write_bytes(QRELS + b"q1 0 d10 2\n")
    line = _clean_failure(["eval", str(path), str(good[1]), "-m", "map"], f"{path}:13", "qrels")
    assert "run" not in line.split(str(path))[1]


# ---------------------------------------------------------------------------------------------------------
# The malformed corpus: every file fails cleanly, from the library and from the CLI
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    role: str  # "run" or "qrels": the argument it is given as
    name: str  # file name
    content: bytes
    words: tuple[str, ...]  # besides the file name
    line: int | None = None


def _gzip_truncated() -> bytes:
    data = gzip.compress(RUN * 200)
    return data[: len(data) // 2]


def _gzip_damaged() -> bytes:
    data = bytearray(gzip.compress(RUN * 200))
    data[len(data) // 2] ^= 0xFF
    return bytes(data)


def _gzip_bad_crc() -> bytes:
    data = bytearray(gzip.compress(RUN))
    data[-8] ^= 0xFF  # the CRC32 in the trailer
    return bytes(data)


def _parquet(**columns: object) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


def _parquet_invalid_utf8() -> bytes:
    import pyarrow as pa

    raw = pa.array([b"q\xff1", b"q2"], type=pa.binary())
    text = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())  # skips UTF-8 validation
    return _parquet(query_id=text, doc_id=pa.array(["d1", "d2"]), score=pa.array([1.0, 2.0]))


def _corpus() -> list[Bad]:
    deep = b"[" * 100_000 + b"]" * 100_000
    digits = b"9" * 5000
    cases = [
        Bad("run", "truncated.run.gz", _gzip_truncated(), ("corrupt gzip",)),
        Bad("run", "damaged.run.gz", _gzip_damaged(), ("corrupt gzip",)),
        Bad("run", "badcrc.run.gz", _gzip_bad_crc(), ("corrupt gzip",)),
        Bad("qrels", "damaged.qrels.gz", _gzip_damaged(), ("corrupt gzip",)),
        Bad("run", "deep.json", deep, ("nested too deeply",)),
        Bad("run", "deep-object.json", b'{"q1": ' + deep + b"}", ("nested too deeply",)),
        Bad("run", "deep.jsonl", b'{"query_id": "q1", "doc_id": "d", "score": 1}\n' + deep + b"\n", ("nested",), 2),
        Bad("run", "bigint.json", b'{"q1": {"d1": ' + digits + b"}}", ("too long",)),
        Bad(
            "qrels", "bigint.jsonl", b'{"query_id": "q1", "doc_id": "d1", "relevance": ' + digits + b"}\n", ("long",), 1
        ),
        Bad("run", "bigint.run", b"q1 Q0 d1 1 " + digits + b" s\nq1 Q0 d2 2 1.0 s\nq1 Q0 d3 3 0.5 s\n", ("score",), 1),
        Bad("qrels", "bigint.qrels", b"q1 0 d1 " + digits + b"\nq1 0 d2 1\n", ("label",), 1),
        Bad("run", "badutf.json", b'{"q1": {"d\xff": 1.0}}', ("UTF-8",), 1),
        Bad(
            "run",
            "badutf.jsonl",
            b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q\xc3("}\n',
            ("UTF-8",),
            2,
        ),
        Bad("run", "badutf.parquet", _parquet_invalid_utf8(), ("UTF-8",)),
        Bad("run", "surrogate.json", b'{"q\\ud800": {"d1": 1.0}}', ("\\ud800",), 1),
        Bad("qrels", "surrogate.jsonl", b'{"query_id": "q1", "doc_id": "d\\udc00", "relevance": 1}\n', ("\\udc00",), 1),
        Bad("run", "list.parquet", _parquet(query_id=[["q1"]], doc_id=["d1"], score=[1.0]), ("query_id", "List")),
        Bad("run", "struct.parquet", _parquet(query_id=["q1"], doc_id=["d1"], score=[{"a": 1}]), ("score", "Struct")),
        Bad("run", "list.jsonl", b'{"query_id": "q1", "doc_id": ["d1", "d2"], "score": 1}\n', ("doc_id",)),
        Bad(
            "run",
            "mixed.jsonl",
            b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": {"x": 1}, "score": 2}\n',
            ("doc_id",),
        ),
        # a comment line that starts with a blank the parsers do not skip (U+001C), then a duplicate row
        Bad(
            "run",
            "oddblank.run",
            b"q1 Q0 d1 1 2.0 s\n\x1c#q Q0 d1 1 2.0 s\nq1 Q0 d1 2 1.0 s\n",
            ("d1", "first at line 1"),
            3,
        ),
        Bad("run", "nbsp.run", "q1 Q0 d1 1 2.0 s\n\u00a0# c Q0 d1 1 2.0 s\nq1 Q0 d1 2 1.0 s\n".encode(), ("d1",), 3),
        Bad("qrels", "utf16.qrels", QRELS.decode().encode("utf-16"), ("UTF-16",), 1),
        Bad("run", "utf32.run", RUN.decode().encode("utf-32"), ("UTF-32",), 1),
        Bad("run", "binary.run", bytes(range(256)) * 4, ("NUL",), 1),
        Bad("qrels", "as-run.qrels", RUN, ("looks like a run",), 1),
        Bad("run", "as-qrels.run", QRELS, ("looks like qrels",), 1),
        Bad("run", "bom-utf16.csv", "query_id,doc_id,score\nq1,d1,1\n".encode("utf-16"), ("UTF-16",), 1),
    ]
    return cases


CORPUS = {case.name: case for case in _corpus()}


@pytest.fixture
def corpus_file(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Bad, Path]:
    case = CORPUS[request.param]
    path = tmp_path / case.name
    path.write_bytes(case.content)
    return case, path


def _expect(case: Bad, path: Path) -> tuple[str, ...]:
    where = f"{path}:{case.line}" if case.line is not None else str(path)
    return (where, *case.words)


@pytest.mark.parametrize("corpus_file", list(CORPUS), indirect=True)
def test_malformed_file_fails_cleanly_in_the_library(trec_reader: str, corpus_file: tuple[Bad, Path]) -> None:
    case, path = corpus_file
    reader = read_run if case.role == "run" else read_qrels
    with pytest.raises(InputError) as caught:
        reader(path)
    message = str(caught.value)
    for text in _expect(case, path):
        assert text in message, (text, message)
    assert "\n" not in message and len(message) < 600


@pytest.mark.parametrize("corpus_file", list(CORPUS), indirect=True)
def test_malformed_file_fails_cleanly_on_the_cli(corpus_file: tuple[Bad, Path], good: tuple[Path, Path]) -> None:
    case, path = corpus_file
    qrels, run = (path, good[1]) if case.role == "qrels" else (good[0], path)
    for command in (["eval", str(qrels), str(run), "-m", "map"], ["validate", str(qrels), str(run)]):
        if command[0] == "validate" and case.name in ("oddblank.run", "nbsp.run"):
            continue  # validate reads runs with duplicates='first': a repeated document is counted, not an error
        _clean_failure(command, *_expect(case, path))


def test_malformed_file_through_the_console_entry_point(tmp_path: Path, good: tuple[Path, Path]) -> None:
    """The installed `stagewise` command (stagewise.cli:main) in its own process: exit 2, no traceback."""
    import subprocess
    import sys

    path = tmp_path / "deep.json"
    path.write_bytes(CORPUS["deep.json"].content)
    done = subprocess.run(
        [sys.executable, "-c", "from stagewise.cli import main; main()", "eval", str(good[0]), str(path)],
        capture_output=True,
        text=True,
        env={
            "PYTHONPATH": str(Path(stagewise.__file__).parents[1]),
            "PATH": "/usr/bin:/bin",
            # under `make sanitize` the child needs the sanitizer runtimes first, as this process had them
            **{k: v for k, v in os.environ.items() if k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")},
        },
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.startswith("stagewise: error:")


@pytest.mark.parametrize("ids", [("q\ud800", "d1"), ("q1", "d\udc00")])
def test_lone_surrogate_in_an_in_memory_id(ids: tuple[str, str]) -> None:
    query, doc = ids
    with pytest.raises(InputError, match=r"<dict>: .*not valid Unicode"):
        read_run({query: {doc: 1.0}})
    with pytest.raises(InputError, match=r"<dict>: .*not valid Unicode"):
        read_qrels({query: {doc: 1}})


def test_trec_eval_names_the_commands_that_read_classic_qrels(tmp_path: Path, good: tuple[Path, Path]) -> None:
    path = tmp_path / "cranqrel"
    path.write_text("1 184 2\n1 29 2\n1 31 2\n")
    _clean_failure(["trec_eval", str(path), str(good[1])], f"{path}:1", "--qrels-format cranfield (stagewise eval")


# ---------------------------------------------------------------------------------------------------------
# Fuzzing: any bytes either read or fail as an InputError, under both TREC readers and every text format
# ---------------------------------------------------------------------------------------------------------

# Fields, separators and bytes that have broken readers, and whole lines of each format so that mutations land
# inside files that otherwise read.
_PIECES = [
    *(b'q1 Q0 d1 1 2.5 -1 tag # nan 1e999 null , : { } [ ] " \\ud800'.split(b" ")),
    *(
        b" ",
        b"\t",
        b"\n",
        b"\r",
        b"\r\n",
        b"\x0b",
        b"\x1c",
        b"\x00",
        b"\xef\xbb\xbf",
        b"\xff\xfe",
        b"\xc3",
        b"\xc2\xa0",
    ),
    *(b'"query_id"', b'"doc_id"', b'"score"', b'"relevance"', b"9" * 30),
    *(b"q1 Q0 d1 1 2.5 t\n", b"q1 Q0 d2 2 1.5 t\n", b"q2 Q0 d1 1 0.5 t\n", b"q1 0 d1 1\n", b"q1 0 d2 0\n"),
    b'{"query_id": "q1", "doc_id": "d1", "score": 1, "relevance": 1}\n',
    *(
        b"query_id,doc_id,score,relevance\n",
        b"q1,d1,1.5,1\n",
        b"query_id\tdoc_id\tscore\trelevance\n",
        b"q1\td2\t0.5\t0\n",
    ),
]


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=60),
    suffix=st.sampled_from(["run", "qrels", "jsonl", "json", "csv", "tsv"]),
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_bytes_read_or_raise_input_error(trec_reader: str, tmp_path: Path, pieces: list[bytes], suffix: str):
    path = tmp_path / f"fuzz.{suffix}"
    path.write_bytes(b"".join(pieces))
    for reader in (read_run, read_qrels):
        try:
            reader(path)
        except InputError as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)


def test_doc_id_and_q0_swapped_with_one_result_per_query(trec_reader: str, tmp_path: Path) -> None:
    """No duplicate gives it away here: every query would silently retrieve a document called 'Q0'."""
    path = tmp_path / "one-each.run"
    path.write_text("".join(f"q{i} d{i} Q0 1 1.0 sys\n" for i in range(5)))
    with pytest.raises(InputError, match=r"one-each\.run:1: .*look swapped"):
        read_run(path)
    same_doc = tmp_path / "same-doc.run"  # one document retrieved for every query is sound
    same_doc.write_text("".join(f"q{i} Q0 d7 1 1.0 sys\n" for i in range(5)))
    assert len(read_run(same_doc)) == 5


def test_cli_choices_follow_the_library() -> None:
    """The CLI spells its choices by hand (so that --help imports nothing heavy): they must not drift."""
    from stagewise.cli.common import Duplicates, QrelsFormat
    from stagewise.data.readers import QRELS_FORMATS
    from stagewise.data.run import DUPLICATE_POLICIES

    assert [f.value for f in QrelsFormat] == list(QRELS_FORMATS)
    assert [d.value for d in Duplicates] == list(DUPLICATE_POLICIES)
