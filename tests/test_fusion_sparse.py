"""The fusion table is sparse (per run, the cells it returned); sums are added from those cells, and what needs a
whole row of cells works on dense blocks of whole queries. Every path must give the same bits as the dense one.

Paths are forced through two module constants: ``methods.DENSE_RATIO`` (0: sums always sparse; infinite: always
dense) and ``table.BLOCK_CELLS`` (1: a block per query; large: one block for the table).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise import read_run
from stagewise.fusion import build_table, fuse
from stagewise.fusion import methods as methods_module
from stagewise.fusion import table as table_module

# Scores with ties, zeros and negatives (norm="none" passes them to the sums as they are).
SCORES = st.sampled_from([-3.5, -1.0, -0.25, 0.0, 0.1, 0.3, 1.0, 2.0, 7.75, 1e-9])
QUERIES = ["q1", "q2", "q3", "q4"]
DOCS = ["a", "b", "c", "d", "e", "f", "g", "hh", "é"]


@st.composite
def run_sets(draw):
    """2-6 runs; queries only some runs have; with ``disjoint``, no two runs share a document."""
    n_runs = draw(st.integers(2, 6))
    disjoint = draw(st.booleans())
    runs = []
    for r in range(n_runs):
        queries = draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True))
        run = {}
        for q in queries:
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
            run[q] = {(f"r{r}-{d}" if disjoint else d): draw(SCORES) for d in docs}
        runs.append(read_run(run, name=f"run{r}"))
    weights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.3]), min_size=n_runs, max_size=n_runs))
    weights[0] = weights[0] or 1.0  # not all zero
    return runs, weights


def cases(n_runs: int, weights: list[float]) -> list[tuple[str, dict]]:
    """(method, keyword arguments) for every method, with trained parameters given rather than learned."""
    rng = np.random.default_rng(n_runs)
    probs = [rng.random(int(rng.integers(1, 8))) for _ in range(n_runs)]
    log_odds = [np.log(rng.random(int(rng.integers(1, 8))) + 0.01) for _ in range(n_runs)]
    out: list[tuple[str, dict]] = []
    for method in ("combsum", "combmnz", "combanz", "combgmnz", "mixed", "wmnz", "wsum"):
        for missing in ("zero", "ignore", "min"):
            out.append((method, {"norm": "none", "missing": missing}))
        out.append((method, {"norm": "borda", "missing": "native"}))
    for method in ("combmax", "combmin", "combmed"):
        for missing in ("zero", "ignore", "min"):
            out.append((method, {"norm": "minmax", "missing": missing}))
    out += [
        ("rrf", {}),
        ("rrf", {"rrf_k": 0.0, "missing": "min"}),
        ("rrf", {"weights": weights}),
        ("wsum", {"norm": "zscore", "weights": weights}),
        ("wmnz", {"norm": "none", "weights": weights}),
        ("mixed", {"norm": "sum", "weights": weights, "missing": "min"}),
        ("combsum", {"norm": "minmax_inverted"}),
        ("isr", {}),
        ("log_isr", {"missing": "min"}),
        ("logn_isr", {}),
        ("rbc", {"phi": 0.5}),
        ("bordafuse", {}),
        ("bordafuse", {"missing": "zero"}),
        ("weighted_bordafuse", {"weights": weights}),
        ("condorcet", {}),
        ("weighted_condorcet", {"weights": weights}),
        ("posfuse", {"probs": probs}),
        ("probfuse", {"probs": probs, "segments": 3}),
        ("segfuse", {"probs": probs, "norm": "none"}),
        ("slidefuse", {"probs": probs, "window": 1}),
        ("mapfuse", {"map_scores": rng.random(n_runs)}),
        ("bayesfuse", {"log_odds": log_odds}),
        ("bayesfuse", {"log_odds": log_odds, "missing": "zero"}),
    ]
    return out


def fused_columns(runs, method: str, params: dict, monkeypatch, *, dense_ratio: float, block_cells: int):
    monkeypatch.setattr(methods_module, "DENSE_RATIO", dense_ratio)
    monkeypatch.setattr(table_module, "BLOCK_CELLS", block_cells)
    fused = fuse(runs, method, **params)
    return fused.query_ids[fused.query_codes].tolist(), fused.doc_ids.to_list(), fused.scores.copy()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_sets())
def test_sparse_and_blocked_paths_give_the_dense_bits(monkeypatch, case):
    runs, weights = case
    for method, params in cases(len(runs), weights):
        dense = fused_columns(runs, method, params, monkeypatch, dense_ratio=np.inf, block_cells=10**9)
        sparse = fused_columns(runs, method, params, monkeypatch, dense_ratio=0.0, block_cells=1)
        assert dense[0] == sparse[0] and dense[1] == sparse[1], (method, params)
        # Bit for bit, zeros of either sign read as one (a fused run holds no -0.0).
        assert dense[2].tobytes() == sparse[2].tobytes(), (method, params, dense[2], sparse[2])


@settings(max_examples=60, deadline=None)
@given(run_sets(), st.integers(1, 40))
def test_blocks_hold_whole_queries_and_cover_the_table(case, max_cells):
    runs, _ = case
    table = build_table(runs, norm="none")
    seen = 0
    for lo, hi, rows in table.blocks(max_cells):
        assert lo == seen and hi > lo
        seen = hi
        queries = set(table.query[lo:hi].tolist())
        assert hi - lo <= max(1, max_cells // table.n_runs) or len(queries) == 1  # over budget only alone
        if lo:
            assert table.query[lo - 1] != table.query[lo]  # a block starts a query
        block = table.block(lo, hi, rows)
        # The block's dense cells are the table's rows lo:hi.
        assert np.array_equal(block.rank, table.rank[lo:hi])
        assert np.array_equal(block.score, table.score[lo:hi])
    assert seen == len(table)


@settings(max_examples=60, deadline=None)
@given(run_sets())
def test_sparse_columns_match_the_dense_matrices(case):
    """``cand_of``/``rank_of``/``score_of`` are the nonzero cells of ``rank``/``score``; ``take`` keeps them."""
    runs, _ = case
    table = build_table(runs, norm="minmax")
    assert table.n_rows == int(table.present.sum())
    assert table.count.tolist() == table.present.sum(axis=1).tolist()
    for r in range(table.n_runs):
        cand = np.asarray(table.cand_of[r], dtype=np.int64)
        assert np.flatnonzero(table.present[:, r]).tolist() == sorted(cand.tolist())
        assert np.array_equal(table.rank[cand, r], table.rank_of[r])
        assert np.array_equal(table.score[cand, r], table.score_of[r])
    half = np.flatnonzero(table.query % 2 == 0)
    part = table.take(half)
    assert np.array_equal(part.rank, table.rank[half]) and np.array_equal(part.score, table.score[half])


def test_nearly_disjoint_runs_fuse_without_a_dense_matrix(monkeypatch):
    """Fifty runs sharing one document per query: RRF, CombMNZ and PosFuse never build a candidates x runs
    matrix (the dense properties would raise), and give the dense path's scores."""
    runs = [
        read_run({q: {f"{r}-{d}": 10.0 - d for d in range(5)} | {"shared": 11.0} for q in QUERIES}, name=f"r{r}")
        for r in range(50)
    ]
    probs = [np.linspace(1.0, 0.1, 6)] * 50
    cases = (("rrf", {}), ("combmnz", {}), ("posfuse", {"probs": probs}))
    monkeypatch.setattr(methods_module, "DENSE_RATIO", np.inf)
    expected = {method: fuse(runs, method, **params).scores for method, params in cases}
    monkeypatch.setattr(methods_module, "DENSE_RATIO", 0.0)

    def refuse(*args, **kwargs):
        raise AssertionError("a dense candidates x runs matrix was built")

    monkeypatch.setattr(table_module.FusionTable, "_dense", refuse)
    monkeypatch.setattr(methods_module, "_dense_rows", refuse)
    for method, params in cases:
        fused = fuse(runs, method, **params)
        assert fused.scores.tobytes() == expected[method].tobytes()
        assert fused.to_dict()["q1"]["shared"] == fused.scores.max()  # the document every run returns wins


@pytest.mark.parametrize("method", ["rrf", "combsum", "bordafuse"])
def test_scores_do_not_depend_on_the_order_of_the_runs(method):
    """The sparse sum adds a candidate's cells in ascending order, as the dense one sorts its row."""
    rng = np.random.default_rng(3)

    def one_run(i: int):
        docs, scores = rng.choice(30, 12, replace=False), rng.normal(size=12)
        lists = {q: {f"d{d}": float(s) for d, s in zip(docs, scores, strict=True)} for q in QUERIES}
        return read_run(lists, name=f"r{i}")

    runs = [one_run(i) for i in range(7)]
    first = fuse(runs, method, norm="none" if method == "combsum" else None).to_dict()
    second = fuse(runs[::-1], method, norm="none" if method == "combsum" else None).to_dict()
    assert first == second
