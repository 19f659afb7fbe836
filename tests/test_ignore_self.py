"""``ignore_self`` (BEIR's ignore_identical_ids): a result whose document id is its query's id is dropped.

The oracle is what BEIR does: pop ``results[qid][qid]`` from the run, then evaluate with pytrec_eval.
"""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = {"ndcg@10": "ndcg_cut_10", "map": "map", "recall@20": "recall_20", "P@5": "P_5", "mrr": "recip_rank"}


def _collection(seed: int, queries: int, docs: int, ties: bool) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    names = [f"d{i}" for i in range(docs)]
    for q in range(queries):
        qid = f"d{q}"  # a query is a document of the corpus, as in ArguAna and Quora
        qrels[qid] = {d: rng.choice([0, 0, 1, 2, -1]) for d in rng.sample(names, docs // 2)}
        retrieved = rng.sample(names, rng.randint(1, docs - 1))
        if rng.random() < 0.7 and qid not in retrieved:
            retrieved.insert(rng.randrange(len(retrieved) + 1), qid)
        score = (lambda: float(rng.randint(0, 5))) if ties else rng.random
        run[qid] = {d: score() for d in retrieved}
    return qrels, run


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), ties=st.booleans())
def test_ignore_self_equals_beir_popping_the_query_then_pytrec_eval(seed: int, ties: bool) -> None:
    qrels, run = _collection(seed, queries=8, docs=30, ties=ties)
    beir = copy.deepcopy(run)
    for qid in beir:
        beir[qid].pop(qid, None)
    ours = stagewise.evaluate(qrels, run, list(MEASURES), ignore_self=True).per_query()["run"]
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(beir)
    for qid in qrels:  # a query whose only result was itself is absent from theirs: it scores 0 (missing zero)
        for name, key in MEASURES.items():
            assert ours[name][qid] == pytest.approx(theirs.get(qid, {}).get(key, 0.0), abs=1e-12), (qid, name)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), max_ret=st.integers(1, 12))
def test_max_ret_counts_the_results_left_after_the_query_is_dropped(seed: int, max_ret: int) -> None:
    qrels, run = _collection(seed, queries=6, docs=30, ties=False)
    popped = {q: {d: s for d, s in r.items() if d != q} for q, r in run.items()}
    names = list(MEASURES)
    ours = stagewise.evaluate(qrels, run, names, ignore_self=True, max_ret=max_ret).per_query()
    assert ours == stagewise.evaluate(qrels, popped, names, max_ret=max_ret).per_query()


def test_without_the_convention_the_query_counts_and_the_notes_say_which() -> None:
    qrels = {"q1": {"q1": 1, "d2": 1}}
    run = {"q1": {"q1": 3.0, "d2": 2.0, "d3": 1.0}}
    plain = stagewise.evaluate(qrels, run, ["mrr", "P@1", "recall@1"])
    dropped = stagewise.evaluate(qrels, run, ["mrr", "P@1", "recall@1"], ignore_self=True)
    assert plain.means["run"] == {"mrr": 1.0, "P@1": 1.0, "recall@1": 0.5}
    # d2 moves up to rank 1; the qrels still count q1 as relevant, so recall@1 stays 1/2 (BEIR leaves qrels alone)
    assert dropped.means["run"] == {"mrr": 1.0, "P@1": 1.0, "recall@1": 0.5}
    run = {"q1": {"q1": 3.0, "d3": 2.0, "d2": 1.0}}
    assert stagewise.evaluate(qrels, run, ["mrr"], ignore_self=True).means["run"]["mrr"] == 0.5
    assert stagewise.evaluate(qrels, run, ["mrr"]).means["run"]["mrr"] == 1.0
    notes = " ".join(dropped.notes())
    assert "ignore_identical_ids" in notes and "ignore self" in repr(dropped)
    assert "ignore_identical_ids" in str(dropped.conventions_report())
