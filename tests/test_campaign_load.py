"""A bounded load test of ``stagewise campaign serve`` on 127.0.0.1 with a real HTTP client (httpx): 20 assessors
label their queues at once; the server is killed with SIGKILL mid-way and started again; each assessor resends the
request that was in flight (same request id) and goes on. Every label a client saw acknowledged is in the store
once, none is lost, the page resumes at the first item not judged, and SQLite's ``integrity_check`` passes after
the kill and at the end. No timing is asserted."""

from __future__ import annotations

import collections
import sqlite3
import threading
import time
import uuid

import pytest

from stagewise.assess.campaign_build import CampaignOptions, create_campaign
from stagewise.store.campaigns import CampaignStore
from tests.campaign_helpers import CampaignServer

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
httpx = pytest.importorskip("httpx", reason="httpx is in the test extra (make test installs it)")

ASSESSORS = [f"a{i:02d}" for i in range(20)]
PER_CLIENT = 30  # labels each assessor sends before the kill at most, and again after the restart


def _inputs(folder, queries: int = 20, docs: int = 40):
    pool, topics, collection = folder / "pool.txt", folder / "topics.jsonl", folder / "docs.jsonl"
    pool.write_text("".join(f"q{q} Q0 d{q}-{d} {d + 1} 1.0 depth\n" for q in range(queries) for d in range(docs)))
    topics.write_text("".join(f'{{"qid": "q{q}", "title": "topic {q}"}}\n' for q in range(queries)))
    collection.write_text(
        "".join(f'{{"_id": "d{q}-{d}", "text": "text {q} {d}"}}\n' for q in range(queries) for d in range(docs))
    )
    return pool, topics, collection


class Assessor:
    """One assessor's client: labels the item the server says is next, keeps every acknowledged judgement and the
    request that was in flight when the server went away."""

    def __init__(self, name: str, token: str) -> None:
        self.name = name
        self.token = token
        self.acknowledged: list[tuple[int, int, str]] = []  # (item, label, request id)
        self.in_flight: dict | None = None

    def run(self, url: str, count: int, stop: threading.Event) -> None:
        headers = {"X-Stagewise-Token": self.token, "Origin": url}
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            try:
                if self.in_flight is not None:  # the request the kill interrupted, sent again as it was
                    self._send(client, self.in_flight)
                for _ in range(count):
                    if stop.is_set():
                        return
                    view = client.get("/c/load/api/next").raise_for_status().json()
                    if view["item"] is None:
                        return
                    label = (view["item"] * 7 + len(self.name)) % 4
                    self._send(
                        client, {"item": view["item"], "label": label, "spent": 0.5, "request": uuid.uuid4().hex}
                    )
            except httpx.TransportError:
                return  # the server is gone; in_flight holds what was being sent

    def _send(self, client, body: dict) -> None:
        self.in_flight = body
        answer = client.post("/c/load/api/judge", json=body).raise_for_status().json()
        assert answer["new"] == body["label"]
        self.acknowledged.append((body["item"], body["label"], body["request"]))
        self.in_flight = None


def _run_all(clients: list[Assessor], url: str, count: int, stop: threading.Event) -> list[threading.Thread]:
    threads = [threading.Thread(target=c.run, args=(url, count, stop)) for c in clients]
    for t in threads:
        t.start()
    return threads


