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
