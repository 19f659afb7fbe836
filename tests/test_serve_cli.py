"""``stagewise serve`` refuses unsafe or empty setups in one line (exit 2); ``stagewise labels export``."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.data.readers import read_qrels
from stagewise.store import LabelStore

runner = CliRunner()
QRELS = str(sample_path("qrels.test"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--playground", "--host", "0.0.0.0"], "add --token"),
        (["--playground", "--host", "192.168.1.4", "--token", "short"], "at least 8"),
        (["--playground", "--port", "70000"], "from 0 to 65,535"),
        ([], "--playground"),
        (["--qrels", QRELS, "--db", QRELS], "input"),
        (["--rag", "r.jsonl", "--run", "a.run"], "--run: is only shown with --qrels"),
        (["--playground", "--corpus", "c.jsonl"], "not with --playground"),
        (["--playground", "--qrels", QRELS], "alone"),
    ],
)
def test_serve_refuses_in_one_line(args, message):
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("stagewise: error:")
    assert message in result.output


def test_labels_export_writes_the_current_labels_and_leaves_the_qrels_alone(tmp_path):
    original = sample_path("qrels.test").read_bytes()
    judged = read_qrels(QRELS).to_dict()
    store = LabelStore(tmp_path / "l.sqlite", judged)
    qid, docs = next(iter(judged.items()))
    doc = next(iter(docs))
    store.set(qid, doc, 3 if docs[doc] != 3 else 0)
    store.set(qid, "brand-new-doc", 2)
    store.close()
    out = tmp_path / "now.qrels"
    result = runner.invoke(app, ["labels", "export", "--db", str(tmp_path / "l.sqlite"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    exported = read_qrels(str(out)).to_dict()
    assert exported[qid][doc] == (3 if docs[doc] != 3 else 0) and exported[qid]["brand-new-doc"] == 2
    assert sum(map(len, exported.values())) == sum(map(len, judged.values())) + 1
    assert sample_path("qrels.test").read_bytes() == original


def test_labels_export_errors(tmp_path):
    missing = runner.invoke(app, ["labels", "export", "--db", str(tmp_path / "none.sqlite"), "-o", "x.qrels"])
    assert missing.exit_code == 2 and "no such label database" in missing.output
    LabelStore(tmp_path / "l.sqlite", {"q": {"d": 1}}).close()
    into_folder = runner.invoke(app, ["labels", "export", "--db", str(tmp_path / "l.sqlite"), "-o", str(tmp_path)])
    assert into_folder.exit_code == 2 and "stagewise: error:" in into_folder.output


def test_labels_export_goes_through_the_qrels_writer(tmp_path):
    """A doc id with white space or a query id starting with # cannot be a TREC line: refused (one line, no
    file), and written as JSONL when the output says .jsonl; a database without labels exports nothing."""
    db = tmp_path / "l.sqlite"
    store = LabelStore(db, {"q1": {"doc one": 1, "d2": 0}, "#q2": {"d3": 2}})
    store.close()
    trec = tmp_path / "out.qrels"
    refused = runner.invoke(app, ["labels", "export", "--db", str(db), "-o", str(trec)])
    assert refused.exit_code == 2 and "write .jsonl or .parquet instead" in refused.output and not trec.exists()
    assert refused.output.count("\n") == 1
    as_jsonl = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["labels", "export", "--db", str(db), "-o", str(as_jsonl)]).exit_code == 0
    assert read_qrels(str(as_jsonl)).to_dict() == {"q1": {"doc one": 1, "d2": 0}, "#q2": {"d3": 2}}
    empty = tmp_path / "empty.sqlite"
    LabelStore(empty, {}).close()
    nothing = runner.invoke(app, ["labels", "export", "--db", str(empty), "-o", str(tmp_path / "e.qrels")])
    assert nothing.exit_code == 2 and "holds no labels" in nothing.output
