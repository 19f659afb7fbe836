"""stagewise.store: labels in SQLite (WAL), every change in the history, undo, export as TREC qrels."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.data.readers import read_qrels
from stagewise.errors import InputError
from stagewise.store import LabelStore

INITIAL = {"q1": {"d1": 1, "d2": 0}, "q2": {"d9": 3}}


def test_new_database_holds_the_initial_labels_in_wal_mode(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", INITIAL)
    assert store.labels() == INITIAL
    assert sqlite3.connect(tmp_path / "l.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.history() == []


def test_changes_are_recorded_and_survive_reopening_without_reimporting(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", INITIAL)
    assert store.set("q1", "d1", 3, who="ann") == 1
    assert store.set("q1", "d7", 2) is None
    assert store.set("q2", "d9", None) == 3
    store.close()
    again = LabelStore(tmp_path / "l.sqlite", {"q1": {"d1": 0}})  # the initial labels of a new database only
    assert again.labels() == {"q1": {"d1": 3, "d2": 0, "d7": 2}}
    assert [(h["qid"], h["docid"], h["old"], h["new"], h["who"]) for h in again.history()] == [
        ("q1", "d1", 1, 3, "ann"),
        ("q1", "d7", None, 2, ""),
        ("q2", "d9", 3, None, ""),
    ]


def test_undo_walks_back_through_the_changes_and_logs_each_undo(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", INITIAL)
    store.set("q1", "d1", 2)
    store.set("q1", "d1", 3)
    store.set("q1", "d5", 1)
    assert store.undo()["label"] is None
    assert store.get("q1", "d5") is None
    assert store.undo()["label"] == 2
    assert store.undo()["label"] == 1
    assert store.undo() is None
    assert store.labels() == INITIAL
    assert len(store.history()) == 6  # three changes, three undos


@pytest.mark.parametrize("bad", [4, -1, 1.5, "2", True])
def test_a_label_outside_0_to_3_is_refused_and_nothing_changes(tmp_path, bad):
    store = LabelStore(tmp_path / "l.sqlite", INITIAL)
    with pytest.raises(InputError, match="0 to 3"):
        store.set("q1", "d1", bad)
    assert store.labels() == INITIAL and store.history() == []


def test_a_file_that_is_not_a_database_is_an_input_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, not sqlite\n" * 100)
    with pytest.raises(InputError, match="label database"):
        LabelStore(path)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2"]), st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.integers(0, 3))
        ),
        max_size=15,
    )
)
def test_export_reads_back_as_the_last_write_per_pair(tmp_path_factory, changes):
    path = tmp_path_factory.mktemp("s") / "l.sqlite"
    store = LabelStore(path, INITIAL)
    expected = {q: dict(d) for q, d in INITIAL.items()}
    for q, d, lab in changes:
        store.set(q, d, lab)
        if lab is None:
            expected.get(q, {}).pop(d, None)
        else:
            expected.setdefault(q, {})[d] = lab
    expected = {q: d for q, d in expected.items() if d}
    text = store.qrels_text()
    out = path.with_suffix(".qrels")
    out.write_text(text)
    assert (read_qrels(str(out)).to_dict() if text else {}) == expected
    assert store.labels() == expected
    assert len(store.history()) == len(changes)


def test_a_database_knows_the_judgements_it_was_started_from(tmp_path):
    store = LabelStore(tmp_path / "l.sqlite", INITIAL)
    store.set("q1", "d1", 3)
    assert store.made_from({q: dict(reversed(list(d.items()))) for q, d in INITIAL.items()}) is True  # any order
    assert store.made_from({"q1": {"d1": 0}}) is False
    store.close()


def test_serving_a_database_with_other_qrels_is_refused(tmp_path):
    from typer.testing import CliRunner

    from stagewise.app.open import open_workspace
    from stagewise.cli import app
    from stagewise.errors import InputError

    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    a.write_text("q1 0 d1 1\n")
    b.write_text("q1 0 d1 0\nq2 0 d2 1\n")
    open_workspace(str(a), {}, tmp_path / "l.sqlite").store.close()
    with pytest.raises(InputError, match="started from other judgements"):
        open_workspace(str(b), {}, tmp_path / "l.sqlite")
    result = CliRunner().invoke(app, ["serve", "--qrels", str(b), "--db", str(tmp_path / "l.sqlite")])
    assert result.exit_code == 2 and "--db a new file" in result.output
