"""Check the naive reference implementation against trec_eval's own expected outputs.

The data lives outside the repository (``../shared/data/trec_eval_test`` relative to the repo
root); the tests skip when it is absent.  See that folder's SOURCE.md for the exact commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.reference.naive_trec_eval import (
    evaluate_naive,
    format_line,
    format_trec_eval,
    read_qrels,
    read_run,
    read_run_id,
    summarize_naive,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "trec_eval_test"

needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"trec_eval test data not found at {DATA} (../shared is absent)"
)


@dataclass(frozen=True)
class Case:
    expected: str
    qrels: str
    run: str
    measures: tuple[str, ...] = ()
    query_flag: bool = True
    options: dict[str, Any] = field(default_factory=dict)


MEAS_PARAMS = (
    "iprec_at_recall..10,.20,.25,.75,.50",
    "P.5,7,3",
    "recall.20,2000",
    "Rprec_mult.5.0,0.2,0.35",
    "utility.2,-1,0,0",
    "11pt_avg..25,.5,.75",
    "ndcg.1=3,2=9,4=4.5",
    "ndcg_cut.10,20,23.4",
    "success.2,5,20",
)

CASES = {
    "default": Case("out.test", "qrels.test", "results.test", query_flag=False),
    "default_qrels_with_comments": Case("out.test", "qrels.test.with-comments", "results.test", query_flag=False),
    "default_comment_docnos": Case("out.comment.test", "qrels.comment.test", "results.comment.test", query_flag=False),
    "a": Case("out.test.a", "qrels.test", "results.test", ("all_trec",), query_flag=False),
    "aq": Case("out.test.aq", "qrels.test", "results.test", ("all_trec",)),
    "aqc": Case("out.test.aqc", "qrels.test", "results.trunc", ("all_trec",), options={"complete": True}),
    "aqcM": Case(
        "out.test.aqcM",
        "qrels.test",
        "results.trunc",
        ("all_trec",),
        options={"complete": True, "max_ret": 100},
    ),
    "aql": Case(
        "out.test.aql",
        "qrels.rel_level",
        "results.test",
        ("all_trec", "relstring.20"),
        options={"rel_level": 2},
    ),
    "meas_params": Case("out.test.meas_params", "qrels.test", "results.test", MEAS_PARAMS),
}


def _produce(case: Case) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str]:
    qrels = read_qrels(DATA / case.qrels)
    run = read_run(DATA / case.run)
    measures = list(case.measures) or None
    per_query = evaluate_naive(qrels, run, measures, **case.options)
    summary = summarize_naive(per_query, measures, read_run_id(DATA / case.run))
    return per_query, summary, format_trec_eval(per_query, summary, case.query_flag)


def _expected_values(path: Path) -> dict[tuple[str, str], str]:
    values = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split("\t")
        values[(name.rstrip(), qid)] = value
    return values


@needs_data
@pytest.mark.parametrize("case_name", sorted(CASES))
def test_values_match_expected(case_name: str) -> None:
    """Every printed value, formatted/rounded to 4 decimals as trec_eval does, is identical."""
    case = CASES[case_name]
    per_query, summary, _ = _produce(case)
    expected = _expected_values(DATA / case.expected)
    produced: dict[tuple[str, str], str] = {}
    if case.query_flag:
        for qid, values in per_query.items():
            for name, value in values.items():
                if name not in ("gm_map", "gm_bpref"):
                    produced[(name, qid)] = format_line(name, qid, value).split("\t")[2]
    for name, value in summary.items():
        produced[(name, "all")] = format_line(name, "all", value).split("\t")[2]
    mismatches = {
        key: (expected.get(key), produced.get(key))
        for key in expected.keys() | produced.keys()
        if expected.get(key) != produced.get(key)
    }
    assert not mismatches, f"{len(mismatches)} mismatches, e.g. {sorted(mismatches.items())[:10]}"


@needs_data
@pytest.mark.parametrize("case_name", sorted(CASES))
def test_text_is_byte_identical(case_name: str) -> None:
    """The whole output text (order, padding, tabs, integer formatting) is identical."""
    case = CASES[case_name]
    _, _, text = _produce(case)
    assert text == (DATA / case.expected).read_text()


# ------------------------------------------------------------------------------------------------
# Hand-computed edge cases (semantics read from the C source, not covered by the expected outputs).
# These do not need the shared data, so they run even when ../shared is absent.
# ------------------------------------------------------------------------------------------------


def _one(qrels: dict[str, dict[str, int]], docs: list[tuple[str, float]], **kwargs: Any) -> dict[str, Any]:
    return evaluate_naive(qrels, {"q": docs}, **kwargs)["q"]


def test_ties_broken_by_docno_descending() -> None:
    values = _one({"q": {"a": 1, "b": 0}}, [("a", 1.0), ("b", 1.0)], measures=["relstring", "recip_rank"])
    assert values["relstring"] == "01"  # "b" > "a", so b is ranked first
    assert values["recip_rank"] == 0.5


def test_labels_below_minus_one_are_pool_unjudged() -> None:
    qrels = {"q": {"a": -5, "b": -1, "c": 1}}
    values = _one(qrels, [("a", 3.0), ("b", 2.0), ("x", 1.5), ("c", 1.0)], measures=["all_trec"])
    assert values["relstring"] == "..-1"
    assert values["num_rel"] == 1
    assert values["num_nonrel_judged_ret"] == 0
    assert values["unj_5"] == pytest.approx(3 / 5)


def test_max_ret_truncates_after_sorting() -> None:
    values = _one({"q": {"a": 1}}, [("a", 0.1), ("b", 0.9)], measures=["num_ret", "P.1,2"], max_ret=1)
    assert values["num_ret"] == 1
    assert values["P_1"] == 0.0
    assert values["P_2"] == 0.0


def test_judged_only_drops_unjudged_and_renumbers() -> None:
    values = _one({"q": {"a": 1}}, [("x", 0.9), ("a", 0.1)], measures=["recip_rank"], judged_only=True)
    assert values["recip_rank"] == 1.0


def test_duplicate_docs_in_run_are_an_error() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        _one({"q": {"a": 1}}, [("a", 0.9), ("a", 0.1)])


def test_missing_topic_skipped_without_complete_and_zero_with_it() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": [("a", 1.0)]}
    assert list(evaluate_naive(qrels, run)) == ["q1"]
    per_query = evaluate_naive(qrels, run, ["all_trec"], complete=True)
    assert list(per_query) == ["q1", "q2"]
    missing = per_query["q2"]
    assert missing["num_rel"] == 1
    assert missing["relstring"] == ""
    assert all(v == 0 for k, v in missing.items() if k not in ("num_rel", "relstring"))
    summary = summarize_naive(per_query, ["all_trec"])
    assert summary["num_q"] == 2
    assert summary["map"] == 0.5
    assert summary["gm_map"] == pytest.approx((1.0 * 0.00001) ** 0.5)
