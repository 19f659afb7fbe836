"""Which addresses count as this machine only: the one rule the CLI (no token needed) and the server (no token
given: answer only to these names) share."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """``localhost``, or an IPv4/IPv6 loopback address (``127.0.0.2``, ``::1``; brackets allowed).

    >>> is_loopback("127.0.0.2"), is_loopback("[::1]"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, True, False)
    """
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
