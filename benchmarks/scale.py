"""The Dask engine with 1, 2 and 4 workers on many run files of the MS MARCO-dev shape: wall time, peak memory
and the per-row cost, with an estimate of the cluster that evaluates 1,000 runs at MS MARCO v2 depth in an hour.

The runs (default 20 files of 6,980 queries x 1,000 results, ~7M lines and 254 MB each) are made once by
../shared/bench/gen_msmarco_like.py --runs N and cached under --data. Each configuration runs in a fresh
process that starts its own ``LocalCluster`` (``n_workers`` single-threaded worker processes), evaluates every
run, and reports its wall time, the client's peak resident memory and each worker's (ru_maxrss, asked of the
workers through the cluster). Every configuration must give the same means; the first also checks one run's
per-query values against the in-memory engine.

    python benchmarks/scale.py [--runs 20] [--workers 1 2 4] [--data bench-data]

Exits 0 whatever the numbers: it is a benchmark, not a test. On a machine with fewer cores than workers, the
extra workers share cores: the per-row cost is the figure that carries over to a real cluster.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_msmarco_like.py"
METRICS = ["map", "ndcg@10", "recall@1000", "mrr@10"]
MARK = "@@RESULT@@ "

# MS MARCO v2 passage: the dev1 and dev2 query sets (3,903 + 4,281 queries), runs at depth 1,000.
V2_QUERIES = 3_903 + 4_281
V2_DEPTH = 1_000
TARGET_RUNS = 1_000
TARGET_SECONDS = 3_600

CHILD = r"""
import hashlib, json, resource, sys, time
import numpy as np
workers, partition, qrels, runs, metrics = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                            sys.argv[4].split(","), sys.argv[5].split(","))
from stagewise.engines import DaskEngine
start = time.perf_counter()
engine = DaskEngine(n_workers=workers, threads_per_worker=1, processes=True, partition_bytes=partition)
client = engine.client
client.wait_for_workers(workers)
started = time.perf_counter() - start
start = time.perf_counter()
result = engine.evaluate(qrels, runs, metrics)
wall = time.perf_counter() - start
worker_peaks = client.run(lambda: __import__("resource").getrusage(__import__("resource").RUSAGE_SELF).ru_maxrss * 1024)
engine.close()
first = result.runs[0]
digest = hashlib.sha256(first.query_ids.astype(str).tobytes())
for m in metrics:
    digest.update(np.ascontiguousarray(first.values[m]).tobytes())
print("@@RESULT@@ " + json.dumps({"digest": digest.hexdigest(), "first_means": first.means,
    "workers": workers, "start_s": started, "wall_s": wall,
    "client_peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "worker_peak_bytes": sorted(worker_peaks.values()),
    "queries": int(sum(len(r.query_ids) for r in result.runs)),
    "means": result.means}))
"""

LOCAL = r"""
import hashlib, json, sys
import numpy as np
from stagewise.engines import evaluate
qrels, run, metrics = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
first = evaluate(qrels, {"run0.txt": run}, metrics).runs[0]
digest = hashlib.sha256(first.query_ids.astype(str).tobytes())
for m in metrics:
    digest.update(np.ascontiguousarray(first.values[m]).tobytes())
