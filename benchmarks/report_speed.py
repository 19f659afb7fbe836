"""How long ``stagewise report`` takes to write the report of the 17 TREC 2003 Robust runs, and how big it is.

Targets (issue 12): under 10 s on the project's 2-core machine, under 8 MB. Each repeat is a fresh process
running the command line, so imports (matplotlib, scipy, polars) count, as they do for a user.

    python benchmarks/report_speed.py [--repeat 3] [--data ../shared/data/trec_robust03_runs]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    qrels = args.data / "robust03_qrels.txt"
    runs = sorted(glob.glob(str(args.data / "runs" / "*.gz")))
    if not qrels.is_file() or not runs:
        sys.exit(f"no Robust runs at {args.data}")
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "robust.html"
        command = [sys.executable, "-m", "stagewise", "report", str(qrels), *runs, "-o", str(out)]
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        size = out.stat().st_size
        text = out.read_text(encoding="utf-8")
    from stagewise import read_qrels

    median = statistics.median(times)
    print(f"runs: {len(runs)}, judged queries: {read_qrels(qrels).n_queries}, cpus: {os.cpu_count()}")
    print(f"wall time: median {median:.2f} s, min {min(times):.2f} s over {args.repeat} runs")
    print(f"file: {size / 1e6:.2f} MB ({size:,} bytes), {text.count('<svg')} inline SVG plots")
    print(f"targets (issue 12): time <= 10 s {'PASS' if median <= 10 else 'MISS'}; "
          f"size <= 8 MB {'PASS' if size <= 8e6 else 'MISS'}")  # fmt: skip


if __name__ == "__main__":
    main()
