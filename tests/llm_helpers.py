"""A loopback OpenAI-compatible chat server for the endpoint and LLM judge tests, with scripted misbehaviour.

Each request names its case with ``case:NAME`` somewhere in its messages; the server answers the n-th request of
a case with the n-th action of that case's script (the last action repeats). Actions:

- ``ok(content)``: HTTP 200, an OpenAI chat completion with that content and ``usage`` (prompt tokens: the
  request's characters / 10, completion tokens: the content's words), after ``delay`` seconds when given;
- ``status(code, headers, body)``: that status;
- ``malformed()``: HTTP 200 whose body is not JSON;
- ``truncated()``: HTTP 200 announcing more bytes than it sends, then closing;
- ``reset()``: the connection closed with a TCP reset, no response;
- ``noschema()``: HTTP 200 JSON without ``choices``.

The server is real (``http.server`` on 127.0.0.1, port 0, one thread per connection); it records every request
(case, JSON body, headers) and the most requests it had in flight at once.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_CASE = re.compile(r"case:([\w-]+)")


@dataclass(frozen=True)
class Action:
    kind: str
    content: str = ""
    delay: float = 0.0
    code: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""


def ok(content: str = '{"label": "supported", "rationale": "said so"}', delay: float = 0.0) -> Action:
    return Action("ok", content=content, delay=delay)


def status(code: int, headers: dict[str, str] | None = None, body: str = "") -> Action:
    return Action("status", code=code, headers=tuple((headers or {}).items()), body=body)


def malformed() -> Action:
    return Action("malformed")


def truncated() -> Action:
    return Action("truncated")


def reset() -> Action:
    return Action("reset")


def noschema() -> Action:
    return Action("noschema")


@dataclass
class Loopback:
    """The running server: ``url`` (the ``/v1`` base), ``scripts`` (case -> actions, editable while running),
    ``requests`` (case, body, headers), per-case ``counts`` and ``max_in_flight``."""

    url: str = ""
    scripts: dict[str, list[Action]] = field(default_factory=dict)
    default: list[Action] = field(default_factory=lambda: [ok()])
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_action(self, case: str, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self.lock:
            self.requests.append((case, body, headers))
            n = self.counts[case]
            self.counts[case] += 1
            script = self.scripts.get(case, self.default)
            return script[min(n, len(script) - 1)]

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1


def completion(content: str, prompt_tokens: int) -> bytes:
    body = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "model": "loopback",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(content.split()),
            "total_tokens": prompt_tokens + len(content.split()),
        },
    }
    return json.dumps(body).encode("utf-8")


def _handler(state: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet: the tests assert on state instead
            pass

        def _send(self, code: int, payload: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "no such route"}}')
                return
            text = " ".join(m["content"] for m in body["messages"])
            found = _CASE.search(text)
            action = state.next_action(found.group(1) if found else "", body, dict(self.headers))
            state.enter()
            try:
                self._act(action, len(raw) // 10)
            finally:
                state.leave()

        def _act(self, action: Action, prompt_tokens: int) -> None:
            if action.delay:
                time.sleep(action.delay)
            if action.kind == "ok":
                self._send(200, completion(action.content, prompt_tokens))
            elif action.kind == "status":
                self._send(action.code, action.body.encode("utf-8"), action.headers)
            elif action.kind == "malformed":
                self._send(200, b'{"choices": [{"message": {"content": "x"')
            elif action.kind == "noschema":
                self._send(200, b'{"object": "chat.completion", "result": "supported"}')
            elif action.kind == "truncated":
                payload = completion('{"label": "supported"}', prompt_tokens)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload[: len(payload) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif action.kind == "reset":
                self.close_connection = True
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a reset or a client that timed out and left: expected here


@contextmanager
def loopback(scripts: dict[str, list[Action]] | None = None) -> Iterator[Loopback]:
    """Serve on 127.0.0.1 (a free port) until the block ends."""
    state = Loopback(scripts=dict(scripts or {}))
    server = _Server(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
