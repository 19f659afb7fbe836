"""Peak memory and time of fusing many nearly disjoint runs: stagewise beside ranx 0.3.21.

Issue 10: fusing 200 runs of 10k rows (62 MB of input) peaked at 11.5 GB, because the fusion table held dense
candidates x runs matrices. The target: memory grows with the rows fused, 200 runs of 10k rows in well under
1 GB.

Each run has 100 queries x 100 documents drawn from a pool of 1,000,000 documents per query (seeded), so two runs
share about 1% of their documents and 200 runs give about 2M candidates. Cases: 2, 20 and 200 runs, per method
family (RRF; CombSUM and CombMNZ on min-max scores; BordaFuse; PosFuse, trained on generated qrels). Every case
runs in its own fresh subprocess, so peaks do not mix; the input is built in the child (not timed) and its RSS
after loading is shown beside the peak, so the fusion's own share is the difference. ranx runs the same cases
after one untimed call on tiny data (numba warm); a ranx process that exceeds ``--ranx-timeout`` is stopped and
its time shown as a lower bound (``>``). The script measures and asserts nothing; it always exits 0.

    .venv/bin/python benchmarks/fusion_memory.py                     # everything
    .venv/bin/python benchmarks/fusion_memory.py --runs 200 --methods rrf --skip-ranx
    .venv/bin/python benchmarks/fusion_memory.py --memory-cap 3        # children stop at 3 GB of address space
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULT_MARK = "@@RESULT@@ "
GB = 1e9
MB = 1e6
QUERIES, DEPTH, POOL = 100, 100, 1_000_000

# label -> (stagewise method, stagewise norm, ranx method, ranx norm, supervised)
METHODS = {
    "rrf": ("rrf", "none", "rrf", None, False),
    "combsum-minmax": ("combsum", "minmax", "sum", "min-max", False),
    "combmnz-minmax": ("combmnz", "minmax", "mnz", "min-max", False),
    "bordafuse": ("bordafuse", "none", "bordafuse", None, False),
    "posfuse": ("posfuse", "none", "posfuse", None, True),
}


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()


def generate(n_runs: int, seed: int = 0):
    """(query ids, per run (doc ids, scores) arrays of QUERIES x DEPTH, in query order) and qrels triples."""
    import numpy as np

    rng = np.random.default_rng(seed)
    queries = np.array([f"q{i:03d}" for i in range(QUERIES)])
    runs = []
    for _ in range(n_runs):
        # Distinct documents per query: DEPTH sorted draws without repetition from the pool.
        docs = np.stack([rng.choice(POOL, DEPTH, replace=False) for _ in range(QUERIES)])
        scores = np.sort(rng.random((QUERIES, DEPTH)), axis=1)[:, ::-1] * 10
        runs.append((docs, scores))
    # Judgements: each query's relevant documents are 20 of the first run's.
    qrels = [(queries[q], int(runs[0][0][q, j])) for q in range(QUERIES) for j in range(0, DEPTH, 5)]
    return queries, runs, qrels


# ----------------------------------------------------------------------------------------------- children
def child_stagewise(n_runs: int, label: str) -> dict:
    import numpy as np
    import polars as pl

    from stagewise import read_qrels, read_run
    from stagewise.fusion import fuse

    method, norm, _, _, supervised = METHODS[label]
    queries, generated, triples = generate(n_runs)
    runs = []
    for i, (docs, scores) in enumerate(generated):
        frame = pl.DataFrame(
            {
                "query_id": np.repeat(queries, DEPTH),
                "doc_id": pl.Series(docs.ravel()).cast(pl.String).str.pad_start(7, "0"),
                "score": scores.ravel(),
            }
        )
        runs.append(read_run(frame, name=f"run{i}"))
    qrels = None
    if supervised:
        qrels = read_qrels({q: {f"{d:07d}": 1 for qq, d in triples if qq == q} for q in queries})
    del generated
    loaded_rss = _rss_bytes()
    t0 = time.perf_counter()
    fused = fuse(runs, method, norm=norm, qrels=qrels)
    seconds = time.perf_counter() - t0
    return {
        "fuse_s": seconds,
        "rows_in": sum(len(r) for r in runs),
        "rows_out": len(fused),
        "loaded_rss": loaded_rss,
        "peak_rss": _peak_rss_bytes(),
    }


def child_ranx(n_runs: int, label: str) -> dict:
    import warnings

    warnings.filterwarnings("ignore")  # numba type-safety chatter
    import ranx

    _, _, method, norm, supervised = METHODS[label]
    tiny = [ranx.Run({"q1": {"a": 0.5, "b": 0.2}, "q2": {"c": 0.3}}), ranx.Run({"q1": {"b": 0.9}, "q2": {"c": 0.1}})]
    tiny_qrels = ranx.Qrels({"q1": {"a": 1}, "q2": {"c": 1}})
    if supervised:
        ranx.fuse(tiny, method=method, norm=norm, params=ranx.optimize_fusion(tiny_qrels, tiny, method=method))
    else:
        ranx.fuse(tiny, method=method, norm=norm)
    queries, generated, triples = generate(n_runs)
    runs = []
    for docs, scores in generated:
        runs.append(
            ranx.Run(
                {
                    str(q): {f"{d:07d}": float(s) for d, s in zip(docs[i].tolist(), scores[i].tolist(), strict=True)}
                    for i, q in enumerate(queries)
                }
            )
        )
    del generated
    loaded_rss = _rss_bytes()
    t0 = time.perf_counter()
    if supervised:
        qrels = ranx.Qrels({str(q): {f"{d:07d}": 1 for qq, d in triples if qq == q} for q in queries})
        fused = ranx.fuse(runs, method=method, norm=norm, params=ranx.optimize_fusion(qrels, runs, method=method))
    else:
        fused = ranx.fuse(runs, method=method, norm=norm)
    seconds = time.perf_counter() - t0
    return {
        "fuse_s": seconds,
        "rows_out": sum(len(v) for v in fused.run.values()),
        "loaded_rss": loaded_rss,
        "peak_rss": _peak_rss_bytes(),
    }


# ----------------------------------------------------------------------------------------------- parent
def run_child(args: list[str], timeout: float | None, cap_gb: float | None) -> tuple[dict | None, str | None]:
    """(result, why there is none: 'timeout' or 'memory' or 'failed')."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]

    def limit() -> None:
        if cap_gb:
            cap = int(cap_gb * GB)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :]), None
    if "MemoryError" in done.stderr or "memory" in done.stderr.lower():
        return None, "memory"
    sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
    return None, "failed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", type=int, default=[2, 20, 200], help="numbers of runs to fuse")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--ranx-timeout", type=float, default=300.0, help="seconds before a ranx process stops")
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--memory-cap", type=float, help="GB of address space per child (RLIMIT_AS)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n-runs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child = child_stagewise if args.child == "stagewise" else child_ranx
        print(RESULT_MARK + json.dumps(child(args.n_runs, args.label)), flush=True)
        return

    print(
        f"runs of {QUERIES} queries x {DEPTH} docs from a pool of {POOL:,} per query; each case in a fresh process\n"
        f"{'case':<26}{'tool':<11}{'fuse s':>10}{'loaded MB':>11}{'peak MB':>10}{'peak-loaded':>13}{'rows out':>11}"
    )
    results: dict = {}
    for n_runs in args.runs:
        for label in args.methods:
            case = f"{n_runs} runs {label}"
            row: dict = {}
            for tool in ("stagewise", "ranx"):
                if tool == "ranx" and args.skip_ranx:
                    continue
                timeout = args.ranx_timeout if tool == "ranx" else None
                result, why = run_child(
                    ["--child", tool, "--n-runs", str(n_runs), "--label", label], timeout, args.memory_cap
                )
                row[tool] = result or {"missing": why}
                if result:
                    print(
                        f"{case:<26}{tool:<11}{result['fuse_s']:>10.3f}{result['loaded_rss'] / MB:>11.0f}"
                        f"{result['peak_rss'] / MB:>10.0f}{(result['peak_rss'] - result['loaded_rss']) / MB:>13.0f}"
                        f"{result['rows_out']:>11,}",
                        flush=True,
                    )
                else:
                    bound = f">{timeout:.0f}" if why == "timeout" else why
                    print(f"{case:<26}{tool:<11}{bound:>10}", flush=True)
            ours, theirs = row.get("stagewise", {}), row.get("ranx", {})
            if "fuse_s" in ours and ("fuse_s" in theirs or theirs.get("missing") == "timeout"):
                slower = theirs.get("fuse_s", args.ranx_timeout) / max(ours["fuse_s"], 1e-9)
                bound = ">" if "fuse_s" not in theirs else ""
                memory = (
                    f", peak memory {theirs['peak_rss'] / ours['peak_rss']:.1f}x of stagewise's"
                    if "peak_rss" in theirs
                    else ""
                )
                print(f"{'':<26}ranx / stagewise: time {bound}{slower:.1f}x{memory}", flush=True)
            results[case] = row
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
