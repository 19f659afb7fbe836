"""A ``stagewise serve`` process on a free 127.0.0.1 port for a test, and Chromium pages that may reach it only.

The server runs as a subprocess (as a user runs it) and is killed in the fixture's teardown, so no test leaves
a server behind; ``kill(hard=True)`` sends SIGKILL, for the crash tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.browser_helpers import CHROMIUM, FLAGS, Opened

SRC = Path(__file__).resolve().parents[1] / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, args: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stagewise", "serve", "--port", str(self.port), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stagewise serve exited: {self.proc.stderr.read().decode()}")
            try:
                urllib.request.urlopen(self.url + "/api/playground", timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError("stagewise serve did not answer within 60 s") from None
                time.sleep(0.1)

    def kill(self, hard: bool = False) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


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
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="stagewise-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                viewport={"width": width, "height": height},
            )
            blocked: list[str] = []

            def route(r: Any) -> None:
                if r.request.url.startswith("http://127.0.0.1:"):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            context.blocked = blocked
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def open_page(context: Any, url: str) -> Opened:
    page = context.pages[0] if context.pages else context.new_page()
    page.set_default_timeout(10_000)
    opened = Opened(page)
    page.on("console", lambda m: opened.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
    page.goto(url, wait_until="load")
    return opened
