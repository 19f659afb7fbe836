"""One exception family for everything a user can get wrong.

The CLI catches :class:`StagewiseError`, prints its message on one line and exits with code 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ConventionError", "InputError", "MetricError", "StagewiseError", "parameter_error"]


class StagewiseError(Exception):
    """Base class of every error that is the input's fault, not the library's."""


class InputError(StagewiseError, ValueError):
    """A malformed input file or object.

    The message names the source, the line (1-based, when known) and the form that was expected, so a user
    can open the file at that line and fix it.
    """

    def __init__(
        self,
        source: str | Path | None,
        problem: str,
        *,
        line: int | None = None,
        expected: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.source = str(source) if source is not None else None
        self.line = line
        self.problem = problem
        self.expected = expected
        self.hint = hint
        where = self.source or "<input>"
        if line is not None:
            where = f"{where}:{line}"
        message = f"{where}: {problem}"
        if expected:
            message += f"; expected {expected}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


class MetricError(StagewiseError, ValueError):
    """An unknown metric, or a metric with a bad parameter."""


class ConventionError(StagewiseError, ValueError):
    """An unknown or contradictory convention option."""


def parameter_error(param: str, owner: str, expected: str, got: object) -> ConventionError:
    """The one template for a bad parameter: "The 'k' parameter of ndcg must be an int >= 1. Got 0 instead."."""
    return ConventionError(f"The {param!r} parameter of {owner} must be {expected}. Got {got!r} instead.")
