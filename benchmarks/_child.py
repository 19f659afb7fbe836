"""Running one measurement in a fresh, single-threaded Python process and reading its result back: peaks of
memory and first-call costs then belong to that one tool and step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MARK = "@@RESULT@@ "
SINGLE_THREAD = {
    "NUMBA_NUM_THREADS": "1",
    "POLARS_MAX_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
    "DISABLE_TQDM": "1",
}


def emit(result: dict) -> None:
    """In the child: hand ``result`` to the parent (one marked JSON line on stdout)."""
    print(MARK + json.dumps(result), flush=True)


def run_child(script: str, args: list[str], cwd: Path) -> dict:
    """Run ``script args`` single-threaded in a fresh interpreter and return what it :func:`emit`-ted."""
    done = subprocess.run(
        [sys.executable, script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **SINGLE_THREAD},
        check=False,
        cwd=cwd,
    )
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"child {args} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
