"""Evaluation bound by the parse and linear in the run: ``stagewise eval`` against its peers and a C floor.

What is timed: a whole process, from start to exit, that reads a qrels file and a run file (TREC text) and
prints the means of map, ndcg@10, recall@1000 and RR@10 (trec_eval's order of ties; queries without results
skipped, trec_eval's default). CPU time (user + system, from ``wait4``) is the figure that counts, so the
load of a shared machine matters less; wall time and peak resident memory are printed beside it.
stagewise's modules are byte-compiled first (``compileall``), as an installed wheel's are, so a checkout run
with ``PYTHONDONTWRITEBYTECODE`` does not compile them at every start; the pairs are derived in a child process,
so this process stays small (a child's peak memory, ``ru_maxrss``, counts its parent's at fork).

The tools: ``stagewise eval`` (the CLI, in a fresh process), pytrec_eval, ranx and ir_measures (each reading the
same files its own way), trec_eval's C binary (built here with -O3 from its source when ``--trec-eval-src``
or ``$TREC_EVAL_SRC`` names a checkout), and a C parse floor built here: one pass over the run that keeps the
columns evaluation needs (query code, doc id bytes and offsets, score, rank, a 64-bit key), the least any
reader of the file must do.

The pairs: the 1x pair (6,980 queries x 1,000 results) from ``../shared/bench/gen_msmarco_like.py``, its
query ids in byte order (``q1000``...), and copies of it: the same rows under numeric query ids
(``1``...``6980``, grouped in numeric order as MS MARCO's runs are, which is not byte order), and 10x pairs
(69,800 queries, 2.7 GB) with both kinds of ids. The peers run on the 1x pairs only unless ``--peers-at-10x``
(ranx and ir_measures need tens of GB there).

Verdicts (issue #26): stagewise >= 10x pytrec_eval's CPU time at 1x; its 10x CPU time <= 11x its 1x for both
kinds of ids; its peak memory <= 1.2x the run file's size. Printed PASS/MISS; the script exits 0 whatever
they say. Every tool's means are compared with stagewise's (RR@10: pytrec_eval has no cut-off, so its
recip_rank is over the whole list and not compared).

    python benchmarks/eval_speed.py                      # everything: 1x and 10x, both kinds of ids
    python benchmarks/eval_speed.py --scales 1           # the 1x pairs only
    python benchmarks/eval_speed.py --help
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO.parent / "shared" / "bench" / "gen_msmarco_like.py"
DEFAULT_DATA = Path(os.environ.get("TMPDIR", "/tmp")) / "stagewise-eval-speed"
METRICS = ("map", "ndcg@10", "recall@1000", "mrr@10")
COMPARED = ("map", "ndcg@10", "recall@1000")  # every tool has these exactly; RR@10 where it has it
TARGET_VS_PYTREC, TARGET_GROWTH, TARGET_PEAK = 10.0, 11.0, 1.2
MB = 1e6

FLOOR_C = r"""
/* The floor: one pass over a TREC run keeping what evaluation needs, and nothing else done. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static double number(const char *s, const char *e) {  /* short decimals exactly; others by strtod */
    uint64_t m = 0; int frac = -1, neg = *s == '-';
    static const double p10[] = {1,1e1,1e2,1e3,1e4,1e5,1e6,1e7,1e8,1e9,1e10,1e11,1e12,1e13,1e14,1e15};
    const char *c = s + (neg || *s == '+');
    for (; c < e; c++) {
        if (*c >= '0' && *c <= '9') { m = m * 10 + (uint64_t)(*c - '0'); if (frac >= 0) frac++; }
        else if (*c == '.' && frac < 0) frac = 0;
        else break;
    }
    if (c == e && frac <= 15 && m < (1ULL << 53)) return (neg ? -1.0 : 1.0) * (double)m / p10[frac < 0 ? 0 : frac];
    char t[64]; size_t n = (size_t)(e - s) < 63 ? (size_t)(e - s) : 63; memcpy(t, s, n); t[n] = 0;
    return strtod(t, NULL);
}
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    fseek(f, 0, SEEK_END); size_t size = (size_t)ftell(f); fseek(f, 0, SEEK_SET);
    size_t rows_cap = size / 32 + 1, bytes_cap = size / 4 + 1, n = 0, nb = 0, nq = 0;
    int32_t *q = malloc(rows_cap * 4), *rank = malloc(rows_cap * 4);
    int64_t *off = malloc((rows_cap + 1) * 8); double *score = malloc(rows_cap * 8);
    uint64_t *key = malloc(rows_cap * 8); char *docs = malloc(bytes_cap), last[256] = "";
    size_t cap = 16 << 20, held = 0, got; char *buf = malloc(cap);
    off[0] = 0;
    while ((got = fread(buf + held, 1, cap - held, f)) > 0 || held) {
        held += got;
        char *end = buf + held, *p = buf, *stop = got ? memrchr(buf, '\n', held) : end;
        if (!stop) stop = end; else if (got) stop++;
        while (p < stop) {
            char *eol = memchr(p, '\n', (size_t)(stop - p)); if (!eol) eol = stop;
            char *s[6], *e[6]; int k = 0; char *c = p;
            while (k < 6) {
                while (c < eol && (*c == ' ' || *c == '\t')) c++;
                if (c >= eol) break;
                s[k] = c; while (c < eol && *c != ' ' && *c != '\t') c++; e[k++] = c;
            }
            p = eol + 1;
            if (k < 6) continue;
            size_t ql = (size_t)(e[0] - s[0]);
            if (ql > 255) ql = 255;
            if (strlen(last) != ql || memcmp(last, s[0], ql)) { memcpy(last, s[0], ql); last[ql] = 0; nq++; }
            size_t dl = (size_t)(e[2] - s[2]);
            if (n + 1 >= rows_cap) {  /* a hint too small: grow every column */
                rows_cap *= 2;
                q = realloc(q, rows_cap * 4); rank = realloc(rank, rows_cap * 4); off = realloc(off, rows_cap * 8 + 8);
                score = realloc(score, rows_cap * 8); key = realloc(key, rows_cap * 8);
                if (!q || !rank || !off || !score || !key) { perror("floor"); return 1; }
            }
            if (nb + dl > bytes_cap) {
                bytes_cap = 2 * (nb + dl); docs = realloc(docs, bytes_cap);
                if (!docs) { perror("floor"); return 1; }
            }
            memcpy(docs + nb, s[2], dl); nb += dl;
            off[n + 1] = (int64_t)nb; score[n] = number(s[4], e[4]); rank[n] = atoi(s[3]);
            uint64_t h = 1469598103934665603ULL;
            for (char *x = s[0]; x < e[0]; x++) h = (h ^ (unsigned char)*x) * 1099511628211ULL;
            for (char *x = s[2]; x < e[2]; x++) h = (h ^ (unsigned char)*x) * 1099511628211ULL;
            key[n] = h; q[n] = (int32_t)nq; n++;
        }
        held = (size_t)(end - stop); memmove(buf, stop, held);
        if (!got) break;
    }
    printf("%zu rows, %zu queries, %zu doc bytes\n", n, nq, nb);
    return 0;
}
"""


# ----------------------------------------------------------------------------------------------- the data
def ensure_pairs(data: Path, scales: list[int]) -> dict[str, tuple[Path, Path]]:
    """The pairs, generated once: ``x1-bytes`` from the generator, the others derived from it."""
    base = data / "x1-bytes"
    if not (base / "run0.txt").exists():
        if not GENERATOR.exists():
            sys.exit(f"eval_speed: the generator {GENERATOR} is missing")
        print(f"generating the 1x pair under {base} (once)...", flush=True)
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(base)], check=True, stdout=subprocess.DEVNULL)
    pairs = {"x1-bytes": (base / "qrels.txt", base / "run0.txt")}
    for scale, ids in itertools.product(scales, ("bytes", "numeric")):
        name = f"x{scale}-{ids}"
        if name != "x1-bytes":
            pairs[name] = derive(base, data / name, scale, ids)
    return {name: pairs[name] for name in sorted(pairs, key=lambda n: (int(n[1:].split("-")[0]), n))}


def derive(base: Path, out: Path, copies: int, ids: str) -> tuple[Path, Path]:
    """``copies`` copies of the 1x pair, each query renamed: byte-ordered ``q<k>_<id>``, or numeric ``1``...
    ``N`` in file order (not byte order: ``10`` sorts before ``9``). Query blocks move whole."""
    qrels, run = out / "qrels.txt", out / "run0.txt"
    if run.exists():
        return qrels, run
    print(f"deriving {out.name} ({copies} cop{'y' if copies == 1 else 'ies'}, {ids} ids), once...", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    for source, target in ((base / "qrels.txt", qrels), (base / "run0.txt", run)):
        blocks = query_blocks(source.read_bytes())
        order = {q: i for i, q in enumerate(dict.fromkeys(q for q, _ in blocks))}
        partial = target.with_suffix(".partial")
        with partial.open("wb") as sink:
            for k in range(copies):
                for query, block in blocks:
                    new = f"q{k}_{query.decode()[1:]}" if ids == "bytes" else str(k * len(order) + order[query] + 1)
                    sink.write((b"\n" + block).replace(b"\n" + query + b" ", b"\n" + new.encode() + b" ")[1:])
        partial.rename(target)
    return qrels, run


def query_blocks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(query id, its lines) for each block of consecutive lines of one query."""
    blocks, start = [], 0
    while start < len(data):
        query = data[start : data.index(b" ", start)]
        end, step = start, 1024
        while True:  # gallop to the first line of another query
            probe = data.rfind(b"\n", start, min(len(data), end + step)) + 1
            if probe <= end or probe >= len(data) or not data.startswith(query + b" ", probe):
                break
            end, step = probe, step * 2
        nxt = data.find(b"\n", end) + 1 or len(data)
        while nxt < len(data) and data.startswith(query + b" ", nxt):
            nxt = data.find(b"\n", nxt) + 1 or len(data)
        blocks.append((query, data[start:nxt]))
        start = nxt
    return blocks


