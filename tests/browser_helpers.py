"""Opening a report from disk in Debian's headless Chromium through Playwright, with the network blocked.

Playwright never downloads a browser here: it drives ``/usr/bin/chromium`` (``make test`` installs Debian's
package when it is missing and the user is root). Every request that is not the report file itself is aborted
and recorded, so a test can assert that nothing left the page.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("STAGEWISE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def missing() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (make test installs it)"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM} (make test installs Debian's chromium when run as root)"
    return None


class Opened:
    """A page showing a report, with what the browser said: console errors, page errors, blocked requests."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.blocked: list[str] = []


@contextlib.contextmanager
def browser(
    allowed: Callable[[str], bool], width: int = 1280, height: int = 900, offline: bool = False
) -> Iterator[Any]:
    """A fresh headless Chromium context in which only URLs that ``allowed`` accepts load; every other request is
    aborted and recorded in ``context.blocked``."""
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
                offline=offline,
            )
            blocked: list[str] = []

            def route(r: Any) -> None:
                if allowed(r.request.url):
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
    """``url`` in the context's first page, recording console and page errors (and the context's blocked
    requests)."""
    page = context.pages[0] if context.pages else context.new_page()
    page.set_default_timeout(10_000)  # a missing element fails in seconds, not half a minute
    opened = Opened(page)
    opened.blocked = context.blocked
    page.on("console", lambda m: opened.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
    page.goto(url, wait_until="load")
    return opened


@contextlib.contextmanager
def open_report(path: str | os.PathLike, width: int = 1280, height: int = 900) -> Iterator[Opened]:
    """The report file opened from disk with the network off: only the file itself may load."""
    url = Path(path).resolve().as_uri()
    with browser(lambda requested: requested == url, width, height, offline=True) as context:
        yield open_page(context, url)
