"""Outputs that never destroy: every command that writes a file checks the path before the work, refuses with
one line and exit 2, writes through symlinks, follows the umask, and leaves no temporary file behind (even on
SIGTERM); fuse's run and metadata land together or not at all."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise import _io
from stagewise._io import atomic_paths, atomic_write, check_output, partial_prefix
from stagewise.cli import app
from stagewise.errors import InputError

SRC = Path(__file__).resolve().parents[1] / "src"
RUN_A = "q1 Q0 A 1 0.9 a\nq1 Q0 B 2 0.8 a\nq2 Q0 X 1 5 a\n"
RUN_B = "q1 Q0 B 1 12 b\nq1 Q0 D 2 11 b\nq2 Q0 Y 1 1 b\n"
QRELS = "q1 0 B 1\nq1 0 A 0\nq2 0 Y 1\n"
RECORD = {"id": "q1", "retrieved": ["p3", "p9"], "gold_evidence": ["p9"], "answer": "Jo", "gold_answers": ["Jo"]}
CORPUS = [{"_id": "d1", "text": "lift of a wing"}, {"_id": "d2", "text": "heat in a slab"}]


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "records.jsonl").write_text(json.dumps(RECORD) + "\n")
    (tmp_path / "queries.tsv").write_text("q1\twing lift\nq2\theat\n")
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "old.run").write_text("OLD\n")
    os.chmod(tmp_path / "sub" / "old.run", 0o640)
    return tmp_path


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: a link's target, a file's bytes and mode, a folder's mode."""
    out: dict[str, tuple] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(path))
        elif stat.S_ISREG(st.st_mode):
            out[key] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
        else:
            out[key] = ("other", stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def assert_refused(result, *needles: str) -> None:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("stagewise: error: "), result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


def commands(d: Path, output: Path | str) -> dict[str, list[object]]:
    """Each command that writes a file, with its -o set to ``output``."""
    return {
        "eval": ["eval", d / "qrels.txt", d / "a.run", "-m", "map", "-f", "json", "-o", output],
        "compare": ["compare", d / "qrels.txt", d / "a.run", d / "b.run", "-m", "map", "-f", "json", "-o", output],
        "fuse": ["fuse", d / "a.run", d / "b.run", "-o", output],
        "rag": ["rag", d / "records.jsonl", "-f", "json", "-o", output],
        "search": ["search", d / "idx", d / "queries.tsv", "-o", output],
    }


@pytest.fixture
def indexed(files: Path) -> Path:
    assert invoke("index", files / "corpus.jsonl", "-o", files / "idx").exit_code == 0
    return files


COMMANDS = ["eval", "compare", "fuse", "rag", "search"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_writes_with_the_umask_and_leaves_only_its_files(indexed: Path, command: str) -> None:
    out = indexed / "out" / "result"
    out.parent.mkdir()
    result = invoke(*commands(indexed, out)[command])
    assert result.exit_code == 0, result.output
    expected = {"result", "result.meta.json"} if command == "fuse" else {"result"}
    assert set(os.listdir(out.parent)) == expected
    for name in expected:
        assert stat.S_IMODE(os.stat(out.parent / name).st_mode) == 0o666 & ~_io.current_umask()


# Each hazard: the -o argument (relative to the files folder; {input} is a file the command reads), and words
# the one-line message must hold.
INPUTS = {"eval": "a.run", "compare": "b.run", "fuse": "a.run", "rag": "records.jsonl", "search": "queries.tsv"}
HAZARDS = {
    "an input": ("{input}", ["is the input", "choose another --output"]),
    "an input through a symlink": ("link-to-input", ["is the input"]),
    "an input through a hard link": ("hard-link-to-input", ["is the input"]),
    "an existing folder": ("sub", ["is a folder, not a file", "give --output a file name"]),
    "the current folder": (".", ["is a folder, not a file"]),
    "a path under a file": ("a.run/x.out", ["lies under", "which is a file, not a folder"]),
    "a missing parent folder": ("typo/x.out", ["folder", "typo", "does not exist", "mkdir -p"]),
    "a FIFO": ("fifo", ["is a FIFO", "not a regular file"]),
    "a device": ("/dev/null", ["is a device", "redirect stdout"]),
    "a dash": ("-", ["is not a file name", "leave out --output to write to stdout"]),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("hazard", sorted(HAZARDS))
def test_bad_output_is_refused_and_nothing_changes(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, command: str, hazard: str
) -> None:
    monkeypatch.chdir(indexed)
    (indexed / "link-to-input").symlink_to(INPUTS[command])
    os.link(indexed / INPUTS[command], indexed / "hard-link-to-input")
    os.mkfifo(indexed / "fifo")
    target, needles = HAZARDS[hazard]
    target = target.format(input=INPUTS[command])
    before = snapshot(indexed)
    dev_null = os.stat("/dev/null")
    result = invoke(*commands(indexed, target)[command])
    assert_refused(result, *needles)
    assert snapshot(indexed) == before  # no file changed, no temporary file left, no folder created
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == dev_null.st_rdev


def test_a_file_inside_an_input_folder_is_not_replaced(indexed: Path) -> None:
    before = snapshot(indexed)
    result = invoke("search", indexed / "idx", indexed / "queries.tsv", "-o", indexed / "idx" / "meta.json")
    assert_refused(result, "is a file of the input folder", "idx")
    assert snapshot(indexed) == before
    result = invoke("search", indexed / "idx", indexed / "queries.tsv", "-o", indexed / "idx" / "bm25.run")
    assert result.exit_code == 0, result.output  # a new file beside an input changes no input


def test_the_output_is_checked_before_any_input_is_read(files: Path) -> None:
    """The missing input would fail too, but only after the work; the output's problem is reported first."""
    result = invoke("fuse", files / "missing.run", files / "b.run", "-o", files / "sub")
    assert_refused(result, "is a folder")
    result = invoke("eval", files / "qrels.txt", files / "missing.run", "-o", files / "nowhere" / "x")
    assert_refused(result, "does not exist")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["-o", "x.run", "--meta", "b.run"], ["b.run", "is the input", "--meta"]),
        (["-o", "x.run", "--meta", "x.run"], ["is also the --meta file"]),
        (["-o", "x.run", "--meta", "sub"], ["is a folder"]),
        (["-o", "x.run", "--meta", "nodir/m.json"], ["does not exist"]),
        (["--meta", "a.run"], ["is the input"]),  # the run goes to stdout, the metadata would destroy an input
        (["-o", "sub/old.run", "--meta", "sub/old.run"], ["is also the --meta file"]),
    ],
)
def test_fuse_metadata_path_is_checked_too(
    files: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], needles: list[str]
) -> None:
    monkeypatch.chdir(files)
    before = snapshot(files)
    assert_refused(invoke("fuse", "a.run", "b.run", *args), *needles)
    assert snapshot(files) == before