# --------------------------------------------------------------------------------------------- the tools
def byte_compile() -> str:
    """stagewise's modules compiled to bytecode, as pip does when it installs a wheel: a source checkout run
    with PYTHONDONTWRITEBYTECODE set (as some machines are) would compile ~50 modules again at every start."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("stagewise")
    if spec is None or spec.origin is None:
        return "not found"
    folder = Path(spec.origin).parent
    if not os.access(folder, os.W_OK):
        return f"{folder} (read-only, left as installed)"
    compileall.compile_dir(str(folder), quiet=1)
    return str(folder)


def build(data: Path, trec_eval_src: Path | None) -> dict[str, Path | None]:
    """The C floor and trec_eval, compiled with -O3 (``None`` when there is no compiler or no source)."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    built: dict[str, Path | None] = {"floor": None, "trec_eval": None}
    if cc is None:
        return built
    floor = data / "floor"
    if not floor.exists():
        (data / "floor.c").write_text(FLOOR_C)
        subprocess.run([cc, "-O3", "-o", str(floor), str(data / "floor.c")], check=True)
    built["floor"] = floor
    if trec_eval_src is not None and (trec_eval_src / "trec_eval.c").exists():
        target = data / "trec_eval-build"
        if not (target / "trec_eval").exists():
            shutil.copytree(trec_eval_src, target, dirs_exist_ok=True)
            flags = '-O3 -I. -w -DVERSIONID=\\"bench\\"'
            subprocess.run(["make", "-s", "-C", str(target), "clean"], capture_output=True)
            subprocess.run(["make", "-s", "-C", str(target), f"CFLAGS={flags}", "trec_eval"], check=True)
        built["trec_eval"] = target / "trec_eval"
    return built


