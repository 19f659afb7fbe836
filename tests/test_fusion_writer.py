"""The fused-run writer (``write_trec_lines``, C ``trec_lines``/``format_score``) writes, byte for byte, what
the polars TREC writer (``write_trec_run``) writes: on random doubles, random runs and the real fused runs.

Oracles: polars' own CSV spelling of each double (the current writer), Python's ``float(text) == x`` (the
digits read back as the same double) and ``repr`` (they are the shortest digits)."""

from __future__ import annotations

import io
import math
import struct
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise import read_run
from stagewise._native import rowops
from stagewise.data.writers import write_trec_run
from stagewise.fusion import fuse, write_fused
from stagewise.fusion.writer import write_trec_lines

native = rowops.native
needs_native = pytest.mark.skipif(native is None, reason="the compiled row helpers (rows.c) are not built")


def polars_spelling(values: list[float]) -> list[bytes]:
    sink = io.BytesIO()
    pl.DataFrame({"s": pl.Series(values, dtype=pl.Float64)}).write_csv(sink, include_header=False)
    return sink.getvalue().split(b"\n")[:-1]


@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=200))
def test_format_score_is_polars_spelling_of_any_double(values):
    assert [native.format_score(x) for x in values] == polars_spelling(values)


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_format_score_reads_back_and_is_shortest(bits):
    (x,) = struct.unpack("<d", struct.pack("<Q", bits))
    text = native.format_score(x).decode()
    if math.isnan(x):
        assert text == "NaN"
        return
    assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x)
    # as many significant digits as repr (the shortest that round-trips)
    mantissa = repr(x).lstrip("-").split("e")[0].replace(".", "").strip("0") or "0"
    ours = text.lstrip("-").split("e")[0].replace(".", "").strip("0") or "0"
    assert ours == mantissa


@needs_native
@settings(max_examples=500, deadline=None)
@given(st.integers(1, 10**17), st.integers(0, 25), st.booleans())
def test_format_score_of_short_decimals_is_polars_spelling(digits, places, negative):
    # run files' scores (a few decimals) take the C fast path (n / 10^k); its neighbours n +- 1 and values
    # with 16-17 digits fall back to dtoa
    x = (-1 if negative else 1) * digits / 10**places
    values = [x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf)]
    assert [native.format_score(v) for v in values] == polars_spelling(values)


@needs_native
def test_format_score_hand_worked_boundaries():
    cases = {
        1e-5: b"0.00001",  # exponent -5: still positional
        9.99e-6: b"9.99e-6",  # -6: exponent, no padding
        1e16: b"1e+16",
        9999000000000000.0: b"9999000000000000.0",
        100.0: b"100.0",
        -0.0: b"-0.0",
        5e-324: b"5e-324",
        float("-inf"): b"-inf",
        0.016129032258064516: b"0.016129032258064516",  # 1/62, an RRF term
    }
    assert {x: native.format_score(x) for x in cases} == cases


def random_run(rng: np.random.Generator, n_queries: int, scores: np.ndarray | None = None):
    rows = []
    for q in range(n_queries):
        depth = int(rng.integers(0, 6))
        for d in range(depth):
            score = float(scores[rng.integers(len(scores))]) if scores is not None else float(rng.normal() * 1e3)
            rows.append((f"q{q:02d}", f"doc-{int(rng.integers(0, 50))}-{d}", score))
    if not rows:
        rows.append(("q0", "d", 1.0))
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    return read_run(frame, name="r")


def both(run, tag=None) -> tuple[bytes, bytes]:
    ours, theirs = io.BytesIO(), io.BytesIO()
    write_trec_lines(run, ours, tag)
    write_trec_run(run, theirs, tag)
    return ours.getvalue(), theirs.getvalue()


@needs_native
@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 30),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8),
)
def test_runs_write_the_polars_bytes(seed, n_queries, pool):
    rng = np.random.default_rng(seed)
    run = random_run(rng, n_queries, np.array(pool) if seed % 2 else None)
    ours, theirs = both(run, tag="tag-x" if seed % 3 == 0 else None)
    assert ours == theirs


