"""`stagewise trec_eval` prints exactly what trec_eval 10 prints on its own test files: all 15 commands of its
``make quicktest`` (qrels, prefs, qrels_prefs, qrels_jg, -Z)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stagewise.errors import StagewiseError
from stagewise.trec_eval.command import run_trec_eval

MEAS_PARAMS = (
    "-q -miprec_at_recall..10,.20,.25,.75,.50 -m P.5,7,3 -m recall.20,2000 -m Rprec_mult.5.0,0.2,0.35 "
    "-mutility.2,-1,0,0 -m 11pt_avg..25,.5,.75 -mndcg.1=3,2=9,4=4.5 -mndcg_cut.10,20,23.4 -msuccess.2,5,20"
)
# (expected output, flags, qrels, run): the quicktest commands of trec_eval's Makefile.
CASES = [
    ("out.test", "", "qrels.test", "results.test"),
    ("out.test", "", "qrels.test.with-comments", "results.test"),
    ("out.comment.test", "", "qrels.comment.test", "results.comment.test"),
    ("out.test.a", "-m all_trec", "qrels.test", "results.test"),
    ("out.test.aq", "-m all_trec -q", "qrels.test", "results.test"),
    ("out.test.aqc", "-m all_trec -q -c", "qrels.test", "results.trunc"),
    ("out.test.aqcM", "-m all_trec -q -c -M100", "qrels.test", "results.trunc"),
    ("out.test.aql", "-m all_trec -mrelstring.20 -q -l2", "qrels.rel_level", "results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs", "prefs.test", "prefs.results.test"),
    ("out.test.prefs", "-m all_prefs -q -R prefs", "prefs.comment.test", "prefs.results.test"),
    ("out.test.qrels_prefs", "-m all_prefs -q -R qrels_prefs", "qrels.test", "results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg", "qrels.123", "results.test"),
    ("out.test.qrels_jg", "-m qrels_jg -q -R qrels_jg", "qrels.comments.123", "results.test"),
    ("out.test.meas_params", MEAS_PARAMS, "qrels.test", "results.test"),
    ("out.test.aqZ", "-q -m all_trec -Z {dir}/zscores_file", "qrels.test", "results.test"),
]


@pytest.mark.parametrize(("expected", "flags", "qrels", "run"), CASES, ids=[f"{c[0]}:{c[2]}" for c in CASES])
def test_byte_identical(trec_eval_test: Path, expected: str, flags: str, qrels: str, run: str) -> None:
    argv = [*flags.format(dir=trec_eval_test).split(), str(trec_eval_test / qrels), str(trec_eval_test / run)]
    assert run_trec_eval(argv) == (trec_eval_test / expected).read_text()


def test_command_line_is_byte_identical(trec_eval_test: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stagewise",
            "trec_eval",
            "-m",
            "all_trec",
            "-q",
            "-c",
            str(trec_eval_test / "qrels.test"),
            str(trec_eval_test / "results.trunc"),
        ],
        capture_output=True,
        check=True,
    )
    assert out.stdout == (trec_eval_test / "out.test.aqc").read_bytes()


def test_reads_stdin(trec_eval_test: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "stagewise", "trec_eval", str(trec_eval_test / "qrels.test"), "-"],
        input=(trec_eval_test / "results.test").read_bytes(),
        capture_output=True,
        check=True,
    )
    assert out.stdout == (trec_eval_test / "out.test").read_bytes()


def test_no_summary_and_single_measure(trec_eval_test: Path) -> None:
    text = run_trec_eval(
        ["-q", "-n", "-m", "P.5", str(trec_eval_test / "qrels.test"), str(trec_eval_test / "results.test")]
    )
    assert text.splitlines() == [
        "P_5                   \t301\t0.0000",
        "P_5                   \t302\t0.8000",
        "P_5                   \t303\t0.0000",
    ]


def test_missing_topic_without_c_is_skipped(trec_eval_test: Path) -> None:
    text = run_trec_eval(
        ["-m", "num_q", "-m", "map", str(trec_eval_test / "qrels.test"), str(trec_eval_test / "results.trunc")]
    )
    assert text.splitlines()[0] == "num_q                 \tall\t2"


def test_unknown_measure_is_a_clean_error(trec_eval_test: Path) -> None:
    with pytest.raises(StagewiseError, match="unknown measure"):
        run_trec_eval(["-m", "nope", str(trec_eval_test / "qrels.test"), str(trec_eval_test / "results.test")])


def test_drop_in_compares_scores_in_single_precision_unless_asked(tmp_path) -> None:
    """0.1000000000001 and 0.1 are one C float: trec_eval 9's order puts doc id "b" first (RR 0.5); with
    --ties docid-double (trec_eval 10.0's doubles) "a" leads (RR 1)."""
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("q 0 a 1\n")
    run.write_text("q Q0 b 1 0.1 t\nq Q0 a 2 0.1000000000001 t\n")
    single = run_trec_eval(["-m", "recip_rank", str(qrels), str(run)])
    double = run_trec_eval(["-m", "recip_rank", "--ties", "docid-double", str(qrels), str(run)])
    assert single == "recip_rank            \tall\t0.5000\n"
    assert double == "recip_rank            \tall\t1.0000\n"
    with pytest.raises(StagewiseError, match="--ties"):
        run_trec_eval(["--ties", "float", str(qrels), str(run)])
