"""Relabel latency of ``stagewise serve`` under load: 20 concurrent clients send 2,000 relabels in all to
127.0.0.1, on queries of 1,000 results in each of two runs; PASS when the p95 is under 50 ms (issue 26).

Each relabel is committed to SQLite (WAL, synchronous=FULL; relabels that arrive during a commit share the next
one), then the query's metrics are recomputed for every run and the means re-aggregated. Latency is measured by
the clients, so it includes waiting behind the other 19 clients' requests; the server's CPU time per relabel
(from /proc, Linux) is printed too, as it depends less on what else the machine runs. The machine's load average
is printed with the figures: on a shared machine every latency grows with it.

Each round serves this tree twice, in turn: as installed with the app extra (httptools, uvicorn's C HTTP parser,
and the uvloop event loop), and with those two hidden from the server (uvicorn's pure-Python h11 parser and
asyncio's own loop, what a user without them gets), so the A/B sees the same machine. ``--baseline REV`` also
serves the same load from another revision of ``src/`` (``git archive``, with this tree's compiled extensions
copied in), both ways too (a revision from before httptools was chosen runs h11 either way, on uvloop or on
asyncio). The clients' own CPU time per relabel is printed as well: they share the machine with the server.

    python benchmarks/app_load.py [--queries 50] [--depth 1000] [--clients 20] [--total 2000]
                                  [--baseline HEAD~3] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import app_helpers  # noqa: E402
from tests.app_helpers import check_consistent, load, serving, write_collection  # noqa: E402

TARGET_MS = 50.0
Row = tuple[str, int, dict[str, float]]  # tree, round, figures


def _cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000


@contextlib.contextmanager
def _source(src: Path) -> Iterator[None]:
    """Serve from ``src`` (the helpers start ``python -m stagewise`` with it first on PYTHONPATH)."""
    before = app_helpers.SRC
    app_helpers.SRC = src
    try:
        yield
    finally:
        app_helpers.SRC = before


@contextlib.contextmanager
def _without_c_http(folder: Path) -> Iterator[None]:
    """Servers started meanwhile cannot import httptools or uvloop (a package of each name that raises
    ImportError, first on their PYTHONPATH): they run uvicorn's h11 parser on asyncio's loop."""
    for name in ("httptools", "uvloop"):
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(f"raise ImportError('{name} hidden by benchmarks/app_load.py')\n")
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), before or ""])
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def _baseline_tree(rev: str, into: Path) -> Path:
    """``src/`` at ``rev``, with this tree's compiled extension modules copied in (built from this tree's C)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    for built in (ROOT / "src").rglob("*.so"):
        target = into / built.relative_to(ROOT)
        if target.parent.is_dir() and not target.exists():
            shutil.copy2(built, target)
    return into / "src"


def _one_round(cmd: list[str], pairs: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, float]:
    with serving(cmd) as server:
        load(server.url, pairs, clients=args.clients, total=200, seed=99)  # warm up: imports, first reads
        before, client_before = _cpu_seconds(server.proc.pid), time.process_time()
        result = load(server.url, pairs, clients=args.clients, total=args.total)
        after, client_after = _cpu_seconds(server.proc.pid), time.process_time()
        alone = load(server.url, pairs, clients=1, total=200, seed=5)
    if result["failed"]:
        raise SystemExit(f"{len(result['failed'])} relabels failed, first: {result['failed'][0]}")
    lat, one = sorted(result["latencies"]), sorted(alone["latencies"])
    cpu = (after - before) / len(lat) * 1000 if before is not None and after is not None else float("nan")
    return {
        "rate": len(lat) / result["seconds"],
        "p50": statistics.median(lat) * 1000,
        "p95": _pct(lat, 95),
        "max": lat[-1] * 1000,
        "alone_p50": statistics.median(one) * 1000,
        "alone_p95": _pct(one, 95),
        "cpu": cpu,
        "client_cpu": (client_after - client_before) / len(lat) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--total", type=int, default=2000)
    parser.add_argument("--baseline", metavar="REV", help="also serve from this git revision, alternating")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each tree, alternating (default 2)")
    args = parser.parse_args()
    from stagewise.data.readers import read_qrels, read_run

    load_before = os.getloadavg()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        qrels, runs = write_collection(Path(tmp), args.queries, args.depth)
        run = read_run(runs[0]).to_dict()
        pairs = [(q, d) for q in sorted(run)[:10] for d in sorted(run[q])]
        trees = [("this tree", ROOT / "src", False), ("h11+asyncio", ROOT / "src", True)]
        if args.baseline:
            old = _baseline_tree(args.baseline, Path(tmp) / "baseline")
            trees += [(args.baseline, old, False), (f"{args.baseline} h11", old, True)]
        for r in range(args.rounds):
            for name, src, pure in trees:
                db = Path(tmp) / f"labels-{len(rows)}.sqlite"
                hidden = _without_c_http(Path(tmp) / "hidden") if pure else contextlib.nullcontext()
                with _source(src), hidden:
                    cmd = ["--qrels", qrels, "--run", runs[0], "--run", runs[1], "--db", str(db)]
                    rows.append((name, r + 1, _one_round(cmd, pairs, args)))
                if src == ROOT / "src":
                    check_consistent(str(db), read_qrels(qrels).to_dict())  # no relabel lost or half-written
    load_after = os.getloadavg()
    _report(rows, args, load_before[0], load_after[0])


def _report(
    rows: list[tuple[str, int, dict[str, float]]], args: argparse.Namespace, before: float, after: float
) -> None:
    print(
        f"{args.queries} queries x {args.depth} results x 2 runs; {args.clients} clients, {args.total} relabels a round"
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {before:.1f} at the start and {after:.1f} at the end")
    header = (
        "tree",
        "round",
        "relabels/s",
        "p50 ms",
        "p95 ms",
        "max ms",
        "1 client p50",
        "1 client p95",
        "CPU ms/relabel",
        "client CPU ms",
    )
    print("  ".join(f"{h:>{max(len(h), 11)}}" for h in header))
    for name, r, m in rows:
        cells = [name, str(r)] + [f"{m[k]:.1f}" for k in ("rate", "p50", "p95", "max", "alone_p50", "alone_p95")]
        cells += [f"{m['cpu']:.2f}", f"{m['client_cpu']:.2f}"]
        print("  ".join(f"{c:>{max(len(h), 11)}}" for c, h in zip(cells, header, strict=True)))
    for tree in dict.fromkeys(name for name, _, _ in rows):
        if tree != "this tree":
            p95 = statistics.median(m["p95"] for name, _, m in rows if name == tree)
            print(f"{tree}: p95 {p95:.1f} ms (median of rounds)")
    p95 = statistics.median(m["p95"] for name, _, m in rows if name == "this tree")
    verdict = "PASS" if p95 < TARGET_MS else "MISS"
    print(f"{verdict}: p95 {p95:.1f} ms under {args.clients} clients (target < {TARGET_MS:.0f} ms; median of rounds)")


if __name__ == "__main__":
    main()
