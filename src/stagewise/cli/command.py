"""The click command class every subcommand is built with: what the command line shares beyond the options.

Help text is shown as written (rich markup would eat ``[dask]``, RST's double backquotes would show as typed),
types read plainly (no ``<bool>`` after a flag, ``<str>`` for a repeatable option), an old short flag whose
letter now means one thing across the commands is still taken with a note, and Ctrl-C says what became of the
output.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import click
import typer
import typer.core

# One meaning per short flag across the commands: -q per query, -m metric, -k results per query, -c correction.
# These old spellings meant something else in one command; they keep working there, with a note.
DEPRECATED_SHORT: dict[str, dict[str, str]] = {
    "fuse": {"-m": "--method"},
    "serve": {"-q": "--qrels"},
    "rag": {"-k": "--context-k", "-c": "--correct"},
    "report": {"-k": "--context-k"},
}

_MARKUP = re.compile(r"\[(?=[a-zA-Z#/@])")  # what rich would read as the start of a markup tag
_RST_LITERAL = re.compile(r"``(.+?)``")
_LIST_TYPE = re.compile(r"<list\[(.+)\]>")

# "{names:stagewise.fusion.methods:METHODS}" in a help text: the registry's canonical names, filled in only when the
# help is shown, so that a registry's module (and numpy behind it) is imported for `--help` of that command alone.
_NAMES = re.compile(r"\{names:([\w.]+):(\w+)\}")

INTERRUPTED = "stagewise: interrupted; no output file was left half-written"


def plain_help(text: str | None) -> str | None:
    """Help text as written: RST literals (``x``) as 'x', and brackets kept from rich's markup."""
    if not text:
        return text
    return _MARKUP.sub(r"\\[", _RST_LITERAL.sub(r"'\1'", text))


def undeprecated(command: str, args: list[str]) -> list[str]:
    """``args`` with each old short flag of ``command`` (:data:`DEPRECATED_SHORT`) spelt long, a note on
    stderr for each; a value glued to the flag (``-k5``) is kept."""
    old = DEPRECATED_SHORT.get(command)
    if not old:
        return args
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        flag = arg[:2]
        if flag in old and not arg.startswith("--"):
            typer.echo(f"stagewise: {flag} for {old[flag]} is deprecated; use {old[flag]}", err=True)
            out += [old[flag]] + ([arg[2:]] if len(arg) > 2 else [])
        else:
            out.append(arg)
    return out


def registry(module: str, attr: str) -> Any:
    """The registry ``attr`` of ``module``, imported now (a command's registries load when it runs or shows help)."""
    return getattr(importlib.import_module(module), attr)


def expand_names(text: str | None) -> str | None:
    """``text`` with each ``{names:MODULE:REGISTRY}`` replaced by that registry's canonical names, comma-separated
    (a :class:`stagewise.spec.Registry`'s ``names()``, or a mapping's keys): help generated from the registry, never
    a hand-kept copy of it.

    >>> expand_names("one of {names:stagewise.report:FORMATS}.").startswith("one of ")
    True
    """
    if not text or "{names:" not in text:
        return text

    def names(match: re.Match[str]) -> str:
        found = registry(match.group(1), match.group(2))
        return ", ".join(found.names() if hasattr(found, "names") else found)

    return _NAMES.sub(names, text)


class RegistryChoice:
    """A command-line choice checked against a registry when the command runs (not at start-up): the value is
    given back as typed, and an unknown one raises the registry's own error, which lists its names (``main``
    prints it as one line and exits 2, as for any :class:`stagewise.errors.StagewiseError`).

    Use it as ``typer.Option(..., parser=RegistryChoice("stagewise.stats.paired", "TESTS"))``.
    """

    def __init__(self, module: str, attr: str) -> None:
        self.module, self.attr = module, attr
        self.__name__ = "choice"  # typer names the parameter's type after its parser

    def __call__(self, value: Any) -> Any:
        if value is not None:
            registry(self.module, self.attr).lookup(str(value))
        return value


_READABLE: dict[type, type] = {}


def _readable(param: click.Parameter) -> None:
    """Give ``param`` a class that shows its type plainly: nothing after a flag, ``<str>`` for a list."""
    base = type(param)
    if base not in _READABLE:

        def display_type_rich(self: Any, ctx: click.Context) -> str | None:
            if getattr(self, "is_flag", False):
                return None
            shown = base.display_type_rich(self, ctx)  # type: ignore[attr-defined]
            return _LIST_TYPE.sub(r"<\1>", shown) if shown else shown

        _READABLE[base] = type(base.__name__, (base,), {"display_type_rich": display_type_rich})
    param.__class__ = _READABLE[base]


class StagewiseCommand(typer.core.TyperCommand):
    """A typer command with the shared behaviour above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = plain_help(self.help)
        old = DEPRECATED_SHORT.get(self.name or "", {})
        for param in self.params:
            # the old letter stays declared (a typer app built on the function alone still takes it); here it is
            # spelt long before parsing (parse_args), so help no longer offers it and the letter is free
            param.opts = [opt for opt in param.opts if opt not in old]
            if hasattr(param, "display_type_rich"):
                _readable(param)
            if getattr(param, "help", None):
                param.help = plain_help(param.help)  # type: ignore[attr-defined]

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.help = expand_names(self.help)
        for param in self.params:
            if getattr(param, "help", None):
                param.help = expand_names(param.help)  # type: ignore[attr-defined]
        super().format_help(ctx, formatter)

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        option = super().get_help_option(ctx)
        if option is not None:
            _readable(option)
        return option

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, undeprecated(self.name or "", args))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # the one place the CLI catches it: every file is written atomically (a temporary file renamed at
            # the end, removed on the way out), so what was being written is gone, not half there
            typer.echo(INTERRUPTED, err=True)
            raise typer.Exit(130) from None
