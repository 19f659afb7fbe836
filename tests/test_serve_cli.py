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
        (["--playground", "--port", "70000"], "1 to 65535"),
        ([], "--playground"),
        (["--qrels", QRELS, "--db", QRELS], "input"),
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
