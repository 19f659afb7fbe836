"""Where JSON went wrong, for the readers' error messages."""

from __future__ import annotations

__all__ = ["deep_line"]


def deep_line(text: str, limit: int = 500) -> int:
    """The line where ``text``'s brackets first nest ``limit`` deep (outside strings): where to point a reader
    at JSON nested too deeply to parse (the parser's RecursionError says nothing of where).

    >>> deep_line('{"a": 1,\\n "b": [[[1]]]}', limit=3)
    2
    """
    depth, line, in_string, escaped = 0, 1, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        elif in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth >= limit:
                return line
        elif ch in "]}":
            depth -= 1
    return 1
