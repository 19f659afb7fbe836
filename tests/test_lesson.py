"""The seed lesson's worked numbers and Part 2's specified behaviour."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stagewise import lesson


def test_worked_dcg_and_ideal() -> None:
    assert lesson.dcg([1, 0, 2]) == 2.5
    assert lesson.dcg([2, 1, 0]) == pytest.approx(3 + 1 / math.log2(3))
    assert round(lesson.dcg([2, 1, 0]), 4) == 3.6309


def test_worked_ndcg_exponential_and_linear() -> None:
    assert round(lesson.ndcg([1, 0, 2]), 4) == 0.6885
    assert round(lesson.ndcg([1, 0, 2], gain="linear"), 4) == 0.7602
    assert lesson.dcg([1, 0, 2], gain="linear") == 2.0
    assert round(lesson.dcg([2, 1, 0], gain="linear"), 4) == 2.6309


def test_reciprocal_rank_of_the_worked_ranking() -> None:
    # "first relevant result at rank 1 -> reciprocal rank 1"
    ranked = ["a", "b", "c"]
    relevant = {d for d, rel in zip(ranked, [1, 0, 2], strict=True) if rel > 0}
    assert lesson.reciprocal_rank(ranked, relevant) == 1.0
    assert lesson.reciprocal_rank(["x", "y", "a"], {"a"}) == pytest.approx(1 / 3)
    assert lesson.reciprocal_rank(["x"], {"a"}) == 0.0


def test_recall_at_k() -> None:
    assert lesson.recall_at_k(["a", "b", "c", "d"], {"b", "d", "z"}, 2) == pytest.approx(1 / 3)
    assert lesson.recall_at_k(["a", "b", "c", "d"], {"b", "d"}, 4) == 1.0
    assert lesson.recall_at_k(["a"], set(), 5) == 0.0
    assert lesson.recall_at_k([], {"a"}, 5) == 0.0


def test_unknown_gain_raises_value_error() -> None:
    with pytest.raises(ValueError, match="gain"):
        lesson.dcg([1, 2], gain="cubic")
    with pytest.raises(ValueError):
        lesson.ndcg([1, 2], gain="Exp")
    with pytest.raises(ValueError):
        lesson.dcg([], gain="log")


def test_ndcg_zero_cases() -> None:
    assert lesson.ndcg([]) == 0.0
    assert lesson.ndcg([0, 0, 0]) == 0.0
    assert lesson.ndcg([0, 0], gain="linear") == 0.0


def test_cutoff_k() -> None:
    assert lesson.dcg([1, 0, 2], k=1) == 1.0
    assert lesson.dcg([1, 0, 2], k=2) == 1.0
    # ideal of the same relevances cut at k: [2] -> 3
    assert lesson.ndcg([1, 0, 2], k=1) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("evidence", "correct", "label"),
    [
        (True, True, "ok"),
        (True, False, "generation_failure"),
        (False, False, "retrieval_failure"),
        (False, True, "lucky"),
    ],
)
def test_diagnose_four_outcomes(evidence: bool, correct: bool, label: str) -> None:
    assert lesson.diagnose(evidence, correct) == label


def test_rrf_worked_example_numbers() -> None:
    # The lesson's RRF arithmetic (used by fusion later); rrf_k = 60.
    a = 1 / 61 + 1 / 63
    b = 1 / 62 + 1 / 61
    assert round(a, 7) == 0.0322665
    assert round(b, 7) == 0.0325225
    assert b > a


def test_bm25_frequency_factor() -> None:
    tf, k1, b, length, average = 2, 1.2, 0.75, 100, 100
    assert tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)) == pytest.approx(1.375)


@given(st.lists(st.integers(min_value=0, max_value=3), max_size=12), st.sampled_from(["exp", "linear"]))
def test_ndcg_is_bounded_and_one_for_the_ideal_order(rels: list[int], gain: str) -> None:
    value = lesson.ndcg(rels, gain=gain)
    assert 0.0 <= value <= 1.0 + 1e-12
    if any(rels):
        assert lesson.ndcg(sorted(rels, reverse=True), gain=gain) == pytest.approx(1.0)
