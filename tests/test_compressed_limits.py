"""Compressed input streamed under a limit on expansion, memory bounded by what a reader keeps, and the corpus
reader linear on any line length (issue 25, item 5)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import stagewise
from stagewise import _io
from stagewise.data import collections
from stagewise.errors import InputError

STAGEWISE = str(Path(sys.executable).with_name("stagewise"))
SRC = Path(__file__).resolve().parents[1] / "src"
ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs" / "runs"
RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 0.5 t\n"
QRELS = "q1 0 d1 1\nq2 0 d3 2\n"
GIB = 2**30

# Runs a command and prints the peak resident memory of its process tree (KiB on Linux). The address-space
# cap only keeps a reader without limits from taking the machine down: the assertion is on the peak.
_MEASURE = """
import resource, subprocess, sys
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
stdin = open(sys.argv[1], "rb") if sys.argv[1] != "-" else None
done = subprocess.run(sys.argv[2:], stdin=stdin, capture_output=True, text=True, preexec_fn=cap)
sys.stderr.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 GiB of zeros in 6 MB: one gzip member of 64 MiB (compressed once, about 64 KB) written 96 times,
    which gzip readers read as one file."""
    member = gzip.compress(bytes(64 * 2**20), compresslevel=9)
    path = tmp_path_factory.mktemp("bomb") / "bomb.gz"
    with path.open("wb") as fh:
        for _ in range(96):
            fh.write(member)
    assert path.stat().st_size < 10 * 2**20
    return path


def _measured(args: list[str], cwd: Path, stdin: Path | None = None) -> tuple[int, int, str]:
    """Exit status, peak memory in bytes and stderr of a stagewise command."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(stdin) if stdin else "-", STAGEWISE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, peak = done.stdout.split()
    return int(code), int(peak) * 1024, done.stderr


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "qrels.txt").write_text(QRELS)
    (folder / "run.txt").write_text(RUN)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "wing lift"}\n{"_id": "d2", "text": "flow"}\n')
    done = subprocess.run([STAGEWISE, "index", "corpus.jsonl", "-o", "idx"], cwd=folder, capture_output=True)
    assert done.returncode == 0, done.stderr
    return folder


