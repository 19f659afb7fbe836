"""The CLI's promise for expected failures, asserted one way for every test: exit 2, no traceback, one
``stagewise: error:`` line on stderr holding what the test names."""

from __future__ import annotations


def assert_clean_failure(result, *must_contain: str, prefix: str = "stagewise: error:") -> str:
    """``result`` is a typer ``CliRunner`` result; returns the error line."""
    output = (result.stdout or "") + (result.stderr or "")
    assert "Traceback" not in output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, output)
    lines = result.stderr.strip("\n").split("\n")
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prefix), lines[0]
    for text in must_contain:
        assert text in lines[0], (text, lines[0])
    return lines[0]
