"""A ``stagewise campaign serve`` process on 127.0.0.1 for a test (started as a user starts it, killed in the
teardown; ``kill(hard=True)`` sends SIGKILL for the crash tests), and a campaign made by the command line."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.app_helpers import SRC, free_port


class CampaignServer:
    def __init__(self, store: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stagewise", "campaign", "serve", str(store), "--port", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stagewise campaign serve exited: {self.proc.stderr.read().decode()}")
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError("stagewise campaign serve did not answer within 60 s") from None
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
        if self.proc.stderr:
            err = self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()
        return err


@contextlib.contextmanager
def campaign_serving(store: Path, port: int | None = None) -> Iterator[CampaignServer]:
    server = CampaignServer(store, port)
    try:
        yield server
    finally:
        server.kill()


def create_by_cli(args: list[str]) -> dict[str, str]:
    """Run ``stagewise campaign create ARGS`` as a process; returns ``{assessor or 'admin': address path}``
    read from what it printed (each line ``NAME  http://127.0.0.1:PORT/PATH``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "stagewise", "campaign", "create", *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"stagewise campaign create failed: {done.stderr}")
    out = {}
    for line in done.stdout.splitlines():
        name, url = line.split()
        out[name] = re.sub(r"^http://127\.0\.0\.1:\d+", "", url)
    return out
