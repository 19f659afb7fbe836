"""The click command class every subcommand is built with: what the command line shares beyond the options.

Help text is shown as written (rich markup would eat ``[dask]``, RST's double backquotes would show as typed),
types read plainly (no ``<bool>`` after a flag, ``<str>`` for a repeatable option), an old flag spelling (a
letter or a name that now means one thing across the commands) is still taken with a note, and Ctrl-C says what
became of the output.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from collections.abc import Callable
from typing import Any

import click
import typer
import typer.core

from stagewise.cli import INTERRUPTED  # the one message of a Ctrl-C, at start-up too (cli/__init__)

# One name per concept across the commands: -q per query, -m metric, -k results per query, -c correction, and
# --format the OUTPUT format (--input-format the format of what a command reads). Each old spelling, short or long,
# keeps working in the one command where it meant something else, with a one-line note on stderr: a command's
# entry maps the old flag to the new one. To rename a flag: declare the new spelling first in the command's
# typer.Option and keep the old ones after it (typer.Option("--input-format", "-f", "--format")), then add the
# old -> new pairs here; help then shows only the new spelling, and the old one is spelt new before parsing. An old
# flag may stand for a new flag with its value ("--json": "--format json"); it then takes no value of its own.
DEPRECATED_FLAGS: dict[str, dict[str, str]] = {
    "validate": {"--json": "--format json"},
    "fuse": {"-m": "--method", "--report-format": "--format"},
    "serve": {"-q": "--qrels"},
    "rag": {"-k": "--context-k", "-c": "--correct"},
    "report": {"-k": "--context-k", "--permutations": "--resamples"},
    "index": {"-f": "--input-format", "--format": "--input-format"},
    "encode": {"-f": "--input-format", "--format": "--input-format"},
    "search": {"-f": "--input-format", "--format": "--input-format"},
    "compare": {"--permutations": "--resamples"},
}
DEPRECATED_SHORT = DEPRECATED_FLAGS  # its former name, when the table held short flags only


def deprecation_note(old: str, new: str) -> str:
    """The one-line note for an old flag spelling: ``stagewise: -m for --method is deprecated; use --method``
    (``stagewise: --json is deprecated; use --format json`` for a flag that stands for a flag and its value)."""
    if " " in new:
        return f"stagewise: {old} is deprecated; use {new}"
    return f"stagewise: {old} for {new} is deprecated; use {new}"


_MARKUP = re.compile(r"\[(?=[a-zA-Z#/@])")  # what rich would read as the start of a markup tag
_RST_LITERAL = re.compile(r"``(.+?)``")
_LIST_TYPE = re.compile(r"<list\[(.+)\]>")

# "{names:stagewise.fusion.methods:METHODS}" in a help text: the registry's canonical names, filled in only when the
# help is shown, so that a registry's module (and numpy behind it) is imported for `--help` of that command alone.
# "{names:stagewise.report:FORMATS:EvalResult}": a third part narrows the registry (its names(kind)).
# "{entries:MODULE:REGISTRY}": each entry as "name (its help)", for a choice whose help says what each one does.
_NAMES = re.compile(r"\{(names|entries):([\w.]+):(\w+)(?::(\w+))?\}")


def plain_help(text: str | None) -> str | None:
    """Help text as written: RST literals (``x``) as 'x', and brackets kept from rich's markup."""
    if not text:
        return text
    return _MARKUP.sub(r"\\[", _RST_LITERAL.sub(r"'\1'", text))


def undeprecated(command: str, args: list[str]) -> list[str]:
    """``args`` with each old flag of ``command`` (:data:`DEPRECATED_FLAGS`) spelt new, a note on stderr for
    each: a short flag with its value glued (``-k5``) or apart, a long one as ``--old VALUE`` or ``--old=VALUE``.
    Everything after ``--`` is left as is.

    >>> undeprecated("index", ["c.jsonl", "--format=tsv", "-o", "out"])
    ['c.jsonl', '--input-format=tsv', '-o', 'out']
    """
    old = DEPRECATED_FLAGS.get(command)
    if not old:
        return args
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        if arg.startswith("--"):
            flag, eq, value = arg.partition("=")
            if flag in old:
                typer.echo(deprecation_note(flag, old[flag]), err=True)
                out += old[flag].split() if " " in old[flag] else [old[flag] + eq + value]
                continue
        elif arg[:2] in old:
            flag = arg[:2]
            typer.echo(deprecation_note(flag, old[flag]), err=True)
            out += [old[flag]] + ([arg[2:]] if len(arg) > 2 else [])
            continue
        out.append(arg)
    return out


def reflowed_help(func: Callable[..., Any]) -> str:
    """The command's docstring with each prose paragraph on one line, so the terminal wraps it at its own width
    (typer keeps single line breaks, which leaves ragged lines on a narrow terminal). A paragraph with an
    indented line or a list item (the examples) keeps its lines."""
    paragraphs = inspect.cleandoc(func.__doc__ or "").split("\n\n")
    kept = re.compile(r"^(\s|[-*] |\d+\. )")
    return "\n\n".join(
        p if any(kept.match(line) for line in p.splitlines()) else " ".join(x.strip() for x in p.splitlines())
        for p in paragraphs
    )


