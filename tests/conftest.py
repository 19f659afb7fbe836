"""Shared fixtures: where ../shared's real data lives (skipping cleanly when it is absent), and both TREC readers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TREC_EVAL_TEST = SHARED / "data" / "trec_eval_test"


@pytest.fixture
def trec_eval_test() -> Path:
    if not TREC_EVAL_TEST.is_dir():
        pytest.skip(f"trec_eval's test files are not at {TREC_EVAL_TEST} (../shared is absent)")
    return TREC_EVAL_TEST


@pytest.fixture(params=["compiled", "polars"])
def trec_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both TREC readers: the C parser, and the polars one used where no compiler was available at install (the
    parser's facade switched off, so its other jobs, pair keys and duplicate checks, take their fallbacks too)."""
    from stagewise._native import parsing

    if request.param == "polars":
        monkeypatch.setattr(parsing, "native", None)
    elif parsing.native is None:
        pytest.skip("the C parser was not built")
    return request.param
