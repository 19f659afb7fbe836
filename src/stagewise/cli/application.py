"""The ``stagewise`` typer app: every subcommand registered (the entry point is ``stagewise.cli.main``). Thin:
each subcommand parses, calls the library and renders.

Heavy imports happen inside the commands so ``stagewise --help`` is instant. An expected failure (bad input,
unknown metric) prints one line on stderr and exits with code 2; a traceback means a bug.

Commands are listed here by module and function, not imported: :func:`build` makes an app of every command
(:data:`app`, what ``stagewise --help`` and the tests use), and :func:`app_for` one of the single command a command
line names, so ``stagewise eval`` neither imports the other 21 command modules nor has typer build their
parameters (about 0.15 s of CPU, a tenth of evaluating a 7M-row run). Both go through the same table.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from stagewise.cli.command import StagewiseCommand, reflowed_help

_HELP = "Measure every stage of a search or RAG pipeline on its own, with every convention stated."
# drop-ins that take trec_eval's / ndeval's own flags, -h and unknown options included, as written
_PASS_THROUGH: dict[str, Any] = {
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    "add_help_option": False,
}

# command name -> (module under stagewise.cli, function, typer settings), in the order --help lists them
COMMANDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "eval": ("eval_cmd", "eval_command", {}),
    "validate": ("validate_cmd", "validate_command", {}),
    "trust": ("trust_cmd", "trust_command", {}),
    "compare": ("compare_cmd", "compare_command", {}),
    "gate": ("gate_cmd", "gate_command", {}),
    "fuse": ("fuse_cmd", "fuse_command", {}),
    "trec_eval": ("trec_eval_cmd", "trec_eval_command", _PASS_THROUGH),
    "ndeval": ("ndeval_cmd", "ndeval_command", _PASS_THROUGH),
    "index": ("index_cmd", "index_command", {}),
    "search": ("search_cmd", "search_command", {}),
    "encode": ("encode_cmd", "encode_command", {}),
    "rerank": ("rerank_cmd", "rerank_command", {}),
    "hybrid": ("hybrid_cmd", "hybrid_command", {}),
    "rag": ("rag_cmd", "rag_command", {}),
    "report": ("report_cmd", "report_command", {}),
    "demo": ("demo_cmd", "demo_command", {}),
    "serve": ("serve_cmd", "serve_command", {}),
    "pool": ("pool_cmd", "pool_command", {}),
    "agreement": ("agreement_cmd", "agreement_command", {}),
    "merge": ("agreement_cmd", "merge_command", {}),
}
# command groups -> (module, the typer app of its subcommands)
GROUPS: dict[str, tuple[str, str]] = {
    "labels": ("serve_cmd", "labels_app"),
    "power": ("power_cmd", "power_app"),
    "campaign": ("campaign_cmd", "campaign_app"),
    "judge": ("judge_cmd", "judge_app"),
}


def package_version() -> str:
    """The installed distribution's version (its metadata), else the source tree's ``__version__``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stagewise")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from stagewise import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"stagewise {package_version()}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """Measure every stage of a search or RAG pipeline on its own, with every convention stated."""


def _module(name: str) -> Any:
    return importlib.import_module(f"stagewise.cli.{name}")


def build(names: Sequence[str] | None = None) -> typer.Typer:
    """A typer app with the commands and groups ``names`` (None: all of them), each as ``stagewise --help``
    shows it; the root callback (``--version``) is always there, so the app stays a group of commands."""
    wanted = set(COMMANDS) | set(GROUPS) if names is None else set(names)
    built = typer.Typer(
        name="stagewise", help=_HELP, no_args_is_help=True, add_completion=False, rich_markup_mode="rich"
    )
    built.callback()(_root)
    for name, (module, function, settings) in COMMANDS.items():
        if name in wanted:
            func = getattr(_module(module), function)
            built.command(name, help=reflowed_help(func), cls=StagewiseCommand, **settings)(func)
    for name, (module, attribute) in GROUPS.items():
        if name in wanted:
            group = getattr(_module(module), attribute)
            for info in group.registered_commands:
                info.cls = StagewiseCommand
            built.add_typer(group)
    return built


def app_for(argv: Sequence[str]) -> typer.Typer:
    """The app for one command line: only its command when the line starts with one (its --help, usage and
    errors are the same in an app of one command), every command otherwise (``stagewise --help``, a typo that
    needs the list of names, an option before the command)."""
    first = argv[0] if argv else ""
    if first in ("--version", "-V"):  # the root's eager option: it exits before any command is looked at
        return build([])
    return build([first]) if first in COMMANDS or first in GROUPS else full_app()


def full_app() -> typer.Typer:
    """The app of every command, built once (also :data:`app`)."""
    global _FULL
    if _FULL is None:
        _FULL = build()
    return _FULL


_FULL: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    """``app``, the app of every command, built on first use (a command line builds only its own command)."""
    if name == "app":
        return full_app()
    raise AttributeError(f"module 'stagewise.cli.application' has no attribute {name!r}")
