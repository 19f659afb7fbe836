"""Every number option of every command, given something that is no number (a typo: `--alpha 0,05`, `--k1 l.2`),
is one line naming the option and exit 2: never a traceback, never typer's box. Walks the commands, so an
option added later is checked too."""

from __future__ import annotations

import types
import typing

import pytest
import typer
from typer.testing import CliRunner

from stagewise.cli import app

# whose number options are owned elsewhere today and not yet on the shared parsers (reported, not skipped
# silently: the test lists them)
NOT_YET: set[str] = set()


def _commands() -> list[tuple[list[str], typing.Any]]:
    root = typer.main.get_command(app)
    out = []

    def walk(path: list[str], command: typing.Any) -> None:
        if hasattr(command, "commands"):  # a group
            for name, sub in command.commands.items():
                walk([*path, name], sub)
        else:
            out.append((path, command))

    walk([], root)
    return out


def _number_type(param: typing.Any) -> str | None:
    """'int' or 'float' for an option typed so (``int | None`` too), else None."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        annotation = kinds[0] if len(kinds) == 1 else None
    return annotation.__name__ if annotation in (int, float) else None


def _number_options() -> list[tuple[list[str], str, str]]:
    found = []
    for path, command in _commands():
        for param in command.params:
            kind = _number_type(param)
            if kind and param.param_type_name == "option" and not param.is_flag:
                found.append((path, max(param.opts, key=len), kind))
    return found


NUMBER_OPTIONS = _number_options()


def test_the_walk_finds_the_number_options() -> None:
    flags = {(tuple(path), flag) for path, flag, _ in NUMBER_OPTIONS}
    assert {(("compare",), "--alpha"), (("search",), "--k1"), (("campaign", "create"), "--overlap")} <= flags
    assert len(NUMBER_OPTIONS) > 60


@pytest.mark.parametrize(("path", "flag", "kind"), NUMBER_OPTIONS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_number_option_given_a_word_is_one_line(path: list[str], flag: str, kind: str) -> None:
    if path[0] in NOT_YET:
        pytest.skip(f"stagewise {' '.join(path)} is owned elsewhere today; its {flag} is typer's ({kind})")
    done = CliRunner().invoke(app, [*path, flag, "twelve"])
    assert done.exit_code == 2, done.output
    lines = done.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"stagewise: error: {flag} must be "), done.output
    assert lines[0].endswith("got twelve")
