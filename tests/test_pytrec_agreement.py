"""Property tests: :func:`stagewise.evaluate` agrees per query with pytrec_eval (pytrec-eval-terrier).

Measures compared (pytrec name -> stagewise name): map, P_k -> P@k, recall_k -> recall@k, ndcg, ndcg_cut_k ->
ndcg@k, recip_rank -> mrr, Rprec, bpref, success_k -> success@k, plus the other pytrec measures stagewise
exposes (set_*, counts, infAP, binG, G, Rprec_mult_x, map_cut_k, relative_P_k, gm_map / gm_bpref means).

What pytrec_eval does, and how these tests deal with it (checked against pytrec-eval-terrier 0.5.x):

* Ties are broken like trec_eval (score descending, then doc id descending in byte order); the tests draw
  scores from a handful of values so ties are frequent, and one test ties every score.
* pytrec-eval-terrier behaves like trec_eval 9, whose results keep the score as a C ``float``
  (``TEXT_RESULTS.sim``): scores that differ only beyond single precision (``0.1`` and ``0.1 + 1e-12``,
  ``16777216.0`` and ``16777217.0``, or a tiny ``5.8e-170`` against ``0.0``) tie there and are ordered by doc
  id. stagewise's default ``ties="docid"`` does the same, so the random scores mix such near-ties with
  single-precision values and arbitrary doubles. trec_eval 10.0 keeps doubles; ``ties="docid-double"``
  follows it and is compared with the naive trec_eval 10 oracle
  (``test_docid_double_follows_trec_eval_10``).
* A query that is in the run but not in the qrels is ignored; a judged query absent from the run is left out
  (trec_eval's default), so stagewise runs with ``missing="skip"`` for the comparisons.
* A judged query whose ranking is an empty dict (``{qid: {}}``) is never handed to pytrec_eval: with bpref
  and any other measure pytrec_eval segfaults on it, e.g.
  ``RelevanceEvaluator({"2": {"d20": 0}}, {"map", "bpref"}).evaluate({"2": {}})``; with other measures it
  evaluates such a query with every value 0. stagewise reads ``{qid: {}}`` as "absent from the run" (a TREC
  file cannot hold an empty ranking), so the worlds keep empty rankings for stagewise and drop them for
  pytrec_eval, where "absent" is what they mean.
* **Labels below -1 are never fed to pytrec_eval**, and neither is a query whose judgements are all negative:
  trec_eval reads a stale ``num_rel_levels`` for such a query, and pytrec_eval crashes (segfault) or hangs,
  e.g. ``RelevanceEvaluator({"1": {"d2": -1}}, {"bpref", "map"}).evaluate({"1": {"d": 1.0}})`` segfaults.
  Those inputs are compared with the naive trec_eval oracle instead, and against pytrec_eval on the same
  qrels with every negative label mapped to -1 (trec_eval treats all negative labels alike).
* pytrec-eval-terrier computes ``iprec_at_recall_x`` and ``11pt_avg`` with trec_eval 9's cutoff
  ``(long)(x * R + 0.9)``, where trec_eval 10 (and stagewise) use ``lround(x * R)``; those two are compared
  with the trec_eval 10 oracle in ``tests/test_oracle_agreement.py``, not here. pytrec also reports gm_map /
  gm_bpref per query as the log values, so only their means are compared.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytrec_eval = pytest.importorskip(
    "pytrec_eval", reason="pytrec-eval-terrier is not installed (pip install pytrec-eval-terrier)"
)

import stagewise  # noqa: E402
from stagewise.errors import StagewiseError  # noqa: E402
from tests.reference.naive_trec_eval import evaluate_naive  # noqa: E402

# -- random worlds ----------------------------------------------------------------------------------------------

# Prefixes of each other, numeric-looking (string order differs from numeric order: "2" > "10" > "1" > "01"),
# mixed case and one non-ASCII id.
DOC_IDS = ("d1", "d10", "d100", "d2", "d20", "d", "1", "10", "2", "01", "007", "1e3", "7.5", "D1", "a", "b", "x-é")
QIDS = ("q1", "q10", "1", "10", "2", "01", "Q1", "q2")
RUN_ONLY_QIDS = ("zz", "99", "q1x")
TIE_SCORES = (0.0, -0.0, 0.25, 0.5, 1.0, 2.0, -1.0)
# Pairs that are distinct doubles but one C float: pytrec_eval (and stagewise's default) ties them.
SINGLE_PRECISION_TIES = (0.1, 0.1 + 1e-12, 0.1 - 1e-12, 16777216.0, 16777217.0, 0.0, 5.8e-170, -5.8e-170, 1e300, 2e300)
SCORES = st.one_of(
    st.sampled_from(TIE_SCORES),
    st.sampled_from(SINGLE_PRECISION_TIES),
    st.floats(min_value=-4, max_value=4, allow_nan=False, allow_infinity=False, width=32),
    st.floats(min_value=-4, max_value=4, allow_nan=False, allow_infinity=False),
)
PYTREC_LABELS = (0, 0, 1, 1, 2, 3, -1)  # repeats weight sampled_from
ORACLE_LABELS = (0, 0, 1, 2, 3, -1, -2, -5)


@st.composite
def worlds(
    draw: st.DrawFn,
    labels: tuple[int, ...] = PYTREC_LABELS,
    scores: st.SearchStrategy[float] = SCORES,
    pytrec_safe: bool = True,
) -> tuple[dict, dict]:
    """(qrels, run): 1-6 judged queries with 1-10 judgements each; each query is ranked (0-15 documents,
    0 giving an empty dict) or absent from the run; sometimes queries that only the run has.

    ``pytrec_safe`` gives every query at least one label >= 0 (see the module docstring).
    """
    qids = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=6, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in qids:
        judged = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=10, unique=True))
        qrels[qid] = {doc: draw(st.sampled_from(labels)) for doc in judged}
        if pytrec_safe and all(label < 0 for label in qrels[qid].values()):
            qrels[qid][judged[0]] = draw(st.sampled_from([label for label in labels if label >= 0]))
        if draw(st.integers(0, 4)) == 0:
            continue  # judged query absent from the run
        ranked = draw(st.lists(st.sampled_from(DOC_IDS), max_size=15, unique=True))
        run[qid] = {doc: draw(scores) for doc in ranked}
    for qid in draw(st.lists(st.sampled_from(RUN_ONLY_QIDS), max_size=2, unique=True)):
        ranked = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=5, unique=True))
        run[qid] = {doc: draw(scores) for doc in ranked}
    if not any(run.values()):  # stagewise needs at least one run row to see a run at all
        run["zz"] = {"d1": 1.0}
    return qrels, run


def _oracle_run(run: dict) -> dict:
    """The run as the naive oracle takes it (rankings as lists; empty ones left out)."""
    return {qid: list(docs.items()) for qid, docs in run.items() if docs}


# -- measures ---------------------------------------------------------------------------------------------------

CUTOFFS = (1, 2, 3, 5, 10, 20)
SUCCESS_CUTOFFS = (1, 2, 3, 5, 10)


def _cuts(values) -> str:
    return ",".join(str(v) for v in values)


# The measures the brief names.
CORE_MEASURES = {
    "map",
    f"P.{_cuts(CUTOFFS)}",
    f"recall.{_cuts(CUTOFFS)}",
    "ndcg",
    f"ndcg_cut.{_cuts(CUTOFFS)}",
    "recip_rank",
    "Rprec",
    "bpref",
    f"success.{_cuts(SUCCESS_CUTOFFS)}",
}
CORE_NAMES: dict[str, str] = {"map": "map", "ndcg": "ndcg", "recip_rank": "mrr", "Rprec": "Rprec", "bpref": "bpref"}
for _k in CUTOFFS:
    CORE_NAMES[f"P_{_k}"] = f"P@{_k}"
    CORE_NAMES[f"recall_{_k}"] = f"recall@{_k}"
    CORE_NAMES[f"ndcg_cut_{_k}"] = f"ndcg@{_k}"
for _k in SUCCESS_CUTOFFS:
    CORE_NAMES[f"success_{_k}"] = f"success@{_k}"

# Further measures both expose (see the module docstring for iprec_at_recall / 11pt_avg / gm_*).
RPREC_MULTS = (0.2, 0.5, 1.0, 1.5, 2.0)
EXTRA_MEASURES = {
    "set_P",
    "set_recall",
    "set_F",
    "set_map",
    "set_relative_P",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "num_nonrel_judged_ret",
    "infAP",
    "binG",
    "G",
    f"Rprec_mult.{_cuts(RPREC_MULTS)}",
    f"map_cut.{_cuts(CUTOFFS)}",
    f"relative_P.{_cuts(CUTOFFS)}",
}
EXTRA_NAMES: dict[str, str] = {
    name: name
    for name in EXTRA_MEASURES
    if "." not in name  # the plain names; the cutoff families are spelled out below
}
for _x in RPREC_MULTS:
    EXTRA_NAMES[f"Rprec_mult_{_x:3.2f}"] = f"Rprec_mult@{_x:g}"
for _k in CUTOFFS:
    EXTRA_NAMES[f"map_cut_{_k}"] = f"map@{_k}"
    EXTRA_NAMES[f"relative_P_{_k}"] = f"relative_P@{_k}"

TOL = 1e-9
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pytrec(qrels, run, measures, relevance_level=1, judged_only=False) -> dict:
    """pytrec_eval's per-query values; empty rankings are dropped first (absent, as for stagewise)."""
    for docs in qrels.values():  # never hand pytrec_eval an input that crashes it
        assert min(docs.values()) >= -1 and max(docs.values()) >= 0
    run = {qid: docs for qid, docs in run.items() if docs}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(measures), relevance_level=relevance_level, judged_docs_only_flag=judged_only
    )
    return evaluator.evaluate(run)


