"""Ids in URLs: every query, document, RAG sample and passage id travels as one safe path segment.

A browser or proxy rewrites paths: ``%2F`` becomes a separator, ``.`` and ``..`` segments are removed, ``?`` and
``#`` end the path. So an id is put in a URL as itself only when it is made of ``A-Z a-z 0-9 . _ -`` and does not
start with a dot (nothing rewrites that); any other id, the empty one included, is ``~`` followed by the
base64url of its UTF-8 bytes, without padding (``~`` and that alphabet are left alone everywhere). The server
decodes with :func:`from_segment`; the pages never build a segment themselves: the data they receive carries
each id's segment (``key``), made by :func:`to_segment`, so there is one rule and it lives here.

>>> to_segment("q1"), to_segment("a/b"), to_segment(".."), to_segment("")
('q1', '~YS9i', '~Li4', '~')
>>> all(from_segment(to_segment(s)) == s for s in ["q1", "a/b", "..", "", "~x", "é ?#%2F", "\\ud800"])
True
"""

from __future__ import annotations

import base64
import binascii
import re

__all__ = ["from_segment", "to_segment"]

_PLAIN = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_MARK = "~"


def _utf8(text: str) -> bytes:
    # surrogatepass: an id read from JSON may hold a lone surrogate, and it must still round-trip
    return text.encode("utf-8", "surrogatepass")


def to_segment(value: str) -> str:
    """``value`` as one URL path segment that no browser or proxy rewrites (see the module's docstring)."""
    if _PLAIN.fullmatch(value):
        return value
    return _MARK + base64.urlsafe_b64encode(_utf8(value)).decode("ascii").rstrip("=")


def from_segment(segment: str) -> str | None:
    """The id ``segment`` stands for, or None when it starts with ``~`` but is not a valid encoding.

    A segment without ``~`` is the id itself, so the plain URLs of earlier versions (``/queries/q1``) still work."""
    if not segment.startswith(_MARK):
        return segment
    body = segment[len(_MARK) :]
    if not re.fullmatch(r"[A-Za-z0-9_-]*", body) or len(body) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        value = raw.decode("utf-8", "surrogatepass")
    except (binascii.Error, UnicodeDecodeError):
        return None
    # non-canonical trailing bits would give one id two spellings; a plain id spelt encoded is accepted
    return value if base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=") == body else None
