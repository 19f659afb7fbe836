"""stagewise as an ir_measures provider: the same per-query numbers as ir_measures' own providers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ir_measures = pytest.importorskip("ir_measures")
from ir_measures import AP, RR, Bpref, Judged, NumQ, P, R, Rprec, SetP, Success, nDCG  # noqa: E402

from stagewise.interop import ir_measures_provider as sw  # noqa: E402

MEASURES = [nDCG @ 10, nDCG, AP, AP(rel=2), P @ 5, R @ 20, RR, RR @ 10, Rprec, Bpref, Judged @ 10, Success @ 3, SetP]

# ir_measures serves these through providers (judged, msmarco) that break score ties in an order of their own, not
# pytrec_eval's: stagewise keeps trec_eval's order for every measure, so on tied runs only pytrec_eval's agree.
TIE_ORDER_OF_THEIR_OWN = {"Judged@10", "RR@10"}


def _collection(seed: int, ties: bool) -> tuple[dict, dict]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels = {f"q{q}": {d: rng.choice([-1, 0, 1, 2, 3]) for d in rng.sample(docs, 10)} for q in range(10)}
    run = {}
    for q in range(12):  # q10, q11 unjudged; some judged queries without results
        if rng.random() < 0.85:
            hits = rng.sample(docs, rng.randint(1, 30))
            run[f"q{q}"] = {d: float(rng.randint(0, 3)) if ties else rng.random() for d in hits}
    return qrels, run


def _per_query(metrics) -> dict:
    return {(str(m.measure), m.query_id): m.value for m in metrics}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), ties=st.booleans())
def test_per_query_values_equal_ir_measures_own_providers(seed: int, ties: bool) -> None:
    qrels, run = _collection(seed, ties)
    ours = _per_query(sw.provider.iter_calc(MEASURES, qrels, run))
    theirs = _per_query(ir_measures.iter_calc(MEASURES, qrels, run))
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        if ties and key[0] in TIE_ORDER_OF_THEIR_OWN:
            continue
        assert ours[key] == pytest.approx(value, abs=1e-9), key


def test_install_puts_stagewise_first_and_unknown_measures_fall_through() -> None:
    qrels, run = _collection(1, ties=False)
    try:
        sw.install()
        sw.install()  # twice is once
        assert ir_measures.DefaultPipeline.providers.count(sw.provider) == 1
        evaluator = ir_measures.evaluator([nDCG @ 10, NumQ], qrels)
        kinds = {type(e).__name__ for e in evaluator.evaluators}
        assert "StagewiseEvaluator" in kinds and len(kinds) == 2  # NumQ is not stagewise's: another provider
        aggregate = ir_measures.calc_aggregate([nDCG @ 10, AP], qrels, run)
    finally:
        sw.uninstall()
    assert sw.provider not in ir_measures.DefaultPipeline.providers
    assert aggregate == pytest.approx(ir_measures.calc_aggregate([nDCG @ 10, AP], qrels, run), abs=1e-12)


def test_the_provider_is_registered_and_says_what_it_cannot_compute() -> None:
    assert ir_measures.providers.registry["stagewise"] is sw.provider
    assert not sw.provider.supports(NumQ) and sw.provider.supports(nDCG @ 10)
    with pytest.raises(ValueError, match="stagewise does not compute NumQ"):
        sw.provider.evaluator([NumQ], {"q": {"d": 1}})