def test_fuse_default_metadata_beside_an_input_is_refused(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o x`` puts the metadata at ``x.meta.json``: when that is an input, nothing is written."""
    monkeypatch.chdir(files)
    (files / "x.run.meta.json").write_text(json.dumps({"q1": {"A": 1.0}}))  # a run in JSON
    before = snapshot(files)
    assert_refused(invoke("fuse", "a.run", "x.run.meta.json", "-o", "x.run"), "x.run.meta.json", "is the input")
    assert snapshot(files) == before
    result = invoke("fuse", "a.run", "x.run.meta.json", "-o", "x.run", "--no-meta")  # the way out works
    assert result.exit_code == 0, result.output


def test_rag_judge_cache_is_checked(files: Path) -> None:
    before = snapshot(files)
    assert_refused(invoke("rag", files / "records.jsonl", "--judge-cache", files / "sub"), "is a folder")
    assert_refused(invoke("rag", files / "records.jsonl", "--judge-cache", files / "records.jsonl"), "is the input")
    out = files / "x.json"
    assert_refused(invoke("rag", files / "records.jsonl", "-o", out, "--judge-cache", out), "is also the")
    assert snapshot(files) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write read-only files and folders")
def test_read_only_file_and_folder_are_refused(files: Path) -> None:
    os.chmod(files / "sub" / "old.run", 0o444)
    before = snapshot(files)
    assert_refused(invoke("fuse", files / "a.run", files / "b.run", "-o", files / "sub" / "old.run"), "read-only")
    os.chmod(files / "sub" / "old.run", 0o644)
    os.chmod(files / "sub", 0o555)
    try:
        before = snapshot(files)
        result = invoke("fuse", files / "a.run", files / "b.run", "-o", files / "sub" / "new.run")
        assert_refused(result, "cannot create files in folder", "permission denied")
        assert snapshot(files) == before
    finally:
        os.chmod(files / "sub", 0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_read_only_checks_as_another_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """As root (who may write anywhere), the read-only checks run with the effective user nobody."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="stagewise-outputs-", dir="/tmp"))
    try:
        (base / "a.run").write_text(RUN_A)
        (base / "locked.run").write_text("OLD\n")
        os.chmod(base / "locked.run", 0o644)  # root's file: nobody may not write it
        (base / "closed").mkdir()
        os.chmod(base / "closed", 0o755)
        os.chmod(base, 0o755)
        monkeypatch.chdir("/")
        os.setegid(65534)
        os.seteuid(65534)
        try:
            locked = invoke("fuse", base / "a.run", "--no-meta", "-o", base / "locked.run")
            closed = invoke("fuse", base / "a.run", "--no-meta", "-o", base / "closed" / "new.run")
        finally:
            os.seteuid(0)
            os.setegid(0)
        assert_refused(locked, "is read-only", "chmod u+w")
        assert_refused(closed, "cannot create files in folder", "permission denied")
        assert (base / "locked.run").read_text() == "OLD\n"
        assert os.listdir(base / "closed") == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# Symlinks, modes
# ---------------------------------------------------------------------------------------------------------


def test_symlinked_output_replaces_the_target_and_keeps_the_link(files: Path) -> None:
    link = files / "link.run"
    link.symlink_to(Path("sub") / "old.run")
    result = invoke("fuse", files / "a.run", files / "b.run", "-o", link, "--no-meta")
    assert result.exit_code == 0, result.output
    assert os.path.islink(link) and os.readlink(link) == str(Path("sub") / "old.run")
    assert (files / "sub" / "old.run").read_text().startswith("q1 Q0 B 1 ")
    assert stat.S_IMODE(os.stat(files / "sub" / "old.run").st_mode) == 0o640  # the replaced file's mode is kept
    assert sorted(os.listdir(files / "sub")) == ["old.run"]


def test_dangling_symlink_creates_its_target(files: Path) -> None:
    link = files / "dangling.json"
    link.symlink_to(Path("sub") / "new.json")
    result = invoke("eval", files / "qrels.txt", files / "a.run", "-m", "map", "-f", "json", "-o", link)
    assert result.exit_code == 0, result.output
    assert os.path.islink(link)
    assert json.loads((files / "sub" / "new.json").read_text())


_UMASK_WRITER = textwrap.dedent(
    """
    import os, sys
    os.umask(int(sys.argv[1], 8))
    from stagewise.cli import main
    try:
        main(sys.argv[2:])
    except SystemExit as exc:
        assert not exc.code, exc.code
    """
)


@pytest.mark.parametrize(("umask", "mode"), [("022", 0o644), ("002", 0o664), ("077", 0o600)])
def test_new_files_follow_the_umask(files: Path, umask: str, mode: int) -> None:
    out = files / f"fused-{umask}.run"
    scores = files / f"scores-{umask}.json"
    for args in (
        ["fuse", files / "a.run", files / "b.run", "-o", out],
        ["eval", files / "qrels.txt", files / "a.run", "-m", "map", "-f", "json", "-o", scores],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", _UMASK_WRITER, umask, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        assert proc.returncode == 0, proc.stderr
    for path in (out, Path(f"{out}.meta.json"), scores):
        assert stat.S_IMODE(os.stat(path).st_mode) == mode, path


def test_new_modes(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert _io.new_file_mode(tmp_path / "new") == 0o640
        assert _io.new_file_mode(tmp_path / "new", folder=True) == 0o750
        (tmp_path / "kept").mkdir(mode=0o700)
        assert _io.new_file_mode(tmp_path / "kept", folder=True) == 0o700
    finally:
        os.umask(old)


def test_current_umask_reads_without_changing_it() -> None:
    old = os.umask(0o027)
    try:
        assert _io.current_umask() == 0o027
        assert _io.current_umask() == 0o027  # unchanged by the first read
    finally:
        os.umask(old)


# ---------------------------------------------------------------------------------------------------------
# The run and its metadata: together or not at all
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("existing", [True, False])
def test_failing_metadata_rename_rolls_the_run_back(
    files: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    out = files / "sub" / ("old.run" if existing else "new.run")
    meta = files / "sub" / "fused.meta.json"
    if existing:
        meta.write_text('{"old": true}\n')
    before = snapshot(files)
    real_replace = os.replace
    renamed: list[str] = []

    def second_rename_fails(src, dst, *args, **kwargs):
        if str(dst) == str(meta):
            raise OSError(28, "No space left on device")
        renamed.append(str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", second_rename_fails)
    result = invoke("fuse", files / "a.run", files / "b.run", "-o", out, "--meta", meta)
    monkeypatch.setattr(os, "replace", real_replace)
    assert_refused(result, "cannot write", "No space left on device")
    assert str(out) in renamed  # the run really was renamed first, then put back
    assert snapshot(files) == before


def test_run_and_metadata_land_together(files: Path) -> None:
    out = files / "sub" / "old.run"
    meta = files / "sub" / "old.run.meta.json"
    meta.write_text("OLD\n")
    os.chmod(meta, 0o600)
    result = invoke("fuse", files / "a.run", files / "b.run", "-m", "combsum", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("q1 Q0 B 1 ")
    assert json.loads(meta.read_text())["method"].startswith("combsum")
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640 and stat.S_IMODE(os.stat(meta).st_mode) == 0o600
    assert sorted(os.listdir(files / "sub")) == ["old.run", "old.run.meta.json"]


def test_atomic_paths_rolls_back_every_earlier_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [tmp_path / f"f{i}" for i in range(3)]
    paths[0].write_text("zero\n")
    paths[2].write_text("two\n")
    real_replace = os.replace

    def third_fails(src, dst, *args, **kwargs):
        if str(dst) == str(paths[2]):
            raise KeyboardInterrupt
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", third_fails)
    with pytest.raises(KeyboardInterrupt), atomic_paths(paths) as temps:
        for tmp in temps:
            tmp.write_text("new\n")
    monkeypatch.setattr(os, "replace", real_replace)
    assert sorted(os.listdir(tmp_path)) == ["f0", "f2"]
    assert paths[0].read_text() == "zero\n" and paths[2].read_text() == "two\n"


def test_write_failure_is_one_line(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    before = snapshot(files)
    result = invoke("eval", files / "qrels.txt", files / "a.run", "-f", "json", "-o", files / "sub" / "old.run")
    assert_refused(result, "sub/old.run", "cannot write: No space left on device")
    assert snapshot(files) == before


# ---------------------------------------------------------------------------------------------------------
# Temporary files: named for what they are, gone after a failure, SIGINT or SIGTERM
# ---------------------------------------------------------------------------------------------------------


def test_temporary_file_says_what_it_is(tmp_path: Path) -> None:
    target = tmp_path / "fused.run"
    with atomic_write(target) as fh:
        fh.write("x\n")
        (name,) = os.listdir(tmp_path)
        assert name.startswith(".fused.run.stagewise-partial.") and name.startswith(partial_prefix(target))
    assert os.listdir(tmp_path) == ["fused.run"]


def test_a_writer_inside_an_atomic_write_adds_no_second_temporary_file(tmp_path: Path) -> None:
    """write_fused hands write_run a temporary path; write_run writes it in place, not through a third file."""
    import stagewise

    run = stagewise.read_run({"q1": {"d1": 1.0, "d2": 0.5}})
    seen: list[list[str]] = []
    real_replace = os.replace

    def spying_replace(src, dst, *args, **kwargs):
        seen.append(sorted(os.listdir(tmp_path)))
        return real_replace(src, dst, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "replace", spying_replace)
        with atomic_paths([tmp_path / "r.run", tmp_path / "r.json"]) as (run_tmp, meta_tmp):
            stagewise.write_run(run, run_tmp, format="trec")
            meta_tmp.write_text("{}\n")
    assert len(seen) == 2 and len(seen[0]) == 2, seen  # two renames; before them, the two partial files only
    assert all(name.startswith((".r.run.stagewise-partial.", ".r.json.stagewise-partial.")) for name in seen[0])
    assert sorted(os.listdir(tmp_path)) == ["r.json", "r.run"]
    assert stagewise.read_run(tmp_path / "r.run").to_dict() == run.to_dict()


_SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from stagewise._io import atomic_paths, atomic_write
    target = sys.argv[1]
    if sys.argv[2] == "pair":
        with atomic_paths([target, target + ".meta.json"]) as (run, meta):
            meta.write_text("{}")
            with open(run, "w") as fh:
                print("writing", flush=True)
                while True:
                    fh.write("q1 Q0 d 1 1.0 t\\n" * 1000)
                    time.sleep(0.01)
    with atomic_write(target) as fh:
        print("writing", flush=True)
        while True:
            fh.write("q1 Q0 d 1 1.0 t\\n" * 1000)
            time.sleep(0.01)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("how", ["single", "pair"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_signal_during_a_long_write_leaves_no_temporary_file(tmp_path: Path, how: str, sig: int) -> None:
    target = tmp_path / "out.run"
    target.write_text("OLD\n")
    before = snapshot(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        deadline = time.monotonic() + 30
        while not any(name.startswith(".out.run.stagewise-partial.") for name in os.listdir(tmp_path)):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in {128 + sig, -sig, 1}, (proc.returncode, proc.stderr.read() if proc.stderr else "")
    assert proc.returncode != 0
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------------------
# check_output as a library call (also for folder outputs such as the BM25 index)
# ---------------------------------------------------------------------------------------------------------


def test_check_output_for_folders(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "docs.jsonl").write_text("{}\n")
    (tmp_path / "file").write_text("x\n")
    (tmp_path / "idx").mkdir()
    assert check_output(tmp_path / "idx", folder=True, inputs=[tmp_path / "corpus" / "docs.jsonl"]) == tmp_path / "idx"
    assert check_output(tmp_path / "new-idx", folder=True) == tmp_path / "new-idx"
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output(tmp_path / "file", folder=True, option="--output")
    with pytest.raises(InputError, match="holds the input"):
        check_output(tmp_path / "corpus", folder=True, inputs=[tmp_path / "corpus" / "docs.jsonl"])
    with pytest.raises(InputError, match="holds the input"):
        check_output(tmp_path, folder=True, inputs=[tmp_path / "corpus" / "docs.jsonl"])
    with pytest.raises(InputError, match="does not exist"):
        check_output(tmp_path / "a" / "b", folder=True)
    assert check_output(tmp_path / "a" / "b", folder=True, parents=True) == tmp_path / "a" / "b"


def test_input_folders_read_whole_protect_their_files(tmp_path: Path) -> None:
    (tmp_path / "beir").mkdir()
    (tmp_path / "beir" / "bm25.run").write_text("old\n")
    # A dataset folder given as an input: a run written into it again is fine (only its queries are read).
    assert check_output(tmp_path / "beir" / "bm25.run", inputs=[tmp_path / "beir"])
    with pytest.raises(InputError, match="is a file of the input folder"):
        check_output(tmp_path / "beir" / "bm25.run", input_folders=[tmp_path / "beir"])


def test_check_output_messages_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"ends with '/'.*give --meta a file name"):
        check_output(f"{tmp_path}/new/", option="--meta")
    with pytest.raises(InputError, match="is empty"):
        check_output("")
    with pytest.raises(InputError, match="leave out --output to write to stdout"):
        check_output("-")
    with pytest.raises(InputError, match="give --meta a file name"):
        check_output("-", option="--meta")
    with pytest.raises(InputError, match="is given twice"), atomic_paths([tmp_path / "x", tmp_path / "." / "x"]):
        pass
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("spelling", [["-o", "newdir/"], ["--output=newdir/"], ["-o", "./newdir/"], ["-onewdir/"]])
def test_an_output_typed_with_a_trailing_slash_is_a_folder_not_a_file(files: Path, spelling, monkeypatch, capsys):
    """typer's Path drops the '/', so ``-o newdir/`` (no such folder) used to write a file named newdir."""
    from stagewise.cli import main

    monkeypatch.chdir(files)
    before = snapshot(files)
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "qrels.txt", "a.run", *spelling])
    assert exit_.value.code == 2
    assert "ends with '/', so it names a folder" in capsys.readouterr().err
    assert snapshot(files) == before
    # the command line is forgotten once the command ends: a later call naming a file 'newdir' may write it
    from typer.testing import CliRunner

    from stagewise.cli import app

    assert CliRunner().invoke(app, ["eval", "qrels.txt", "a.run", "-o", "newdir"]).exit_code == 0
