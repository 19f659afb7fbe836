"""``stagewise --help`` and every subcommand's ``--help`` stay instant: the command line imports no numpy,
polars or scipy before a command runs (every ``cli`` module is imported at start-up, so one heavy import at the
top of any of them, or a registry read for help that pulls numpy behind it, would slow every call)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "polars", "scipy")

_PROBE = """
import sys
import stagewise.cli
heavy = {heavy!r}
print("import:", sorted(m for m in heavy if m in sys.modules))
from typer.testing import CliRunner
runner = CliRunner()
names = [c.name for c in stagewise.cli.app.registered_commands if c.name != "trec_eval"]
for args in [["--help"], *([name, "--help"] for name in names), ["labels", "export", "--help"]]:
    done = runner.invoke(stagewise.cli.app, args)
    assert done.exit_code == 0, (args, done.output)
    print(" ".join(args) + ":", sorted(m for m in heavy if m in sys.modules))
"""


def _probe() -> list[str]:
    code = _PROBE.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    return done.stdout.splitlines()


def test_help_of_every_command_imports_nothing_heavy() -> None:
    lines = _probe()
    assert lines[0] == "import: []"
    assert len(lines) > 10  # every command was asked for its help
    assert [line for line in lines if not line.endswith(": []")] == []
