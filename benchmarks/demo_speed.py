"""How long the demo takes: ``stagewise demo`` in fresh processes, and ``make demo`` from a fresh clone.

Targets (issue 16): ``stagewise demo`` under 60 s without the dense extra; ``make demo`` from a fresh clone on a
2-core machine under 5 minutes, installation included. Each repeat of the command is a fresh process, so imports
(matplotlib, scipy, polars) count as they do for a user; the per-step times come from the demo's own step
lines. ``--dense`` adds the same command with dense retrieval (needs the dense extra). ``--fresh-clone`` clones
this repository into a temporary folder and times ``make demo`` there (a new .venv and every install;
``--no-pip-cache`` makes pip download every wheel again).

    python benchmarks/demo_speed.py [--repeat 3] [--dense] [--fresh-clone [--no-pip-cache]]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_STEP = re.compile(r"\[\s*\d+/\d+\] (\S+)\s+([\d.]+) s")


def time_command(flags: list[str], repeat: int) -> tuple[list[float], dict[str, list[float]]]:
    times: list[float] = []
    steps: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            command = [sys.executable, "-m", "stagewise", "demo", "--out", str(Path(tmp) / f"demo{i}"), *flags]
            start = time.perf_counter()
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            for name, seconds in _STEP.findall(done.stderr):
                steps.setdefault(name, []).append(float(seconds))
    return times, steps


def fresh_clone(no_pip_cache: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "stagewise"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        env = dict(os.environ)
        if no_pip_cache:
            env["PIP_NO_CACHE_DIR"] = "1"
        start = time.perf_counter()
        subprocess.run(["make", "demo"], cwd=clone, check=True, capture_output=True, env=env)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dense", action="store_true", help="also time the demo with dense retrieval")
    parser.add_argument("--fresh-clone", action="store_true", help="also time make demo in a fresh clone")
    parser.add_argument("--no-pip-cache", action="store_true", help="with --fresh-clone: pip downloads again")
    args = parser.parse_args()
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    variants = [("stagewise demo --no-dense", ["--no-dense"])]
    if args.dense:
        variants.append(("stagewise demo --dense", ["--dense"]))
    for label, flags in variants:
        times, steps = time_command(flags, args.repeat)
        median = statistics.median(times)
        target = f"; target (issue 16) <= 60 s {'PASS' if median <= 60 else 'MISS'}" if "no-dense" in label else ""
        print(f"{label}: median {median:.2f} s, min {min(times):.2f} s over {args.repeat} runs{target}")
        slowest = sorted(steps.items(), key=lambda item: -statistics.median(item[1]))[:4]
        print("  slowest steps (median): " + ", ".join(f"{n} {statistics.median(s):.2f} s" for n, s in slowest))
    if args.fresh_clone:
        seconds = fresh_clone(args.no_pip_cache)
        cache = "without pip's cache" if args.no_pip_cache else "with pip's cache as it is"
        verdict = "PASS" if seconds <= 300 else "MISS"
        print(f"make demo from a fresh clone ({cache}): {seconds:.1f} s; target (issue 16) <= 300 s {verdict}")


if __name__ == "__main__":
    main()
