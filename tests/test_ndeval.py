"""ndeval's intent-aware and diversity measures (stagewise.metrics.diversity), their subtopic qrels
(stagewise.data.subtopics) and the `stagewise ndeval` drop-in.

Oracles: pyndeval (ndeval's C, per query, to 1e-9) on random subtopic qrels with graded and negative labels and
runs with tied scores; ir_measures 0.4.3 (which computes these measures through pyndeval) for every spelling of
its registry; ndeval 4.5 itself (compiled from the C pyndeval ships) for the drop-in's bytes
(tests/golden/ndeval/README.md); pyndeval's own worked example; and, with one subtopic per query, stagewise's
trec_eval-checked P@k, success@k and AP.
"""

from __future__ import annotations

import math
import random
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.data.subtopics import SubtopicQrels, read_subtopic_qrels
from stagewise.engines._parts import judgements_of
from stagewise.engines._stream import StreamEngine
from stagewise.errors import InputError, MetricError, StagewiseError
from stagewise.metrics.measures import Measure
from stagewise.ndeval.command import evaluate_command

pyndeval = pytest.importorskip("pyndeval")

GOLDEN = Path(__file__).parent / "golden" / "ndeval"
# pyndeval's names -> stagewise's families (pyndeval stops at cutoff 20)
PYNDEVAL = {"ERR-IA": "err_ia", "nERR-IA": "nerr_ia", "alpha-DCG": "alpha_dcg", "alpha-nDCG": "alpha_ndcg",
            "P-IA": "p_ia", "strec": "strec"}  # fmt: skip
UNCUT = {"NRBP": "nrbp", "nNRBP": "nnrbp", "MAP-IA": "ap_ia"}


def make_data(seed: int) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, float]]]:
    """Subtopic qrels (query, subtopic, doc, label; labels -1 to 3) and a run (query, doc, score) whose scores
    have one decimal, so many tie; some judged queries have no relevant subtopic or are not in the run, and
    some run queries are not judged."""
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(1, 10):
        docs = [f"d{i:02d}" for i in range(40)]
        for subtopic in range(1, rng.randint(1, 6) + 1):
            for doc in rng.sample(docs, rng.randint(0, 14)):
                qrels.append((str(q), str(subtopic), doc, rng.choice([-1, 0, 0, 1, 1, 2, 3])))
        if q != 9:
            run += [(str(q), doc, round(rng.uniform(0, 1), 1)) for doc in rng.sample(docs, rng.randint(1, 30))]
    run += [("77", "d01", 0.5)]
    return qrels, run


