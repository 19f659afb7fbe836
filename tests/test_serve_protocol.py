"""The HTTP protocol ``stagewise serve`` runs (issue 26: httptools, uvicorn's C parser, when installed; h11
otherwise), both with the same guards: a request not read in full within the deadline is closed, whether it
stalls in its head, in its body, or on a kept-alive connection's second request; a head larger than
``MAX_INCOMPLETE_EVENT`` bytes is refused; whole requests, pipelined ones included, are answered.

Each test serves the real app (the playground) in this process, on a free 127.0.0.1 port, with the deadline
shortened to a fraction of a second, through each protocol."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
uvicorn = pytest.importorskip("uvicorn")

from stagewise.cli import serve_cmd  # noqa: E402

DEADLINE = 0.5  # seconds, in place of REQUEST_READ_TIMEOUT's 10


def _protocols() -> list:
    """(protocol, event loop) as a user without and with the app extra's httptools and uvloop runs them."""
    kinds = [pytest.param((serve_cmd._timed_h11, "asyncio"), id="h11")]
    try:
        import httptools  # noqa: F401
    except ImportError:
        kinds.append(pytest.param(None, id="httptools", marks=pytest.mark.skip(reason="httptools not installed")))
    else:
        kinds.append(pytest.param((serve_cmd._timed_httptools, "auto"), id="httptools"))
    return kinds


@contextlib.contextmanager
def _served(protocol, loop: str) -> Iterator[int]:
    """The playground app behind ``protocol`` on ``loop`` in a thread of this process; yields the port."""
    from stagewise.app.server import create_app

    sock = serve_cmd._bind("127.0.0.1", 0)
    config = uvicorn.Config(
        create_app(None),
        log_level="warning",
        http=protocol(),
        loop=loop,
        timeout_keep_alive=30,  # longer than the deadline: what closes a stalled request here is the deadline
        h11_max_incomplete_event_size=serve_cmd.MAX_INCOMPLETE_EVENT,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(params=_protocols())
def port(request, monkeypatch) -> Iterator[int]:
    monkeypatch.setattr(serve_cmd, "REQUEST_READ_TIMEOUT", DEADLINE)
    with _served(*request.param) as served:
        yield served


def _closed_within(conn: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``conn`` having sent nothing more; fails when it answers or waits longer."""
    conn.settimeout(seconds)
    started = time.monotonic()
    assert conn.recv(4096) == b"", "the server answered a request it had not read in full"
    return time.monotonic() - started


def _responses(conn: socket.socket, count: int) -> list[bytes]:
    """``count`` whole responses (the app's JSON has a Content-Length), however they arrive in reads."""
    conn.settimeout(5)
    data, out = b"", []
    while len(out) < count:
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, data = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        while len(data) < length:
            data += conn.recv(65536)
        out.append(head + b"\r\n\r\n" + data[:length])
        data = data[length:]
    assert data == b"", "more bytes than the responses asked for"
    return out


def _response(conn: socket.socket) -> bytes:
    return _responses(conn, 1)[0]


GET = b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_connection_that_sends_nothing_is_closed_at_the_deadline(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        assert DEADLINE * 0.8 < _closed_within(conn, DEADLINE + 5) < DEADLINE + 2


def test_a_head_that_stops_half_way_is_closed_at_the_deadline(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert _closed_within(conn, DEADLINE + 5) < DEADLINE + 2


def test_a_head_dripped_a_byte_at_a_time_is_closed_at_the_deadline_however_busy(port):
    """Every byte arriving does not push the deadline back: it runs from the request's first byte."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        started = time.monotonic()
        with contextlib.suppress(OSError):  # the server closes while bytes are still being sent
            while time.monotonic() - started < DEADLINE + 3:
                conn.sendall(b"a")
                time.sleep(DEADLINE / 10)
        assert time.monotonic() - started < DEADLINE + 2.5
        conn.settimeout(1)
        with contextlib.suppress(ConnectionResetError):
            assert conn.recv(4096) == b""


def test_a_body_that_stops_half_way_is_closed_at_the_deadline(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(
            # a route that reads its body before anything else (the RAG evidence mark)
            b"PUT /api/rag/s/evidence/p HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 20\r\n\r\n{"label"'
        )
        assert _closed_within(conn, DEADLINE + 5) < DEADLINE + 2


def test_a_kept_alive_connection_is_served_then_its_stalled_second_request_closed(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        for _ in range(3):  # slower than the deadline in all: each request has a deadline of its own
            conn.sendall(GET)
            assert _response(conn).startswith(b"HTTP/1.1 200")
            time.sleep(DEADLINE / 2)
        conn.sendall(b"GET /api/playground HTTP/1.1\r\nHo")
        assert _closed_within(conn, DEADLINE + 5) < DEADLINE + 2


def test_pipelined_requests_are_all_answered(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(GET * 3)
        assert [r[:15] for r in _responses(conn, 3)] == [b"HTTP/1.1 200 OK"] * 3


def test_a_head_larger_than_the_limit_is_refused_with_400(port):
    # sent at once and then nothing more: the server reads it all before it answers and closes (data still
    # unread at its close would make the kernel reset the connection, and the answer would be lost)
    lines = b"".join(
        b"X-Big-%d: " % i + b"a" * 990 + b"\r\n" for i in range(serve_cmd.MAX_INCOMPLETE_EVENT // 1000 + 1)
    )
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\n" + lines)
        conn.settimeout(5)
        answer = conn.recv(4096)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:100]


def test_a_head_just_under_the_limit_is_served(port):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        padding = b"".join(
            b"X-Pad-%d: " % i + b"a" * 900 + b"\r\n" for i in range(serve_cmd.MAX_INCOMPLETE_EVENT // 2000)
        )
        conn.sendall(b"GET /api/playground HTTP/1.1\r\nHost: 127.0.0.1\r\n" + padding + b"\r\n")
        assert _response(conn).startswith(b"HTTP/1.1 200")


def test_the_server_runs_httptools_when_it_is_installed():
    pytest.importorskip("httptools")
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(serve_cmd._timed_protocol(), HttpToolsProtocol)
