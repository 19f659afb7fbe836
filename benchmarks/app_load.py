"""Relabel latency of ``stagewise serve`` under load: 20 concurrent clients send 2,000 relabels in all to
127.0.0.1, on queries of 1,000 results in each of two runs (issue 13's aim: p95 under 50 ms).

Each relabel writes a history row and the label in one SQLite transaction (WAL, synchronous=FULL), then
recomputes the query's metrics for every run and every run's mean. Latency is measured by the clients, so it
includes waiting behind the other 19 clients' requests.

    python benchmarks/app_load.py [--queries 50] [--depth 1000] [--clients 20] [--total 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.app_helpers import check_consistent, load, serving, write_collection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--total", type=int, default=2000)
    args = parser.parse_args()
    from stagewise.data.readers import read_qrels, read_run

    with tempfile.TemporaryDirectory() as tmp:
        qrels, runs = write_collection(Path(tmp), args.queries, args.depth)
        run = read_run(runs[0]).to_dict()
        pairs = [(q, d) for q in sorted(run)[:10] for d in sorted(run[q])]
        db = str(Path(tmp) / "labels.sqlite")
        cmd = ["--qrels", qrels, "--run", runs[0], "--run", runs[1], "--db", db]
        with serving(cmd) as server:
            load(server.url, pairs, clients=args.clients, total=200, seed=99)  # warm up
            result = load(server.url, pairs, clients=args.clients, total=args.total)
            alone = load(server.url, pairs, clients=1, total=200, seed=5)
        history = check_consistent(db, read_qrels(qrels).to_dict())
    lat = sorted(result["latencies"])

    def pct(values: list[float], p: float) -> float:
        return values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000

    one = sorted(alone["latencies"])
    print(f"{args.queries} queries x {args.depth} results x 2 runs; {args.clients} clients, {args.total} relabels")
    print(f"answered {len(lat)}, failed {len(result['failed'])}, history rows {len(history)} (incl. warm-up)")
    print(f"throughput {len(lat) / result['seconds']:.0f} relabels/s")
    print(
        f"latency under load: median {statistics.median(lat) * 1000:.1f} ms, p95 {pct(lat, 95):.1f} ms, "
        f"max {lat[-1] * 1000:.1f} ms"
    )
    print(f"latency of one client alone: median {statistics.median(one) * 1000:.1f} ms, p95 {pct(one, 95):.1f} ms")


if __name__ == "__main__":
    main()