def as_dict(run: list[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for query, doc, score in run:
        out.setdefault(query, {})[doc] = score
    return out


def ours_per_query(qrels, run, metrics: list[str], **conventions) -> dict[str, dict[str, float]]:
    result = stagewise.evaluate(read_subtopic_qrels(qrels), as_dict(run), metrics, **conventions).runs[0]
    return {m: dict(zip(result.query_ids.tolist(), result.values[m].tolist(), strict=True)) for m in metrics}


def assert_agrees(theirs: float, ours: float, where: object) -> None:
    """Equal to 1e-9; where ndeval divides 0 by 0 (nNRBP of a query with no relevant subtopic) stagewise gives 0."""
    if math.isnan(theirs):
        assert ours == 0.0, where
    else:
        assert ours == pytest.approx(theirs, abs=1e-9), (where, theirs, ours)


# -- pyndeval, per query ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("level", "alpha", "beta"), [(1, 0.5, 0.5), (2, 0.3, 0.8), (1, 1.0, 0.5), (3, 0.0, 0.2)])
def test_every_measure_agrees_with_pyndeval_per_query(seed: int, level: int, alpha: float, beta: float) -> None:
    qrels, run = make_data(seed)
    names = [f"{n}@{k}" for n in PYNDEVAL for k in (1, 2, 5, 10, 20)] + list(UNCUT)
    theirs = pyndeval.RelevanceEvaluator(qrels, names, relevance_level=level, alpha=alpha, beta=beta).evaluate(run)
    spelled = {}
    for name in names:
        family, _, cutoff = name.partition("@")
        family = PYNDEVAL.get(family) or UNCUT[family]
        params = [f"rel={level}", "ties=docid-ascending"]
        if family not in ("p_ia", "strec", "ap_ia"):
            params.append(f"alpha={alpha}")
        if family in ("nrbp", "nnrbp"):
            params.append(f"beta={beta}")
        spelled[name] = f"{family}({','.join(params)})" + (f"@{cutoff}" if cutoff else "")
    ours = ours_per_query(qrels, run, list(spelled.values()), missing="skip")
    assert len(theirs) >= 6
    for query, values in theirs.items():
        for name, value in values.items():
            assert_agrees(value, ours[spelled[name]][query], (seed, query, name))


def test_pyndevals_worked_example() -> None:
    """pyndeval's own test: its values, to the 4 decimals it states."""
    qrels = [("0", "a", "A", 1), ("0", "b", "B", 1), ("0", "b", "D", 1), ("0", "c", "C", 1)]
    run = {"0": {"A": 9.3, "D": 8.4, "E": 8.1, "B": 7.6}}
    expected = {"err_ia@5": 0.3933, "err_ia@20": 0.3907, "nerr_ia@10": 0.8297, "alpha_dcg@5": 0.4052,
                "alpha_dcg@20": 0.3997, "alpha_ndcg@20": 0.7868, "nrbp": 0.3906, "nnrbp": 0.8620, "ap_ia": 0.5,
                "p_ia@5": 0.2, "p_ia@20": 0.05, "strec@5": 0.6666}  # fmt: skip
    means = stagewise.evaluate(read_subtopic_qrels(qrels), run, list(expected)).means["run"]
    for name, value in expected.items():
        assert means[name] == pytest.approx(value, abs=1e-4), name


def test_a_hand_worked_alpha_ndcg() -> None:
    """Subtopics {1, 2}; d1 covers both, d2 covers 1. Run d2, d1: gains 1, then 0.5 + 1 = 1.5, so DCG@2 =
    1 + 1.5 / log2(3). The ideal is d1, d2: 2 + 0.5 / log2(3). strec@1 = 1/2, P-IA@2 = 3 / (2 * 2)."""
    qrels = read_subtopic_qrels([("q", "1", "d1", 1), ("q", "2", "d1", 1), ("q", "1", "d2", 1)])
    run = {"q": {"d2": 2.0, "d1": 1.0}}
    means = stagewise.evaluate(qrels, run, ["alpha_ndcg@2", "strec@1", "p_ia@2", "alpha_dcg@1"]).means["run"]
    assert means["alpha_ndcg@2"] == pytest.approx((1 + 1.5 / math.log2(3)) / (2 + 0.5 / math.log2(3)))
    assert means["strec@1"] == 0.5 and means["p_ia@2"] == 0.75
    assert means["alpha_dcg@1"] == 1.0  # ndeval leaves @1 unnormalised: the gain of the first result


@settings(max_examples=40, deadline=None)
@given(
    labels=st.lists(st.integers(-1, 3), min_size=1, max_size=15),
    ranked=st.lists(st.integers(0, 20), min_size=1, max_size=20, unique=True),
    k=st.integers(1, 25),
)
def test_with_one_subtopic_the_intent_aware_measures_are_the_plain_ones(labels, ranked, k) -> None:
    """One subtopic per query: P-IA@k is P@k, strec@k is success@k and MAP-IA is AP (stagewise's trec_eval
    kernels)."""
    judged = {f"d{i}": label for i, label in enumerate(labels)}
    subtopics = read_subtopic_qrels({"q": {"1": judged}})
    run = {"q": {f"d{i}": float(len(ranked) - r) for r, i in enumerate(ranked)}}
    diverse = stagewise.evaluate(subtopics, run, [f"p_ia@{k}", f"strec@{k}", "ap_ia"]).means["run"]
    plain = stagewise.evaluate({"q": judged}, run, [f"P@{k}", f"success@{k}", "map"]).means["run"]
    if not any(label >= 1 for label in labels):  # no relevant subtopic: ndeval's measures give 0
        assert diverse == {f"p_ia@{k}": 0.0, f"strec@{k}": 0.0, "ap_ia": 0.0}
        return
    assert diverse[f"p_ia@{k}"] == pytest.approx(plain[f"P@{k}"])
    assert diverse[f"strec@{k}"] == pytest.approx(plain[f"success@{k}"])
    assert diverse["ap_ia"] == pytest.approx(plain["map"])


def test_the_ideal_ranking_scores_one() -> None:
    qrels, _ = make_data(2)
    sq = read_subtopic_qrels(qrels)
    ideal = {}
    for query, subtopics in _relevant_by_query(qrels).items():
        ideal[query] = {doc: -float(i) for i, doc in enumerate(_greedy(subtopics))}
    result = stagewise.evaluate(sq, ideal, ["alpha_ndcg@20", "nerr_ia@20", "nnrbp"], missing="skip").runs[0]
    for name in ("alpha_ndcg@20", "nerr_ia@20", "nnrbp"):
        assert np.allclose(result.values[name], 1.0), name


def _relevant_by_query(qrels) -> dict[str, dict[str, set[str]]]:
    out: dict[str, dict[str, set[str]]] = {}
    for query, subtopic, doc, label in qrels:
        if label >= 1:
            out.setdefault(query, {}).setdefault(doc, set()).add(subtopic)
    return out


def _greedy(docs: dict[str, set[str]]) -> list[str]:
    """A slow greedy ideal ranking, as ndeval's description says (highest gain next, ties to the larger id)."""
    seen: dict[str, int] = {}
    left, order = dict(docs), []
    while left:
        best = max(left, key=lambda d: (sum(0.5 ** seen.get(s, 0) for s in left[d]), d))
        order.append(best)
        for s in left.pop(best):
            seen[s] = seen.get(s, 0) + 1
    return order


# -- ir_measures' spellings ---------------------------------------------------------------------------------------


def ir_measures_diversity_spellings() -> list[str]:
    ir_measures = pytest.importorskip("ir_measures")
    computed_by_pyndeval = {m.NAME for m in ir_measures.providers.registry["pyndeval"].SUPPORTED_MEASURES}
    out = []
    for name, measure in sorted(ir_measures.measures.registry.items()):
        if measure.NAME not in computed_by_pyndeval:
            continue
        out += [f"{name}@5", f"{name}@20", name] if "cutoff" in measure.SUPPORTED_PARAMS else [name]
    extra = ["alpha_nDCG(alpha=0.3)@10", "ERR_IA(rel=2)@10", "NRBP(alpha=0.2,beta=0.9)", "nNRBP(rel=2)",
             "AP_IA(rel=2)", "P_IA(rel=3)@3", "StRecall(rel=2)@7", "α_DCG(alpha=0.8)@1"]  # fmt: skip
    return out + extra


@pytest.mark.parametrize("spelling", ir_measures_diversity_spellings())
def test_every_ir_measures_spelling_gives_its_number(spelling: str) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    try:
        Measure.parse(spelling)
    except MetricError as error:  # ir_measures itself fails without a cutoff (pyndeval reads "@None")
        assert "needs a cutoff, as in" in str(error)
        with pytest.raises(ValueError):
            ir_measures.calc_aggregate([ir_measures.parse_measure(spelling)], [], [])
        return
    theirs_measure = ir_measures.parse_measure(spelling)
    for seed in range(3):
        qrels, run = make_data(seed)
        generic = [ir_measures.Qrel(q, d, label, s) for q, s, d, label in qrels]
        scored = [ir_measures.ScoredDoc(q, d, score) for q, d, score in run]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = {m.query_id: m.value for m in ir_measures.iter_calc([theirs_measure], generic, scored)}
        ours = ours_per_query(qrels, run, [spelling])[spelling]  # default conventions: missing queries score 0
        assert set(theirs) == set(ours)
        for query, value in theirs.items():
            assert_agrees(value, ours[query], (spelling, seed, query))


def test_the_spelling_states_pyndevals_tie_order() -> None:
    assert str(Measure.parse("alpha_nDCG@20")) == "alpha_ndcg@20(ties=docid-ascending)"
    assert str(Measure.parse("alpha_ndcg@20")) == "alpha_ndcg@20"
    assert str(Measure.parse("MAP_IA")) == str(Measure.parse("AP_IA")) == "ap_ia(ties=docid-ascending)"
    notes = stagewise.evaluate(read_subtopic_qrels(GOLDEN / "qrels.txt"), {"17": {"doc001": 1.0}},
                               ["alpha_nDCG@20"]).notes()  # fmt: skip
    assert any("alpha_nDCG@20 = alpha_ndcg@20(ties=docid-ascending)" in note for note in notes)


def test_ties_follow_the_evaluations_convention_unless_the_measure_says() -> None:
    """d1 and d2 tie; only d1 is relevant. trec_eval's order (doc id descending) ranks d2 first; pyndeval's
    (ascending) d1."""
    qrels = read_subtopic_qrels([("q", "1", "d1", 1)])
    run = {"q": {"d1": 1.0, "d2": 1.0}}
    means = stagewise.evaluate(qrels, run, ["strec@1", "strec@1(ties=docid-ascending)"]).means["run"]
    assert means == {"strec@1": 0.0, "strec@1(ties=docid-ascending)": 1.0}


# -- ordinary qrels, bad input --------------------------------------------------------------------------------------


def test_ordinary_qrels_are_refused_naming_the_measure_and_the_format() -> None:
    with pytest.raises(MetricError) as info:
        stagewise.evaluate({"q": {"d1": 1}}, {"q": {"d1": 1.0}}, ["alpha_nDCG@20"])
    text = str(info.value)
    assert "alpha_ndcg@20 needs subtopic judgements" in text
    assert "query subtopic doc_id relevance" in text and "read_subtopic_qrels" in text


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("1 1 d1 1\n1 2 d1\n", "2: line '1 2 d1' is not 4 fields"),
        ("1 1 d1 1\n1 1 d2 x\n", "2: relevance label 'x' is not an integer"),
        ("1 1 d1 1\n2 1 d1 0\n1 1 d1 2\n", "3: query '1' subtopic '1' judges document 'd1' twice (first at line 1)"),
        ("\n\n", "has no judgements"),
    ],
)
def test_bad_subtopic_qrels_name_the_line(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text(content)
    with pytest.raises(InputError, match=r"qrels\.txt:?" + _escaped(says)):
        read_subtopic_qrels(path)


def _escaped(text: str) -> str:
    import re

    return ".*" + re.escape(text)


def test_every_record_shape_reads_the_same() -> None:
    ir_qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
    nd_qrel = namedtuple("SubtopicQrel", "query_id subtopic_id doc_id relevance")
    rows = [("1", "1", "d1", 1), ("1", "2", "d1", 0), ("1", "2", "d2", 2), ("2", "1", "d3", -1)]
    shapes = [
        rows,
        [ir_qrel(q, d, r, s) for q, s, d, r in rows],
        [nd_qrel(q, s, d, r) for q, s, d, r in rows],
        {"1": {"1": {"d1": 1}, "2": {"d1": 0, "d2": 2}}, "2": {"1": {"d3": -1}}},
        pl.DataFrame(rows, schema=["query_id", "iteration", "doc_id", "relevance"], orient="row"),
    ]
    read = [read_subtopic_qrels(shape) for shape in shapes]
    for qrels in read:
        assert qrels.to_dict() == {"1": {"d2": 2, "d1": 1}, "2": {"d3": -1}}
        assert (
            qrels.frame.sort("query_id", "subtopic", "doc_id").rows()
            == read[0].frame.sort("query_id", "subtopic", "doc_id").rows()
        )
    with pytest.raises(InputError, match="without subtopics"):
        read_subtopic_qrels(stagewise.read_qrels({"q": {"d": 1}}))


# -- engines --------------------------------------------------------------------------------------------------------


def test_every_engine_gives_the_same_values(tmp_path: Path) -> None:
    qrels, run = make_data(4)
    sq = read_subtopic_qrels(qrels)
    path = tmp_path / "run.txt"
    lines = [f"{q} Q0 {d} 1 {s} r" for q, d, s in sorted(run)]
    path.write_text("\n".join(lines) + "\n")
    metrics = ["alpha_ndcg@10", "err_ia@20", "nnrbp", "ap_ia", "p_ia@5", "strec@10", "alpha_nDCG@5"]
    for missing in ("zero", "skip"):
        local = stagewise.evaluate(sq, str(path), metrics, missing=missing).runs[0]
        streamed = StreamEngine(block_bytes=150).evaluate(sq, str(path), metrics, missing=missing).runs[0]
        assert np.array_equal(local.query_ids, streamed.query_ids)
        for name in metrics:
            assert np.array_equal(local.values[name], streamed.values[name]), name
    part = judgements_of(sq, sq.query_ids[:2])
    assert isinstance(part, SubtopicQrels) and part.n_queries == 2


def test_the_dask_engine_gives_the_same_values(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="dask's distributed is not installed: stagewise[dask]")
    from stagewise.engines import DaskEngine

    qrels, run = make_data(5)
    sq = read_subtopic_qrels(qrels)
    path = tmp_path / "run.txt"
    path.write_text("\n".join(f"{q} Q0 {d} 1 {s} r" for q, d, s in sorted(run)) + "\n")
    metrics = ["alpha_ndcg@10", "nerr_ia@5", "nrbp", "ap_ia"]
    local = stagewise.evaluate(sq, str(path), metrics).runs[0]
    cluster = distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        engine = DaskEngine(client=client, partition_bytes=300, block_bytes=100)
        remote = stagewise.evaluate(sq, str(path), metrics, engine=engine).runs[0]
    finally:
        client.close()
        cluster.close()
    for name in metrics:
        assert np.array_equal(local.values[name], remote.values[name]), name


# -- the drop-in ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(p.stem for p in GOLDEN.glob("*.out")))
def test_the_drop_in_prints_what_ndeval_prints(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    flags, expected = (GOLDEN / f"{case}.out").read_text().split("\n", 1)
    monkeypatch.chdir(GOLDEN)
    assert evaluate_command([*flags.split(), "qrels.txt", "runA.txt"]) == expected


def test_the_command_line_prints_it_and_fails_cleanly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(GOLDEN)
    done = CliRunner().invoke(app, ["ndeval", "-traditional", "qrels.txt", "runA.txt"])
    assert done.exit_code == 0
    assert done.stdout == (GOLDEN / "traditional.out").read_text().split("\n", 1)[1]
    assert "Example: stagewise ndeval" in CliRunner().invoke(app, ["ndeval", "-help"]).stdout
    bad = CliRunner().invoke(app, ["ndeval", "-alpha", "2", "qrels.txt", "runA.txt"])
    assert bad.exit_code == 2 and "-alpha must be a number in [0, 1]; got '2'" in bad.stderr
    twice = tmp_path / "run.txt"
    twice.write_text("17 Q0 a 1 1.0 r\n17 Q0 b 1 0.5 r\n")
    failed = CliRunner().invoke(app, ["ndeval", "qrels.txt", str(twice)])
    assert failed.exit_code == 2 and "run.txt:2: rank 1 appears twice for topic 17" in failed.stderr


def test_a_run_with_no_judged_topic_is_an_error(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("5 Q0 a 1 1.0 r\n")
    with pytest.raises(StagewiseError, match="no topic of run"):
        evaluate_command([str(GOLDEN / "qrels.txt"), str(run)])


# -- conventions ------------------------------------------------------------------------------------------------------

METRICS = ["alpha_ndcg@5", "alpha_dcg@10", "err_ia@3", "nerr_ia@20", "nrbp", "nnrbp", "ap_ia", "p_ia@4", "strec@6"]


def _means(qrels, run: dict, **conventions) -> dict[str, float]:
    return stagewise.evaluate(read_subtopic_qrels(qrels), run, METRICS, ties="input", **conventions).means["run"]


def _ranked(run: dict) -> dict[str, list[str]]:
    return {q: sorted(docs, key=lambda d: (-docs[d], d)) for q, docs in run.items()}


@pytest.mark.parametrize("seed", range(3))
def test_max_ret_judged_only_and_ignore_self_are_the_run_cut_as_they_say(seed: int) -> None:
    """Each convention equals evaluating the run it describes: cut after 4 results (max_ret); without
    unjudged results (judged_only; a document is judged when its highest label is >= 0); without the result
    whose doc id is the query's (ignore_self)."""
    qrels, run = make_data(seed)
    run = as_dict(run)
    for query, docs in run.items():  # distinct scores, and a result that is its own query
        docs.update({d: docs[d] + i * 1e-6 for i, d in enumerate(sorted(docs))})
        docs[query] = 0.55
    judged = {(q, d) for q, _, d, label in qrels if label >= 0}
    ranked = _ranked(run)
    cut = {q: {d: run[q][d] for d in docs[:4]} for q, docs in ranked.items()}
    only_judged = {q: {d: s for d, s in docs.items() if (q, d) in judged} for q, docs in run.items()}
    without_self = {q: {d: s for d, s in docs.items() if d != q} for q, docs in run.items()}
    only_judged = {q: docs for q, docs in only_judged.items() if docs}
    assert _means(qrels, run, max_ret=4) == pytest.approx(_means(qrels, cut))
    assert _means(qrels, run, judged_only=True) == pytest.approx(_means(qrels, only_judged))
    assert _means(qrels, run, ignore_self=True) == pytest.approx(_means(qrels, without_self))
    assert _means(qrels, run, ignore_self=True) != _means(qrels, run)


@settings(max_examples=60, deadline=None)
@given(
    judgements=st.lists(
        st.tuples(
            st.sampled_from("12"),
            st.sampled_from("abc"),
            st.sampled_from(["d", "é", "dd", "Z", "ö1"]),
            st.integers(-1, 2),
        ),
        min_size=1,
        max_size=25,
        unique_by=lambda j: j[:3],
    ),
    ranked=st.lists(
        st.tuples(
            st.sampled_from("12"), st.sampled_from(["d", "é", "dd", "Z", "ö1", "x"]), st.sampled_from([0.5, 1.0, 1.5])
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda r: r[:2],
    ),
    alpha=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
)
def test_small_adversarial_inputs_agree_with_pyndeval(judgements, ranked, alpha) -> None:
    """Few documents, non-ASCII ids (byte order), three scores (ties everywhere), labels -1 to 2."""
    names = ["alpha-nDCG@3", "nERR-IA@2", "alpha-DCG@1", "ERR-IA@5", "P-IA@2", "strec@1", "NRBP", "nNRBP", "MAP-IA"]
    ranked = sorted(ranked, key=lambda r: r[0])  # pyndeval reads a query's results as one group (ir_measures sorts)
    theirs = pyndeval.RelevanceEvaluator(judgements, names, alpha=alpha).evaluate(ranked)
    if not theirs:  # no judged query in the run: stagewise.evaluate says so (an error), pyndeval returns nothing
        return
    spelled = {}
    for name in names:
        family, _, cutoff = name.partition("@")
        family = PYNDEVAL.get(family) or UNCUT[family]
        extra = f",alpha={alpha}" if family not in ("p_ia", "strec", "ap_ia") else ""
        spelled[name] = f"{family}(ties=docid-ascending{extra})" + (f"@{cutoff}" if cutoff else "")
    qrels = [(q, s, d, label) for q, s, d, label in judgements]
    ours = ours_per_query(qrels, ranked, list(spelled.values()), missing="skip")
    for query, values in theirs.items():
        for name, value in values.items():
            assert_agrees(value, ours[spelled[name]][query], (query, name))