print("@@RESULT@@ " + json.dumps({"digest": digest.hexdigest(), "first_means": first.means}))
"""


def _ensure(data: Path, runs: int) -> Path:
    folder = data / f"msmarco_like_{runs}runs"
    if not (folder / f"run{runs - 1}.txt").exists():
        print(f"generating {folder} ({runs} runs of 6,980 queries x 1,000; ~{runs * 0.254:.1f} GB) ...", flush=True)
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--runs", str(runs), "--out", folder.name], cwd=data, check=True
        )
    return folder


def _count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            count += chunk.count(b"\n")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "bench-data")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--partition-mb", type=int, default=64, help="nominal MB of run file per task")
    args = parser.parse_args()
    folder = _ensure(args.data, args.runs)
    runs = [str(folder / f"run{i}.txt") for i in range(args.runs)]
    total_bytes = sum(os.path.getsize(r) for r in runs)
    rows = _count_lines(Path(runs[0])) * args.runs  # the generator writes the same number of lines per run
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def child(code: str, *argv: str) -> dict:
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise SystemExit(f"{argv[:1]} failed:\n{out.stderr[-4000:]}")
        line = next(x for x in out.stdout.splitlines() if x.startswith(MARK))
        return json.loads(line[len(MARK) :])

    results = [
        child(CHILD, str(w), str(args.partition_mb * 2**20), str(folder / "qrels.txt"), ",".join(runs),
              ",".join(METRICS))
        for w in args.workers
    ]
    local = child(LOCAL, str(folder / "qrels.txt"), runs[0], ",".join(METRICS))

    cores = os.cpu_count() or 1
    print(f"\n{args.runs} run files, {total_bytes / 1e9:.2f} GB, {rows / 1e6:.0f}M lines; {cores} CPU cores; "
          f"partitions of {args.partition_mb} MB; metrics {', '.join(METRICS)}")
    print(f"{'workers':>8}{'start s':>9}{'wall s':>9}{'M rows/s':>10}{'client MB':>11}{'worker MB (max)':>17}"
          f"{'all MB':>9}")
    for r in results:
        peaks = r["worker_peak_bytes"]
        print(f"{r['workers']:>8}{r['start_s']:>9.1f}{r['wall_s']:>9.1f}{rows / r['wall_s'] / 1e6:>10.2f}"
              f"{r['client_peak_bytes'] / 1e6:>11.0f}{max(peaks) / 1e6:>17.0f}"
              f"{(r['client_peak_bytes'] + sum(peaks)) / 1e6:>9.0f}")
    same_means = all(r["means"] == results[0]["means"] for r in results)
    same_local = all(r["digest"] == local["digest"] and r["first_means"] == local["first_means"] for r in results)
    print(f"same means in every configuration: {'PASS' if same_means else 'MISS'}; run0's per-query values and "
          f"means identical to the in-memory engine's: {'PASS' if same_local else 'MISS'}")

    # The per-row cost of one busy worker: from the configurations that do not oversubscribe the cores.
    fair = [r for r in results if r["workers"] <= cores] or results[:1]
    per_worker = max(rows / r["wall_s"] / r["workers"] for r in fair)
    v2_rows = TARGET_RUNS * V2_QUERIES * V2_DEPTH
    needed = v2_rows / (per_worker * TARGET_SECONDS)
    worker_mb = max(max(r["worker_peak_bytes"]) for r in results) / 1e6
    print(f"\nper-row cost: {per_worker / 1e6:.2f}M rows per second per single-threaded worker "
          f"({1e9 / per_worker:.0f} ns a row, reading included)")
    print(f"1,000 runs at MS MARCO v2 depth ({V2_QUERIES:,} dev1+dev2 queries x {V2_DEPTH:,} = "
          f"{V2_QUERIES * V2_DEPTH / 1e6:.1f}M rows a run, {v2_rows / 1e9:.1f}G rows, ~{v2_rows * 36 / 1e12:.2f} TB "
          f"of TREC text) in an hour: {needed:.1f} workers at this rate, so {math.ceil(needed)} single-threaded "
          f"worker(s) (~{worker_mb:.0f} MB each; {math.ceil(needed / 8)} machine(s) of 8 cores), reading the runs "
          f"from shared storage at {v2_rows * 36 / TARGET_SECONDS / 1e6:.0f} MB/s in all")
    print("in general: workers = runs x queries x depth / (rows per worker-second x seconds), at ~36 bytes a row")
    print(json.dumps([{k: v for k, v in r.items() if k != "means"} for r in results], indent=1))


if __name__ == "__main__":
    main()
