"""Metric parameters a new user can mistype give an error, never a number that is no value of the measure:
ERR with a scale (max_label) below the judged labels gave stop probabilities above 1 (ERR 0.78 where RR is
0.39); set_F with a negative beta gave F values outside [0, 1]."""

from __future__ import annotations

import pytest

import stagewise
from stagewise.errors import MetricError

QRELS = {"q1": {"d1": 2, "d2": 1, "d3": 0}}
RUN = {"q1": {"d2": 3.0, "d1": 2.0, "d3": 1.0}}


def _mean(metric: str, qrels=QRELS, run=RUN) -> float:
    return stagewise.evaluate(qrels, {"r": run}, [metric]).means["r"][metric]


def test_err_by_hand() -> None:
    # stop probabilities (2**label - 1) / 2**2: d2 (rank 1) 1/4, d1 (rank 2) 3/4
    # ERR = 1/4 / 1 + (1 - 1/4) * 3/4 / 2 = 0.53125
    assert _mean("err@10(max_label=2)") == pytest.approx(0.53125, abs=1e-12)
    assert _mean("err@10") == pytest.approx(0.53125, abs=1e-12)  # the default: the highest judged label, 2


def test_err_with_a_scale_below_the_labels_is_an_error_that_says_what_to_give() -> None:
    with pytest.raises(MetricError, match=r"label 2, above max_label=1.*give max_label=2 or more"):
        _mean("err@10(max_label=1)")


def test_err_max_label_must_not_be_negative() -> None:
    with pytest.raises(MetricError, match=r"The 'max_label' parameter of err must be an int >= 0\. Got -1"):
        _mean("err@10(max_label=-1)")


def test_err_on_a_zero_scale_with_binary_labels_is_reciprocal_rank() -> None:
    # (2**1 - 1) / 2**0 = 1: the first relevant result stops the user, which is RR (an independent measure)
    binary = {"q1": {"d1": 1, "d2": 0}}
    run = {"q1": {"d2": 2.0, "d1": 1.0}}
    assert _mean("err@10(max_label=0)", binary, run) == _mean("mrr@10", binary, run) == 0.5


def test_err_default_on_qrels_with_only_negative_labels_is_zero_not_an_error() -> None:
    assert _mean("err@10", {"q1": {"d1": -1}}, {"q1": {"d1": 1.0}}) == 0.0


def test_set_f_beta_must_not_be_negative() -> None:
    with pytest.raises(MetricError, match=r"The 'beta' parameter of set_F must be a number >= 0\. Got -1\.0"):
        _mean("set_F(beta=-1)")


def test_set_f_at_beta_zero_is_set_precision() -> None:
    # trec_eval's weighting (beta + 1) P R / (beta P + R) is P at beta = 0: checked against set_P
    assert _mean("set_F(beta=0)") == pytest.approx(_mean("set_P"), abs=1e-12) == pytest.approx(2 / 3)


def test_iprec_at_recall_above_1_is_refused() -> None:
    # no ranking reaches a recall of 2: it was a silent 0.0
    with pytest.raises(MetricError, match=r"The 'cutoff' parameter of iprec_at_recall must be a number in \[0, 1\]"):
        _mean("iprec_at_recall@2")
    with pytest.raises(MetricError, match=r"must be a number in \[0, 1\]\. Got 2\.0"):
        _mean("IPrec@2")  # ir_measures' spelling reaches the same check


def test_iprec_at_recall_at_1_still_matches_trec_eval(trec_eval_test) -> None:
    # trec_eval 10's own expected output for its test files (out.test): iprec_at_recall_1.00 over all queries
    expected = next(
        float(line.split()[2])
        for line in (trec_eval_test / "out.test").read_text().splitlines()
        if line.split()[:2] == ["iprec_at_recall_1.00", "all"]
    )
    got = stagewise.evaluate(trec_eval_test / "qrels.test", [trec_eval_test / "results.test"], ["iprec_at_recall@1"])
    assert round(got.means["results.test"]["iprec_at_recall@1"], 4) == expected
