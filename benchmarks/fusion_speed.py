"""Time rank fusion file to file: stagewise beside ranx 0.3.21, on 2 runs x ~7,000 queries x 1,000 docs.

Cases (targets from issue 4):

- RRF (rrf_k = 60) and min-max CombMNZ, file to file: stagewise at least 10x faster than ranx;
- BordaFuse, file to file: at least 30x faster;
- RRF of 2 runs x 1,000 queries x 100 docs, in memory (loaded runs in, a fused run out): at most 15 ms.

Issue 26: RRF of that pair within 2x its floor in CPU time, and peak memory <= 1.5x the two input files. The
floor is measured in the same run, in its own process: parse both files (the C parser behind ``read_run``),
join them per query on the document (the C hash join fusion uses), and format and write as many lines as the
inputs hold (13.96M, through the C TREC line printer; the fused run has 13.95M). RRF is timed three ways: in
memory (``read_run`` + ``fuse`` + ``write_fused``), in memory a block of 100 queries at a time (``read_run`` +
``fuse_blocks_to``), and on the stream engine (``fuse_to_file(..., engine="stream")``, a group of whole queries
at a time, read from the files). Times are CPU seconds of the process (user + system, all threads), which
the load of a shared machine disturbs less than wall time; both are printed.

"File to file" is reading both runs, fusing and writing the fused TREC run: stagewise's ``read_run`` +
``fuse`` + ``write_fused``; ranx's ``Run.from_file`` + ``fuse`` + ``Run.save``. Every tool and method runs
in its own fresh subprocess (so peak memory is its own), ranx after one untimed call of each method on tiny
data in the same process (numba warm: JIT compile time is not counted). A ranx process that exceeds
``--ranx-timeout`` is stopped; its time is then reported as a lower bound (``>``), which makes the ratio a
lower bound too. The script prints PASS/MISS for information and always exits 0: a benchmark, not a test.

The runs come from ../shared/bench/gen_msmarco_like.py --runs 2, generated once into --data
(bench-data/fusion_msmarco_like/, git-ignored).

    .venv/bin/python benchmarks/fusion_speed.py                       # everything (ranx takes ~25 minutes)
    .venv/bin/python benchmarks/fusion_speed.py --methods rrf --ranx-timeout 600
    .venv/bin/python benchmarks/fusion_speed.py --skip-ranx            # stagewise only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "bench-data" / "fusion_msmarco_like"
DEFAULT_GENERATOR = Path(__file__).resolve().parents[2] / "shared" / "bench" / "gen_msmarco_like.py"
RUNS = ("run0.txt", "run1.txt")
RESULT_MARK = "@@RESULT@@ "
GB = 1e9

# method label -> (stagewise method, stagewise norm, ranx method, ranx norm, target ratio)
METHODS = {
    "rrf": ("rrf", "none", "rrf", None, 10.0),
    "combmnz-minmax": ("combmnz", "minmax", "mnz", "min-max", 10.0),
    "bordafuse": ("bordafuse", "none", "bordafuse", None, 30.0),
}
IN_MEMORY = {"queries": 1000, "depth": 100, "target_ms": 15.0}
# Issue 26: RRF file to file within FLOOR_RATIO x the floor (CPU time), peak memory <= PEAK_RATIO x the input.
FLOOR_RATIO, PEAK_RATIO = 2.0, 1.5
STREAMED = ("rrf",)  # methods also timed a block of queries at a time, and on the stream engine


def _peak_rss_bytes() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# ----------------------------------------------------------------------------------------------- children
def child_stagewise(paths: list[str], label: str, out: str, progress: str) -> dict:
    method, norm = METHODS[label][0], METHODS[label][1]
    t0 = time.perf_counter()
    import stagewise
    from stagewise.fusion import fuse, write_fused

    read_run = stagewise.read_run
    t_import = time.perf_counter() - t0
    _progress(progress, "start")
    clock = _Clock()
    runs = [read_run(p) for p in paths]
    clock.mark("read")
    fused = fuse(runs, method, norm=norm)
    clock.mark("fuse")
    write_fused(fused, out, metadata=False)
    clock.mark("write")
    return {"import_s": t_import, **clock.result(), "rows": len(fused), "peak_rss": _peak_rss_bytes()}


def child_stream(paths: list[str], label: str, out: str, progress: str) -> dict:
    """The same fusion on the stream engine: both files read a group of whole queries at a time, each group
    fused and written before the next is read (``stagewise fuse --engine stream``)."""
    method, norm = METHODS[label][0], METHODS[label][1]
    from stagewise.fusion.writer import fuse_to_file

    _progress(progress, "start")
    clock = _Clock()
    info = fuse_to_file(paths, out, None, method, engine="stream", norm=norm)
    clock.mark("read+fuse+write")
    return {**clock.result(), "rows": info["n_results"], "peak_rss": _peak_rss_bytes()}


def child_blocks(paths: list[str], label: str, out: str, progress: str) -> dict:
    """The same fusion in memory, 100 queries at a time: both runs read whole (``read_run``), then each block
    of queries fused and written before the next (``stagewise.fusion.engine.fuse_blocks_to``)."""
    method, norm = METHODS[label][0], METHODS[label][1]
    import stagewise
    from stagewise.fusion.engine import fuse_blocks_to

    _progress(progress, "start")
    clock = _Clock()
    runs = [stagewise.read_run(p) for p in paths]
    clock.mark("read")
    with open(out, "wb") as fh:
        info = fuse_blocks_to(runs, fh, method, norm=norm)
    clock.mark("fuse+write")
    return {**clock.result(), "rows": info["n_results"], "peak_rss": _peak_rss_bytes()}


def child_floor(paths: list[str], out: str) -> dict:
    """What any fusion of these files must do, each step with the project's fastest code for it: parse both
    files (the C TREC parser behind ``read_run``), join them per query on the document (the C hash join
    fusion uses, no scoring), and format and write about as many lines as the fused run holds (the inputs'
    13.96M rows through the C TREC line printer, against 13.95M fused rows)."""
    import stagewise
    from stagewise.data.strings import StringSources
    from stagewise.fusion.join import cut, join
    from stagewise.fusion.table import select_queries
    from stagewise.fusion.writer import write_trec_lines

    clock = _Clock()
    runs = [stagewise.read_run(p) for p in paths]
    clock.mark("parse")
    query_ids = select_queries(runs, "union")
    strings = StringSources([run.docs for run in runs])
    joined = join([cut(run, query_ids, None) for run in runs], strings, strings.bases[:-1])
    clock.mark("join")
    with open(out, "wb") as fh:
        for run in runs:
            write_trec_lines(run, fh)
    clock.mark("format+write")
    return {**clock.result(), "rows": sum(len(run) for run in runs), "candidates": len(joined)}


class _Clock:
    """Wall and CPU seconds (this process, user + system) of consecutive phases."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.phases: dict[str, float] = {}
        self.phases_cpu: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.phases[phase], self.phases_cpu[phase] = wall - self.wall, cpu - self.cpu
        self.wall, self.cpu = wall, cpu

    def result(self) -> dict:
        return {
            "phases": self.phases,
            "phases_cpu": self.phases_cpu,
            "e2e_s": sum(self.phases.values()),
            "e2e_cpu_s": sum(self.phases_cpu.values()),
        }


