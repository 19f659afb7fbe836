"""Differential tests: stagewise's fusion against ranx 0.3.21 (``ranx.fuse``), to 1e-9.

Every method and normalisation both libraries implement is compared on randomised runs without tied scores
(ranx orders ties arbitrarily). Where the two differ by design the pair is left out here and listed in
docs/fusion.md: the Borda normalisation with rank-based or count-based methods (ranx lists every candidate
in every normalised run, in hash order), and Condorcet on inputs whose majority is not a strict order (ranx's
comparison is not a consistent order, so its result depends on the candidates' hash order).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from stagewise.fusion import build_table, fuse
from stagewise.fusion.train import bayes_log_odds, judge, mean_average_precision, position_probs, segfuse_probs
from stagewise.fusion.train import segment_probs as probfuse_probs

ranx = pytest.importorskip("ranx", reason="ranx is the reference of the differential tests (pip install ranx==0.3.21)")
pytestmark = pytest.mark.filterwarnings("ignore::Warning")

TOL = 1e-9
NORMS = {  # ours -> ranx's
    "none": None,
    "minmax": "min-max",
    "minmax_inverted": "min-max-inverted",
    "max": "max",
    "sum": "sum",
    "zscore": "zmuv",
    "rank": "rank",
    "borda": "borda",
}
UNWEIGHTED = {  # ours -> (ranx name, params)
    "combsum": ("sum", {}),
    "combmnz": ("mnz", {}),
    "combmax": ("max", {}),
    "combmin": ("min", {}),
    "combmed": ("med", {}),
    "combanz": ("anz", {}),
    "combgmnz": ("gmnz", {"gamma": 0.7}),
    "rrf": ("rrf", {"rrf_k": 30}),
    "isr": ("isr", {}),
    "log_isr": ("log_isr", {}),
    "logn_isr": ("logn_isr", {"sigma": 0.3}),
    "rbc": ("rbc", {"phi": 0.9}),
    "bordafuse": ("bordafuse", {}),
}
WEIGHTED = {"wsum": "wsum", "wmnz": "wmnz", "mixed": "mixed", "weighted_bordafuse": "w_bordafuse"}
RANK_BASED = {"rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "weighted_bordafuse"}
COUNT_BASED = {"combmnz", "combanz", "combgmnz", "wmnz", "mixed", "isr", "log_isr", "logn_isr"}


def _ranx_params(ours: dict) -> dict:
    return {("k" if key == "rrf_k" else key): value for key, value in ours.items()}


def random_runs(seed: int, n_runs: int = 3, n_queries: int = 6, pool: int = 25, positive: bool = False) -> list[dict]:
    """Runs with the same queries, partly overlapping documents, lists of different lengths, no tied scores;
    negative scores too unless ``positive`` (max normalisation is defined for a positive maximum only)."""
    rng = np.random.default_rng(seed)
    runs = []
    for r in range(n_runs):
        run = {}
        for q in range(n_queries):
            size = int(rng.integers(4, 18))
            docs = rng.choice(pool, size=size, replace=False)
            scores = rng.normal(loc=r + (20 if positive else 0), scale=2.0, size=size)
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, scores, strict=True)}
        runs.append(run)
    return runs


def random_qrels(runs: list[dict], seed: int) -> dict:
    rng = np.random.default_rng(seed)
    qrels = {}
    for q in runs[0]:
        docs = sorted({d for run in runs for d in run[q]})
        chosen = rng.choice(len(docs), size=min(len(docs), 8), replace=False)
        labels = {docs[i]: int(rng.integers(0, 3)) for i in chosen}
        labels[docs[chosen[0]]] = 1  # every query has a relevant document
        qrels[q] = labels
    return qrels


def _comparable(method: str, norm: str) -> bool:
    """Pairs that both libraries define the same way (see the module docstring)."""
    if norm == "borda":
        return method not in RANK_BASED and method not in COUNT_BASED
    return True


def ranx_fuse(runs: list[dict], method: str, norm: str | None, params: dict) -> dict:
    fused = ranx.fuse([ranx.Run(run) for run in runs], norm=norm, method=method, params=params)
    return fused.to_dict()


def assert_same(ours, theirs: dict) -> None:
    mine = ours.to_dict()
    assert set(mine) == set(theirs)
    for q in theirs:
        assert set(mine[q]) == set(theirs[q]), q
        a = np.array([mine[q][d] for d in theirs[q]])
        b = np.array([theirs[q][d] for d in theirs[q]])
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL, err_msg=q)


@pytest.mark.parametrize("norm", list(NORMS))
def test_normalisations_match_ranx(norm):
    runs = random_runs(seed=1, positive=norm == "max")
    if norm == "borda":
        normalised = ranx.normalization.borda_norm([ranx.Run(r) for r in runs])
    else:
        normalised = [
            ranx.Run(r) if NORMS[norm] is None else ranx.normalization.norm_switch(NORMS[norm])(ranx.Run(r))
            for r in runs
        ]
    table = build_table(runs, norm=norm)
    docs = table.docs.values()
    for r, theirs in enumerate(normalised):
        theirs = theirs.to_dict()
        for i, doc in enumerate(docs):
            query = str(table.query_ids[table.query[i]])
            if table.rank[i, r] == 0:
                if norm == "borda":  # Borda gives unranked documents a value
                    assert table.unranked[table.query[i], r] == pytest.approx(theirs[query][doc], abs=TOL)
                else:
                    assert doc not in theirs[query]
                continue
            assert table.score[i, r] == pytest.approx(theirs[query][doc], abs=TOL)


@pytest.mark.parametrize(("method", "norm"), [(m, n) for m in UNWEIGHTED for n in NORMS if _comparable(m, n)])
def test_unweighted_methods_match_ranx(method, norm):
    runs = random_runs(seed=zlib.crc32(f"{method}|{norm}".encode()) % 1000, positive=norm == "max")
    ranx_name, params = UNWEIGHTED[method]
    ours = fuse(runs, method, norm=norm, **params)
    assert_same(ours, ranx_fuse(runs, ranx_name, NORMS[norm], _ranx_params(params)))


@pytest.mark.parametrize(("method", "norm"), [(m, n) for m in WEIGHTED for n in NORMS if _comparable(m, n)])
def test_weighted_methods_match_ranx(method, norm):
    runs = random_runs(seed=7, positive=norm == "max")
    weights = [0.5, 0.2, 0.3]
    ours = fuse(runs, method, norm=norm, weights=weights)
    assert_same(ours, ranx_fuse(runs, WEIGHTED[method], NORMS[norm], {"weights": weights}))


def test_borda_normalisation_differs_from_ranx_only_in_the_count():
    """With norm="borda", ranx lists every candidate in every normalised run, so CombMNZ's count is always the
    number of runs; stagewise counts the runs that returned the document (docs/fusion.md)."""
    runs = random_runs(seed=21)
    theirs = ranx_fuse(runs, "mnz", "borda", {})
    as_ranx = fuse(runs, "combsum", norm="borda").to_dict()
    for q in theirs:
        for d in theirs[q]:
            assert theirs[q][d] == pytest.approx(3 * as_ranx[q][d], abs=TOL)
    ours = fuse(runs, "combmnz", norm="borda").to_dict()
    assert any(ours[q][d] != pytest.approx(theirs[q][d]) for q in theirs for d in theirs[q])


def test_rrf_default_constant_matches_ranx():
    runs = random_runs(seed=3, n_runs=2)
    assert_same(fuse(runs, "rrf"), ranx_fuse(runs, "rrf", None, {}))


def _majority_runs(seed: int, n_queries: int = 5, size: int = 12) -> list[dict]:
    """Three runs over the same documents; the first two agree, so the majority is a strict order."""
    rng = np.random.default_rng(seed)
    runs: list[dict] = [{}, {}, {}]
    for q in range(n_queries):
        docs = [f"d{i}" for i in rng.choice(40, size=size, replace=False)]
        base = rng.permutation(size)
        for r, order in enumerate((base, base, rng.permutation(size))):
            runs[r][f"q{q}"] = {
                docs[i]: float(size - position) + rng.random() * 0.5 for position, i in enumerate(order)
            }
    return runs


def test_condorcet_matches_ranx_when_the_majority_is_an_order():
    runs = _majority_runs(seed=5)
    assert_same(fuse(runs, "condorcet"), ranx_fuse(runs, "condorcet", None, {}))


def test_weighted_condorcet_matches_ranx_when_one_run_outweighs_the_rest():
    runs = _majority_runs(seed=6)
    runs = [runs[2], runs[0], runs[1]]
    weights = [0.6, 0.2, 0.15]  # the first run wins every comparison
    ours = fuse(runs, "weighted_condorcet", weights=weights)
    assert_same(ours, ranx_fuse(runs, "w_condorcet", None, {"weights": weights}))


# ------------------------------------------------------------------------------------------ supervised
@pytest.fixture(scope="module")
def supervised():
    runs = random_runs(seed=11, n_queries=8)
    qrels = random_qrels(runs, seed=12)
    ranx_runs = [ranx.Run(r) for r in runs]
    ranx_qrels = ranx.Qrels(qrels)
    from stagewise import read_qrels

    table = build_table(runs, norm="none")
    judged = judge(table, read_qrels(qrels))
    train = np.ones(len(table.query_ids), dtype=bool)
    return runs, qrels, ranx_runs, ranx_qrels, table, judged, train


def _close_lists(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        b = np.asarray(b, dtype=float)
        n = max(len(a), len(b))
        a = np.pad(np.asarray(a, dtype=float), (0, n - len(a)))
        b = np.pad(b, (0, n - len(b)))
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


def test_posfuse_training_and_scores_match_ranx(supervised):
    runs, qrels, ranx_runs, ranx_qrels, table, judged, train = supervised
    probs = position_probs(table, judged, train)
    theirs = ranx.fusion.posfuse_train(ranx_qrels, ranx_runs)
    _close_lists(probs, theirs)
    assert_same(fuse(runs, "posfuse", qrels=qrels), ranx_fuse(runs, "posfuse", None, {"probs": theirs}))


def test_slidefuse_matches_ranx(supervised):
    runs, qrels, ranx_runs, ranx_qrels, *_ = supervised
    theirs = ranx.fusion.slidefuse_train(ranx_qrels, ranx_runs)
    ours = fuse(runs, "slidefuse", qrels=qrels, window=2)
    assert_same(ours, ranx_fuse(runs, "slidefuse", None, {"probs": theirs, "w": 2}))


@pytest.mark.parametrize("segments", [1, 3, 10])
def test_probfuse_training_and_scores_match_ranx(supervised, segments):
    runs, qrels, ranx_runs, ranx_qrels, table, judged, train = supervised
    theirs = ranx.fusion.probfuse_train(ranx_qrels, ranx_runs, segments)
    _close_lists(probfuse_probs(table, judged, train, segments), theirs)
    ours = fuse(runs, "probfuse", qrels=qrels, segments=segments)
    assert_same(ours, ranx_fuse(runs, "probfuse", None, {"probs": theirs}))


@pytest.mark.parametrize("norm", ["none", "minmax"])
def test_segfuse_training_and_scores_match_ranx(supervised, norm):
    runs, qrels, ranx_runs, ranx_qrels, table, judged, train = supervised
    theirs = ranx.fusion.segfuse_train(ranx_qrels, ranx_runs)
    _close_lists(segfuse_probs(table, judged, train), theirs)
    ours = fuse(runs, "segfuse", qrels=qrels, norm=norm)
    assert_same(ours, ranx_fuse(runs, "segfuse", NORMS[norm], {"probs": theirs}))


def test_mapfuse_training_and_scores_match_ranx(supervised):
    runs, qrels, ranx_runs, ranx_qrels, table, judged, train = supervised
    theirs = ranx.fusion.mapfuse_train(ranx_qrels, ranx_runs)
    np.testing.assert_allclose(mean_average_precision(table, judged, train), theirs, rtol=0, atol=TOL)
    assert_same(fuse(runs, "mapfuse", qrels=qrels), ranx_fuse(runs, "mapfuse", None, {"map_scores": theirs}))


def test_bayesfuse_training_and_scores_match_ranx(supervised):
    runs, qrels, ranx_runs, ranx_qrels, table, judged, train = supervised
    theirs = ranx.fusion.bayesfuse_train(ranx_qrels, ranx_runs)
    _close_lists(bayes_log_odds(table, judged, train), theirs)
    assert_same(fuse(runs, "bayesfuse", qrels=qrels), ranx_fuse(runs, "bayesfuse", None, {"log_odds": theirs}))


def test_every_ranx_method_is_covered():
    """Each method of ranx's fusion_switch has a stagewise counterpart that a test above compares."""
    from stagewise.fusion import METHODS, method_names

    ours = {METHODS[name].ranx for name in method_names()}
    theirs = {
        "bayesfuse",
        "bordafuse",
        "anz",
        "gmnz",
        "max",
        "med",
        "min",
        "mnz",
        "sum",
        "condorcet",
        "isr",
        "log_isr",
        "logn_isr",
        "mapfuse",
        "mixed",
        "posfuse",
        "probfuse",
        "rbc",
        "rrf",
        "segfuse",
        "slidefuse",
        "w_bordafuse",
        "w_condorcet",
        "wmnz",
        "wsum",
    }
    assert theirs <= ours
    for name in theirs:
        ranx.fusion.fusion_switch(name)  # ranx knows it by that name
