"""Ctrl-C at any moment of a command, start-up included, is one line on stderr and exit 130: never a traceback
(a new user who spots a typo just after pressing Enter interrupts while typer and the commands still load)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import stagewise.cli
from stagewise.cli import INTERRUPTED

SRC = str(Path(stagewise.cli.__file__).parents[2])


def _interrupted(delay: float, *args: str) -> subprocess.CompletedProcess[str]:
    # SIGINT back to its default in the child: a shell's background job starts with it ignored
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from stagewise.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("delay", [0.1, 0.2, 0.3, 0.45])
def test_ctrl_c_while_the_command_line_loads_is_no_traceback(delay: float) -> None:
    # --version exits as soon as it is loaded, so the signal lands while it loads, parses, or (exit 0, or killed
    # by the signal during the interpreter's shutdown, -2) after it has printed
    done = _interrupted(delay, "--version")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 130, -signal.SIGINT), (done.returncode, done.stderr)
    # ours, or nothing where typer's parser took the signal (it exits 130 silently; nothing was written yet)
    assert done.stderr in ("", INTERRUPTED + "\n"), done.stderr


def test_main_turns_a_keyboard_interrupt_anywhere_into_exit_130(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def loading(argv: list[str] | None) -> None:
        raise KeyboardInterrupt  # as if it came while typer was importing

    monkeypatch.setattr(stagewise.cli, "_run", loading)
    with pytest.raises(SystemExit) as stop:
        stagewise.cli.main(["eval", "--help"])
    assert stop.value.code == 130
    assert capsys.readouterr().err == INTERRUPTED + "\n"


def test_the_entry_module_is_light() -> None:
    # what makes the first test possible: importing the entry point loads no typer, so main() is running
    # (and catching) before the slow imports start
    code = "import sys, stagewise.cli; print(sorted(m for m in ('typer', 'click', 'rich') if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=SRC)
    )
    assert done.stdout.strip() == "[]"
    assert stagewise.cli.app is stagewise.cli.application.app
