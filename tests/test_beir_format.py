"""The ``beir`` and ``mteb`` output formats: BEIR's own evaluation is the oracle for the numbers."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import MetricError
from stagewise.report import render

evaluation = pytest.importorskip("beir.retrieval.evaluation", reason="BEIR (the test extra) is not installed")

K = [1, 3, 10]
MEASURES = [f"{m}@{k}" for m in ("ndcg", "map", "recall", "P", "mrr") for k in K]


def _collection(seed: int, ties: bool) -> tuple[dict, dict]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(12):
        qid = f"d{q}"  # queries are documents too (ArguAna), so ignore_identical_ids matters
        qrels[qid] = {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, 8)}
        if rng.random() < 0.8:  # some judged queries get no results
            hits = rng.sample(docs, rng.randint(1, 25))
            scores = rng.sample(range(1000), len(hits)) if not ties else [rng.randint(0, 4) for _ in hits]
            run[qid] = {d: float(s) for d, s in zip(hits, scores, strict=True)}
    return qrels, run


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), ties=st.booleans(), ignore=st.booleans())
def test_beir_groups_equal_beirs_evaluate(seed: int, ties: bool, ignore: bool) -> None:
    qrels, run = _collection(seed, ties)
    if not run:
        return
    ours = stagewise.evaluate(qrels, run, MEASURES, missing="skip", ignore_self=ignore)
    written = json.loads(render(ours, "beir"))
    ndcg, _map, recall, precision = evaluation.EvaluateRetrieval.evaluate(
        qrels, {q: dict(r) for q, r in run.items()}, K, ignore_identical_ids=ignore
    )
    assert written["ndcg"] == ndcg and written["map"] == _map
    assert written["recall"] == recall and written["precision"] == precision
    if not ties and set(run) == set(qrels) and not ignore:
        # BEIR's MRR: every judged query in the mean, score ties in input order (none here)
        mrr = evaluation.EvaluateRetrieval.evaluate_custom(qrels, run, K, metric="mrr")
        assert written["mrr"] == mrr


def test_the_differences_from_beirs_defaults_are_stated() -> None:
    qrels, run = _collection(3, ties=False)
    default = json.loads(render(stagewise.evaluate(qrels, run, ["ndcg@10", "mrr@10"]), "beir"))
    said = " ".join(default["stagewise"]["differs_from_beir"])
    assert "--missing skip" in said and "--ignore-self" in said and "input order" in said
    beir_like = stagewise.evaluate(qrels, run, ["ndcg@10"], missing="skip", ignore_self=True)
    assert json.loads(render(beir_like, "beir"))["stagewise"]["differs_from_beir"] == []


def test_mteb_keys_main_score_and_runs_by_name() -> None:
    qrels, run = _collection(5, ties=False)
    result = stagewise.evaluate(qrels, {"a": run, "b": run}, ["ndcg@10", "recall@3"])
    doc = json.loads(render(result, "mteb"))
    scores = doc["a"]["scores"]["test"][0]
    assert scores["main_score"] == scores["ndcg_at_10"] == result.means["a"]["ndcg@10"]
    assert scores["recall_at_3"] == result.means["a"]["recall@3"] and doc["b"]["scores"] == doc["a"]["scores"]


@pytest.mark.parametrize("name", ["bpref", "ndcg@10(gain=exp)", "map", "Rprec"])
def test_a_measure_the_tools_do_not_compute_is_refused_by_name(name: str) -> None:
    result = stagewise.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, [name])
    for fmt in ("beir", "mteb"):
        with pytest.raises(MetricError, match="writes ndcg@k, map@k"):
            render(result, fmt)