def child_ranx(paths: list[str], label: str, out: str, progress: str) -> dict:
    import warnings

    warnings.filterwarnings("ignore")  # numba type-safety chatter
    method, norm = METHODS[label][2], METHODS[label][3]
    t0 = time.perf_counter()
    import ranx

    t_import = time.perf_counter() - t0
    # Numba warm: one untimed call of this method on tiny data, so JIT compile time is excluded.
    t0 = time.perf_counter()
    tiny = [ranx.Run({"q1": {"a": 0.5, "b": 0.2}, "q2": {"c": 0.3}}), ranx.Run({"q1": {"b": 0.9}, "q2": {"c": 0.1}})]
    ranx.fuse(tiny, method=method, norm=norm)
    t_warm = time.perf_counter() - t0
    _progress(progress, "start")
    t0 = time.perf_counter()
    runs = [ranx.Run.from_file(p, kind="trec") for p in paths]
    t1 = time.perf_counter()
    _progress(progress, "read", t1 - t0)
    fused = ranx.fuse(runs, method=method, norm=norm)
    t2 = time.perf_counter()
    _progress(progress, "fuse", t2 - t1)
    fused.save(out, kind="trec")
    t3 = time.perf_counter()
    return {
        "import_s": t_import,
        "warmup_s": t_warm,
        "phases": {"read": t1 - t0, "fuse": t2 - t1, "write": t3 - t2},
        "e2e_s": t3 - t0,
        "rows": sum(len(v) for v in fused.run.values()),
        "peak_rss": _peak_rss_bytes(),
    }


