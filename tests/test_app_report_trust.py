"""The web app's report page says how far the current labels can be trusted when two or more runs are loaded."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("matplotlib", reason="the report extra is not installed (make test installs it)")

from starlette.testclient import TestClient

from stagewise._bundled import sample_path
from stagewise.app.server import create_app
from stagewise.cli.serve_cmd import build_workspace


def test_two_runs_get_the_trust_section_over_the_current_labels(tmp_path) -> None:
    runs = [str(sample_path("results.test")), str(sample_path("results.trunc"))]
    ws = build_workspace(str(sample_path("qrels.test")), runs, tmp_path / "labels.sqlite")
    client = TestClient(create_app(ws), base_url="http://127.0.0.1:8765")
    page = client.get("/report")
    assert page.status_code == 200 and 'id="trust"' in page.text and "runs change rank" in page.text
    one = build_workspace(str(sample_path("qrels.test")), runs[:1], tmp_path / "one.sqlite")
    assert 'id="trust"' not in TestClient(create_app(one), base_url="http://127.0.0.1:8765").get("/report").text