BOMB_CASES = {
    "run": ["eval", "qrels.txt", "BOMB"],
    "qrels": ["eval", "BOMB", "run.txt"],
    "run, stream engine": ["eval", "--engine", "stream", "qrels.txt", "BOMB"],
    "rag records": ["rag", "BOMB"],
    "search queries (tsv)": ["search", "idx", "BOMB", "--input-format", "tsv"],
    "search queries (jsonl)": ["search", "idx", "BOMB", "--input-format", "jsonl"],
    "search queries from stdin": ["search", "idx", "-"],
    "corpus": ["index", "BOMB", "--input-format", "jsonl", "-o", "idx2"],
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB and RLIMIT_AS: Linux")
@pytest.mark.parametrize("case", list(BOMB_CASES))
def test_a_6_gib_gzip_bomb_is_refused_in_under_1_gb(case: str, bomb: Path, inputs: Path) -> None:
    args = [str(bomb) if a == "BOMB" else a for a in BOMB_CASES[case]]
    code, peak, err = _measured(args, inputs, stdin=bomb if "-" in args else None)
    assert code == 2, err
    assert peak < GIB, f"{peak / GIB:.2f} GiB"
    assert "expands more than 100 times its compressed size" in err, err
    assert "STAGEWISE_MAX_EXPANSION_RATIO" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def _gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_the_absolute_limit_is_stated_and_settable_from_the_environment(tmp_path: Path, inputs: Path) -> None:
    lines = "".join(f"q{i % 97} Q0 d{i} {i // 97 + 1} {1e6 - i} t\n" for i in range(200_000))  # ~7 MB
    run = _gz(tmp_path / "big.run.gz", lines)
    env = {**os.environ, "STAGEWISE_MAX_EXPANDED_BYTES": "1M"}
    done = subprocess.run(
        [STAGEWISE, "eval", str(inputs / "qrels.txt"), str(run)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2
    assert "expands to more than 1.0 MiB (the limit on decompressed input)" in done.stderr
    assert "STAGEWISE_MAX_EXPANDED_BYTES" in done.stderr
    env["STAGEWISE_MAX_EXPANDED_BYTES"] = "64M"
    done = subprocess.run(
        [STAGEWISE, "eval", str(inputs / "qrels.txt"), str(run)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr


def test_the_ratio_is_settable_from_the_environment(bomb: Path, tmp_path: Path) -> None:
    head = tmp_path / "head.gz"  # 4 members: 256 MiB of zeros, refused at the default ratio
    head.write_bytes(bomb.read_bytes()[: 4 * (bomb.stat().st_size // 96)])
    code = "import sys; from stagewise._io import read_bytes; print(len(read_bytes(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    refused = subprocess.run([sys.executable, "-c", code, str(head)], capture_output=True, text=True, env=env)
    assert "expands more than 100 times" in refused.stderr
    env["STAGEWISE_MAX_EXPANSION_RATIO"] = "0"
    read = subprocess.run([sys.executable, "-c", code, str(head)], capture_output=True, text=True, env=env)
    assert read.stdout.strip() == str(256 * 2**20), read.stderr


@pytest.mark.parametrize(("name", "value"), [("STAGEWISE_MAX_EXPANSION_RATIO", "lots"),
                                             ("STAGEWISE_MAX_EXPANDED_BYTES", "5 parsecs")])
def test_a_bad_limit_in_the_environment_is_one_clear_line(name: str, value: str, tmp_path: Path) -> None:
    run = _gz(tmp_path / "r.run.gz", RUN)
    qrels = tmp_path / "q.txt"
    qrels.write_text(QRELS)
    env = {**os.environ, name: value}
    done = subprocess.run([STAGEWISE, "eval", str(qrels), str(run)], capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert f"${name}" in done.stderr and repr(value) in done.stderr and "Traceback" not in done.stderr


def test_the_library_setting_overrides_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _gz(tmp_path / "r.run.gz", RUN * 20_000)  # 1 MiB of repeated lines: far above 100x, under the grace
    monkeypatch.setenv("STAGEWISE_MAX_EXPANDED_BYTES", "0")
    assert stagewise.read_run(run, duplicates="first").to_dict()
    previous = _io.set_expansion_limits(_io.ExpansionLimits(ratio=None, max_bytes=100_000))
    try:
        with pytest.raises(InputError, match=r"expands to more than 97.7 KiB"):
            stagewise.read_run(run, duplicates="first")
        with pytest.raises(InputError, match=r"expands to more than"):
            stagewise.read_qrels(run)
    finally:
        _io.set_expansion_limits(previous)
    assert _io.expansion_limits() == _io.ExpansionLimits(ratio=100.0, max_bytes=None)


@pytest.mark.skipif(not ROBUST.is_dir(), reason="the shared TREC Robust 2003 runs")
def test_real_compressed_runs_read_under_the_default_limits() -> None:
    for path in sorted(ROBUST.glob("*.gz")):
        assert len(stagewise.read_run(path)) > 0


def test_concatenated_members_and_zero_padding_read_whole(tmp_path: Path, inputs: Path) -> None:
    lines = RUN.splitlines(keepends=True)
    packed = tmp_path / "members.run.gz"
    packed.write_bytes(b"".join(gzip.compress(line.encode()) for line in lines) + bytes(512))
    assert _io.read_bytes(packed) == RUN.encode()
    with _io.open_input(packed) as fh:
        assert fh.read() == RUN.encode()
    expected = stagewise.read_run(inputs / "run.txt").to_dict()
    assert stagewise.read_run(packed).to_dict() == expected
    for engine in ("local", "stream"):
        scores = [_map(engine, inputs / "qrels.txt", run) for run in (packed, inputs / "run.txt")]
        assert scores[0] == scores[1] == 1.0


def _map(engine: str, qrels: Path, run: Path) -> float:
    done = subprocess.run(
        [STAGEWISE, "eval", "--engine", engine, "-m", "map", "-f", "json", str(qrels), str(run)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    (scores,) = json.loads(done.stdout)["runs"].values()
    return scores["map"]


def test_garbage_after_the_last_member_is_corrupt_gzip(tmp_path: Path) -> None:
    packed = tmp_path / "tail.run.gz"
    packed.write_bytes(gzip.compress(RUN.encode()) + b"not gzip")
    with pytest.raises(InputError, match="corrupt gzip data"):
        _io.read_bytes(packed)


def test_the_stream_engine_tells_gzip_by_its_bytes_not_its_name(tmp_path: Path, inputs: Path) -> None:
    packed = _gz(tmp_path / "run.trec", RUN)  # gzip without .gz: the stream engine read it as text
    assert _map("stream", inputs / "qrels.txt", packed) == 1.0


# VmHWM, not ru_maxrss: a process started by a large one (pytest) reports its parent's peak until it passes it.
_PEAK = """
import sys
from stagewise._io import read_bytes
def peak():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
base = peak()
data = read_bytes(sys.argv[1])
print(len(data), peak() - base)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status: Linux")
def test_a_gzip_file_is_held_once_in_memory(tmp_path: Path) -> None:
    # Whole-file decompression held the compressed file, the members' list and their join: 2.5x the expanded
    # size at the peak (1008 MB for a 400 MB run); the expanded bytes alone are what the reader keeps.
    text = "".join(f"{q} Q0 D{(q * 7919 + r * 104729) % 10**7:07d} {r} {100 - r / 100:.4f} sysA\n"
                   for q in range(1, 1501) for r in range(1, 1001)).encode()
    path = tmp_path / "r.run.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1))
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    size, peak = map(int, done.stdout.split())
    assert size == len(text)
    assert peak < 1.3 * size, (peak / size)


def test_the_corpus_reader_is_linear_on_one_long_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 32 MiB in one line read 1 KiB at a time: 32,768 pieces. Joining a growing carry to each piece copies
    # 32768^2 / 2 * 1 KiB = 550 GB (minutes); keeping the pieces and joining them once copies 32 MiB.
    monkeypatch.setattr(collections, "LINE_BLOCK_BYTES", 1024)
    long_text = os.urandom(16 * 2**20).hex()  # 32 MiB that compresses as real text does, not 1000x
    records = json.dumps({"_id": "long", "text": long_text}) + "\n" + json.dumps({"_id": "d2", "text": "flow"})
    for name, data in (("c.jsonl", records.encode()), ("c.jsonl.gz", gzip.compress(records.encode(), 1))):
        path = tmp_path / name
        path.write_bytes(data)
        batches = list(collections.iter_corpus(path, format="jsonl"))
        ids = [i for b in batches for i in b.ids]
        assert ids == ["long", "d2"]
        assert batches[0].texts[0] == long_text
    blocks = list(collections._line_blocks(tmp_path / "c.jsonl", 1024))
    assert [first for first, _ in blocks] == [1, 2]


def test_the_stream_engine_blocks_are_linear_on_one_long_line() -> None:
    # The stream engine's blocks had the same carry: 32 MiB in 512-byte reads is 65,536 pieces, minutes of
    # copying when each read re-joins the carry, a fraction of a second when the pieces are joined once.
    import io

    from stagewise.engines._blocks import iter_blocks

    data = b"q1 Q0 " + b"d" * (32 * 2**20) + b" 1 1.0 t\nq2 Q0 x 1 1 t\n"
    blocks = list(iter_blocks(io.BytesIO(data), 512))
    assert [line for _, line in blocks] == [1, 2]
    assert b"".join(block for block, _ in blocks) == data