def _evaluable(qrels: dict, run: dict) -> set[str]:
    """The judged queries stagewise evaluates under missing="skip": those with a non-empty ranking."""
    return {qid for qid in qrels if run.get(qid)}


def _compare(pytrec_values: dict, stagewise_values: dict, names: dict[str, str], qids) -> list:
    return [
        (qid, metric, pytrec_values[qid][trec_name], stagewise_values[metric][qid])
        for qid in sorted(qids)
        for trec_name, metric in names.items()
        if not abs(pytrec_values[qid][trec_name] - stagewise_values[metric][qid]) <= TOL
    ]


def _check_against_pytrec(qrels, run, measures, names, relevance_level=1, judged_only=False) -> None:
    expected = _pytrec(qrels, run, measures, relevance_level, judged_only)
    # pytrec evaluates exactly the judged queries that have results; run-only queries are ignored.
    evaluable = _evaluable(qrels, run)
    assert set(expected) == evaluable
    if not evaluable:
        with pytest.raises(StagewiseError):
            stagewise.evaluate(qrels, run, list(names.values()), missing="skip", relevance_level=relevance_level)
        return
    result = stagewise.evaluate(
        qrels,
        run,
        list(names.values()),
        relevance_level=relevance_level,
        judged_only=judged_only,
        missing="skip",
    )
    got = result.per_query()["run"]
    for metric in names.values():
        assert set(got[metric]) == evaluable, metric
    mismatches = _compare(expected, got, names, evaluable)
    assert not mismatches, f"{len(mismatches)} mismatches (qid, metric, pytrec_eval, stagewise): {mismatches[:12]}"
    # Means over the evaluated queries (num_* are sums).
    for trec_name, metric in names.items():
        column = [expected[qid][trec_name] for qid in evaluable]
        want = sum(column) if trec_name.startswith("num_") else sum(column) / len(column)
        assert abs(result.means["run"][metric] - want) <= TOL, (metric, want, result.means["run"][metric])