def _in_memory_frames(paths: list[str]):
    """The first IN_MEMORY["queries"] queries of each run, top IN_MEMORY["depth"] each, as polars frames."""
    import polars as pl

    lines = IN_MEMORY["queries"] * 1000  # the generator writes 1,000 lines per query
    frames = []
    for path in paths:
        frame = pl.read_csv(
            path,
            separator=" ",
            has_header=False,
            n_rows=lines,
            new_columns=["query_id", "q0", "doc_id", "rank", "score", "tag"],
            schema_overrides={"query_id": pl.String, "doc_id": pl.String},
        )
        frames.append(frame.filter(pl.col("rank") <= IN_MEMORY["depth"]).select("query_id", "doc_id", "score"))
    return frames


def child_memory(paths: list[str], tool: str, repeat: int) -> dict:
    """RRF of the two in-memory runs, ``repeat`` times: best and median milliseconds."""
    import warnings

    warnings.filterwarnings("ignore")
    frames = _in_memory_frames(paths)
    if tool == "stagewise":
        from stagewise import read_run
        from stagewise.fusion import fuse

        runs = [read_run(frame, name=f"run{i}") for i, frame in enumerate(frames)]

        def once():
            return len(fuse(runs, "rrf"))

    else:
        import ranx

        runs = []
        for frame in frames:
            nested: dict = {}
            for q, d, s in frame.iter_rows():
                nested.setdefault(q, {})[d] = s
            runs.append(ranx.Run(nested))
        ranx.fuse(runs, method="rrf", norm=None)  # warm

        def once():
            return len(ranx.fuse(runs, method="rrf", norm=None).run)

    import resource

    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(repeat):
        t0 = time.perf_counter()
        once()
        times.append(time.perf_counter() - t0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return {
        "best_ms": 1000 * min(times),
        "median_ms": 1000 * statistics.median(times),
        "page_faults_per_call": faults / repeat,  # fresh pages the allocator asked the kernel for
        "rows_in": sum(f.height for f in frames),
        "peak_rss": _peak_rss_bytes(),
    }


def _progress(path: str, phase: str, seconds: float | None = None) -> None:
    """Append a phase mark with its wall-clock time, so a stopped process still tells how far it got."""
    with open(path, "a") as fh:
        fh.write(json.dumps({"phase": phase, "at": time.time(), "seconds": seconds}) + "\n")


# ----------------------------------------------------------------------------------------------- parent
def ensure_data(data: Path, generator: Path) -> list[Path]:
    paths = [data / name for name in RUNS]
    if all(p.exists() for p in paths):
        return paths
    if not generator.exists():
        sys.exit(f"no cached runs in {data} and no generator at {generator}; pass --data or --generator")
    data.parent.mkdir(parents=True, exist_ok=True)
    print(f"generating 2 runs into {data} (once; about 20 s) ...", flush=True)
    subprocess.run([sys.executable, str(generator), "--runs", "2", "--out", str(data)], check=True)
    return paths


def run_child(args: list[str], timeout: float | None) -> tuple[dict | None, float | None]:
    """(result, lower bound in seconds when the child was stopped at ``timeout``)."""
    with tempfile.NamedTemporaryFile("w", suffix=".progress", delete=False) as fh:
        progress = fh.name
    cmd = [sys.executable, str(Path(__file__).resolve()), *args, "--progress", progress]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        stopped = time.time()
        marks = [json.loads(line) for line in Path(progress).read_text().splitlines() if line.strip()]
        start = next((m["at"] for m in marks if m["phase"] == "start"), None)
        os.unlink(progress)
        return None, (stopped - start) if start else None
    os.unlink(progress)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :]), None
    sys.stderr.write(done.stdout + done.stderr)
    return None, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with run0.txt and run1.txt")
    parser.add_argument("--generator", type=Path, default=DEFAULT_GENERATOR)
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--repeat", type=int, default=1, help="fresh stagewise processes per method (median)")
    parser.add_argument("--memory-repeat", type=int, default=30, help="in-memory RRF repetitions")
    parser.add_argument("--ranx-timeout", type=float, default=1200.0, help="seconds before a ranx process stops")
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        paths = [str(args.data / name) for name in RUNS]
        if args.child.startswith("memory-"):
            result = child_memory(paths, args.child.split("-", 1)[1], args.memory_repeat)
        elif args.child == "stagewise":
            result = child_stagewise(paths, args.label, args.out, args.progress)
        elif args.child == "blocks":
            result = child_blocks(paths, args.label, args.out, args.progress)
        elif args.child == "stream":
            result = child_stream(paths, args.label, args.out, args.progress)
        elif args.child == "floor":
            result = child_floor(paths, args.out)
        else:
            result = child_ranx(paths, args.label, args.out, args.progress)
        print(RESULT_MARK + json.dumps(result), flush=True)
        return

    paths = ensure_data(args.data, args.generator)
    data = ["--data", str(args.data)]
    size = sum(p.stat().st_size for p in paths) / 1e6
    print(f"data: {args.data} (2 runs, {size:.0f} MB)")
    results: dict = {"file_to_file": {}, "in_memory": {}, "input_bytes": sum(p.stat().st_size for p in paths)}
    with tempfile.TemporaryDirectory() as tmp:
        results["floor"], _ = run_child(["--child", "floor", "--out", str(Path(tmp) / "floor.run"), *data], None)
        _print_floor(results["floor"])
        for label in args.methods:
            row: dict = {}
            times = []
            for i in range(args.repeat):
                out = str(Path(tmp) / f"sw-{label}-{i}.run")
                result, _ = run_child(
                    ["--child", "stagewise", "--label", label, "--out", out, "--data", str(args.data)], None
                )
                if result:
                    times.append(result)
            if times:
                row["stagewise"] = sorted(times, key=lambda r: r["e2e_cpu_s"])[len(times) // 2]
            for way in ("blocks", "stream") if label in STREAMED else ():
                out = str(Path(tmp) / f"sw-{way}-{label}.run")
                row[f"stagewise-{way}"], _ = run_child(["--child", way, "--label", label, "--out", out, *data], None)
            if not args.skip_ranx:
                out = str(Path(tmp) / f"ranx-{label}.run")
                result, bound = run_child(
                    ["--child", "ranx", "--label", label, "--out", out, "--data", str(args.data)], args.ranx_timeout
                )
                row["ranx"] = result if result else {"lower_bound_s": bound}
            results["file_to_file"][label] = row
            _print_row(label, row)
        for tool in ("stagewise", *(() if args.skip_ranx else ("ranx",))):
            result, _ = run_child(
                ["--child", f"memory-{tool}", "--memory-repeat", str(args.memory_repeat), "--data", str(args.data)],
                None,
            )
            results["in_memory"][tool] = result
    _summary(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def _print_row(label: str, row: dict) -> None:
    for tool in ("stagewise", "stagewise-blocks", "stagewise-stream"):
        sw = row.get(tool)
        if sw:
            phases = ", ".join(f"{k} {sw['phases_cpu'][k]:.2f}" for k in sw["phases"])
            print(
                f"{label}: {tool} {sw['e2e_s']:.2f} s wall, {sw['e2e_cpu_s']:.2f} s CPU (CPU: {phases}; "
                f"{sw['rows']:,} rows; peak {sw['peak_rss'] / GB:.2f} GB)"
            )
    rx = row.get("ranx")
    if rx and "e2e_s" in rx:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in rx["phases"].items())
        print(f"{label}: ranx      {rx['e2e_s']:.2f} s ({phases}; peak {rx['peak_rss'] / GB:.2f} GB)")
    elif rx:
        print(f"{label}: ranx      stopped after {rx['lower_bound_s']:.0f} s of timed work (lower bound)")
    sys.stdout.flush()


def _print_floor(floor: dict | None) -> None:
    if floor:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in floor["phases_cpu"].items())
        print(f"floor: {floor['e2e_cpu_s']:.2f} s CPU ({phases}; {floor['rows']:,} lines formatted)")
        sys.stdout.flush()


