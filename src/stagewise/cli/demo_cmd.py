"""``stagewise demo [--out DIR] [--serve]``: the whole pipeline on the bundled CLAP NQ dev data."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.common import int_option, user_errors

DEFAULT_OUT = Path("stagewise-demo")


def demo_command(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for every output; replaced when it holds only a previous demo's."),
    ] = DEFAULT_OUT,
    serve: Annotated[
        bool, typer.Option("--serve", help="Then open the web app on the demo's runs, labels and RAG samples.")
    ] = False,
    dense: Annotated[
        bool | None,
        typer.Option(
            "--dense/--no-dense",
            help="Dense retrieval with the packaged MiniLM (default: when the dense extra is installed).",
            show_default=False,
        ),
    ] = None,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the HTML report.")] = True,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace --out even when it is a non-empty folder that is not a demo's."),
    ] = False,
    host: Annotated[str, typer.Option("--host", help="With --serve: the address to bind.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", **int_option(1, 65535), help="With --serve: the port to listen on.")
    ] = 8765,
    token: Annotated[
        str | None,
        typer.Option("--token", help="With --serve: every request must carry it (needed for a --host not loopback)."),
    ] = None,
    generator: Annotated[
        str | None,
        typer.Option(
            "--generator",
            metavar="URL",
            help="Answer with a real model behind an OpenAI-compatible endpoint (its base URL, e.g. "
            "http://127.0.0.1:8080/v1 for llama.cpp's server; the key, if any, from OPENAI_API_KEY) instead of the "
            "extractive answerer. pipeline.json states the endpoint, model, prompt and counts.",
        ),
    ] = None,
    generator_model: Annotated[
        str, typer.Option("--generator-model", help="With --generator: the model name the endpoint serves.")
    ] = "default",
) -> None:
    """Run a whole search and RAG pipeline on bundled data and say which stage to fix first.

    On CLAP NQ dev (592 Wikipedia passages, 600 questions, bundled with its licences): BM25 with two analysers,
    dense retrieval (with the dense extra), RRF fusion, reranking, the evaluation of every stage (nDCG with
    linear and exponential gain), paired significance tests between the stages, an extractive answerer that
    cites its passage, the RAG diagnosis of every question (ok, generation_failure, retrieval_failure, lucky)
    and an offline HTML report. Every file lands in --out, ready for the other commands
    (stagewise eval OUT/qrels.txt OUT/*.run).
    """
    with user_errors():
        from stagewise.demo.pipeline import run_demo

        if serve:
            from stagewise.cli.common import check_serving

            check_serving(host, port, token)  # before the work, not after it
        if generator is not None:  # a URL typo is refused now, not after seven steps of work
            from stagewise.rag.endpoint import EndpointOptions

            EndpointOptions(url=generator, model=generator_model)
        status = _StepLines()
        result = run_demo(
            out,
            dense="auto" if dense is None else "on" if dense else "off",
            report=report,
            force=force,
            progress=status,
            generator=generator,
            generator_model=generator_model,
        )
        _show(result.summary())
        if serve:
            from stagewise.app.open import open_rag, open_workspace
            from stagewise.cli.common import serve_app
            from stagewise.demo.folder import serving_lock

            folder = result.out
            db = folder / "labels.sqlite"
            runs = {name: folder / f"{name}.run" for name in result.runs}
            workspace = open_workspace(
                folder / "qrels.txt", runs, db, corpus=folder / "corpus.jsonl", queries=folder / "queries.jsonl"
            )
            records = open_rag(folder / "rag.jsonl", db, corpus=folder / "corpus.jsonl")
            with serving_lock(folder):  # a demo rerun meanwhile would swap the folder from under the server
                serve_app(workspace, records, host=host, port=port, token=token, first="queries")
        elif sys.stdout.isatty():
            typer.echo(
                f"\nNext: stagewise demo --serve (relabel results and watch the metrics), or open {result.report}"
            )


class _StepLines:
    """One line on stderr per finished step; on a terminal, a spinner while a long step runs."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.status = None

    def __call__(self, step) -> None:
        if not step.done:
            if self.console.is_terminal:
                self.status = self.console.status(f"[{step.number:>2}/{step.total}] {step.name} ...")
                self.status.start()
            return
        if self.status is not None:
            self.status.stop()
            self.status = None
        line = f"[{step.number:>2}/{step.total}] {step.name:<12} {step.seconds:6.2f} s  {step.detail}"
        if self.console.is_terminal:
            self.console.print(line, markup=False, soft_wrap=True)
        else:
            sys.stderr.write(line + "\n")


def _show(markdown: str) -> None:
    """The summary: rendered by rich on a terminal, the markdown itself on a pipe or in a file."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    if console.is_terminal:
        console.print(Markdown(markdown))
    else:
        sys.stdout.write(markdown)