# -- tests ------------------------------------------------------------------------------------------------------


@SETTINGS
@given(world=worlds(), relevance_level=st.sampled_from((1, 2)), judged_only=st.booleans())
def test_core_measures_agree_with_pytrec_eval(world, relevance_level: int, judged_only: bool) -> None:
    qrels, run = world
    _check_against_pytrec(qrels, run, CORE_MEASURES, CORE_NAMES, relevance_level, judged_only)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(scores=st.sampled_from((1.0, 0.0, -0.0))), relevance_level=st.sampled_from((1, 2)))
def test_all_scores_tied_agree_with_pytrec_eval(world, relevance_level: int) -> None:
    """Every score equal (0.0 and -0.0 are equal): the order is doc id descending, byte order."""
    qrels, run = world
    _check_against_pytrec(qrels, run, CORE_MEASURES, CORE_NAMES, relevance_level)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), relevance_level=st.sampled_from((1, 2)), judged_only=st.booleans())
def test_other_shared_measures_agree_with_pytrec_eval(world, relevance_level: int, judged_only: bool) -> None:
    qrels, run = world
    _check_against_pytrec(qrels, run, EXTRA_MEASURES, EXTRA_NAMES, relevance_level, judged_only)
    evaluable = _evaluable(qrels, run)
    if not evaluable:
        return
    # gm_map / gm_bpref: pytrec_eval holds ln(max(x, 1e-5)) per query; the mean is exp(mean of those).
    logs = _pytrec(qrels, run, {"gm_map", "gm_bpref"}, relevance_level, judged_only)
    means = stagewise.evaluate(
        qrels, run, ["gm_map", "gm_bpref"], relevance_level=relevance_level, judged_only=judged_only, missing="skip"
    ).means["run"]
    for name in ("gm_map", "gm_bpref"):
        want = math.exp(sum(logs[qid][name] for qid in evaluable) / len(evaluable))
        assert abs(means[name] - want) <= TOL, (name, want, means[name])


