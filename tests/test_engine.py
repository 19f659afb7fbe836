"""The metrics engine on hand-worked examples, its conventions, and invariants (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.report import render

QRELS = {"q1": {"a": 1, "b": 0, "c": 2, "z": 3}, "q2": {"x": 1}, "q3": {"m": 0}}
RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.5}, "q2": {"y": 2.0, "x": 1.0}}


def means(metrics: list[str], **kwargs: object) -> dict[str, float]:
    return stagewise.evaluate(QRELS, RUN, metrics, **kwargs).means["run"]


def per_query(metric: str, **kwargs: object) -> dict[str, float]:
    return stagewise.evaluate(QRELS, RUN, [metric], **kwargs).per_query()["run"][metric]


def test_hand_worked_per_query_values() -> None:
    # q1 ranking a(1) b(0) c(2) d(-); R = 3 (a, c, z). q2: y(-) x(1); R = 1. q3: absent from the run, R = 0.
    assert per_query("P@2") == {"q1": 0.5, "q2": 0.5, "q3": 0.0}
    assert per_query("recall@3") == pytest.approx({"q1": 2 / 3, "q2": 1.0, "q3": 0.0})
    assert per_query("mrr") == {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    assert per_query("mrr@1") == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert per_query("map") == pytest.approx({"q1": (1 + 2 / 3) / 3, "q2": 0.5, "q3": 0.0})
    dcg = 1 + 2 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert per_query("ndcg@4")["q1"] == pytest.approx(dcg / ideal)
    exp_dcg = 1 + 3 / math.log2(4)
    exp_ideal = 7 + 3 / math.log2(3) + 1 / math.log2(4)
    assert per_query("ndcg@4(gain=exp)")["q1"] == pytest.approx(exp_dcg / exp_ideal)
    assert per_query("judged@4") == {"q1": 0.75, "q2": 0.25, "q3": 0.0}
    assert per_query("success@1") == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert per_query("Rprec")["q1"] == pytest.approx(2 / 3)


def test_relevance_level_option_and_convention() -> None:
    assert per_query("P@4(rel=2)")["q1"] == 0.25
    assert per_query("P@4", relevance_level=2)["q1"] == 0.25
    assert per_query("P@4")["q1"] == 0.5


def test_missing_query_policies() -> None:
    assert means(["P@2"])["P@2"] == pytest.approx(1 / 3)
    assert means(["P@2"], missing="skip")["P@2"] == pytest.approx(0.5)
    with pytest.raises(stagewise.StagewiseError, match="q3"):
        means(["P@2"], missing="error")


def test_tie_conventions() -> None:
    import polars as pl

    qrels = {"q": {"b": 1}}
    frame = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 1.0], "rank": [1, 2]})
    # Equal scores: doc id descending puts b first; input order and the rank column put a first.
    assert stagewise.evaluate(qrels, frame, ["mrr"]).means["run"]["mrr"] == 1.0
    assert stagewise.evaluate(qrels, frame, ["mrr"], ties="input").means["run"]["mrr"] == 0.5
    assert stagewise.evaluate(qrels, frame, ["mrr"], ties="rank").means["run"]["mrr"] == 0.5
    reversed_ranks = frame.with_columns(rank=pl.Series([2, 1]))
    assert stagewise.evaluate(qrels, reversed_ranks, ["mrr"], ties="rank").means["run"]["mrr"] == 1.0


def test_err_matches_its_definition() -> None:
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"a": 3.0, "c": 2.0, "b": 1.0}}
    r_a, r_b = (2**2 - 1) / 4, (2**1 - 1) / 4
    expected = r_a / 1 + (1 - r_a) * r_b / 3
    got = stagewise.evaluate(qrels, run, ["err@10"]).means["run"]["err@10"]
    assert got == pytest.approx(expected)


def test_result_carries_its_conventions() -> None:
    report = stagewise.evaluate(QRELS, RUN, ["ndcg@10(gain=exp)", "P@5"]).to_dict()["conventions"]
    assert report["metrics"]["ndcg@10(gain=exp)"]["gain"] == "exp"
    assert "all judged documents" in report["metrics"]["ndcg@10(gain=exp)"]["ideal"]
    assert report["metrics"]["P@5"]["relevance_level"] == 1
    assert report["queries_missing_from_run"] == {"run": 1}
    assert "doc id descending" in report["ties"]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[dict, dict]:
    n_queries = draw(st.integers(1, 4))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in range(draw(st.integers(1, 10)))]
        judged = draw(st.lists(st.sampled_from(docs), unique=True, min_size=1))
        qrels[f"q{q}"] = {d: draw(st.integers(-1, 3)) for d in judged}
        if draw(st.booleans()):
            run[f"q{q}"] = {d: draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for d in docs}
    if not run:
        run["q0"] = {"d0": 1.0}
    return qrels, run


BOUNDED = [
    "map",
    "P@5",
    "recall@5",
    "ndcg@5",
    "ndcg",
    "ndcg@5(gain=exp)",
    "mrr",
    "mrr@3",
    "Rprec",
    "bpref",
    "success@3",
    "judged@5",
    "infAP",
    "rbp",
    "err@5",
    "set_F",
    "iprec_at_recall@0.5",
    "11pt_avg",
]


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_bounded_in_unit_interval(world: tuple[dict, dict]) -> None:
    qrels, run = world
    result = stagewise.evaluate(qrels, run, BOUNDED)
    for metric, values in result.per_query()["run"].items():
        for value in values.values():
            assert -1e-12 <= value <= 1 + 1e-12, metric


@settings(max_examples=100, deadline=None)
@given(worlds(), st.randoms(use_true_random=False))
def test_row_order_of_the_input_does_not_matter(world: tuple[dict, dict], rnd) -> None:
    qrels, run = world
    shuffled = {}
    for q in rnd.sample(list(run), len(run)):
        items = list(run[q].items())
        rnd.shuffle(items)
        shuffled[q] = dict(items)
    a = stagewise.evaluate(qrels, run, BOUNDED).per_query()
    b = stagewise.evaluate(qrels, shuffled, BOUNDED).per_query()
    assert a == b


@settings(max_examples=100, deadline=None)
@given(worlds())
def test_perfect_ranking_scores_one(world: tuple[dict, dict]) -> None:
    qrels, _ = world
    ideal = {q: {d: float(label) for d, label in judged.items()} for q, judged in qrels.items()}
    result = stagewise.evaluate(qrels, ideal, ["ndcg", "map", "Rprec", "ndcg@3"]).per_query()["run"]
    for q, judged in qrels.items():
        if any(label >= 1 for label in judged.values()):
            assert result["ndcg"][q] == pytest.approx(1.0)
            assert result["map"][q] == pytest.approx(1.0)
            assert result["Rprec"][q] == pytest.approx(1.0)
            assert result["ndcg@3"][q] == pytest.approx(1.0)


def test_markdown_and_latex_tables_escape_run_names() -> None:
    """A run name with a pipe or LaTeX's special characters stays one cell (eval and compare share the escapes)."""
    result = stagewise.evaluate({"q": {"a": 1}}, {"run|x_^~": {"q": {"a": 1.0}}}, ["map"])
    assert "| run\\|x_^~ | 1.0000 |" in render(result, "markdown")
    assert "run|x\\_\\^{}\\~{} & 1.0000" in render(result, "latex")
