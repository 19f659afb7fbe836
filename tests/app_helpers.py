"""A ``stagewise serve`` process on a free 127.0.0.1 port for a test, and Chromium pages that may reach it only.

The server runs as a subprocess (as a user runs it) and is killed in the fixture's teardown, so no test leaves
a server behind; ``kill(hard=True)`` sends SIGKILL, for the crash tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.browser_helpers import browser as browser_on

SRC = Path(__file__).resolve().parents[1] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``stagewise`` server process on a free port of 127.0.0.1, started as a user starts it (``command``, then
    ``--port``, then ``args``), ready once ``probe`` answers; ``kill(hard=True)`` sends SIGKILL (crash tests)."""

    def __init__(self, args: list[str], *, command: tuple[str, ...] = ("serve",), probe: str = "/api/playground",
                 port: int | None = None) -> None:  # fmt: skip
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        what = f"stagewise {' '.join(command[:2])}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stagewise", *command, "--port", str(self.port), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{what} exited: {self.proc.stderr.read().decode()}")
            try:
                urllib.request.urlopen(self.url + probe, timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(f"{what} did not answer within 60 s") from None
                time.sleep(0.1)

    def kill(self, hard: bool = False) -> str:
        """Stop the server (SIGTERM, or SIGKILL with ``hard``); returns what it wrote on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        err = ""
        if self.proc.stderr and not self.proc.stderr.closed:
            err = self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()
        return err


@contextlib.contextmanager
def serving(args: list[str]) -> Iterator[Server]:
    server = Server(args)
    try:
        yield server
    finally:
        server.kill()


@contextlib.contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A Chromium context whose requests may go to 127.0.0.1 only (everything else is aborted and recorded)."""
    with browser_on(lambda url: url.startswith("http://127.0.0.1:"), width, height) as context:
        yield context


def write_collection(folder: Path, n_queries: int, depth: int, n_runs: int = 2, seed: int = 7) -> tuple[str, list[str]]:
    """A synthetic qrels file and ``n_runs`` runs of ``depth`` results per query (for load tests)."""
    import random

    rng = random.Random(seed)
    qrels, runs = folder / "qrels.txt", []
    with open(qrels, "w") as fh:
        for q in range(n_queries):
            for d in rng.sample(range(depth * 2), depth // 5):
                fh.write(f"q{q} 0 d{d} {rng.randint(0, 3)}\n")
    for r in range(n_runs):
        path = folder / f"run{r}.txt"
        with open(path, "w") as fh:
            for q in range(n_queries):
                for rank, d in enumerate(rng.sample(range(depth * 2), depth), start=1):
                    fh.write(f"q{q} Q0 d{d} {rank} {1000 - rank / depth:.6f} run{r}\n")
        runs.append(str(path))
    return str(qrels), runs


def load(
    url: str,
    pairs: list[tuple[str, str]],
    clients: int = 20,
    total: int = 2000,
    seed: int = 1,
    stop_after: float | None = None,
) -> dict[str, Any]:
    """``clients`` threads send ``total`` relabels (PUT or DELETE) over keep-alive connections.

    Returns the latencies (seconds) and every request each client saw answered 200: (qid, docid, label).
    With ``stop_after`` (seconds) the clients stop sending then (the server is being killed).
    """
    import http.client
    import json
    import random
    import threading
    import urllib.parse

    host, port = urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port
    latencies: list[float] = []
    done: list[tuple[str, str, int | None]] = []
    failed: list[str] = []
    lock = threading.Lock()
    start = time.monotonic()

    def client(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        conn = http.client.HTTPConnection(host, port, timeout=60)
        for _ in range(total // clients):
            if stop_after is not None and time.monotonic() - start > stop_after:
                break
            qid, doc = rng.choice(pairs)
            label = rng.choice([0, 1, 2, 3, None])
            path = f"/api/labels/{urllib.parse.quote(qid)}/{urllib.parse.quote(doc)}"
            t0 = time.perf_counter()
            try:
                if label is None:
                    conn.request("DELETE", path)
                else:
                    conn.request("PUT", path, json.dumps({"label": label}), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException) as err:
                with lock:
                    failed.append(str(err))
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=60)
                continue
            took = time.perf_counter() - t0
            with lock:
                if resp.status == 200:
                    latencies.append(took)
                    done.append((qid, doc, label))
                else:
                    failed.append(f"{resp.status} {body[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"latencies": latencies, "done": done, "failed": failed, "seconds": time.monotonic() - start}


def check_consistent(db: str, initial: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The database opens, passes SQLite's integrity check, and its labels equal the initial labels with the
    history replayed in order (so no change was lost or half-written). Returns the history."""
    from stagewise.store import LabelStore

    store = LabelStore(db)
    try:
        assert store.integrity() == "ok"
        history = store.history()
        replay = {q: dict(d) for q, d in initial.items()}
        for h in history:
            if h["new"] is None:
                replay.get(h["qid"], {}).pop(h["docid"], None)
            else:
                replay.setdefault(h["qid"], {})[h["docid"]] = h["new"]
        assert store.labels() == {q: d for q, d in replay.items() if d}
        return history
    finally:
        store.close()