def _floor_verdicts(results: dict) -> None:
    """RRF against issue 26's targets: CPU time within FLOOR_RATIO x the floor measured in this run, peak
    memory within PEAK_RATIO x the two input files."""
    floor, row = results.get("floor"), results["file_to_file"].get("rrf", {})
    if not floor or not row:
        return
    floor_s, input_bytes = floor["e2e_cpu_s"], results["input_bytes"]
    print(
        f"\nRRF against its floor ({floor_s:.2f} s CPU: two parses, a per-query join, formatting "
        f"{floor['rows']:,} lines) and its input ({input_bytes / GB:.2f} GB):"
    )
    print(f"  {'path':<18}{'CPU':>8}{'x floor':>9}{'peak':>9}{'x input':>9}  verdict")
    for tool in ("stagewise", "stagewise-blocks", "stagewise-stream"):
        sw = row.get(tool)
        if not sw:
            continue
        speed, memory = sw["e2e_cpu_s"] / floor_s, sw["peak_rss"] / input_bytes
        verdict = (
            f"speed {'PASS' if speed <= FLOOR_RATIO else 'MISS'} (<= {FLOOR_RATIO:g}x), "
            f"memory {'PASS' if memory <= PEAK_RATIO else 'MISS'} (<= {PEAK_RATIO:g}x)"
        )
        print(
            f"  {tool:<18}{sw['e2e_cpu_s']:>7.2f}s{speed:>8.2f}x{sw['peak_rss'] / GB:>7.2f}GB{memory:>8.2f}x  {verdict}"
        )


