"""A relabel recomputes one query and re-aggregates the means; the label store commits concurrent relabels in one
transaction. The oracle for every number is ``stagewise.evaluate`` on the labels as exported, compared exactly
(``==`` on floats, not approx): the served means must be the bits a full evaluation gives, which a running sum, or
the old app's ``sum(...) / n`` over a set, does not give."""

from __future__ import annotations

import random
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagewise
from stagewise._bundled import sample_path
from stagewise.app.model import METRICS, Workspace, _query_qrels
from stagewise.app.query_values import QueryValues
from stagewise.data.readers import read_qrels, read_run
from stagewise.metrics.measures import Measure, aggregate
from stagewise.store import LabelStore
from tests.app_helpers import write_collection


def _runs(folder: Path) -> tuple[str, dict[str, dict[str, dict[str, float]]]]:
    """A synthetic collection of 24 queries (enough for numpy's pairwise mean to differ from a plain sum) and three
    runs: two of every query, one that lacks a third of them (a judged query missing from a run scores 0)."""
    qrels, paths = write_collection(folder, n_queries=24, depth=40, seed=11)
    runs = {f"run{i}": read_run(p).to_dict() for i, p in enumerate(paths)}
    runs["partial"] = {q: docs for q, docs in runs["run1"].items() if int(q[1:]) % 3}
    return qrels, runs


def _assert_served_equals_evaluate(ws: Workspace, folder: Path, runs: dict) -> None:
    """Every served value and mean is what stagewise.evaluate gives on the exported qrels, bit for bit."""
    exported = folder / "exported.qrels"
    exported.write_text(ws.store.qrels_text())
    judged = read_qrels(str(exported)).to_dict() if exported.stat().st_size else {}
    if not judged:
        assert all(v == dict.fromkeys(METRICS, 0.0) for v in ws.means().values())
        return
    result = stagewise.evaluate(str(exported), runs, list(METRICS))
    assert ws.means() == result.means
    for name in runs:
        per = result.per_query(name)
        for qid in judged:
            assert ws.metrics(qid)[name] == {m: per[m][qid] for m in METRICS}, (name, qid)
    for qid in set(ws.query_ids()) - set(judged):  # no judgements: no values, in no mean
        assert all(v is None for values in ws.metrics(qid).values() for v in values.values())


OPS = st.lists(
    st.tuples(st.integers(0, 24), st.integers(0, 60), st.sampled_from([0, 1, 2, 3, None])), min_size=1, max_size=40
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, clear=st.integers(0, 23))
def test_after_any_relabels_the_served_values_and_means_are_evaluate_s_exactly(ops, clear):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qrels, runs = _runs(folder)
        store = LabelStore(folder / "labels.sqlite", read_qrels(qrels).to_dict())
        try:
            ws = Workspace(store, runs)
            _assert_served_equals_evaluate(ws, folder, runs)
            queries = [*sorted(runs["run0"], key=lambda q: int(q[1:])), "q25"]  # q25: in no run, not judged
            for q, d, label in ops:
                qid = queries[q]
                ranked = sorted(runs["run0"].get(qid, {}))
                doc = ranked[d] if d < len(ranked) else f"new{d}"  # a document no run retrieved, too
                store.set(qid, doc, label)
                ws.refresh(qid)
            # a query that loses every judgement leaves the means; one that gains its first joins them
            gone = queries[clear]
            for doc in store.labels(gone).get(gone, {}):
                store.set(gone, doc, None)
            ws.refresh(gone)
            assert gone not in ws.judged
            _assert_served_equals_evaluate(ws, folder, runs)
            store.set(gone, sorted(runs["run0"][gone])[0], 2)
            ws.refresh(gone)
            _assert_served_equals_evaluate(ws, folder, runs)
        finally:
            store.close()


