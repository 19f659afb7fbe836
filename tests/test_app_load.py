"""A bounded load test against ``stagewise serve`` on 127.0.0.1: 20 concurrent clients, 2,000 relabels, no update
lost; and a ``kill -9`` during the load leaves a database the next start opens. No timing is asserted (the p95
latency is measured by benchmarks/app_load.py and reported in docs/app.md)."""

from __future__ import annotations

import collections
import time
import urllib.request

import pytest

from stagewise.data.readers import read_qrels
from tests.app_helpers import check_consistent, load, serving, write_collection

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")


def _pairs(qrels: str, runs: list[str]) -> list[tuple[str, str]]:
    from stagewise.data.readers import read_run

    run = read_run(runs[0]).to_dict()
    # a few queries, so that clients collide on the same pairs often
    return [(q, d) for q in sorted(run)[:3] for d in sorted(run[q])[:30]]


def test_twenty_clients_two_thousand_relabels_lose_no_update(tmp_path):
    qrels, runs = write_collection(tmp_path, n_queries=20, depth=100)
    db = str(tmp_path / "labels.sqlite")
    with serving(["--qrels", qrels, *[a for r in runs for a in ("--run", r)], "--db", db]) as server:
        result = load(server.url, _pairs(qrels, runs), clients=20, total=2000)
        assert result["failed"] == [] and len(result["done"]) == 2000
        served = urllib.request.urlopen(server.url + "/api/qrels").read().decode()
    history = check_consistent(db, read_qrels(qrels).to_dict())
    # every answered write is in the history exactly once, and nothing else is
    assert collections.Counter((h["qid"], h["docid"], h["new"]) for h in history) == collections.Counter(result["done"])
    # the final label of every pair is the last write to it
    last = {}
    for h in history:
        last[(h["qid"], h["docid"])] = h["new"]
    exported = {tuple(line.split()[0:3:2]): int(line.split()[3]) for line in served.splitlines()}
    for pair, label in last.items():
        assert exported.get(pair) == label


def test_kill_9_during_the_load_leaves_a_consistent_database_the_next_start_opens(tmp_path):
    import threading

    qrels, runs = write_collection(tmp_path, n_queries=20, depth=100)
    db = str(tmp_path / "labels.sqlite")
    args = ["--qrels", qrels, *[a for r in runs for a in ("--run", r)], "--db", db]
    with serving(args) as server:
        out: dict = {}
        pairs = _pairs(qrels, runs)  # enough relabels to be still running at the kill, however fast the server
        worker = threading.Thread(target=lambda: out.update(load(server.url, pairs, total=20000, stop_after=10)))
        worker.start()
        time.sleep(1.5)
        server.kill(hard=True)  # SIGKILL, mid-load
        worker.join()
    assert out["failed"], "the kill came after the load ended; nothing was tested"
    history = check_consistent(db, read_qrels(qrels).to_dict())
    # every write a client saw acknowledged is on disk (a write in flight at the kill may be there too)
    acknowledged = collections.Counter(out["done"])
    logged = collections.Counter((h["qid"], h["docid"], h["new"]) for h in history)
    assert not acknowledged - logged and sum(logged.values()) - sum(acknowledged.values()) <= 20
    from stagewise.store import LabelStore

    store = LabelStore(db)
    on_disk = store.qrels_text()
    store.close()
    with serving(args) as server:  # the next start opens it and serves the same labels
        assert urllib.request.urlopen(server.url + "/api/qrels").read().decode() == on_disk
