"""Time ``stagewise.compare`` beside ``ranx.compare``: 10 runs x 7,000 queries, all 45 pairs, randomization test.

Both tools get the same qrels and runs (TREC files generated deterministically into --data, a git-ignored
folder) already loaded into their own objects, and both evaluate the runs and run Fisher's randomization test
with 10,000 permutations on every pair. Reading the files is timed separately and left out of the ratio.

- stagewise: ``compare(qrels, runs, metrics, test="randomization", permutations=B, seed=0)``; the split into
  evaluation and tests is shown too (``evaluate`` then ``compare_scores`` on its result).
- randomised Tukey HSD (``stagewise.stats.multi.tukey_hsd``) over the 17 TREC 2003 Robust runs (AP, 100
  topics, from ../shared/data/trec_robust03_runs; skipped when absent) with the same number of permutations;
  the evaluation is not timed, only the test over the score matrix.
- ranx 0.3.21: ``compare(qrels, runs, metrics, stat_test="fisher", n_permutations=B, random_seed=42)``.
  Before timing, one call on tiny data warms numba's cache, so JIT compilation is not counted. ranx tests
  every ordered pair (a, b) and (b, a), 90 tests for 45 pairs; that is its cost and it is timed as is.
  ``--ranx-runs K`` times ranx on the first K runs only and scales its test time to 10 runs by the number of
  ordered pairs; the output then says "extrapolated".

It also checks what the issue promises: the same seed gives identical p-values twice (stagewise), and shows
how much ranx's p-value for one pair moves between two calls with the same seed. Targets are informational
(PASS/MISS); the script exits 0 whatever the numbers are. Usage:

    .venv/bin/python benchmarks/compare_speed.py                  # full run, about 8 minutes on 2 cores (ranx)
    .venv/bin/python benchmarks/compare_speed.py --skip-ranx      # stagewise only, seconds
    .venv/bin/python benchmarks/compare_speed.py --ranx-runs 4    # ranx on 4 runs, extrapolated
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "bench-data" / "compare_speed"
TARGET_S = 3.0


# ------------------------------------------------------------------------------------------------- data
def generate(folder: Path, queries: int, runs: int, docs: int, seed: int = 2024) -> tuple[Path, list[Path]]:
    """qrels (3 relevant of grades 2/1/1 and 7 judged non-relevant per query) and ``runs`` runs of ``docs``
    results per query, whose quality rises every second run; deterministic for a given seed."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / f"v2_q{queries}_r{runs}_d{docs}_s{seed}.ok"
    qrels_path = folder / "qrels.txt"
    run_paths = [folder / f"run{i:02d}.txt" for i in range(runs)]
    if stamp.exists() and qrels_path.exists() and all(p.exists() for p in run_paths):
        return qrels_path, run_paths
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i}" for i in range(queries)])
    candidates = docs + 10
    labels = np.zeros(candidates, dtype=np.int64)
    labels[:3] = [2, 1, 1]
    with qrels_path.open("w") as fh:
        for q in qids:
            fh.writelines(f"{q} 0 d{j} {labels[j]}\n" for j in range(10))
    difficulty = rng.random(queries)
    for i, path in enumerate(run_paths):
        quality = 0.6 + 0.04 * (i // 2)  # runs 2k and 2k + 1 are equally good: some pairs are not significant
        noise = rng.normal(0.0, 1.0, (queries, candidates))
        boost = (labels > 0)[None, :] * (quality * (1.0 - difficulty))[:, None] * 2.5
        scores = boost + noise
        top = np.argsort(-scores, axis=1, kind="stable")[:, :docs]
        with path.open("w") as fh:
            for qi, q in enumerate(qids):
                row = top[qi]
                fh.writelines(
                    f"{q} Q0 d{doc} {rank + 1} {scores[qi, doc]:.6f} run{i:02d}\n" for rank, doc in enumerate(row)
                )
    stamp.write_text("ok\n")
    return qrels_path, run_paths


# -------------------------------------------------------------------------------------------------- tools
def time_stagewise(qrels_path: Path, run_paths: list[Path], metrics: list[str], permutations: int, repeat: int):
    import stagewise
    from stagewise.stats import compare, compare_scores

    t0 = time.perf_counter()
    qrels = stagewise.read_qrels(qrels_path)
    runs = [stagewise.read_run(p, name=p.stem) for p in run_paths]
    load = time.perf_counter() - t0
    t0 = time.perf_counter()  # the first call of the process also imports the metric and test modules
    compare(qrels, runs[:2], metrics, test="randomization", permutations=permutations, seed=0)
    first = time.perf_counter() - t0
    totals, evals, tests, results = [], [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = compare(qrels, runs, metrics, test="randomization", permutations=permutations, seed=0)
        totals.append(time.perf_counter() - t0)
        results.append(result)
        t0 = time.perf_counter()
        ev = stagewise.evaluate(qrels, runs, metrics)
        t1 = time.perf_counter()
        compare_scores(ev, test="randomization", permutations=permutations, seed=0)
        t2 = time.perf_counter()
        evals.append(t1 - t0)
        tests.append(t2 - t1)
    same = all([p.p_value for p in r.pairs] == [p.p_value for p in results[0].pairs] for r in results)
    return {
        "load": load,
        "first": first,
        "total": statistics.median(totals),
        "best": min(totals),
        "eval": statistics.median(evals),
        "tests": statistics.median(tests),
        "result": results[0],
        "reproducible": same,
    }


def time_tukey_robust(permutations: int, repeat: int):
    """Seconds for the randomised Tukey HSD over the 17 Robust runs' AP matrix, or None without the data."""
    robust = REPO.parent / "shared" / "data" / "trec_robust03_runs"
    if not robust.is_dir():
        return None
    import stagewise
    from stagewise.stats.multi import tukey_hsd

    runs = sorted((robust / "runs").glob("input.*.gz"))
    ev = stagewise.evaluate(robust / "robust03_qrels.txt", [str(r) for r in runs], ["ap"])
    x = np.column_stack([r.values["ap"] for r in ev.runs])
    times, results = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        results.append(tukey_hsd(x, permutations=permutations, seed=0))
        times.append(time.perf_counter() - t0)
    same = all(r.p_values.tobytes() == results[0].p_values.tobytes() for r in results)
    return {"total": statistics.median(times), "best": min(times), "shape": x.shape, "reproducible": same}


def time_ranx(qrels_path: Path, run_paths: list[Path], metrics: list[str], permutations: int, runs_limit: int, ours):
    import ranx

    t0 = time.perf_counter()
    tiny_q = ranx.Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}})
    tiny = [ranx.Run({"q1": {"d1": 0.5}, "q2": {"d9": 0.5}, "q3": {"d3": 0.5}}, name=f"t{i}") for i in range(2)]
    ranx.compare(tiny_q, tiny, metrics, stat_test="fisher", n_permutations=10)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    runs = [ranx.Run.from_file(str(p), kind="trec", name=p.stem) for p in run_paths[:runs_limit]]
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    ranx.evaluate(qrels, runs[0], metrics)
    eval_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = ranx.compare(qrels, runs, metrics, stat_test="fisher", n_permutations=permutations, random_seed=42)
    total = time.perf_counter() - t0
    # Its tests alone: the total less its evaluation of each run, scaled to all runs by ordered pairs.
    k, n = len(runs), len(run_paths)
    tests = max(total - k * eval_one, 0.0)
    scaled_total = n * eval_one + tests * (n * (n - 1)) / (k * (k - 1))
    # ranx's p-value, twice with the same seed, for the pair whose p-value (ours) is nearest 0.5: the one
    # where Monte Carlo noise shows most.
    by_name = {r.name: r for r in runs}
    pairs = [p for p in ours.pairs if p.metric == metrics[0] and p.a in by_name and p.b in by_name]
    nearest = min(pairs, key=lambda p: abs(p.p_value - 0.5))
    a, b = by_name[nearest.a], by_name[nearest.b]
    scores = (
        ranx.evaluate(qrels, a, metrics[0], return_mean=False),
        ranx.evaluate(qrels, b, metrics[0], return_mean=False),
    )
    from ranx.statistical_tests import fisher_randomization_test

    again = [fisher_randomization_test(scores[0], scores[1], permutations, 0.01, 42)[0] for _ in range(2)]
    return {
        "warm": warm,
        "load": load,
        "total": scaled_total,
        "measured_total": total,
        "extrapolated": k < n,
        "runs": k,
        "report": report,
        "p_twice": again,
        "pair": (a.name, b.name),
    }