def test_the_served_means_differ_from_a_plain_sum_and_equal_evaluate_s():
    """The check above can tell: on this collection a plain sum over the queries (the old app's mean) is off in
    the last bits for some run and metric, and the served means are not."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qrels, runs = _runs(folder)
        store = LabelStore(folder / "labels.sqlite", read_qrels(qrels).to_dict())
        try:
            ws = Workspace(store, runs)
            result = stagewise.evaluate(qrels, runs, list(METRICS))
            plain = {
                (name, m): sum(ws.metrics(q)[name][m] for q in sorted(ws.judged)) / len(ws.judged)
                for name in runs
                for m in METRICS
            }
            assert any(plain[key] != result.means[key[0]][key[1]] for key in plain)
            assert ws.means() == result.means
        finally:
            store.close()


def test_the_trec_eval_sample_through_the_api_serves_evaluate_s_means_exactly(tmp_path):
    pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
    from starlette.testclient import TestClient

    from stagewise.app.server import create_app

    qrels, runs = str(sample_path("qrels.test")), {"test": str(sample_path("results.test"))}
    runs["trunc"] = str(sample_path("results.trunc"))
    loaded = {name: read_run(path).to_dict() for name, path in runs.items()}
    store = LabelStore(tmp_path / "labels.sqlite", read_qrels(qrels).to_dict())
    ws = Workspace(store, loaded)
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
    rng = random.Random(4)
    for _ in range(30):
        qid = rng.choice(sorted(loaded["test"]))
        doc = rng.choice(sorted(loaded["test"][qid]))
        label = rng.choice([0, 1, 2, 3, None])
        if label is None:
            res = client.delete(f"/api/labels/{qid}/{doc}")
        else:
            res = client.put(f"/api/labels/{qid}/{doc}", json={"label": label})
        assert res.status_code == 200
    exported = tmp_path / "now.qrels"
    exported.write_text(client.get("/api/qrels").text)
    expected = stagewise.evaluate(str(exported), runs, list(METRICS))
    served = client.get("/api/queries").json()
    assert served["means"] == expected.means  # JSON carries a float's shortest repr: the same bits come back
    for row in served["queries"]:
        for name in runs:
            per = expected.per_query(name)
            assert {m: row["runs"][name][m] for m in METRICS} == {m: per[m][row["qid"]] for m in METRICS}
    store.close()


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.text(min_size=0, max_size=6), min_size=1, max_size=8, unique=True),
    labels=st.dictionaries(st.text(min_size=0, max_size=8), st.integers(0, 3), min_size=1, max_size=12),
    copies=st.integers(1, 3),
)
def test_one_query_s_judgements_built_from_columns_are_what_read_qrels_builds(ids, labels, copies):
    for qid in ids:  # hypothesis's text has no lone surrogates, which neither builder takes
        fast = _query_qrels(qid, labels, copies)
        slow = read_qrels({f"{i}:{qid}": labels for i in range(copies)})
        assert list(fast.query_ids) == list(slow.query_ids)
        assert np.array_equal(fast.query_codes, slow.query_codes)
        assert np.array_equal(fast.labels, slow.labels)
        assert np.array_equal(fast.pair_keys, slow.pair_keys)
        assert fast.docs.values() == slow.docs.values()


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.text(alphabet="abcé😀", max_size=3), st.none() | st.floats(0, 1, allow_subnormal=True)),
        max_size=60,
    )
)
def test_query_values_means_are_the_library_aggregate_of_the_values_in_evaluation_order(ops):
    measures = [("map", Measure.parse("map")), ("P@10", Measure.parse("P@10"))]
    table = QueryValues(["a", "b"], measures)
    kept: dict[str, float] = {}
    for qid, value in ops:
        if value is None:
            table.drop(qid)
            kept.pop(qid, None)
        else:
            table.put(qid, {"a": {"map": value, "P@10": 1 - value}, "b": {"map": value / 3, "P@10": 0.0}})
            kept[qid] = value
    order = sorted(kept, key=lambda q: q.encode("utf-8"))  # byte order, as evaluate reports queries
    assert table.ids == order
    column = np.array([kept[q] for q in order], dtype=np.float64)
    means = table.means()
    assert means["a"]["map"] == aggregate(measures[0][1], column)
    assert means["a"]["P@10"] == aggregate(measures[1][1], 1 - column)
    assert means["b"]["map"] == aggregate(measures[0][1], column / 3)


def test_every_served_metric_is_a_function_of_one_query():
    """What lets a relabel recompute one query: no metric draws a default from all the judgements (ERR's
    max_label would), and the workspace refuses one that does."""
    assert all(Measure.parse(m).spec.resolve is None for m in METRICS)
    assert Measure.parse("err@20").spec.resolve is not None


# -- the label store: concurrent sets share one transaction ------------------------------------------------------


def _commits(store: LabelStore) -> list[str]:
    seen: list[str] = []
    store._db.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


def _queue_behind_the_writer(store: LabelStore, calls: list[tuple], results: dict, errors: dict) -> list:
    """Start one thread per ``(qid, docid, label)`` while the writer lock is held, so every set queues; returns the
    threads once all have queued (the caller releases the lock)."""

    def one(i: int, qid: str, docid: str, label: int | None) -> None:
        try:
            results[i] = store.set(qid, docid, label, who=f"t{i}")
        except sqlite3.Error as exc:
            errors[i] = exc

    threads = []
    for i, (qid, docid, label) in enumerate(calls):
        thread = threading.Thread(target=one, args=(i, qid, docid, label))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 10
        while len(store._queued) < i + 1:  # in this order: the history must follow it
            assert time.monotonic() < deadline, "a set did not queue"
            time.sleep(0.001)
    return threads


def test_sets_that_arrive_during_a_commit_are_written_in_one_transaction_in_arrival_order(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", {"q": {"d": 1}})
    commits = _commits(store)
    calls = [("q", "d", 2), ("q", "e", 0), ("q", "d", None), ("r", "x", 3), ("q", "d", 3)]
    results: dict[int, int | None] = {}
    with store._lock:  # a transaction in progress: every set queues behind it
        threads = _queue_behind_the_writer(store, calls, results, {})
    for thread in threads:
        thread.join()
    assert len(commits) == 1  # five changes, one transaction, one fsync
    # each caller got its own change's old label, as if the sets had run one after another in arrival order
    assert [results[i] for i in range(len(calls))] == [1, None, 2, None, None]
    history = store.history()
    assert [(h["qid"], h["docid"], h["new"], h["who"]) for h in history] == [
        (q, d, lab, f"t{i}") for i, (q, d, lab) in enumerate(calls)
    ]
    assert store.labels() == {"q": {"d": 3, "e": 0}, "r": {"x": 3}}
    store.close()
    reopened = LabelStore(tmp_path / "l.sqlite")
    assert reopened.labels() == {"q": {"d": 3, "e": 0}, "r": {"x": 3}}
    reopened.close()


def test_a_transaction_that_fails_tells_every_change_in_it_and_writes_none_of_them(tmp_path):
    db = tmp_path / "l.sqlite"
    store = LabelStore(db, {"q": {"d": 1}})
    with sqlite3.connect(db) as other:  # a write the database refuses, as a full disk would
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON history WHEN NEW.docid = 'bad' "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    results: dict[int, int | None] = {}
    errors: dict[int, Exception] = {}
    with store._lock:
        threads = _queue_behind_the_writer(store, [("q", "d", 3), ("q", "bad", 2)], results, errors)
    for thread in threads:
        thread.join()
    assert sorted(errors) == [0, 1] and "refused" in str(errors[0]) and not results
    assert store.labels() == {"q": {"d": 1}} and store.history() == []
    assert store.set("q", "d", 2) == 1  # the store goes on
    assert store.labels() == {"q": {"d": 2}}
    store.close()


def test_many_threads_relabelling_at_once_lose_nothing_and_share_transactions(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", {})
    commits = _commits(store)
    done: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        rng = random.Random(i)
        for _ in range(25):
            pair, label = (f"q{rng.randint(0, 2)}", f"d{rng.randint(0, 4)}"), rng.randint(0, 3)
            store.set(*pair, label)
            with lock:
                done.append((*pair, label))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = store.history()
    assert sorted((h["qid"], h["docid"], h["new"]) for h in history) == sorted(done)
    # every old label is the label the previous change to that pair left (the history replays)
    last: dict[tuple[str, str], int | None] = {}
    for h in history:
        assert h["old"] == last.get((h["qid"], h["docid"]))
        last[(h["qid"], h["docid"])] = h["new"]
    assert store.labels() == {q: {d: lab for (q2, d), lab in last.items() if q2 == q} for q in {q for q, _ in last}}
    assert len(commits) <= len(done)  # (how many share one depends on the disk; the test above pins grouping)
    store.close()


def test_set_many_applies_its_changes_in_order_in_one_transaction_all_or_none(tmp_path):
    db = tmp_path / "l.sqlite"
    store = LabelStore(db, {"q": {"d": 1}})
    commits = _commits(store)
    assert store.set_many([("q", "d", 2, "a"), ("q", "d", None, "b"), ("q", "d", 0, "c"), ("r", "x", 3, "d")]) == [
        1,
        2,
        None,
        None,
    ]
    assert len(commits) == 1 and store.labels() == {"q": {"d": 0}, "r": {"x": 3}}
    with pytest.raises(stagewise.errors.InputError, match="is not a label"):
        store.set_many([("q", "d", 3, ""), ("q", "e", 4, "")])  # refused before anything is written
    with sqlite3.connect(db) as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON history WHEN NEW.docid = 'bad' "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    with pytest.raises(sqlite3.DatabaseError, match="refused"):
        store.set_many([("q", "d", 3, ""), ("q", "bad", 1, "")])
    assert store.labels() == {"q": {"d": 0}, "r": {"x": 3}} and len(store.history()) == 4
    store.close()