def child(tool: str, qrels: str, run: str) -> None:
    """A peer in its own process: read both files its own way, print the means as JSON."""
    if tool == "pytrec":
        import pytrec_eval

        with open(qrels) as q, open(run) as r:
            judged, ranked = pytrec_eval.parse_qrel(q), pytrec_eval.parse_run(r)
        names = {"map": "map", "ndcg@10": "ndcg_cut_10", "recall@1000": "recall_1000"}
        per_query = pytrec_eval.RelevanceEvaluator(judged, {"map", "ndcg_cut.10", "recall.1000"}).evaluate(ranked)
        means = {m: sum(v[p] for v in per_query.values()) / len(per_query) for m, p in names.items()}
    elif tool == "ranx":
        import warnings

        warnings.filterwarnings("ignore")
        import ranx

        judged, ranked = ranx.Qrels.from_file(qrels, kind="trec"), ranx.Run.from_file(run, kind="trec")
        means = {m: float(v) for m, v in ranx.evaluate(judged, ranked, list(METRICS)).items()}
    else:
        import ir_measures
        from ir_measures import AP, RR, R, nDCG

        chosen = {"map": AP, "ndcg@10": nDCG @ 10, "recall@1000": R @ 1000, "mrr@10": RR @ 10}
        found = ir_measures.calc_aggregate(
            list(chosen.values()), ir_measures.read_trec_qrels(qrels), ir_measures.read_trec_run(run)
        )
        means = {m: float(found[measure]) for m, measure in chosen.items()}
    print(json.dumps(means))