@SETTINGS
@given(world=worlds(), relevance_level=st.sampled_from((1, 2)))
def test_missing_zero_scores_absent_queries_zero(world, relevance_level: int) -> None:
    """missing="zero" (trec_eval -c): pytrec_eval's values where the run has the query, 0 elsewhere."""
    qrels, run = world
    expected = _pytrec(qrels, run, CORE_MEASURES, relevance_level)
    result = stagewise.evaluate(qrels, run, list(CORE_NAMES.values()), relevance_level=relevance_level)
    got = result.per_query()["run"]
    for trec_name, metric in CORE_NAMES.items():
        assert set(got[metric]) == set(qrels)
        want = {qid: expected[qid][trec_name] if qid in expected else 0.0 for qid in qrels}
        bad = {qid: (want[qid], got[metric][qid]) for qid in qrels if not abs(want[qid] - got[metric][qid]) <= TOL}
        assert not bad, (metric, bad)
        assert abs(result.means["run"][metric] - sum(want.values()) / len(qrels)) <= TOL, metric


@SETTINGS
@given(
    world=worlds(labels=ORACLE_LABELS, pytrec_safe=False),
    relevance_level=st.sampled_from((1, 2)),
    judged_only=st.booleans(),
)
def test_labels_below_minus_one_and_all_negative_queries(world, relevance_level: int, judged_only: bool) -> None:
    """Inputs pytrec_eval cannot take: compare with the oracle, and with pytrec_eval on the mapped qrels."""
    qrels, run = world
    evaluable = _evaluable(qrels, run)
    if not evaluable:
        return
    got = stagewise.evaluate(
        qrels,
        run,
        list(CORE_NAMES.values()),
        relevance_level=relevance_level,
        judged_only=judged_only,
        missing="skip",
    ).per_query()["run"]
    oracle = evaluate_naive(
        qrels,
        _oracle_run(run),
        sorted(CORE_MEASURES),
        rel_level=relevance_level,
        judged_only=judged_only,
        float_scores=True,
    )
    assert set(oracle) == evaluable
    mismatches = _compare(oracle, got, CORE_NAMES, evaluable)
    assert not mismatches, f"{len(mismatches)} mismatches (qid, metric, oracle, stagewise): {mismatches[:12]}"

    # trec_eval reads every negative label as "unjudged": with them mapped to -1, pytrec_eval must agree,
    # on the queries that keep a label >= 0 (the others would crash it).
    mapped = {qid: {doc: max(label, -1) for doc, label in docs.items()} for qid, docs in qrels.items()}
    safe = {qid: docs for qid, docs in mapped.items() if max(docs.values()) >= 0}
    if not safe:
        return
    expected = _pytrec(safe, run, CORE_MEASURES, relevance_level, judged_only)
    mismatches = _compare(expected, got, CORE_NAMES, evaluable & set(safe))
    assert not mismatches, f"{len(mismatches)} mismatches (qid, metric, pytrec_eval, stagewise): {mismatches[:12]}"


