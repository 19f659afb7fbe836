"""The command line's shared behaviour, run as a user runs it (the console entry point): help shown as written,
one meaning per short flag (old spellings kept with a note), Ctrl-C saying so, and the hints eval, compare and
search give from the same checks validate makes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from stagewise._bundled import sample_path

STAGEWISE = Path(sys.executable).with_name("stagewise")
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
WIDE = {"COLUMNS": "250", "TERM": "dumb", "PATH": "/usr/bin:/bin"}


def stagewise(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(STAGEWISE), *args], capture_output=True, text=True, timeout=120, **kwargs)


def test_help_keeps_brackets_and_shows_literals_plainly() -> None:
    eval_help = stagewise("eval", "--help", env=WIDE).stdout
    assert "needs stagewise[dask])" in eval_help
    labels_help = stagewise("labels", "export", "--help", env=WIDE).stdout
    assert "``" not in labels_help and "'qid 0 docid label'" in labels_help


def test_help_types_are_readable() -> None:
    out = stagewise("eval", "--help", env=WIDE).stdout
    assert "<bool>" not in out and "<list[" not in out
    assert "--metric" in out and "<str>" in out


def test_old_short_flags_still_work_with_a_note(tmp_path: Path) -> None:
    result = stagewise("fuse", RUN, RUN, "-m", "combsum", "-o", str(tmp_path / "f.run"))
    assert result.returncode == 0, result.stderr
    assert "stagewise: -m for --method is deprecated; use --method" in result.stderr
    assert "with combsum" in result.stderr
    help_text = stagewise("fuse", "--help", env=WIDE).stdout
    assert "--method" in help_text and not any(" -m " in line for line in help_text.splitlines() if "--method" in line)


def test_old_long_flags_still_work_with_a_note(tmp_path: Path) -> None:
    # index's input format is --input-format (--format is an output format everywhere); -f, --format and
    # --format=VALUE still work there, each with one line on stderr, and help offers the new spelling only
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "d1", "text": "wing lift"}\n{"_id": "d2", "text": "flow"}\n')
    spellings = {"--format": ["--format", "jsonl"], "--format=": ["--format=jsonl"], "-f": ["-fjsonl"], None: []}
    for i, (old, spelling) in enumerate(spellings.items()):
        args = spelling or ["--input-format", "jsonl"]
        result = stagewise("index", str(corpus), *args, "-o", str(tmp_path / f"i{i}"))
        assert result.returncode == 0, result.stderr
        notes = [line for line in result.stderr.splitlines() if "deprecated" in line]
        flag = None if old is None else old.rstrip("=")
        assert notes == (
            [] if flag is None else [f"stagewise: {flag} for --input-format is deprecated; use --input-format"]
        )
    help_text = stagewise("index", "--help", env=WIDE).stdout
    assert "--input-format" in help_text and "--format" not in help_text.replace("--input-format", "")


def test_undeprecated_leaves_what_follows_a_double_dash() -> None:
    from stagewise.cli.command import undeprecated

    assert undeprecated("index", ["--", "--format"]) == ["--", "--format"]
    assert undeprecated("eval", ["--format", "json"]) == ["--format", "json"]


def test_ctrl_c_says_so() -> None:
    # eval reading its judgements from a standard input that never ends: interrupted while the command runs
    proc = subprocess.Popen(
        [str(STAGEWISE), "eval", "-", RUN, "-m", "map"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "stagewise: interrupted; no output file was left half-written\n"


def _swapped(tmp_path: Path) -> Path:
    rows = [line.split() for line in Path(RUN).read_text().splitlines()]
    out = tmp_path / "swapped.run"
    out.write_text("".join(f"{q} {z} {d} {s} {r} {t}\n" for q, z, d, r, s, t in rows))
    return out


def test_eval_and_compare_warn_of_swapped_rank_and_score(tmp_path: Path) -> None:
    swapped = str(_swapped(tmp_path))
    said = stagewise("validate", QRELS, swapped).stdout
    assert "look swapped" in said
    for args in (("eval", QRELS, swapped, "-m", "map"), ("compare", QRELS, swapped, RUN, "-m", "map")):
        result = stagewise(*args)
        assert result.returncode == 0, result.stderr
        assert "stagewise: warning: " in result.stderr and "the two columns look swapped" in result.stderr
    assert "warning" not in stagewise("eval", QRELS, RUN, "-m", "map").stderr


def test_queries_numbered_otherwise_get_the_renumber_hint(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 d{q} 1\n" for q in range(1, 11)))
    run = tmp_path / "run.txt"  # queries 1, 2, 4, 5 ... as cran.qry numbers them, judged as 1..10
    run.write_text("".join(f"{q} Q0 d{i + 1} 1 1.0 t\n" for i, q in enumerate([1, 2, 4, 5, 7, 8, 11, 12, 14, 15])))
    result = stagewise("eval", str(qrels), str(run), "-m", "map")
    assert result.returncode == 0, result.stderr
    assert "4 run queries match no judged query while 4 judged queries are absent" in result.stderr
    assert "--renumber" in result.stderr


def test_a_large_b_says_how_long(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [str(STAGEWISE), "compare", QRELS, RUN, str(sample_path("results.trunc")), "-t", "randomization",
         "--exact", "never", "-B", "1000000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stderr.readline()
    finally:
        proc.kill()
        proc.wait()
    assert line.startswith("stagewise: note: -B 1,000,000,000 on 3 queries x ")
    assert "takes roughly" in line


def test_search_with_its_arguments_swapped_says_the_index_comes_first(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("d1\tlift of wings\nd2\tboundary layer\n")
    index = tmp_path / "idx"
    assert stagewise("index", str(corpus), "-o", str(index)).returncode == 0
    queries = tmp_path / "q.tsv"
    queries.write_text("1\twings\n")
    result = stagewise("search", str(queries), str(index))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the index comes first" in result.stderr
    assert stagewise("search", str(index), str(queries)).returncode == 0
