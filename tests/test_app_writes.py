"""Labels written through the workspace (``Workspace.write`` and ``undo``, what the server does): the labels it
holds in memory stay the store's, change for change, and a recomputation from them (``refresh(qid,
reread=False)``, no database read) serves what ``stagewise.evaluate`` gives on the exported labels, bit for bit.
Through the server, a relabel to the label already there is answered with the current values without a
recomputation, and one that changes a label still sees every write committed before it."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.app.model import Workspace
from stagewise.data.readers import read_qrels
from stagewise.store import LabelStore
from tests.test_app_incremental import _assert_served_equals_evaluate, _runs

# (query index, document index, label or None to clear) or "undo"
OPS = st.lists(
    st.one_of(st.tuples(st.integers(0, 24), st.integers(0, 45), st.sampled_from([0, 1, 2, 3, None])), st.just("undo")),
    min_size=1,
    max_size=30,
)


def _doc(runs: dict, qid: str, d: int) -> str:
    ranked = sorted(runs["run0"].get(qid, {}))
    return ranked[d] if d < len(ranked) else f"new{d}"  # a document no run retrieved, too


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, batch=st.integers(1, 4))
def test_written_through_the_workspace_the_labels_held_are_the_store_s_and_the_values_evaluate_s(ops, batch):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qrels, runs = _runs(folder)
        store = LabelStore(folder / "labels.sqlite", read_qrels(qrels).to_dict())
        try:
            ws = Workspace(store, runs)
            queries = [*sorted(runs["run0"], key=lambda q: int(q[1:])), "q25"]  # q25: in no run, not judged
            pending: list[tuple[str, str, int | None, str]] = []
            for op in [*ops, "flush"]:
                if op in ("undo", "flush") or len(pending) == batch:
                    if pending:  # several sets in one transaction, as the server's batches
                        olds = ws.write(pending)
                        assert len(olds) == len(pending)
                        for qid in {q for q, _, _, _ in pending}:
                            ws.refresh(qid, reread=False)
                        pending = []
                    if op == "undo":
                        change = ws.undo("test")
                        if change is not None:
                            ws.refresh(str(change["qid"]), reread=False)
                if isinstance(op, tuple):
                    q, d, label = op
                    pending.append((queries[q], _doc(runs, queries[q], d), label, "test"))
            every = store.labels()
            assert {q: ws.labels(q) for q in every} == every
            assert all(ws.labels(q) == {} for q in queries if q not in every)
            _assert_served_equals_evaluate(ws, folder, runs)
        finally:
            store.close()


def test_a_failed_write_changes_nothing_held(tmp_path):
    qrels, runs = _runs(tmp_path)
    store = LabelStore(tmp_path / "labels.sqlite", read_qrels(qrels).to_dict())
    try:
        ws = Workspace(store, runs)
        before = {q: ws.labels(q) for q in runs["run0"]}
        with pytest.raises(Exception, match="not a label"):
            ws.write([("q1", "d1", 2, "t"), ("q1", "d2", 7, "t")])  # the second is refused: neither is written
        assert {q: ws.labels(q) for q in runs["run0"]} == before == {q: store.labels(q).get(q, {}) for q in before}
    finally:
        store.close()


def test_concurrent_writes_and_undos_keep_the_labels_held_in_commit_order(tmp_path):
    """Writes and undos from several threads at once (the server's writer task and undo requests): what the
    workspace holds afterwards is what the store committed, whatever the interleaving."""
    qrels, runs = _runs(tmp_path)
    store = LabelStore(tmp_path / "labels.sqlite", read_qrels(qrels).to_dict())
    try:
        ws = Workspace(store, runs)
        docs = sorted(runs["run0"]["q1"])[:3]  # few documents: the threads collide on them

        def writer(i: int) -> None:
            for n in range(40):
                ws.write([("q1", docs[(i + n) % 3], (i * n) % 4, f"w{i}")])

        def undoer() -> None:
            for _ in range(30):
                ws.undo("u")

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)] + [threading.Thread(target=undoer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert ws.labels("q1") == store.labels("q1")["q1"]
        ws.refresh("q1", reread=False)
        _assert_served_equals_evaluate(ws, tmp_path, runs)
    finally:
        store.close()


def test_through_the_api_a_relabel_to_the_same_label_answers_current_values(tmp_path):
    pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
    from starlette.testclient import TestClient

    from stagewise.app.server import create_app

    qrels, runs = _runs(tmp_path)
    store = LabelStore(tmp_path / "labels.sqlite", read_qrels(qrels).to_dict())
    try:
        ws = Workspace(store, runs)
        calls: list[str] = []
        refresh = ws.refresh
        ws.refresh = lambda qid, **kw: (calls.append(qid), refresh(qid, **kw))[1]  # type: ignore[method-assign]
        client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
        doc = sorted(runs["run0"]["q2"])[0]
        first = client.put(f"/api/labels/q2/{doc}", json={"label": 3}).json()
        assert calls == ["q2"]
        again = client.put(f"/api/labels/q2/{doc}", json={"label": 3}).json()
        assert calls == ["q2"] and again["old"] == 3  # nothing changed: nothing recomputed
        assert again["metrics"] == first["metrics"] and again["means"] == first["means"]
        cleared = client.delete(f"/api/labels/q2/{doc}").json()
        assert calls == ["q2", "q2"] and cleared["old"] == 3
        _assert_served_equals_evaluate(ws, tmp_path, runs)
        assert cleared["means"] == ws.means() and cleared["metrics"] == ws.metrics("q2")
        undone = client.post("/api/undo", json={}).json()
        assert calls == ["q2", "q2", "q2"] and undone["label"] == 3
        _assert_served_equals_evaluate(ws, tmp_path, runs)
        assert undone["means"] == ws.means() == first["means"]
    finally:
        store.close()
