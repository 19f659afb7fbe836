"""Partial files that a kill -9 left beside an output: removed by the next write of that output once their
writer is gone, never while it still writes (issue 25, item 7)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stagewise._io import atomic_write, partial_prefix, remove_stale_partials

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and pids")

STAGEWISE = str(Path(sys.executable).with_name("stagewise"))
SRC = Path(__file__).resolve().parents[1] / "src"
RUN_A = "q1 Q0 A 1 0.9 a\nq1 Q0 B 2 0.8 a\nq2 Q0 X 1 5 a\n"
RUN_B = "q1 Q0 B 1 12 b\nq1 Q0 D 2 11 b\nq2 Q0 Y 1 1 b\n"

# Writes part of the output through atomic_write, says so, then waits to be killed: deterministic, unlike
# killing a real command at a moment in its work.
_WRITER = textwrap.dedent(
    """
    import sys, time
    from stagewise._io import atomic_write
    with atomic_write(sys.argv[1]) as fh:
        fh.write("q1 Q0 d 1 1.0 t\\n" * 50_000)
        fh.flush()
        print("writing", flush=True)
        time.sleep(600)
    """
)


def _partials(folder: Path, target: str) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(partial_prefix(target)))


def _start_writer(target: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    return proc


def _kill_9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _fuse(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [STAGEWISE, "fuse", "a.run", "b.run", "--method", "rrf", "-o", "fused.run"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_kill_9_leftover_is_removed_by_the_next_fuse_and_a_live_writer_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    target = tmp_path / "fused.run"
    live = _start_writer(target)
    try:
        (live_name,) = _partials(tmp_path, "fused.run")
        killed = _start_writer(target)  # sees the live writer's file and keeps it
        _kill_9(killed)
        (left,) = set(_partials(tmp_path, "fused.run")) - {live_name}
        assert f".{killed.pid}-" in left  # the name says whose it is
        assert (tmp_path / left).stat().st_size > 0
        done = _fuse(tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"removed {left} (" in done.stderr and f"process {killed.pid}" in done.stderr
        assert "no longer running" in done.stderr
        assert _partials(tmp_path, "fused.run") == [live_name]  # the writer at work keeps its file
        assert target.read_text().startswith("q1 Q0")
    finally:
        _kill_9(live)
    again = _fuse(tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"removed {live_name} (" in again.stderr
    assert _partials(tmp_path, "fused.run") == []


def test_only_the_partial_files_of_the_output_written_are_removed(tmp_path: Path) -> None:
    other = _start_writer(tmp_path / "other.run")
    _kill_9(other)
    mine = _start_writer(tmp_path / "mine.run")
    _kill_9(mine)
    with atomic_write(tmp_path / "mine.run") as fh:
        fh.write("x\n")
    assert _partials(tmp_path, "mine.run") == []
    assert len(_partials(tmp_path, "other.run")) == 1  # another output's leftover: its own next write removes it


def test_a_partial_file_without_a_pid_is_named_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    legacy = tmp_path / f"{partial_prefix('out.run')}k2j3h4l5"  # an older stagewise's mkstemp name
    legacy.write_text("half")
    assert remove_stale_partials(tmp_path / "out.run") == []
    assert legacy.exists()
    err = capsys.readouterr().err
    assert str(legacy) in err and "kept" in err


def test_a_partial_file_of_another_machine_is_kept(tmp_path: Path) -> None:
    # A folder shared over the network: a pid from another machine says nothing about this one's processes.
    foreign = tmp_path / f"{partial_prefix('out.run')}999999-00000000.abcdefgh"
    dead_here = 2**22 + 12345  # above Linux's pid_max default: no process here holds it
    mine = tmp_path / foreign.name.replace("999999-00000000", f"{dead_here}-{_host()}")
    foreign.write_text("half")
    mine.write_text("half")
    assert remove_stale_partials(tmp_path / "out.run") == [str(mine)]
    assert foreign.exists() and not mine.exists()


def _host() -> str:
    from stagewise._io import _host_tag

    return _host_tag()


def test_the_writer_pid_is_in_the_temporary_name(tmp_path: Path) -> None:
    with atomic_write(tmp_path / "r.run") as fh:
        fh.write("x\n")
        (name,) = _partials(tmp_path, "r.run")
        assert name.startswith(f"{partial_prefix('r.run')}{os.getpid()}-{_host()}.")
    assert os.listdir(tmp_path) == ["r.run"]