def registry(module: str, attr: str) -> Any:
    """The registry ``attr`` of ``module``, imported now (a command's registries load when it runs or shows help)."""
    return getattr(importlib.import_module(module), attr)


def expand_names(text: str | None) -> str | None:
    """``text`` with each ``{names:MODULE:REGISTRY}`` replaced by that registry's canonical names, comma-separated
    (a :class:`stagewise.spec.Registry`'s ``names()``, or a tuple's or mapping's items), and each
    ``{entries:MODULE:REGISTRY}`` by its entries as ``name (help)``: help generated from the registry, never a
    hand-kept copy of it.

    >>> expand_names("one of {names:stagewise.report:FORMATS:ValidationReport}.")
    'one of table, json.'
    >>> expand_names("{entries:stagewise.engines:ENGINES}").startswith("local (runs read whole into memory), ")
    True
    """
    if not text or ("{names:" not in text and "{entries:" not in text):
        return text

    def names(match: re.Match[str]) -> str:
        found = registry(match.group(2), match.group(3))
        narrowed = (match.group(4),) if match.group(4) else ()
        listed = found.names(*narrowed) if hasattr(found, "names") else list(found)
        if match.group(1) == "entries":
            listed = [f"{name} ({found[name].help})" for name in listed]
        return _MARKUP.sub(r"\\[", ", ".join(listed))  # as plain_help: brackets kept from rich's markup

    return _NAMES.sub(names, text)


class RegistryChoice:
    """A command-line choice checked against a registry when the command runs (not at start-up): the value is
    given back as typed, and an unknown one is the registry's own error, which lists its names, printed as one
    line with exit code 2 (as ``main`` does for any :class:`stagewise.errors.StagewiseError`).

    Use it as ``typer.Option(..., parser=RegistryChoice("stagewise.stats.paired", "TESTS"))``; further arguments
    go to the registry's ``lookup`` (``RegistryChoice("stagewise.report", "FORMATS", "EvalResult")``: the output
    formats that render an evaluation). With ``canonical=True`` the entry's canonical name is given back.
    """

    def __init__(self, module: str, attr: str, *narrow: str, canonical: bool = False) -> None:
        self.module, self.attr, self.narrow, self.canonical = module, attr, narrow, canonical
        self.__name__ = "choice"  # typer names the parameter's type after its parser

    def __call__(self, value: Any) -> Any:
        from stagewise.errors import StagewiseError

        if value is None:
            return value
        try:
            entry = registry(self.module, self.attr).lookup(str(value), *self.narrow)
        except StagewiseError as exc:  # click would wrap it (a ValueError) in its usage box
            typer.echo(f"stagewise: error: {exc}", err=True)
            raise typer.Exit(2) from None
        return entry.name if self.canonical else value


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


def stdin_readers(command: click.Command, ctx: click.Context) -> list[str]:
    """The inputs given as ``-`` (stdin), named as the user knows them: an argument by its metavar
    (``QRELS``, ``RUNS``), an option by its longest flag; each file of a list counts. For a command that passes
    its arguments through (trec_eval, ndeval), each ``-`` among them."""
    readers = []
    for param in command.params:
        value = ctx.params.get(param.name or "")
        values = value if isinstance(value, (list, tuple)) else [value]
        argument = param.param_type_name == "argument"
        shown = (param.name or "").upper() if argument else max(param.opts, key=len)
        readers += [shown for v in values if isinstance(v, (str, os.PathLike)) and os.fspath(v) == "-"]
    return readers + ["its files" for arg in ctx.args if arg == "-"]


def _stdin_once(readers: list[str]) -> typer.Exit:
    """Exit 2 with the one-line error for stdin given to two inputs (the second would read nothing, and its
    error would blame an empty file)."""
    given = " and ".join(dict.fromkeys(readers)) if len(set(readers)) > 1 else f"{len(readers)} of {readers[0]}"
    typer.echo(
        f"stagewise: error: -: stdin is given for {given}; it can be read only once"
        " (save all but one of them to a file first)",
        err=True,
    )
    return typer.Exit(2)


class StagewiseCommand(typer.core.TyperCommand):
    """A typer command with the shared behaviour above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = plain_help(self.help)
        old = DEPRECATED_FLAGS.get(self.name or "", {})
        for param in self.params:
            # the old spelling stays declared (a typer app built on the function alone still takes it); here it is
            # spelt new before parsing (parse_args), so help no longer offers it and the old name is free
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
        readers = stdin_readers(self, ctx)
        if len(readers) > 1:
            raise _stdin_once(readers)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # the one place the CLI catches it: every file is written atomically (a temporary file renamed at
            # the end, removed on the way out), so what was being written is gone, not half there
            typer.echo(INTERRUPTED, err=True)
            raise typer.Exit(130) from None
