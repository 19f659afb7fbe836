"""Request bodies, read the one way both web apps (the label server and the campaign server) accept them: at
most :data:`MAX_BODY` bytes, UTF-8 JSON with no NaN or Infinity, or a :class:`Rejected` with the 4xx status and
a message naming what to send. Light: no import of the RAG stack, so either server can use it."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_BODY", "Rejected", "parse_body", "read_json_body"]

#: The largest body either server reads, in bytes (a label, an evidence mark or a judgement is a few dozen).
MAX_BODY = 4096


class Rejected(Exception):
    """A request refused: its status and the message the client gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(raw: bytes, shape: str) -> Any:
    """The body as JSON, or a 400 naming what is wrong: not UTF-8 (json.loads would guess UTF-16 or 32 from the
    bytes), NaN or Infinity (Python's extensions, not JSON), or nested too deep for the parser."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant) if raw else None
    except UnicodeDecodeError:
        raise Rejected(400, f"the body is not valid JSON: it is not UTF-8 text; send {shape}") from None
    except RecursionError:
        raise Rejected(400, f"the body is not valid JSON here: it is nested too deeply to read; send {shape}") from None
    except ValueError:
        raise Rejected(400, f"the body is not valid JSON; send {shape}") from None


async def read_json_body(request: Any, shape: str) -> Any:
    """The request's body as JSON (``shape`` says what to send), read no further than :data:`MAX_BODY`."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise Rejected(413, f"body too large (at most {MAX_BODY} bytes)")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise Rejected(413, f"body too large (at most {MAX_BODY} bytes)")
    return parse_body(raw, shape)
