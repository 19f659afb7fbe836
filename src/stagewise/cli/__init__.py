"""The ``stagewise`` command's entry point, kept light on purpose.

The console script runs ``from stagewise.cli import main`` before anything else, so this module imports nothing
but ``sys``: typer and every subcommand's module load inside :func:`main`, where a Ctrl-C while they load (a
user who sees a typo just after pressing Enter) is one line and exit 130, not a traceback through typer. The
typer app of every command is :data:`stagewise.cli.application.app`, also reachable as ``stagewise.cli.app``; a
command line builds only the command it names (:func:`stagewise.cli.application.app_for`).
"""

from __future__ import annotations

import sys
from typing import Any

# also the message of a Ctrl-C inside a command (stagewise.cli.command): every output is written atomically
INTERRUPTED = "stagewise: interrupted; no output file was left half-written"


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the command line, and Ctrl-C at any moment as one line on stderr, exit 130."""
    try:
        _run(argv)
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED + "\n")
        raise SystemExit(130) from None


def _run(argv: list[str] | None) -> None:
    from stagewise.cli import common
    from stagewise.cli.application import app_for
    from stagewise.errors import StagewiseError

    common.RAW_ARGS[:] = sys.argv[1:] if argv is None else argv
    try:
        app_for(common.RAW_ARGS)(args=argv, prog_name="stagewise", standalone_mode=True)
    except StagewiseError as exc:  # raised outside a command's own handling
        sys.stderr.write(f"stagewise: error: {exc}\n")
        raise SystemExit(2) from None
    finally:  # a later call in the same process (a library user, a test) must not see this command line
        common.RAW_ARGS.clear()


def __getattr__(name: str) -> Any:
    """``stagewise.cli.app`` (the typer app) and ``package_version``, loaded on first use. Any other name is
    left to the import system (``from stagewise.cli import common`` asks here first, then imports the module)."""
    if name not in ("app", "package_version"):
        raise AttributeError(f"module 'stagewise.cli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module("stagewise.cli.application"), name)
