"""Peak memory of ``--engine stream`` on run files of the MS MARCO-dev shape, and its numbers beside in memory.

Two pairs are used: 6,980 queries x 1,000 results (~7M lines, 254 MB) and ten times as many queries (69,800 x
1,000, ~70M lines, 2.6 GB), both made by ../shared/bench/gen_msmarco_like.py and cached under --data. Every
measurement runs in its own fresh process, which reports its own peak resident memory (ru_maxrss). The stream
engine's per-query values and means are compared, bit for bit, with the local (in-memory) engine's; the local
engine on the large pair needs several GB (--no-local-large leaves it out).

    python benchmarks/stream_eval.py [--data bench-data] [--no-local-large]

Exits 0 whatever the numbers; prints PASS/MISS for the 300 MB target and the equality.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_msmarco_like.py"
METRICS = ["map", "ndcg@10", "recall@1000", "mrr@10", "P@10", "bpref"]
TARGET_MB = 300
MARK = "@@RESULT@@ "

CHILD = r"""
import hashlib, json, resource, sys, time
import numpy as np
from stagewise.engines import evaluate
qrels, run, engine, metrics = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
start = time.perf_counter()
result = evaluate(qrels, [run], metrics, engine=engine)
wall = time.perf_counter() - start
scores = result.runs[0]
digest = hashlib.sha256(scores.query_ids.astype(str).tobytes())
for m in metrics:
    digest.update(np.ascontiguousarray(scores.values[m]).tobytes())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("@@RESULT@@ " + json.dumps({"wall_s": wall, "peak_bytes": peak, "digest": digest.hexdigest(),
      "means": scores.means, "queries": len(scores.query_ids)}))
"""


def _ensure(data: Path, name: str, queries: int) -> Path:
    folder = data / name
    if not (folder / "run0.txt").exists():
        print(f"generating {folder} ({queries} queries x 1000) ...", flush=True)
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GENERATOR), "--queries", str(queries), "--out", name], cwd=data, check=True)
    return folder


def _measure(folder: Path, engine: str) -> dict:
    env_path = str(REPO / "src")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder / "qrels.txt"), str(folder / "run0.txt"), engine, ",".join(METRICS)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    if out.returncode != 0:
        raise SystemExit(f"child failed ({engine}, {folder}):\n{out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith(MARK))
    return json.loads(line[len(MARK) :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "bench-data")
    parser.add_argument("--no-local-large", action="store_true", help="skip the in-memory engine on the 10x pair")
    args = parser.parse_args()
    pairs = [("msmarco_like", 6980), ("msmarco_like_x10", 69800)]
    rows = []
    for name, queries in pairs:
        folder = _ensure(args.data, name, queries)
        size = (folder / "run0.txt").stat().st_size
        stream = _measure(folder, "stream")
        local = None if (args.no_local_large and queries > 10000) else _measure(folder, "local")
        rows.append((name, queries, size, stream, local))
    print(f"\n{'pair':<18}{'run file':>10}{'engine':>8}{'wall s':>9}{'peak MB':>9}  same numbers as in memory")
    for name, _queries, size, stream, local in rows:
        for engine, got in (("stream", stream), ("local", local)):
            if got is None:
                continue
            same = "" if engine == "local" else (
                "not checked" if local is None else
                "PASS" if got["digest"] == local["digest"] and got["means"] == local["means"] else "MISS"
            )
            print(
                f"{name:<18}{size / 1e9:>9.2f}G{engine:>8}{got['wall_s']:>9.1f}{got['peak_bytes'] / 1e6:>9.0f}  {same}"
            )
        verdict = "PASS" if stream["peak_bytes"] <= TARGET_MB * 1e6 else "MISS"
        print(f"{'':<18}stream peak {stream['peak_bytes'] / 1e6:.0f} MB vs target {TARGET_MB} MB: {verdict}")
    print(json.dumps({name: {"stream": s, "local": loc} for name, _q, _s, s, loc in rows}, indent=1))
    time.sleep(0)


if __name__ == "__main__":
    main()
