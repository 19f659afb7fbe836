"""Measure names: parsing, canonical form, equality, and errors that teach."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stagewise.errors import MetricError
from stagewise.metrics.measures import FAMILIES, Measure


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("ndcg@10", "ndcg@10"),
        ("nDCG@10", "ndcg@10"),
        ("ndcg_cut_10", "ndcg@10"),
        ("ndcg_cut.10", "ndcg@10"),
        ("ndcg@10(gain=exp)", "ndcg@10(gain=exp)"),
        ("ndcg@10(gain='exp')", "ndcg@10(gain=exp)"),
        ("ndcg@10(gain=linear)", "ndcg@10"),
        ("P_10", "P@10"),
        ("P@5(rel=2)", "P@5(rel=2)"),
        ("recall_1000", "recall@1000"),
        ("recip_rank", "mrr"),
        ("mrr@10", "mrr@10"),
        ("map_cut_100", "map@100"),
        ("map", "map"),
        ("Rprec", "Rprec"),
        ("iprec_at_recall_0.10", "iprec_at_recall@0.1"),
        ("rbp(p=0.8)", "rbp(p=0.8)"),
        ("judged@10", "judged@10"),
        ("success_5", "success@5"),
        ("11pt_avg", "11pt_avg"),
        # a peer's exact spelling means the peer's number (docs/names.md)
        ("ERR@10", "err@10(max_label=4)"),
        ("err@10", "err@10"),
        ("RBP", "rbp(p=0.8,scale=False)"),
        ("RBP(rel=2)", "rbp(p=0.8,rel=2,scale=False)"),
        ("IPrec@0.1", "iprec_at_recall@0.1(rounding=0.9)"),
        ("Judged@10", "judged_retrieved@10"),
        ("hit_rate@10", "success@10"),
        ("hits@10", "hits@10"),
        ("precision", "set_P"),
        ("r-precision", "Rprec"),
        ("ndcg_burges@10", "ndcg@10(gain=exp)"),
        ("rbp.95", "rbp(p=0.95,scale=False)"),
        ("map@100-l2", "map@100(rel=2)"),
        ("ndcg@10-l2", "ndcg@10(gains={0:0,1:0})"),
        ("nDCG(gains={0:0,1:1,2:3})@10", "ndcg@10(gains={0:0,1:1,2:3})"),
        ("P(judged_only=True)@5", "P@5(judged_only=True)"),
        ("P@5(judged_only=False)", "P@5"),
        ("Compat(p=0.8)", "compat(p=0.8)"),
        ("Accuracy@5", "accuracy@5"),
    ],
)
def test_parse_to_canonical(text: str, canonical: str) -> None:
    measure = Measure.parse(text)
    assert str(measure) == canonical
    assert Measure.parse(str(measure)) == measure


def test_equal_measures_deduplicate() -> None:
    assert len({Measure.parse("ndcg_cut_10"), Measure.parse("nDCG@10"), Measure.parse("ndcg@10(gain=linear)")}) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", "unknown metric 'foo'"),
        ("ndcg@ten", "The 'cutoff' parameter of ndcg must be an int >= 1. Got 'ten' instead."),
        ("P@0", "must be an int >= 1"),
        ("P", "needs a cutoff"),
        ("bpref@10", "takes no cutoff"),
        ("ndcg@10(gain=cubic)", "must be one of"),
        ("P@10(bogus=1)", "has no option 'bogus'"),
        ("P@10(rel=1.5)", "The 'rel' parameter of P must be an int. Got 1.5 instead."),
        ("rbp(p=1.5)", "in (0, 1)"),
        ("ndcg@10(gain=exp", "cannot read"),
    ],
)
def test_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(MetricError) as info:
        Measure.parse(text)
    assert message in str(info.value)


@given(
    family=st.sampled_from(sorted({f.name for f in FAMILIES.values()})),
    cutoff=st.integers(min_value=1, max_value=5000),
)
def test_canonical_form_round_trips(family: str, cutoff: int) -> None:
    spec = FAMILIES[family.lower()]
    if spec.cutoff == "none":
        text = family
    elif spec.cutoff_kind is float:
        text = f"{family}@{cutoff / 5000:g}"
    else:
        text = f"{family}@{cutoff}"
    measure = Measure.parse(text)
    assert Measure.parse(str(measure)) == measure
    assert hash(Measure.parse(str(measure))) == hash(measure)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("alpha_nDCG", "as in alpha_ndcg@10"),  # ndeval prints its measures at cutoffs; ir_measures needs one too
        ("BPM", "as in bpm@10"),  # cwl_eval's BPM is a family now; K, its cost budget, is the cutoff it needs
        ("NumQ", "num_queries"),
        ("bpref-l2", "bpref(rel=2)"),
        ("nDCG(gains='x')@10", "gains"),
        ("map(judged_only=2)", "judged_only"),
        ("judged@10-l2", "no relevance level"),
    ],
)
def test_a_refused_peer_name_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(MetricError, match=re.escape(says)):
        Measure.parse(text)


@pytest.mark.parametrize(
    ("name", "note"),
    [("Judged@10", "Judged@10 = judged_retrieved@10"), ("hit_rate@5", "hit_rate@5 = success@5")],
)
def test_a_peer_name_for_another_family_is_noted(name: str, note: str) -> None:
    # Judged@10 is ir_measures' judged-among-retrieved, not stagewise's judged@10: the notes must say so
    from stagewise.metrics.measures import measure_notes

    assert measure_notes([(name, Measure.parse(name))]) == [note]


def test_a_case_spelling_is_not_noted() -> None:
    from stagewise.metrics.measures import measure_notes

    assert measure_notes([("nDCG@10", Measure.parse("nDCG@10")), ("unj@10", Measure.parse("unj@10"))]) == []


def test_rbp_states_its_gain_scaling_in_the_notes() -> None:
    import stagewise

    qrels = {"q1": {"a": 2, "b": 1}}
    run = {"r": {"q1": {"a": 2.0, "b": 1.0}}}
    scaled = "rbp: gains scaled into [0, 1] per query by the query's highest gain (trec_eval)"
    assert scaled in stagewise.evaluate(qrels, run, ["rbp@10"]).notes()
    assert scaled not in stagewise.evaluate(qrels, run, ["rbp.95", "rbp(rel=1)", "P@1"]).notes()