# ----------------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder for the generated TREC files")
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--docs", type=int, default=20, help="results per query in each run")
    parser.add_argument("--permutations", type=int, default=10_000)
    parser.add_argument("--metrics", nargs="+", default=["ndcg@10"], help="metrics (same names in both tools)")
    parser.add_argument("--repeat", type=int, default=3, help="stagewise repetitions (median shown)")
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--ranx-runs", type=int, default=None, help="time ranx on the first K runs, extrapolated")
    args = parser.parse_args()

    t0 = time.perf_counter()
    qrels_path, run_paths = generate(args.data, args.queries, args.runs, args.docs)
    pairs = args.runs * (args.runs - 1) // 2
    print(
        f"data: {args.queries} queries x {args.runs} runs x {args.docs} results ({args.data}, ready in "
        f"{time.perf_counter() - t0:.1f} s); {pairs} pairs; metrics {', '.join(args.metrics)}; randomization test, "
        f"{args.permutations} permutations; {os.cpu_count()} CPU cores"
    )

    sw = time_stagewise(qrels_path, run_paths, args.metrics, args.permutations, args.repeat)
    verdict = "PASS" if sw["total"] <= TARGET_S else "MISS"
    print(
        f"stagewise  compare: {sw['total']:.2f} s median of {args.repeat} (best {sw['best']:.2f} s) "
        f"= evaluate {sw['eval']:.2f} s + tests {sw['tests']:.2f} s; reading the files {sw['load']:.2f} s; "
        f"a first 2-run call ({sw['first']:.2f} s, imports included) not counted"
    )
    print(f"           target <= {TARGET_S:.0f} s for compare: {verdict}")
    print(f"           same seed, identical p-values on every call: {'yes' if sw['reproducible'] else 'NO'}")
    tk = time_tukey_robust(args.permutations, args.repeat)
    if tk is None:
        print("tukey-hsd  skipped: the TREC 2003 Robust runs (../shared/data/trec_robust03_runs) are absent")
    else:
        n, m = tk["shape"]
        print(
            f"tukey-hsd  randomised Tukey HSD, {m} Robust runs x {n} topics (AP), {args.permutations} permutations: "
            f"{tk['total']:.2f} s median of {args.repeat} (best {tk['best']:.2f} s); "
            f"identical p-values on every call: {'yes' if tk['reproducible'] else 'NO'}"
        )
    if args.skip_ranx:
        return
    rx = time_ranx(qrels_path, run_paths, args.metrics, args.permutations, args.ranx_runs or args.runs, sw["result"])
    label = (
        f"extrapolated from {rx['runs']} runs ({rx['measured_total']:.1f} s measured)"
        if rx["extrapolated"]
        else "measured"
    )
    print(
        f"ranx       compare: {rx['total']:.1f} s ({label}); reading the files {rx['load']:.1f} s; "
        f"numba warm-up {rx['warm']:.1f} s, not counted"
    )
    print(f"ratio      ranx / stagewise = {rx['total'] / sw['total']:.0f}x")
    a, b = rx["pair"]
    p1, p2 = rx["p_twice"]
    ours = sw["result"].pair(args.metrics[0], a, b)
    print(
        f"p-values   {args.metrics[0]} {a} vs {b}: ranx seed 42 twice: {p1:.4f}, {p2:.4f} "
        f"({'identical' if p1 == p2 else 'different'}); stagewise seed 0: {ours.p_value:.4f}"
    )
    means_rx = rx["report"].results
    diffs = [
        abs(means_rx[name][m] - sw["result"].means[name][m])
        for name in means_rx
        for m in args.metrics
        if name in sw["result"].means
    ]
    print(f"means      largest |ranx - stagewise| over runs and metrics: {max(diffs):.2e}")


if __name__ == "__main__":
    main()
