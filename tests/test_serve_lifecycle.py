"""``stagewise serve`` as a user runs it, from start to stop (issue 25, items 2, 3 and part of 7; issue 24): one
server per database, a clean stop on every signal leaving every acknowledged label in the database file alone,
``--port 0``, tokens that cannot travel in a header refused, half-sent requests closed; ``labels export`` says
what it wrote."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
httpx = pytest.importorskip("httpx")

STAGEWISE = str(Path(sys.executable).parent / "stagewise")


def _collection(folder: Path) -> list[str]:
    qrels, run = folder / "qrels.txt", folder / "a.run"
    qrels.write_text("".join(f"q{q} 0 d{d} {(q + d) % 2}\n" for q in range(3) for d in range(5)))
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d} a\n" for q in range(3) for d in range(8)))
    return ["--qrels", str(qrels), "--run", str(run)]


class Serving:
    """A ``stagewise serve --port 0`` process; its address read from the line it prints."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [STAGEWISE, "serve", "--port", "0", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        line = self.proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+))/\S*", line)
        if not found:
            self.stop(signal.SIGKILL)
            raise AssertionError(f"no address printed: {line!r}")
        self.printed, self.url, self.port = found.group(0), found.group(1), int(found.group(2))
        assert self.port != 0
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/api/queries", timeout=2)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rest = self.proc.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest = self.proc.communicate()[1]
        return self.proc.returncode, rest


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_a_clean_stop_on_every_signal_leaves_every_label_in_the_database_file(tmp_path, sig):
    db = tmp_path / "labels.sqlite"
    server = Serving([*_collection(tmp_path), "--db", str(db)])
    acknowledged = {}
    try:
        with httpx.Client(base_url=server.url) as client:
            for n in range(12):
                qid, docid, label = f"q{n % 3}", f"d{n % 8}", 3 - n % 4
                answer = client.put(f"/api/labels/{qid}/{docid}", json={"label": label})
                assert answer.status_code == 200, answer.text
                acknowledged[(qid, docid)] = label
    finally:
        code, stderr = server.stop(sig)
    assert code == 0 and "Traceback" not in stderr, stderr
    assert "stopped" in stderr and str(db) in stderr
    # what a user backs up: the database file alone, without its -wal
    alone = tmp_path / "copy" / "labels.sqlite"
    alone.parent.mkdir()
    shutil.copyfile(db, alone)
    copy = sqlite3.connect(f"file:{alone}?immutable=1", uri=True)
    stored = {(q, d): lab for q, d, lab in copy.execute("SELECT qid, docid, label FROM labels")}
    assert copy.execute("SELECT COUNT(*) FROM history").fetchone()[0] == len(range(12))
    copy.close()
    for pair, label in acknowledged.items():
        assert stored[pair] == label
    assert not (tmp_path / "labels.sqlite.lock").exists()


def test_a_second_server_on_one_database_is_refused_with_the_first_ones_address(tmp_path):
    args = [*_collection(tmp_path), "--db", str(tmp_path / "labels.sqlite")]
    first = Serving(args)
    try:
        before = (tmp_path / "labels.sqlite").read_bytes()
        second = subprocess.run([STAGEWISE, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
        assert first.url in second.stderr and str(first.proc.pid) in second.stderr
        assert (tmp_path / "labels.sqlite").read_bytes() == before
        assert httpx.put(first.url + "/api/labels/q0/d1", json={"label": 2}).status_code == 200  # still serving
    finally:
        first.stop(signal.SIGKILL)  # the lock goes with the process, however it ends
    again = Serving(args)
    try:
        assert httpx.get(again.url + "/api/queries/q0").status_code == 200
    finally:
        again.stop()


@pytest.mark.parametrize(
    "token",
    [
        "abcdefgh;ij",
        "abcd efgh",
        "abcdefgh\t",
        "pässwörd12",
        "пароль-пароль",
        "abc\x01defghi",
        'abc"defghi',
        "abc,defghi",
    ],
)
def test_a_token_that_cannot_travel_in_a_header_is_refused_at_start(token):
    done = subprocess.run([STAGEWISE, "serve", "--playground", "--token", token], capture_output=True, timeout=60)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and stderr.count("\n") == 1 and "--token" in stderr, stderr


def test_a_token_with_url_characters_works_from_the_printed_address(tmp_path):
    token = "a+b&c#d%e=f?g/h"
    server = Serving([*_collection(tmp_path), "--db", str(tmp_path / "l.sqlite"), "--token", token])
    try:
        with httpx.Client() as client:
            assert client.get(server.printed).status_code == 200  # the address as printed, cookie set
            assert client.get(server.url + "/api/queries").status_code == 200  # by the cookie alone
        assert httpx.get(server.url + "/api/queries").status_code == 401
    finally:
        server.stop()


def test_a_half_sent_request_is_closed(tmp_path):
    from stagewise.cli.serve_cmd import REQUEST_READ_TIMEOUT

    server = Serving(["--playground"])
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as half:
            half.sendall(b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            half.settimeout(REQUEST_READ_TIMEOUT + 10)
            started = time.monotonic()
            assert half.recv(4096) == b""  # closed by the server, no answer
            assert time.monotonic() - started < REQUEST_READ_TIMEOUT + 5
        with httpx.Client(base_url=server.url) as client:  # a whole request on a kept-alive connection is served
            assert client.get("/api/playground").status_code == 200
            assert client.get("/api/playground").status_code == 200
    finally:
        server.stop()


def test_labels_export_says_what_it_wrote(tmp_path):
    from stagewise.store import LabelStore

    db = tmp_path / "labels.sqlite"
    LabelStore(db, {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}).close()
    for name, kind in (("out.qrels", "TREC"), ("out.jsonl", "JSONL")):
        out = tmp_path / name
        done = subprocess.run(
            [STAGEWISE, "labels", "export", "--db", str(db), "-o", str(out)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.strip() == f"wrote {out} (3 labels of 2 queries, {kind}{' qrels' if kind == 'TREC' else ''})"
        assert out.stat().st_size > 0


def test_lock_file_names_a_live_server_only_while_it_runs(tmp_path):
    from stagewise.store.lock import WriterLock, lock_path

    db = tmp_path / "labels.sqlite"
    lock = WriterLock(db)
    lock.acquire()
    lock.write("http://127.0.0.1:1/queries")
    assert b"127.0.0.1:1" in lock_path(db).read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", f"from stagewise.store.lock import WriterLock; WriterLock({str(db)!r}).acquire()"],
        capture_output=True, text=True, env={**os.environ},
    )  # fmt: skip
    assert child.returncode != 0 and "http://127.0.0.1:1/queries" in child.stderr
    lock.release()
    assert not lock_path(db).exists()
