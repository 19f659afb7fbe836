"""Label latency of ``stagewise campaign serve`` under load: 20 assessors (httpx clients, one thread each) label
their queues at once on 127.0.0.1, each request a judgement written in one SQLite transaction (WAL,
synchronous=FULL) followed by the next item's view. Latency is measured by the clients (so it includes waiting
behind the other assessors' requests); ``next`` is the GET an assessor's page makes when it opens.

    python benchmarks/campaign_load.py [--assessors 20] [--labels 50] [--queries 50] [--docs 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.campaign_helpers import campaign_serving


def _inputs(folder: Path, queries: int, docs: int) -> tuple[Path, Path, Path]:
    pool, topics, collection = folder / "pool.txt", folder / "topics.jsonl", folder / "docs.jsonl"
    pool.write_text("".join(f"q{q} Q0 d{q}-{d} {d + 1} 1.0 depth\n" for q in range(queries) for d in range(docs)))
    topics.write_text("".join(f'{{"qid": "q{q}", "title": "apple topic {q}"}}\n' for q in range(queries)))
    words = " ".join(["apple pie and other fruit"] * 60)  # a 1,600-character document to segment
    collection.write_text(
        "".join(f'{{"_id": "d{q}-{d}", "text": "{words} {d}"}}\n' for q in range(queries) for d in range(docs))
    )
    return pool, topics, collection


def _assessor(url: str, token: str, labels: int, judge_ms: list, next_ms: list, lock: threading.Lock) -> None:
    import httpx

    with httpx.Client(base_url=url, headers={"X-Stagewise-Token": token, "Origin": url}, timeout=30) as client:
        for _ in range(labels):
            t0 = time.perf_counter()
            view = client.get("/c/bench/api/next").raise_for_status().json()
            t1 = time.perf_counter()
            if view["item"] is None:
                return
            body = {"item": view["item"], "label": view["item"] % 4, "spent": 1.0, "request": uuid.uuid4().hex}
            client.post("/c/bench/api/judge", json=body).raise_for_status()
            t2 = time.perf_counter()
            with lock:
                next_ms.append((t1 - t0) * 1000)
                judge_ms.append((t2 - t1) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assessors", type=int, default=20)
    parser.add_argument("--labels", type=int, default=50, help="labels per assessor")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--docs", type=int, default=100, help="pooled documents per query")
    args = parser.parse_args()
    from stagewise.assess.campaign_build import CampaignOptions, create_campaign
    from stagewise.store.campaigns import CampaignStore

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pool, topics, collection = _inputs(folder, args.queries, args.docs)
        names = [f"a{i:02d}" for i in range(args.assessors)]
        store = CampaignStore(folder / "bench.sqlite")
        t0 = time.perf_counter()
        made = create_campaign(
            store, "bench", pool=pool, collection=collection, topics=topics, assessors=names,
            options=CampaignOptions(overlap=0.1, seed=1, per_overlap=2),
        )  # fmt: skip
        create_s = time.perf_counter() - t0
        store.close()
        judge_ms: list[float] = []
        next_ms: list[float] = []
        lock = threading.Lock()
        with campaign_serving(folder / "bench.sqlite") as server:
            threads = [
                threading.Thread(
                    target=_assessor, args=(server.url, made.tokens[n], args.labels, judge_ms, next_ms, lock)
                )
                for n in names
            ]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
    q = statistics.quantiles
    print(f"campaign of {made.items:,} items, {args.assessors} assessors: created in {create_s:.2f} s")
    print(f"{len(judge_ms):,} labels in {wall:.1f} s ({len(judge_ms) / wall:.0f} labels/s with next views)")
    for name, values in (("judge", judge_ms), ("next", next_ms)):
        cuts = q(values, n=20)
        print(f"{name:>5}: p50 {statistics.median(values):.1f} ms, p95 {cuts[18]:.1f} ms, max {max(values):.1f} ms")


if __name__ == "__main__":
    main()