def command(tool: str, qrels: Path, run: Path, built: dict[str, Path | None]) -> list[str] | None:
    if tool == "stagewise":
        script = Path(sys.executable).with_name("stagewise")
        head = [str(script)] if script.exists() else [sys.executable, "-m", "stagewise"]
        metrics = [x for m in METRICS for x in ("-m", m)]
        return [*head, "eval", str(qrels), str(run), *metrics, "--missing", "skip", "--format", "json"]
    if tool in ("floor", "trec_eval"):
        binary = built[tool]
        if binary is None:
            return None
        if tool == "floor":
            return [str(binary), str(run)]
        measures = ["-m", "map", "-m", "ndcg_cut.10", "-m", "recall.1000", "-m", "recip_rank"]
        return [str(binary), *measures, str(qrels), str(run)]
    return [sys.executable, str(Path(__file__).resolve()), "--child", tool, str(qrels), str(run)]


def measure(cmd: list[str], timeout: float) -> dict:
    """CPU seconds (user + system), wall seconds and peak resident bytes of one process (its own rusage, read
    by ``wait4``), and what it printed."""
    import tempfile
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(cmd, stdout=out, stderr=err)
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        printed, problem = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if process.returncode:
        return {"error": (problem.strip().splitlines() or [f"exit status {process.returncode}"])[-1][:120]}
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "peak": usage.ru_maxrss * 1024, "out": printed}