def test_query_sets_follow_pytrec_eval() -> None:
    """Run-only queries are ignored and a judged query absent from the run is left out (skip) by both;
    stagewise reads an empty ranking as absent."""
    qrels = {"1": {"d1": 1, "d10": 0}, "2": {"a": 1}, "3": {"b": 2}, "10": {"d1": 1}}
    run = {"1": {"d1": 0.5, "d10": 0.5}, "3": {}, "10": {"d1": 1.0}, "zz": {"d1": 3.0}}
    expected = _pytrec(qrels, run, {"recip_rank", "num_ret"})  # drops the empty ranking of "3"
    assert set(expected) == {"1", "10"}
    # ties: "d10" > "d1" in byte order, so d10 (non-relevant) ranks first.
    assert expected["1"]["recip_rank"] == 0.5
    result = stagewise.evaluate(qrels, run, ["mrr", "num_ret"], missing="skip")
    assert result.per_query()["run"]["mrr"] == {qid: values["recip_rank"] for qid, values in expected.items()}
    assert result.per_query()["run"]["num_ret"] == {qid: values["num_ret"] for qid, values in expected.items()}
    assert sorted(result.runs[0].missing_queries) == ["2", "3"]
    assert result.runs[0].run_only_queries == ["zz"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(scores=st.sampled_from(SINGLE_PRECISION_TIES)), relevance_level=st.sampled_from((1, 2)))
def test_scores_tied_only_in_single_precision_agree_with_pytrec_eval(world, relevance_level: int) -> None:
    """Scores equal as C floats but not as doubles: pytrec_eval ties them and orders them by doc id, and so
    does the default convention."""
    qrels, run = world
    _check_against_pytrec(qrels, run, CORE_MEASURES, CORE_NAMES, relevance_level)




@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(scores=st.sampled_from(SINGLE_PRECISION_TIES)), relevance_level=st.sampled_from((1, 2)))
def test_docid_double_follows_trec_eval_10(world, relevance_level: int) -> None:
    """``ties="docid-double"`` compares the scores as doubles, as trec_eval 10.0 does (the naive oracle); the
    default equals the oracle fed scores rounded to C floats."""
    qrels, run = world
    evaluable = _evaluable(qrels, run)
    if not evaluable:
        return
    for ties, single in (("docid-double", False), ("docid", True)):
        got = stagewise.evaluate(
            qrels, run, list(CORE_NAMES.values()), relevance_level=relevance_level, missing="skip", ties=ties
        ).per_query()["run"]
        oracle = evaluate_naive(
            qrels, _oracle_run(run), sorted(CORE_MEASURES), rel_level=relevance_level, float_scores=single
        )
        mismatches = _compare(oracle, got, CORE_NAMES, evaluable)
        assert not mismatches, f"{ties}: {len(mismatches)} mismatches (qid, metric, oracle, ours): {mismatches[:12]}"


def test_scores_are_compared_in_single_precision_by_default() -> None:
    """0.1 + 1e-12 > 0.1 as doubles, equal as floats: pytrec_eval and the default tie them (doc id "b" > "a"
    goes first); docid-double and the trec_eval 10 oracle do not."""
    qrels = {"q": {"a": 1}}
    run = {"q": {"b": 0.1, "a": 0.1 + 1e-12}}
    assert _pytrec(qrels, run, {"recip_rank"})["q"]["recip_rank"] == 0.5
    assert stagewise.evaluate(qrels, run, ["mrr"]).per_query()["run"]["mrr"]["q"] == 0.5
    assert evaluate_naive(qrels, {"q": list(run["q"].items())}, ["recip_rank"])["q"]["recip_rank"] == 1.0
    assert stagewise.evaluate(qrels, run, ["mrr"], ties="docid-double").per_query()["run"]["mrr"]["q"] == 1.0
