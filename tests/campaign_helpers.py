"""A ``stagewise campaign serve`` process on 127.0.0.1 for a test (started as a user starts it, killed in the
teardown; ``kill(hard=True)`` sends SIGKILL for the crash tests), and a campaign made by the command line."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.app_helpers import SRC, Server


class CampaignServer(Server):
    def __init__(self, store: Path, port: int | None = None) -> None:
        super().__init__([], command=("campaign", "serve", str(store)), probe="/", port=port)


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