def test_twenty_assessors_a_kill_9_and_a_restart_lose_no_acknowledged_label(tmp_path):
    store_path = tmp_path / "load.sqlite"
    pool, topics, collection = _inputs(tmp_path)
    store = CampaignStore(store_path)
    made = create_campaign(
        store, "load", pool=pool, collection=collection, topics=topics, assessors=ASSESSORS,
        options=CampaignOptions(overlap=0.1, seed=11, per_overlap=2),
    )  # fmt: skip
    store.close()
    clients = [Assessor(name, made.tokens[name]) for name in ASSESSORS]
    server = CampaignServer(store_path)
    try:
        stop = threading.Event()
        threads = _run_all(clients, server.url, PER_CLIENT, stop)
        deadline = time.monotonic() + 60
        while sum(len(c.acknowledged) for c in clients) < 150 and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill(hard=True)  # SIGKILL mid-way: no checkpoint, no clean close
        for t in threads:
            t.join(timeout=60)
        before = sum(len(c.acknowledged) for c in clients)
        assert 150 <= before < PER_CLIENT * len(clients), "the kill came after the load ended; nothing was tested"
        assert any(c.in_flight is not None for c in clients), "no request was in flight at the kill"
        db = sqlite3.connect(store_path)  # the crashed files as they are: the WAL replayed, the database sound
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()
        server = CampaignServer(store_path, server.port)
        resumed = _check_resume(store_path, clients, server.url)
        assert resumed
        threads = _run_all(clients, server.url, PER_CLIENT, threading.Event())
        for t in threads:
            t.join(timeout=120)
        assert all(c.in_flight is None for c in clients)  # every interrupted request acknowledged on its resend
    finally:
        server.kill()
    _check_store(store_path, clients)


def _check_resume(store_path, clients: list[Assessor], url: str) -> int:
    """Each assessor's next item after the restart is the first of their queue the store has no judgement for."""
    store = CampaignStore(store_path)
    checked = 0
    try:
        for c in clients:
            if c.in_flight is not None:
                continue  # its next item depends on whether the interrupted request was committed
            queue = store.queue("load", c.name)
            first_open = next((e["item"] for e in queue if e["judgement"] is None), None)
            view = httpx.get(f"{url}/c/load/api/next", headers={"X-Stagewise-Token": c.token}, timeout=10).json()
            assert view["item"] == first_open
            assert view["progress"]["labelled"] == len(c.acknowledged)
            checked += 1
    finally:
        store.close()
    return checked


def _check_store(store_path, clients: list[Assessor]) -> None:
    store = CampaignStore(store_path)
    try:
        assert store.integrity() == "ok"
        history = store.history("load")
        labels = store.labels("load")
        by_request = collections.Counter((h["assessor"], h["request"]) for h in history)
        acknowledged = [(c.name, item, label, rid) for c in clients for item, label, rid in c.acknowledged]
        assert len({(name, rid) for name, _, _, rid in acknowledged}) == len(acknowledged)
        for name, item, label, rid in acknowledged:
            assert by_request[(name, rid)] == 1  # there, once
            row = store.item("load", item)
            assert labels[name][row["qid"]][row["docid"]] == label  # and it is the current label
        # nothing else was written: every history row is an acknowledged request
        assert len(history) == len(acknowledged)
        assert sum(len(docs) for per in labels.values() for docs in per.values()) == len(acknowledged)
    finally:
        store.close()


def test_a_second_server_or_a_create_on_a_served_store_is_refused_naming_the_first(tmp_path):
    import os
    import subprocess
    import sys

    from tests.app_helpers import SRC, free_port
    from tests.campaign_helpers import campaign_serving

    pool, topics, collection = _inputs(tmp_path, queries=2, docs=3)
    store_path = tmp_path / "c.sqlite"
    store = CampaignStore(store_path)
    create_campaign(store, "load", pool=pool, collection=collection, topics=topics, assessors=["ann"])
    store.close()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with campaign_serving(store_path) as server:
        second = subprocess.run(
            [sys.executable, "-m", "stagewise", "campaign", "serve", str(store_path), "--port", str(free_port())],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2 and f"{server.url}/c/load/admin" in second.stderr
        args = [str(pool), "--collection", str(collection), "--topics", str(topics), "-a", "bob"]
        made = subprocess.run(
            [sys.executable, "-m", "stagewise", "campaign", "create", *args, "--store", str(store_path), "--name", "x"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert made.returncode == 2 and "one server per database" in made.stderr
    store = CampaignStore(store_path)
    assert store.names() == ["load"]
    store.close()
