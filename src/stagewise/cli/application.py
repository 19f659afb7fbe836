"""The ``stagewise`` typer app: every subcommand registered (the entry point is ``stagewise.cli.main``). Thin:
each subcommand parses, calls the library and renders.

Heavy imports happen inside the commands so ``stagewise --help`` is instant. An expected failure (bad input,
unknown metric) prints one line on stderr and exits with code 2; a traceback means a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from stagewise.cli import (
    agreement_cmd,
    campaign_cmd,
    compare_cmd,
    demo_cmd,
    encode_cmd,
    eval_cmd,
    fuse_cmd,
    gate_cmd,
    hybrid_cmd,
    index_cmd,
    judge_cmd,
    ndeval_cmd,
    pool_cmd,
    power_cmd,
    rag_cmd,
    report_cmd,
    rerank_cmd,
    search_cmd,
    serve_cmd,
    trec_eval_cmd,
    trust_cmd,
    validate_cmd,
)
from stagewise.cli.command import StagewiseCommand, reflowed_help

app = typer.Typer(
    name="stagewise",
    help="Measure every stage of a search or RAG pipeline on its own, with every convention stated.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)


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


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """Measure every stage of a search or RAG pipeline on its own, with every convention stated."""


def _command(name: str, func: Callable[..., Any], **settings: Any) -> None:
    app.command(name, help=reflowed_help(func), cls=StagewiseCommand, **settings)(func)


_command("eval", eval_cmd.eval_command)
_command("validate", validate_cmd.validate_command)
_command("trust", trust_cmd.trust_command)
_command("compare", compare_cmd.compare_command)
_command("gate", gate_cmd.gate_command)
_command("fuse", fuse_cmd.fuse_command)
_command(
    "trec_eval",
    trec_eval_cmd.trec_eval_command,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
_command(
    "ndeval",
    ndeval_cmd.ndeval_command,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
_command("index", index_cmd.index_command)
_command("search", search_cmd.search_command)
_command("encode", encode_cmd.encode_command)
_command("rerank", rerank_cmd.rerank_command)
_command("hybrid", hybrid_cmd.hybrid_command)
_command("rag", rag_cmd.rag_command)
_command("report", report_cmd.report_command)
_command("demo", demo_cmd.demo_command)
_command("serve", serve_cmd.serve_command)
_command("pool", pool_cmd.pool_command)
_command("agreement", agreement_cmd.agreement_command)
_command("merge", agreement_cmd.merge_command)
for _info in serve_cmd.labels_app.registered_commands:
    _info.cls = StagewiseCommand
app.add_typer(serve_cmd.labels_app)
app.add_typer(power_cmd.power_app)
app.add_typer(campaign_cmd.campaign_app)
app.add_typer(judge_cmd.judge_app)