@needs_native
def test_chunks_split_at_query_bounds(monkeypatch):
    from stagewise.fusion import writer

    run = random_run(np.random.default_rng(7), 40)
    whole, _ = both(run)
    monkeypatch.setattr(writer, "ROWS_PER_CHUNK", 3)
    chunked, theirs = both(run)
    assert chunked == whole == theirs


def test_without_the_extension_it_is_the_polars_writer(monkeypatch):
    monkeypatch.setattr(rowops, "native", None)
    run = random_run(np.random.default_rng(3), 10)
    ours, theirs = both(run)
    assert ours == theirs


def test_refuses_white_space_in_a_doc_id():
    from stagewise.errors import StagewiseError

    run = read_run(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a b"], "score": [1.0]}), name="r")
    with pytest.raises(StagewiseError, match="white space"):
        write_trec_lines(run, io.BytesIO())


ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs" / "runs"


@needs_native
@pytest.mark.parametrize("method,norm", [("rrf", "none"), ("combsum", "minmax"), ("combmnz", "zmuv")])
def test_fused_real_runs_write_the_polars_bytes(tmp_path, method, norm):
    files = [ROBUST / f"input.{name}.gz" for name in ("pircRBa1", "aplrob03a")]
    if not all(f.exists() for f in files):
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (research-only data kept outside the repository)")
    fused = fuse([read_run(f) for f in files], method, norm=norm)
    write_fused(fused, tmp_path / "ours.run")
    write_trec_run(fused, tmp_path / "polars.run")
    assert (tmp_path / "ours.run").read_bytes() == (tmp_path / "polars.run").read_bytes()


@pytest.mark.parametrize(
    "method,norm,block", [("rrf", "none", 1), ("rrf", "none", 3), ("combmnz", "minmax", 2), ("bordafuse", "none", 5)]
)
def test_fusing_query_blocks_writes_the_whole_fusion_bytes(tmp_path, method, norm, block):
    from stagewise.fusion.engine import fuse_blocks_to

    rng = np.random.default_rng(block)
    runs = [random_run(rng, 23).renamed(f"r{i}") for i in range(3)]
    sink = io.BytesIO()
    weights = {"weights": [0.5, 0.3, 0.2]} if method == "rrf" else {}
    info = fuse_blocks_to(runs, sink, method, norm=norm, block_queries=block, **weights)
    whole = fuse(runs, method, norm=norm, **weights)
    write_fused(whole, tmp_path / "whole.run")
    assert sink.getvalue() == (tmp_path / "whole.run").read_bytes()
    assert info == whole.fusion


def test_blocks_decline_what_they_cannot_fuse_alone():
    from stagewise.fusion.engine import fuse_blocks_to

    runs = [random_run(np.random.default_rng(1), 5).renamed(f"r{i}") for i in range(2)]
    sink = io.BytesIO()
    assert fuse_blocks_to(runs, sink, "rrf", queries="intersection") is None
    assert fuse_blocks_to(runs, sink, "rrf", ties="input") is None
    assert sink.getvalue() == b""


@needs_native
def test_fusing_real_query_blocks_writes_the_whole_fusion_bytes(tmp_path):
    from stagewise.fusion.engine import fuse_blocks_to

    files = [ROBUST / f"input.{name}.gz" for name in ("pircRBa1", "aplrob03a", "uwmtCR0")]
    if not all(f.exists() for f in files):
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (research-only data kept outside the repository)")
    runs = [read_run(f) for f in files]
    sink = io.BytesIO()
    fuse_blocks_to(runs, sink, "combsum", norm="zmuv", block_queries=7)
    write_fused(fuse(runs, "combsum", norm="zmuv"), tmp_path / "whole.run")
    assert sink.getvalue() == (tmp_path / "whole.run").read_bytes()
