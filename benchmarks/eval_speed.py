"""Time file-to-means evaluation: stagewise vs pytrec-eval-terrier vs ranx on an MS MARCO-dev-shaped pair.

The pair (6,980 queries x 1,000 docs, ~7M run lines) is generated once by
../shared/bench/gen_msmarco_like.py and cached under --data. Every tool, and every repetition, runs in its
own fresh subprocess so that its peak resident memory is its own. Targets are printed as PASS/MISS for
information only: this is a benchmark, not a test, and it exits 0 whatever the numbers are.

Run ``python benchmarks/eval_speed.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "bench-data" / "msmarco_like"
DEFAULT_GENERATOR = Path(__file__).resolve().parents[2] / "shared" / "bench" / "gen_msmarco_like.py"
QRELS_FILE, RUN_FILE = "qrels.txt", "run0.txt"
TOOLS = ("stagewise", "pytrec", "ranx")
LABELS = {"stagewise": "stagewise", "pytrec": "pytrec-eval-terrier", "ranx": "ranx 0.3.21"}
METRICS = ("map", "ndcg@10", "recall@1000", "mrr@10")
PYTREC_MEASURES = {"map": "map", "ndcg@10": "ndcg_cut_10", "recall@1000": "recall_1000", "mrr@10": "recip_rank"}
RESULT_MARK = "@@RESULT@@ "
GB = 1e9  # decimal gigabytes

# Targets from the issue: stagewise end to end >= 4x faster than pytrec-eval-terrier and >= 10x faster than
# ranx; peak RSS <= 0.6 GB; evaluation of the loaded pair <= 0.3 s; import <= 0.3 s; first call <= 1.2x second.
TARGET_VS_PYTREC = 4.0
TARGET_VS_RANX = 10.0
TARGET_PEAK_GB = 0.6
TARGET_EVAL_S = 0.3
TARGET_IMPORT_S = 0.3
TARGET_FIRST_OVER_SECOND = 1.2


# --------------------------------------------------------------------------------------------------- children
def _peak_rss_bytes() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB, macOS bytes


def _current_rss_bytes() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().memory_info().rss


def child_stagewise(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    import stagewise

    # Resolve the lazily loaded public names now, so their module imports count as import, not as reading.
    read_qrels, read_run, evaluate = stagewise.read_qrels, stagewise.read_run, stagewise.evaluate
    t_import = time.perf_counter() - t0
    rss_import = _current_rss_bytes()

    t0 = time.perf_counter()
    q = read_qrels(qrels_path)
    t_qrels = time.perf_counter() - t0
    t1 = time.perf_counter()
    r = read_run(run_path)
    t_run = time.perf_counter() - t1
    t2 = time.perf_counter()
    res = evaluate(q, r, list(METRICS), missing="skip")
    means = dict(res.means[r.name])
    t3 = time.perf_counter()
    # "No warm-up": the timed call above is the process's first evaluate(); repeat it on the same objects.
    t4 = time.perf_counter()
    res2 = evaluate(q, r, list(METRICS), missing="skip")
    _ = res2.means[r.name]
    t5 = time.perf_counter()
    return {
        "import_s": t_import,
        "load_s": t_qrels + t_run,
        "eval_s": t3 - t2,
        "e2e_s": t3 - t0,
        "phases": {"read_qrels": t_qrels, "read_run": t_run, "evaluate (1st)": t3 - t2, "evaluate (2nd)": t5 - t4},
        "second_eval_s": t5 - t4,
        "means": {m: float(v) for m, v in means.items()},
        "n_queries": len(res.runs[0].query_ids) if hasattr(res, "runs") else None,
        "rss_import": rss_import,
        "peak_rss": _peak_rss_bytes(),
    }


def child_pytrec(qrels_path: str, run_path: str) -> dict:
    t0 = time.perf_counter()
    import pytrec_eval

    t_import = time.perf_counter() - t0
    rss_import = _current_rss_bytes()

    t0 = time.perf_counter()
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    t1 = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "recall.1000", "recip_rank"})
    per_query = evaluator.evaluate(run)
    means = {m: statistics.fmean(v[PYTREC_MEASURES[m]] for v in per_query.values()) for m in METRICS}
    t2 = time.perf_counter()

    # pytrec_eval has no RR@10: recompute recip_rank on the run cut to its top 10 per query (trec_eval order:
    # score descending, then doc id descending). Not part of the timed end-to-end figure.
    t3 = time.perf_counter()
    top10 = {q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:10]) for q, docs in run.items()}
    rr10 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    recip_rank_full = means["mrr@10"]
    means["mrr@10"] = statistics.fmean(v["recip_rank"] for v in rr10.values())
    t4 = time.perf_counter()
    return {
        "import_s": t_import,
        "load_s": t1 - t0,
        "eval_s": t2 - t1,
        "e2e_s": t2 - t0,
        "rr10_extra_s": t4 - t3,
        "recip_rank_full": recip_rank_full,
        "means": means,
        "n_queries": len(per_query),
        "rss_import": rss_import,
        "peak_rss": _peak_rss_bytes(),
    }


def child_ranx(qrels_path: str, run_path: str) -> dict:
    import warnings

    warnings.filterwarnings("ignore")  # numba type-safety chatter
    t0 = time.perf_counter()
    import ranx

    t_import = time.perf_counter() - t0
    rss_import = _current_rss_bytes()

    # Numba cache warm: one untimed call on tiny data in this process, so JIT compile time is excluded.
    t0 = time.perf_counter()
    tiny_q = ranx.Qrels({"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}})
    tiny_r = ranx.Run({"q1": {"d1": 0.5, "d2": 0.7, "d9": 0.1}, "q2": {"d3": 0.2, "d4": 0.9}})
    ranx.evaluate(tiny_q, tiny_r, list(METRICS))
    t_warm = time.perf_counter() - t0

    t0 = time.perf_counter()
    qrels = ranx.Qrels.from_file(qrels_path, kind="trec")
    run = ranx.Run.from_file(run_path, kind="trec")
    t1 = time.perf_counter()
    means = ranx.evaluate(qrels, run, list(METRICS))
    t2 = time.perf_counter()
    return {
        "import_s": t_import,
        "warmup_s": t_warm,
        "load_s": t1 - t0,
        "eval_s": t2 - t1,
        "e2e_s": t2 - t0,
        "means": {m: float(v) for m, v in means.items()},
        "n_queries": len(run),
        "rss_import": rss_import,
        "peak_rss": _peak_rss_bytes(),
    }


def child_profile(qrels_path: str, run_path: str, top: int) -> None:
    """cProfile the stagewise path (import excluded) and print the top functions by cumulative time."""
    import cProfile
    import pstats

    import stagewise

    read_qrels, read_run, evaluate = stagewise.read_qrels, stagewise.read_run, stagewise.evaluate
    prof = cProfile.Profile()
    prof.enable()
    q = read_qrels(qrels_path)
    r = read_run(run_path)
    evaluate(q, r, list(METRICS), missing="skip").means[r.name]
    prof.disable()
    stats = pstats.Stats(prof, stream=sys.stdout).strip_dirs()
    print(f"cProfile of stagewise read_qrels + read_run + evaluate (top {top} by cumulative time)")
    stats.sort_stats("cumulative").print_stats(top)
    print(f"cProfile of the same (top {top} by own time)")
    stats.sort_stats("tottime").print_stats(top)


CHILDREN = {"stagewise": child_stagewise, "pytrec": child_pytrec, "ranx": child_ranx}


# ----------------------------------------------------------------------------------------------------- parent
def ensure_data(data: Path, generator: Path) -> tuple[Path, Path]:
    qrels, run = data / QRELS_FILE, data / RUN_FILE
    if qrels.is_file() and run.is_file():
        print(f"data: using cached {data}")
        return qrels, run
    if not generator.is_file():
        sys.exit(
            f"error: the benchmark data is not in {data} and the generator {generator} is missing "
            f"({generator.parent} absent?). Pass --generator PATH to gen_msmarco_like.py, or put "
            f"{QRELS_FILE} and {RUN_FILE} in --data."
        )
    print(f"data: generating into {data} with {generator} (takes ~10 s) ...", flush=True)
    data.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=data.parent))
    try:
        subprocess.run([sys.executable, str(generator), "--out", str(tmp)], check=True, stdout=subprocess.DEVNULL)
        data.mkdir(parents=True, exist_ok=True)
        for name in (QRELS_FILE, RUN_FILE):  # move the finished files in, so a half-written pair is never cached
            os.replace(tmp / name, data / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return qrels, run


def run_child(tool: str, qrels: Path, run: Path, timeout: float) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", tool, str(qrels), str(run)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {tool}: timed out after {timeout:.0f} s")
        return None
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :])
    print(f"  {tool}: failed (exit {proc.returncode})\n{proc.stderr[-3000:]}")
    return None


def import_times(n: int) -> tuple[list[float], list[float]]:
    """`import stagewise` in a fresh interpreter, and `import stagewise` + resolving evaluate/read_run/read_qrels."""
    bare = "import time; t = time.perf_counter(); import stagewise; print(time.perf_counter() - t)"
    full = (
        "import time; t = time.perf_counter(); import stagewise; "
        "stagewise.evaluate, stagewise.read_run, stagewise.read_qrels; print(time.perf_counter() - t)"
    )
    out: tuple[list[float], list[float]] = ([], [])
    for _ in range(n):
        for code, sink in ((bare, out[0]), (full, out[1])):
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            sink.append(float(proc.stdout.strip()))
    return out


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(
            "Benchmark file-to-means evaluation of map, ndcg@10, recall@1000 and mrr@10 on a synthetic "
            "MS MARCO-dev-shaped qrels/run pair (6,980 queries x 1,000 docs): stagewise vs pytrec-eval-terrier "
            "vs ranx 0.3.21. Each tool and each repetition runs in a fresh subprocess; peak RSS is per process."
        ),
        epilog=(
            "Needs the bench extra: pip install -e '.[bench]' (ranx==0.3.21, pytrec-eval-terrier, psutil). "
            "Targets are reported as PASS/MISS for information; the script always exits 0 once it has run."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder caching qrels.txt and run0.txt")
    parser.add_argument(
        "--generator", type=Path, default=DEFAULT_GENERATOR, help="gen_msmarco_like.py used when --data is empty"
    )
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process repetitions per tool (best and median)")
    parser.add_argument(
        "--tools", nargs="+", choices=TOOLS, default=list(TOOLS), help="tools to run (ratios need stagewise)"
    )
    parser.add_argument("--import-repeat", type=int, default=5, help="fresh interpreters for the import time")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per child process")
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of the stagewise path (one extra process)"
    )
    parser.add_argument("--profile-top", type=int, default=20, help="rows of the cProfile listing")
    parser.add_argument("--json", type=Path, help="also write every raw measurement to this JSON file")
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "QRELS", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        tool, qrels_path, run_path = args.child
        if tool == "profile":
            child_profile(qrels_path, run_path, args.profile_top)
            return 0
        print(RESULT_MARK + json.dumps(CHILDREN[tool](qrels_path, run_path)), flush=True)
        return 0
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    qrels, run = ensure_data(args.data, args.generator)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {args.repeat} fresh process(es) per tool")

    results: dict[str, list[dict]] = {}
    for tool in args.tools:
        print(f"running {LABELS[tool]} ...", flush=True)
        got = [res for _ in range(args.repeat) if (res := run_child(tool, qrels, run, args.timeout)) is not None]
        if got:
            results[tool] = got

    imp_bare: list[float] = []
    imp_full: list[float] = []
    if "stagewise" in args.tools:
        imp_bare, imp_full = import_times(args.import_repeat)

    report(results, imp_bare, imp_full, args.repeat)

    if args.profile and "stagewise" in args.tools:
        print()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "profile", str(qrels), str(run)]
        subprocess.run([*cmd, "--profile-top", str(args.profile_top)], check=False)

    if args.json:
        raw = {"results": results, "import_s": imp_bare, "import_full_s": imp_full}
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


def report(results: dict[str, list[dict]], imp_bare: list[float], imp_full: list[float], repeat: int) -> None:
    def med(tool: str, key: str) -> float | None:
        vals = [r[key] for r in results.get(tool, []) if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def best(tool: str, key: str) -> float | None:
        vals = [r[key] for r in results.get(tool, []) if r.get(key) is not None]
        return min(vals) if vals else None

    print()
    print(f"Timings in seconds, median of {repeat} fresh processes (best in brackets); peak RSS is the max, GB = 1e9 B")
    header = f"{'tool':<21}{'end-to-end':>18}{'load':>9}{'eval':>9}{'import':>9}{'peak GB':>9}{'RSS@import':>12}"
    print(header)
    print("-" * len(header))
    for tool in TOOLS:
        if tool not in results:
            continue
        e2e = f"{fmt(med(tool, 'e2e_s'))} ({fmt(best(tool, 'e2e_s'))})"
        peak = max(r["peak_rss"] for r in results[tool]) / GB
        rss_imp = med(tool, "rss_import")
        print(
            f"{LABELS[tool]:<21}{e2e:>18}{fmt(med(tool, 'load_s')):>9}{fmt(med(tool, 'eval_s'), '.3f'):>9}"
            f"{fmt(med(tool, 'import_s')):>9}{peak:>9.2f}{fmt(None if rss_imp is None else rss_imp / GB):>12}"
        )
    print("end-to-end = reading both files + evaluating + means (library import excluded, shown separately).")
    if "ranx" in results:
        print(
            f"ranx: numba cache warm: one untimed evaluate() on tiny data first in the same process "
            f"(took {fmt(med('ranx', 'warmup_s'))} s), so JIT compilation is excluded from its timings; "
            "its peak RSS includes the JIT."
        )
    if "pytrec" in results:
        print(
            "pytrec-eval-terrier: timed with {map, ndcg_cut.10, recall.1000, recip_rank}; it has no RR@10, so mrr@10 "
            f"below is recip_rank from a second evaluator on the run cut to 10 docs/query (untimed, "
            f"{fmt(med('pytrec', 'rr10_extra_s'))} s extra)."
        )

    # ---- per-phase breakdown for stagewise
    if "stagewise" in results:
        print()
        print("stagewise phases (median s):")
        for phase in results["stagewise"][0]["phases"]:
            vals = [r["phases"][phase] for r in results["stagewise"]]
            print(f"  {phase:<16}{statistics.median(vals):>8.3f}")

    # ---- agreement
    print()
    tools = [t for t in TOOLS if t in results]
    print("means (first repetition), 4 decimals:")
    print(f"{'metric':<14}" + "".join(f"{LABELS[t]:>22}" for t in tools) + "   agree")
    disagreements = 0
    for m in METRICS:
        vals = {t: results[t][0]["means"].get(m) for t in tools}
        ref = next((v for v in vals.values() if v is not None), None)
        ok = all(v is not None and ref is not None and abs(v - ref) <= 1e-4 for v in vals.values())
        disagreements += not ok
        print(f"{m:<14}" + "".join(f"{fmt(vals[t], '.4f'):>22}" for t in tools) + f"   {'ok' if ok else 'DIFF'}")
    if "pytrec" in results:
        full_rr = results["pytrec"][0]["recip_rank_full"]
        print(f"{'(recip_rank)':<14}" + "".join(f"{fmt(full_rr, '.4f') if t == 'pytrec' else '':>22}" for t in tools))
    counts = {LABELS[t]: results[t][0].get("n_queries") for t in tools}
    print(f"queries evaluated: {counts}")
    print(
        "conventions: all three use linear-gain nDCG (trec_eval's; ranx's exp-gain variant is ndcg_burges) and "
        "rank by score descending. Tied scores: trec_eval/pytrec and stagewise (ties='docid') break them by doc "
        "id descending, ranx keeps its own order, so a run with judged docs in ties can show a small ranx DIFF "
        "(this synthetic run has ~100 within-query tied pairs, all harmless at 4 decimals when last checked). "
        "stagewise runs with missing='skip' (mean over queries in both files, as pytrec and ranx do)."
    )
    print("agreement: " + ("all metrics agree within 1e-4" if not disagreements else f"{disagreements} DIFF row(s)"))

    # ---- ratios and targets
    if "stagewise" not in results:
        return
    print()
    sw_e2e = med("stagewise", "e2e_s")
    rows: list[tuple[str, str, bool]] = []
    for tool, target in (("pytrec", TARGET_VS_PYTREC), ("ranx", TARGET_VS_RANX)):
        if tool in results and sw_e2e:
            ratio = med(tool, "e2e_s") / sw_e2e
            value = f"{ratio:.2f}x (target >= {target:g}x)"
            rows.append((f"{LABELS[tool]} / stagewise end to end", value, ratio >= target))
    peak = max(r["peak_rss"] for r in results["stagewise"]) / GB
    rows.append(("stagewise peak RSS", f"{peak:.2f} GB (target <= {TARGET_PEAK_GB} GB)", peak <= TARGET_PEAK_GB))
    ev = med("stagewise", "eval_s")
    rows.append(("stagewise eval of loaded pair", f"{ev:.3f} s (target <= {TARGET_EVAL_S} s)", ev <= TARGET_EVAL_S))
    if imp_bare:
        imp = statistics.median(imp_bare)
        rows.append(
            (
                f"import stagewise (median of {len(imp_bare)})",
                f"{imp:.3f} s (target <= {TARGET_IMPORT_S} s)",
                imp <= TARGET_IMPORT_S,
            )
        )
    first_second = statistics.median(r["eval_s"] / r["second_eval_s"] for r in results["stagewise"])
    rows.append(
        (
            "first evaluate() / second",
            f"{first_second:.2f}x (target <= {TARGET_FIRST_OVER_SECOND}x)",
            first_second <= TARGET_FIRST_OVER_SECOND,
        )
    )
    print("targets (informational):")
    for name, value, ok in rows:
        print(f"  {verdict(ok)}  {name:<46}{value}")
    if imp_full:
        print(
            f"  (info) import stagewise + resolving evaluate/read_run/read_qrels: "
            f"{statistics.median(imp_full):.3f} s median"
        )


if __name__ == "__main__":
    sys.exit(main())