def _summary(results: dict) -> None:
    _floor_verdicts(results)
    print("\nfile to file (read both runs, fuse, write TREC):")
    print(f"  {'method':<16}{'stagewise':>12}{'ranx':>14}{'ratio':>10}{'target':>9}  verdict")
    for label, row in results["file_to_file"].items():
        target = METHODS[label][4]
        sw, rx = row.get("stagewise"), row.get("ranx")
        if not sw:
            continue
        if not rx:
            print(f"  {label:<16}{sw['e2e_s']:>11.2f}s{'-':>14}{'-':>10}{target:>8.0f}x  (ranx skipped)")
            continue
        exact = "e2e_s" in rx
        ranx_s = rx["e2e_s"] if exact else rx["lower_bound_s"]
        if ranx_s is None:
            print(f"  {label:<16}{sw['e2e_s']:>11.2f}s{'?':>14}")
            continue
        ratio = ranx_s / sw["e2e_s"]
        mark = "" if exact else ">"
        verdict = "PASS" if ratio >= target else ("MISS" if exact else "MISS (bound)")
        print(
            f"  {label:<16}{sw['e2e_s']:>11.2f}s{mark + f'{ranx_s:.1f}s':>14}{mark + f'{ratio:.1f}x':>10}"
            f"{target:>8.0f}x  {verdict}"
        )
    memory = results["in_memory"]
    sw = memory.get("stagewise")
    if sw:
        target = IN_MEMORY["target_ms"]
        verdict = "PASS" if sw["median_ms"] <= target else "MISS"
        line = (
            f"\nin memory, RRF of 2 runs x {IN_MEMORY['queries']} queries x {IN_MEMORY['depth']} docs "
            f"({sw['rows_in']:,} rows in): stagewise median {sw['median_ms']:.1f} ms, best {sw['best_ms']:.1f} ms "
            f"({sw.get('page_faults_per_call', 0):,.0f} page faults a call); "
            f"target median <= {target:.0f} ms: {verdict}"
        )
        rx = memory.get("ranx")
        if rx:
            line += f"\n  ranx (warm) best {rx['best_ms']:.1f} ms, median {rx['median_ms']:.1f} ms"
            line += f" ({rx['median_ms'] / sw['median_ms']:.1f}x stagewise's median)"
        print(line)


if __name__ == "__main__":
    main()
