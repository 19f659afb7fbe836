"""A command line builds only the command it names (``stagewise.cli.application.app_for``): the other command
modules are not imported, and the full app (``stagewise --help``, a mistyped name) still lists every command."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from stagewise.cli.application import COMMANDS, GROUPS, app_for, build

PROBE = """
import sys
from stagewise.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith("stagewise.cli.") and m.endswith("_cmd")), file=sys.stderr)
"""


def _modules_loaded(args: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return ast.literal_eval(done.stderr.strip().splitlines()[-1])  # the list the probe printed last


def test_eval_imports_only_its_own_command_module(tmp_path: Path) -> None:
    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text("1 0 d1 1\n")
    run.write_text("1 Q0 d1 1 1.0 r\n")
    assert _modules_loaded(["eval", str(qrels), str(run), "-m", "map", "--format", "json"]) == [
        "stagewise.cli.eval_cmd"
    ]


def test_a_group_builds_its_subcommands_only() -> None:
    app = app_for(["judge", "--help"])
    assert [g.typer_instance.info.name for g in app.registered_groups] == ["judge"]
    assert app.registered_commands == []


def test_the_full_app_for_help_and_mistakes_has_every_command() -> None:
    full = build()
    assert [c.name for c in full.registered_commands] == list(COMMANDS)
    assert [g.typer_instance.info.name for g in full.registered_groups] == list(GROUPS)
    for argv in ([], ["--help"], ["evl"], ["--verbose", "eval"]):  # -V alone: the root only (test_cli_first_contact)
        assert app_for(argv) is app_for([])  # one app of every command, built once


def test_a_single_command_app_gives_the_same_help_as_the_full_one() -> None:
    from typer.testing import CliRunner

    runner = CliRunner()
    for name in ("eval", "compare", "fuse"):
        alone = runner.invoke(app_for([name]), [name, "--help"], terminal_width=100)
        full = runner.invoke(build(), [name, "--help"], terminal_width=100)
        assert alone.exit_code == full.exit_code == 0
        assert alone.output == full.output
