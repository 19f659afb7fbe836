"""The pages' style sheets and scripts as HTTP responses that a browser may keep and revalidate.

They are strings of this package, so they change only with it: each response carries an ``ETag`` (a hash of
its bytes) and ``Cache-Control: no-cache``, which lets the browser keep the file and ask again with
``If-None-Match``; the same bytes are then answered ``304 Not Modified`` without a body, and a server of a
newer version, whose files differ, is never shadowed by a stale copy.
"""

from __future__ import annotations

import functools
import hashlib

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["static_response"]


@functools.cache
def _etag(body: str) -> str:
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'


def static_response(request: Request, body: str, media_type: str) -> Response:
    """``body`` as ``media_type``, or ``304`` when the request's ``If-None-Match`` names its ETag."""
    etag = _etag(body)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    given = request.headers.get("if-none-match", "")
    if etag in (tag.strip().removeprefix("W/") for tag in given.split(",")) or given.strip() == "*":
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)
