"""Every integer option of every command is checked by one option type (stagewise.cli.common.int_option): a value
out of range, or no integer at all, is one line naming the option and its range, exit 2, no traceback, run as a
user runs it (the console entry point)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stagewise._bundled import sample_path

STAGEWISE = Path(sys.executable).with_name("stagewise")
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
HUGE = "100000000000000000000"


def stagewise(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(STAGEWISE), *args], capture_output=True, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("eval", QRELS, RUN, "-m", "map", "--digits", "-1"), "--digits must be an integer from 0 to 20; got -1"),
        (("compare", QRELS, RUN, RUN, "--digits", "-1"), "--digits must be an integer from 0 to 20; got -1"),
        (("rag", RUN, "--digits", "-1"), "--digits must be an integer from 0 to 20; got -1"),
        (
            ("eval", QRELS, RUN, "-M", HUGE),
            f"--max-ret must be an integer from 1 to 9,223,372,036,854,775,807; got {HUGE}",
        ),
        (("trec_eval", "-M", HUGE, QRELS, RUN), "-M must be an integer from -9,223,372,036,854,775,808 to"),
        (("search", "idx", "q", "-k", "9223372036854775808"), "-k must be an integer from 1 to"),
        (("index", "corpus", "-o", "idx", "--min-length", HUGE), "--min-length must be an integer from 1 to"),
        (("fuse", RUN, RUN, "--depth", "0"), "--depth must be an integer from 1 to"),
        (("search", "idx", "q", "--workers", "0"), "--workers must be an integer from 1 to"),
        (("fuse", RUN, RUN, "--folds", "1"), "--folds must be an integer from 2 to"),
        (
            ("compare", QRELS, RUN, RUN, "-B", HUGE),
            f"--resamples must be an integer from 1 to 1,000,000,000; got {HUGE}",
        ),
        (("eval", QRELS, RUN, "--digits", "four"), "--digits must be an integer from 0 to 20; got four"),
        (("demo", "--port", "70000"), "--port must be an integer from 1 to 65,535; got 70000"),
    ],
)
def test_integer_options_out_of_range_are_one_line(args: tuple[str, ...], message: str) -> None:
    result = stagewise(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "\u256d" not in result.stderr  # no traceback, no typer box
    assert result.stderr.startswith("stagewise: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr


def test_integer_options_in_range_still_work() -> None:
    result = stagewise("eval", QRELS, RUN, "-m", "map", "--digits", "2", "-M", "9223372036854775807")
    assert result.returncode == 0, result.stderr
    assert "0.18" in result.stdout