def means_of(tool: str, out: str) -> dict[str, float]:
    if tool == "stagewise":
        runs = json.loads(out)["runs"]
        return {m: float(v) for m, v in runs[next(iter(runs))].items()}
    if tool == "trec_eval":
        names = {"map": "map", "ndcg_cut_10": "ndcg@10", "recall_1000": "recall@1000"}
        found = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "all" and parts[0] in names:
                found[names[parts[0]]] = float(parts[2])
        return found
    if tool == "floor":
        return {}
    return json.loads(out.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- the report
PEERS = ("pytrec", "ranx", "ir_measures")
LABELS = {
    "stagewise": "stagewise eval",
    "floor": "C parse floor",
    "trec_eval": "trec_eval (C, -O3)",
    "pytrec": "pytrec_eval",
    "ranx": "ranx",
    "ir_measures": "ir_measures",
}


def run_pair(name: str, pair: tuple[Path, Path], tools: list[str], built: dict, repeat: int, timeout: float) -> dict:
    """Each tool ``repeat`` times, taken in turn (A B A B), each in a fresh process; the least CPU time kept."""
    best: dict[str, dict] = {}
    for _ in range(repeat):
        for tool in tools:
            cmd = command(tool, *pair, built)
            if cmd is None:
                continue
            got = measure(cmd, timeout)
            print(f"  {name:<12} {tool:<12} " + (got.get("error") or f"{got['cpu']:.2f} s CPU"), flush=True)
            if "error" in got:  # kept only while no run of the tool has succeeded
                best.setdefault(tool, got)
            elif tool not in best or "error" in best[tool] or got["cpu"] < best[tool]["cpu"]:
                best[tool] = got
    return best


def check_means(results: dict[str, dict]) -> list[str]:
    """Each tool's means against stagewise's: the largest difference over the metrics both give."""
    ours = means_of("stagewise", results["stagewise"]["out"]) if "out" in results.get("stagewise", {}) else {}
    lines = []
    for tool, got in results.items():
        if tool in ("stagewise", "floor") or "out" not in got or not ours:
            continue
        theirs = means_of(tool, got["out"])
        shared = [m for m in (*COMPARED, "mrr@10") if m in theirs and m in ours]
        gap = max(abs(theirs[m] - ours[m]) for m in shared)
        within = 5e-5 if tool == "trec_eval" else 1e-9  # trec_eval prints 4 decimals
        verdict = "same means" if gap <= within else "DIFFERENT MEANS"
        lines.append(f"    {LABELS[tool]}: {verdict} ({', '.join(shared)}; largest difference {gap:.1e})")
    return lines


def table(name: str, results: dict[str, dict], run_bytes: int) -> None:
    ours = results.get("stagewise", {}).get("cpu")
    print(f"\n{name}: run file {run_bytes / MB:,.0f} MB")
    print(f"  {'tool':<20} {'CPU s':>8} {'wall s':>8} {'peak MB':>9} {'CPU / stagewise':>16} {'peak / run file':>16}")
    for tool, got in results.items():
        if "error" in got:
            print(f"  {LABELS[tool]:<20} {got['error']}")
            continue
        ratio = f"{got['cpu'] / ours:.2f}x" if ours else "-"
        print(
            f"  {LABELS[tool]:<20} {got['cpu']:>8.2f} {got['wall']:>8.2f} {got['peak'] / MB:>9,.0f} {ratio:>16}"
            f" {got['peak'] / run_bytes:>15.2f}x"
        )
    for line in check_means(results):
        print(line)


def verdicts(all_results: dict[str, dict[str, dict]], pairs: dict[str, tuple[Path, Path]]) -> None:
    def cpu(pair: str, tool: str) -> float | None:
        return all_results.get(pair, {}).get(tool, {}).get("cpu")

    print("\nverdicts (issue #26)")
    ours, theirs = cpu("x1-bytes", "stagewise"), cpu("x1-bytes", "pytrec")
    if ours and theirs:
        speedup = theirs / ours
        mark = "PASS" if speedup >= TARGET_VS_PYTREC else "MISS"
        print(f"  {mark}  stagewise vs pytrec_eval at 1x: {speedup:.1f}x less CPU (target >= {TARGET_VS_PYTREC:.0f}x)")
    for ids in ("bytes", "numeric"):
        one, ten = cpu(f"x1-{ids}", "stagewise"), cpu(f"x10-{ids}", "stagewise")
        if one and ten:
            mark = "PASS" if ten <= TARGET_GROWTH * one else "MISS"
            print(f"  {mark}  10x cost, {ids} ids: {ten / one:.1f}x the 1x CPU (target <= {TARGET_GROWTH:.0f}x)")
    for pair, results in all_results.items():
        got = results.get("stagewise", {})
        if "peak" in got:
            ratio = got["peak"] / pairs[pair][1].stat().st_size
            mark = "PASS" if ratio <= TARGET_PEAK else "MISS"
            print(f"  {mark}  peak memory, {pair}: {ratio:.2f}x the run file (target <= {TARGET_PEAK}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"the pairs' folder ({DEFAULT_DATA})")
    parser.add_argument("--scales", default="1,10", help="comma-separated copies of the 1x pair (default 1,10)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each tool on a 1x pair (10x: once)")
    parser.add_argument(
        "--trec-eval-src",
        type=Path,
        default=os.environ.get("TREC_EVAL_SRC"),
        help="a trec_eval source checkout to build (default $TREC_EVAL_SRC; without it trec_eval is left out)",
    )
    parser.add_argument("--peers-at-10x", action="store_true", help="run pytrec_eval, ranx, ir_measures at 10x")
    parser.add_argument("--no-peers", action="store_true", help="leave out pytrec_eval, ranx and ir_measures")
    parser.add_argument(
        "--peers", default=",".join(PEERS), help=f"the peers to run, comma-separated (default {','.join(PEERS)})"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a tool's run is killed")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "QRELS", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    args.data.mkdir(parents=True, exist_ok=True)
    scales = sorted({int(s) for s in args.scales.split(",")} | {1})
    if args.prepare:
        ensure_pairs(args.data, scales)
        return 0
    # Deriving a pair holds it in memory; done here it would make this process large, and a child's peak
    # (ru_maxrss) counts the parent's resident memory at fork. So a child process derives them.
    subprocess.run(
        [sys.executable, __file__, "--prepare", "--data", str(args.data), "--scales", args.scales], check=True
    )
    pairs = ensure_pairs(args.data, scales)
    print(f"byte-compiled stagewise: {byte_compile()}")
    built = build(args.data, args.trec_eval_src)
    print(f"built: floor {built['floor'] or 'no compiler'}; trec_eval {built['trec_eval'] or 'no source given'}")
    all_results = {}
    for name, pair in pairs.items():
        tools = ["stagewise", "floor", "trec_eval"]
        if not args.no_peers and (name == "x1-bytes" or (args.peers_at_10x and name.startswith("x10-"))):
            tools += [peer for peer in PEERS if peer in args.peers.split(",")]
        repeat = args.repeat if name.startswith("x1-") else 1
        all_results[name] = run_pair(name, pair, tools, built, repeat, args.timeout)
    for name, results in all_results.items():
        table(name, results, pairs[name][1].stat().st_size)
    verdicts(all_results, pairs)
    load = os.getloadavg()[0]
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {load:.1f} at the end; python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
