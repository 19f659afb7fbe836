"""Fusion semantics: the lesson's worked example, names that round-trip, stated policies, deterministic ties,
properties (hypothesis), and a slow dict-based reference beside the vectorised methods."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stagewise import read_run
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion import (
    METHODS,
    NORMALIZATIONS,
    FusionMethod,
    Normalization,
    build_table,
    fuse,
    method_names,
    normalization_names,
    write_fused,
)
from tests.reference.naive_trec_eval import as_c_float


def scores_of(run) -> dict[str, dict[str, float]]:
    return run.to_dict()


def ranking_of(run) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    docs = run.doc_ids.to_list()
    for code, query in enumerate(run.query_ids):
        out[str(query)] = docs[run.offsets[code] : run.offsets[code + 1]]
    return out


# ------------------------------------------------------------------------------------- the lesson
def test_lesson_worked_rrf_example():
    """With rrf_k = 60, A ranked 1 and 3 scores 1/61 + 1/63 = 0.0322665; B ranked 2 and 1 scores
    1/62 + 1/61 = 0.0325225; B ranks first."""
    first = {"q": {"A": 0.9, "B": 0.8, "C": 0.7}}  # A 1, B 2
    second = {"q": {"B": 0.9, "D": 0.8, "A": 0.7}}  # B 1, A 3
    fused = fuse([first, second], "rrf", rrf_k=60)
    scores = scores_of(fused)["q"]
    assert round(scores["A"], 7) == 0.0322665
    assert round(scores["B"], 7) == 0.0325225
    assert scores["A"] == 1 / 61 + 1 / 63 and scores["B"] == 1 / 62 + 1 / 61
    assert ranking_of(fused)["q"][0] == "B"
    assert fused.fusion["parameters"]["rrf_k"] == 60


def test_rrf_constant_is_never_called_k():
    with pytest.raises(ConventionError, match="rrf_k, not k"):
        fuse([{"q": {"a": 1.0}}], "rrf", k=60)
    with pytest.raises(ConventionError, match="rrf_k, not k"):
        FusionMethod.parse("rrf(k=60)")


# ------------------------------------------------------------------------------------------ names
@pytest.mark.parametrize("name", method_names())
def test_every_method_name_round_trips(name):
    method = FusionMethod.parse(name)
    assert FusionMethod.parse(str(method)) == method
    assert hash(FusionMethod.parse(str(method))) == hash(method)


def test_method_names_are_canonical_and_parameters_resolved():
    assert str(FusionMethod.parse("RRF")) == "rrf(rrf_k=60)"
    assert FusionMethod.parse("rrf") == FusionMethod.parse("rrf(rrf_k=60.0)")
    assert str(FusionMethod.parse("comb-mnz")) == "combmnz"
    assert str(FusionMethod.parse("wsum(weights=[0.7, 0.3])")) == "wsum(weights=(0.7,0.3))"
    assert str(FusionMethod.parse("rbc")) == "rbc(phi=0.8)"
    assert str(FusionMethod.parse("probfuse(segments=10)")) == "probfuse(segments=10)"
    method = FusionMethod.parse("rrf(rrf_k=20, weights=(1, 2))")
    assert FusionMethod.parse(str(method)) == method
    assert method.param("weights") == (1.0, 2.0)


@pytest.mark.parametrize("name", normalization_names())
def test_every_normalisation_name_round_trips(name):
    norm = Normalization.parse(name)
    assert Normalization.parse(str(norm)) == norm


def test_normalisation_aliases():
    assert Normalization.parse("min-max") == Normalization("minmax")
    assert Normalization.parse("zmuv") == Normalization("zscore")
    assert Normalization.parse(None) == Normalization("none")


def test_unknown_names_list_the_registry():
    with pytest.raises(ConventionError) as caught:
        FusionMethod.parse("combfoo")
    for name in method_names():
        assert name in str(caught.value)
    with pytest.raises(ConventionError) as caught:
        Normalization.parse("l2")
    for name in normalization_names():
        assert name in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rbc(phi=1.5)", "The 'phi' parameter of rbc must be a number in (0, 1). Got 1.5 instead."),
        ("rrf(rrf_k=-1)", "The 'rrf_k' parameter of rrf must be a number >= 0. Got -1.0 instead."),
        ("probfuse(segments=0)", "The 'segments' parameter of probfuse must be an int >= 1. Got 0 instead."),
        ("slidefuse(window=1.5)", "The 'window' parameter of slidefuse must be an int >= 0. Got 1.5 instead."),
        ("combsum(gamma=2)", "fusion method 'combsum' has no parameter 'gamma'; its parameters: none"),
        ("wsum(weights=(0, 0))", "The 'weights' parameter of wsum must be a list of non-negative numbers"),
        ("wsum(weights=(1, -1))", "The 'weights' parameter of wsum must be a list of non-negative numbers"),
        ("rrf(", "cannot read fusion method"),
        ("rrf(60)", "key=value pairs"),
    ],
)
def test_bad_parameters_use_the_one_template(text, message):
    with pytest.raises(ConventionError) as caught:
        FusionMethod.parse(text)
    assert message in str(caught.value)


def test_registries_hold_small_documented_functions():
    for name in method_names():
        info = METHODS[name]
        assert info.function.__doc__ and len(info.function.__doc__) > 40, name
    for name in normalization_names():
        assert NORMALIZATIONS[name].function.__doc__, name


# -------------------------------------------------------------------------------------- metadata
def test_metadata_states_method_parameters_normalisation_and_policies():
    fused = fuse([{"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 2.0}}], "combmnz", depth=10)
    info = fused.fusion
    assert info["method"] == "combmnz"
    assert info["normalization"] == "minmax"  # the default for score methods, stated
    assert info["missing"] == "zero" and "contributes 0" in info["missing_rule"]
    assert info["queries"] == "union"
    assert info["depth"] == 10
    assert "doc id descending" in info["ties"]
    assert info["runs"] == ["run", "run#2"]
    assert info["n_queries"] == 1 and info["n_results"] == 2
    json.dumps(info)  # JSON-ready


def test_rank_methods_default_to_no_normalisation():
    fused = fuse([{"q": {"a": 2.0}}, {"q": {"a": 1.0}}], "rrf")
    assert fused.fusion["normalization"] == "none"
    assert fused.fusion["normalization_used"] is False


def test_name_and_tag():
    fused = fuse([{"q": {"a": 1.0}}], "rrf", name="hybrid")
    assert fused.name == "hybrid"
    assert fuse([{"q": {"a": 1.0}}], "combsum").name == "combsum"


# ------------------------------------------------------------------------------------------- ties
def test_ties_in_the_fused_score_go_to_the_higher_doc_id():
    # a and b are swapped between two runs: equal RRF scores; doc ids in byte order, descending.
    runs = [{"q": {"a": 2.0, "b": 1.0, "é": 0.5, "B": 0.4}}, {"q": {"b": 2.0, "a": 1.0, "é": 0.4, "B": 0.5}}]
    fused = fuse(runs, "rrf")
    assert ranking_of(fused)["q"] == ["b", "a", "é", "B"]  # b > a; then the tie é / B: b"\xc3\xa9" > b"B"
    scores = scores_of(fused)["q"]
    assert scores["a"] == scores["b"] and scores["é"] == scores["B"]


def test_input_ties_rank_by_doc_id_descending_like_trec_eval():
    # Equal scores in one run: z is ranked before a (doc id descending), so RRF gives z the larger score.
    fused = fuse([{"q": {"a": 1.0, "z": 1.0}}], "rrf")
    assert ranking_of(fused)["q"] == ["z", "a"]
    assert scores_of(fused)["q"]["z"] == 1 / 61


def test_negative_zero_ties_with_zero():
    fused = fuse([{"q": {"a": 0.0, "b": -0.0}}], "combsum", norm="none")
    assert ranking_of(fused)["q"] == ["b", "a"]
    assert all(math.copysign(1, s) == 1 for s in fused.scores)


# -------------------------------------------------------------------------------------- policies
RUN_A = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}}
RUN_B = {"q1": {"b": 4.0, "d": 3.0}, "q3": {"y": 1.0}}


def test_queries_union_by_default():
    fused = fuse([RUN_A, RUN_B], "combsum", norm="none")
    assert fused.query_ids.tolist() == ["q1", "q2", "q3"]
    assert scores_of(fused)["q2"] == {"x": 1.0}


def test_queries_intersection_and_error():
    fused = fuse([RUN_A, RUN_B], "combsum", norm="none", queries="intersection")
    assert fused.query_ids.tolist() == ["q1"]
    with pytest.raises(StagewiseError, match="lacks 1 query that other runs have: q3"):
        fuse([RUN_A, RUN_B], "combsum", queries="error")
    with pytest.raises(StagewiseError, match="no query is in every run"):
        fuse([{"q1": {"a": 1.0}}, {"q2": {"a": 1.0}}], "rrf", queries="intersection")
    with pytest.raises(ConventionError, match="unknown query policy"):
        fuse([RUN_A], "rrf", queries="some")


def test_missing_document_policies():
    # q1: a, c only in A; d only in B; b in both. Scores as read.
    zero = scores_of(fuse([RUN_A, RUN_B], "combmin", norm="none", missing="zero"))["q1"]
    assert zero == {"a": 0.0, "b": 2.0, "c": 0.0, "d": 0.0}
    ignore = scores_of(fuse([RUN_A, RUN_B], "combmin", norm="none", missing="ignore"))["q1"]
    assert ignore == {"a": 3.0, "b": 2.0, "c": 1.0, "d": 3.0}
    low = scores_of(fuse([RUN_A, RUN_B], "combsum", norm="none", missing="min"))["q1"]
    # a: 3 + B's minimum (3); c: 1 + 3; d: A's minimum (1) + 3; b: 2 + 4
    assert low == {"a": 6.0, "b": 6.0, "c": 4.0, "d": 4.0}
    with pytest.raises(ConventionError, match="missing='native' needs"):
        fuse([RUN_A, RUN_B], "combsum", missing="native")
    with pytest.raises(ConventionError, match="unknown missing-document policy"):
        fuse([RUN_A, RUN_B], "combsum", missing="skip")


def test_default_missing_policy_is_the_methods():
    assert fuse([RUN_A, RUN_B], "combmax").fusion["missing"] == "ignore"
    assert fuse([RUN_A, RUN_B], "combsum").fusion["missing"] == "zero"
    assert fuse([RUN_A, RUN_B], "bordafuse").fusion["missing"] == "native"
    assert fuse([RUN_A, RUN_B], "combsum", norm="borda").fusion["missing"] == "native"
    with pytest.raises(ConventionError, match="own rule for unranked documents"):
        fuse([RUN_A, RUN_B], "condorcet", missing="zero")


def test_depth_cuts_each_run():
    fused = fuse([RUN_A, RUN_B], "rrf", depth=1)
    assert scores_of(fused)["q1"] == {"a": 1 / 61, "b": 1 / 61}
    with pytest.raises(ConventionError, match="'depth' parameter of fuse must be an int >= 1"):
        fuse([RUN_A], "rrf", depth=0)


def test_minmax_inverted_treats_lower_as_better():
    distances = {"q": {"near": 0.1, "mid": 0.5, "far": 0.9}}
    fused = fuse([distances], "rrf", norm="minmax_inverted")
    assert ranking_of(fused)["q"] == ["near", "mid", "far"]
    assert scores_of(fused)["q"]["near"] == 1 / 61
    assert scores_of(fuse([distances], "combsum", norm="minmax_inverted"))["q"] == {"near": 1.0, "mid": 0.5, "far": 0.0}


def test_degenerate_lists_normalise_to_zero():
    fused = fuse([{"q": {"a": 2.0, "b": 2.0}, "r": {"c": 5.0}}], "combsum", norm="minmax")
    assert scores_of(fused) == {"q": {"a": 0.0, "b": 0.0}, "r": {"c": 0.0}}
    assert scores_of(fuse([{"q": {"a": 2.0, "b": 2.0}}], "combsum", norm="zscore"))["q"] == {"a": 0.0, "b": 0.0}
    assert scores_of(fuse([{"q": {"a": -2.0, "b": -1.0}}], "combsum", norm="max"))["q"] == {"a": 0.0, "b": 0.0}


def test_weights_must_match_the_runs():
    with pytest.raises(ConventionError, match="2 weights for 3 runs"):
        fuse([RUN_A, RUN_B, RUN_A], "wsum", weights=[1, 2])


def test_supervised_methods_need_judgements():
    with pytest.raises(StagewiseError, match="posfuse learns from judgements"):
        fuse([RUN_A, RUN_B], "posfuse")
    fused = fuse([RUN_A, RUN_B], "posfuse", qrels={"q1": {"b": 1, "a": 0}})
    assert fused.fusion["trained"]["in_sample"] is True
    assert fused.fusion["trained"]["parameters"]["probs"][1] == [1.0, 0.0]


def test_same_file_name_twice_stays_two_runs(tmp_path):
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.txt").write_text("q Q0 a 1 2.0 t\nq Q0 b 2 1.0 t\n")
    fused = fuse([tmp_path / "x" / "run.txt", tmp_path / "y" / "run.txt"], "combsum", norm="none")
    assert fused.fusion["runs"] == ["x/run.txt", "y/run.txt"]  # told apart by their folders, as the CLI does
    assert scores_of(fused)["q"] == {"a": 4.0, "b": 2.0}


def test_runs_as_mapping_take_their_names():
    fused = fuse({"bm25": RUN_A, "dense": RUN_B}, "rrf")
    assert fused.fusion["runs"] == ["bm25", "dense"]


def test_pair_key_collision_falls_back_to_strings(monkeypatch):
    """Two different documents given the same pair key must not be joined."""
    a, b = read_run({"q": {"a": 2.0, "b": 1.0}}), read_run({"q": {"c": 2.0, "a": 1.0}})
    key = dict(zip(a.docs.values(), a.pair_keys.tolist(), strict=True))
    # b's rows are c, then a: c gets the key of ("q", "b"), a collision; a keeps its own.
    b.pair_keys = np.array([key["b"], key["a"]], dtype=np.uint64)
    fused = fuse([a, b], "combsum", norm="none")
    assert scores_of(fused)["q"] == {"a": 3.0, "b": 1.0, "c": 2.0}


# ------------------------------------------------------------------------------------ the writer
def test_written_scores_read_back_exactly(tmp_path):
    runs = [{"q": {"a": 0.1, "b": 1 / 3, "c": 1e-300}}, {"q": {"a": 2.5e-7, "d": 123456789.123456789}}]
    fused = fuse(runs, "combsum", norm="zscore")
    meta = write_fused(fused, tmp_path / "out.run", metadata=True)
    back = read_run(tmp_path / "out.run")
    assert back.scores.tobytes() == fused.scores.tobytes()
    assert back.doc_ids.to_list() == fused.doc_ids.to_list()
    assert json.loads(Path(meta).read_text())["method"] == "combsum"
    lines = (tmp_path / "out.run").read_text().splitlines()
    assert lines[0].split()[:4] == ["q", "Q0", fused.doc_ids[0], "1"] and lines[0].split()[5] == "combsum"


@pytest.mark.parametrize(
    ("run", "tag", "column"),
    [
        ({"q": {"a b": 1.0}}, None, "doc_id"),
        ({"q": {"a\tb": 1.0, "c": 0.5}}, None, "doc_id"),
        ({"q": {"é\u00a0x": 1.0}}, None, "doc_id"),  # no-break space, in non-ASCII ids
        ({"q 1": {"a": 1.0}}, None, "query_id"),
        ({"q": {"a": 1.0}}, "my run", "tag"),
    ],
)
def test_writer_refuses_white_space_in_ids(tmp_path, run, tag, column):
    from stagewise import write_run

    with pytest.raises(StagewiseError, match=f"a {column} contains white space"):
        write_run(fuse([run], "rrf"), tmp_path / "out.run", tag=tag)
    assert not (tmp_path / "out.run").exists()
    write_run(fuse([{"q": {"é-x": 1.0, "b": 0.5}}], "rrf"), tmp_path / "ok.run", tag="fine")


def test_writer_other_formats(tmp_path):
    fused = fuse([RUN_A, RUN_B], "rrf")
    write_fused(fused, tmp_path / "out.jsonl")
    back = read_run(tmp_path / "out.jsonl")
    assert back.scores.tobytes() == fused.scores.tobytes()


# -------------------------------------------------------------------------- properties (hypothesis)
DOCS = ["a", "b", "c", "B", "ab", "é", "z9", "d"]


@st.composite
def run_dicts(draw, queries=("q1", "q2", "q3"), min_queries=1, integer_scores=True):
    chosen = draw(st.lists(st.sampled_from(queries), min_size=min_queries, max_size=len(queries), unique=True))
    score = st.integers(-3, 5).map(float) if integer_scores else st.floats(-1e3, 1e3, allow_nan=False)
    return {q: draw(st.dictionaries(st.sampled_from(DOCS), score, min_size=1, max_size=len(DOCS))) for q in chosen}


SYMMETRIC = [name for name in method_names() if not METHODS[name].supervised]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=run_dicts(), rrf_k=st.floats(0, 100))
def test_rrf_of_one_run_keeps_its_order(run, rrf_k):
    original = read_run(run)
    fused = fuse([original], "rrf", rrf_k=rrf_k)
    assert ranking_of(fused) == ranking_of(original)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(run_dicts(), min_size=2, max_size=4),
    method=st.sampled_from(SYMMETRIC),
    norm=st.sampled_from(normalization_names()),
    order=st.randoms(use_true_random=False),
    data=st.data(),
)
def test_symmetric_methods_do_not_depend_on_the_order_of_the_runs(runs, method, norm, order, data):
    weights = data.draw(st.lists(st.integers(1, 4).map(float), min_size=len(runs), max_size=len(runs)))
    permutation = list(range(len(runs)))
    order.shuffle(permutation)
    kwargs = {"weights": weights} if METHODS[method].weighted else {}
    first = fuse(runs, method, norm=norm, **kwargs)
    if METHODS[method].weighted:
        kwargs = {"weights": [weights[i] for i in permutation]}
    second = fuse([runs[i] for i in permutation], method, norm=norm, **kwargs)
    assert ranking_of(first) == ranking_of(second)
    assert first.scores.tobytes() == second.scores.tobytes()  # bit-identical, not just close


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=run_dicts(integer_scores=False))
@example(run={"q1": {DOCS[0]: -5e-46, DOCS[1]: 0.0}})  # ties with 0.0 as a C float; doubled, it does not
def test_combsum_of_a_run_with_itself_doubles_its_scores(run):
    original = read_run(run)
    fused = fuse([original, original], "combsum", norm="none")
    assert scores_of(fused) == {q: {d: 2 * s for d, s in docs.items()} for q, docs in scores_of(original).items()}
    assert ranking_of(fused) == {q: [d for d, _ in naive_order(docs)] for q, docs in scores_of(fused).items()}
    # Doubling keeps the order, except below the C float range, where s ties with 0.0 and 2s may not
    # (-5e-46 rounds to -0.0 as a float, -1e-45 to the smallest subnormal).
    if all(s == 0 or abs(s) >= 1e-37 for docs in run.values() for s in docs.values()):
        assert ranking_of(fused) == ranking_of(original)


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(run_dicts(), min_size=1, max_size=3), method=st.sampled_from(SYMMETRIC))
@example(runs=[{"q1": {DOCS[0]: 0.6, DOCS[1]: 0.6000000000000001}}], method="combsum")  # one C float
def test_fused_run_is_in_evaluation_order(runs, method):
    fused = fuse(runs, method, norm="minmax")
    for code in range(fused.n_queries):
        rows = range(fused.offsets[code], fused.offsets[code + 1])
        # trec_eval's order: scores compared as C floats, then doc id descending
        keys = [(-as_c_float(fused.scores[i]), [-b for b in fused.docs.value(i).encode()] + [1]) for i in rows]
        assert keys == sorted(keys)


# ---------------------------------------------------------------------------- the naive reference
def naive_order(ranking: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending compared as C floats, then doc id descending in UTF-8 byte order."""
    items = sorted(ranking.items(), key=lambda item: item[0].encode(), reverse=True)
    return sorted(items, key=lambda item: -as_c_float(item[1]))


def naive_normalise(items: list[tuple[str, float]], norm: str, n_candidates: int) -> dict[str, float]:
    scores = [s for _, s in items]
    n, low, high = len(scores), min(scores), max(scores)
    out = {}
    for position, (doc, s) in enumerate(items):
        if norm == "none":
            v = s
        elif norm == "minmax":
            v = (s - low) / (high - low) if high > low else 0.0
        elif norm == "minmax_inverted":
            v = (high - s) / (high - low) if high > low else 0.0
        elif norm == "max":
            v = s / high if high > 0 else 0.0
        elif norm == "sum":
            total = sum(scores) - n * low
            v = (s - low) / total if total > 0 else 0.0
        elif norm == "zscore":
            mean = sum(scores) / n
            std = math.sqrt(sum((x - mean) ** 2 for x in scores) / n)
            v = (s - mean) / std if std > 0 else 0.0
        elif norm == "rank":
            v = 1 - position / n
        else:  # borda
            v = 1 - position / n_candidates
        out[doc] = v
    return out


def naive_fuse(runs, method, norm="none", depth=None, missing=None, weights=None, **params):
    """The fusion methods one query and one document at a time, with plain dicts."""
    info = METHODS[method]
    queries = sorted({q for run in runs for q in run}, key=str.encode)
    w = weights or [1.0] * len(runs)
    out = {}
    for q in queries:
        lists = [naive_order(run[q])[:depth] if q in run else [] for run in runs]
        candidates = sorted({d for items in lists for d, _ in items})
        N = len(candidates)
        values, ranks = [], []
        for items in lists:
            normalised = naive_normalise(items, norm, N) if items else {}
            if norm == "minmax_inverted":
                order = sorted(sorted(normalised, key=str.encode, reverse=True), key=lambda d: -normalised[d])
            else:
                order = [d for d, _ in items]
            ranks.append({d: i + 1 for i, d in enumerate(order)})
            values.append(normalised)
        policy = missing or ("native" if info.uses_scores and norm == "borda" else info.missing)
        fused = {}
        for d in candidates:
            count = sum(d in r for r in ranks)
            contributions = []
            for r, (value, rank) in enumerate(zip(values, ranks, strict=True)):
                n_r = len(rank)

                def contribution(doc, value=value, rank=rank, N=N):
                    if method in ("rrf",):
                        return 1 / (params.get("rrf_k", 60) + rank[doc])
                    if method in ("isr", "log_isr", "logn_isr"):
                        return 1 / rank[doc] ** 2
                    if method == "rbc":
                        phi = params.get("phi", 0.8)
                        return (1 - phi) * phi ** (rank[doc] - 1)
                    if method in ("bordafuse", "weighted_bordafuse"):
                        return N - rank[doc] + 1
                    return value[doc]

                if d in rank:
                    c = contribution(d)
                elif policy == "zero":
                    c = 0.0
                elif policy == "ignore":
                    c = None
                elif policy == "min":
                    c = min(contribution(x) for x in rank) if rank else None
                elif method in ("bordafuse", "weighted_bordafuse"):
                    c = (N - n_r + 1) / 2
                else:  # the Borda normalisation's value
                    c = 0.5 - (n_r - 1) / (2 * N)
                if c is not None and info.weighted:
                    c *= w[r]
                contributions.append(c)
            present = [c for c in contributions if c is not None]
            total = sum(present)
            if method in ("combsum", "wsum", "rrf", "rbc", "bordafuse", "weighted_bordafuse"):
                v = total
            elif method in ("combmnz", "isr"):
                v = total * count
            elif method == "combmax":
                v = max(present)
            elif method == "combmin":
                v = min(present)
            elif method == "combmed":
                v = statistics.median(present)
            elif method == "combanz":
                v = total / count
            elif method == "combgmnz":
                v = total * count ** params.get("gamma", 1.0)
            elif method == "mixed":
                v = total * math.sqrt(count)
            elif method == "log_isr":
                v = total * math.log(count)
            elif method == "logn_isr":
                v = total * math.log(count + params.get("sigma", 0.01))
            fused[d] = v
        out[q] = fused
    return out


NAIVE = [
    "combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "combgmnz", "wsum", "mixed", "rrf", "isr",
    "log_isr", "logn_isr", "rbc", "bordafuse", "weighted_bordafuse",
]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(run_dicts(), min_size=1, max_size=3),
    method=st.sampled_from(NAIVE),
    norm=st.sampled_from(normalization_names()),
    depth=st.none() | st.integers(1, 4),
    missing=st.none() | st.sampled_from(["zero", "min", "ignore"]),
    data=st.data(),
)
def test_vectorised_methods_equal_the_naive_reference(runs, method, norm, depth, missing, data):
    if missing == "ignore" and method in ("combsum", "rrf"):
        missing = None
    weights = data.draw(st.lists(st.integers(1, 3).map(float), min_size=len(runs), max_size=len(runs)))
    kwargs = {"weights": weights} if METHODS[method].weighted else {}
    if norm == "max":
        runs = [{q: {d: s + 10 for d, s in docs.items()} for q, docs in run.items()} for run in runs]
    fused = scores_of(fuse(runs, method, norm=norm, depth=depth, missing=missing, **kwargs))
    expected = naive_fuse(runs, method, norm=norm, depth=depth, missing=missing, **kwargs)
    assert fused.keys() == expected.keys()
    for q in expected:
        assert fused[q].keys() == expected[q].keys()
        for d, v in expected[q].items():
            assert fused[q][d] == pytest.approx(v, rel=1e-12, abs=1e-12), (q, d)


def test_wmnz_matches_its_formula():
    runs = [{"q": {"a": 1.0, "b": 3.0}}, {"q": {"b": 2.0, "c": 5.0}}]
    fused = scores_of(fuse(runs, "wmnz", norm="none", weights=[0.25, 2.0]))["q"]
    assert fused == {"a": 1.0 * 0.25, "b": (3.0 + 2.0) * 2.25, "c": 5.0 * 2.0}


# --------------------------------------------------------------------------------------- condorcet
def test_condorcet_majority_and_abstention():
    runs = [
        {"q": {"a": 3.0, "b": 2.0, "c": 1.0}},
        {"q": {"b": 3.0, "a": 2.0, "c": 1.0}},
        {"q": {"a": 3.0, "c": 2.0}},  # returns neither b... votes a over b (b unranked), a over c
    ]
    fused = fuse(runs, "condorcet")
    assert ranking_of(fused)["q"] == ["a", "b", "c"]
    assert scores_of(fused)["q"] == {"a": 3.0, "b": 2.0, "c": 1.0}


def test_condorcet_tie_goes_to_the_higher_doc_id():
    runs = [{"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 2.0, "a": 1.0}}]
    assert ranking_of(fuse(runs, "condorcet"))["q"] == ["b", "a"]
    assert ranking_of(fuse(runs, "weighted_condorcet", weights=[2, 1]))["q"] == ["a", "b"]


def test_borda_points_share_the_rest():
    runs = [{"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, {"q": {"c": 1.0}}]
    # N = 3. Run 1: a 3, b 2, c 1. Run 2: c 3; a and b share (3 - 1 + 1) / 2 = 1.5 each.
    assert scores_of(fuse(runs, "bordafuse"))["q"] == {"a": 4.5, "b": 3.5, "c": 4.0}


def test_table_shape():
    table = build_table([RUN_A, RUN_B], norm="none")
    assert len(table) == 6 and table.n_runs == 2
    assert table.candidates.tolist() == [4, 1, 1]
    assert table.length.tolist() == [[3, 2], [1, 0], [0, 1]]


def test_ties_between_long_ids_sharing_a_prefix():
    ids = ["FBIS3-10082", "FBIS3-10083", "FBIS3-100", "FBIS4-1", "FBIS3-1008", "LA052189-0089", "LA052189-0090"]
    fused = fuse([{"q": dict.fromkeys(ids, 1.0)}], "combsum", norm="none")
    assert ranking_of(fused)["q"] == sorted(ids, key=str.encode, reverse=True)
    pair = fuse([{"q": {"FBIS3-10082": 1.0, "FBIS3-10083": 1.0}}], "combsum", norm="none")
    assert ranking_of(pair)["q"] == ["FBIS3-10083", "FBIS3-10082"]
    pair = fuse([{"q": {"abcdefghij": 1.0, "abcdefgh": 1.0}}], "combsum", norm="none")
    assert ranking_of(pair)["q"] == ["abcdefghij", "abcdefgh"]


def test_many_queries_are_ordered_past_16_bit_codes():
    run = {f"q{i:06d}": {"a": 1.0, "b": float(i % 3)} for i in range(70_000)}
    fused = fuse([run], "combsum", norm="none")
    assert fused.query_ids[0] == "q000000" and len(fused) == 140_000
    ranking = ranking_of(fused)
    assert ranking["q069999"] == ["a", "b"] and ranking["q069998"] == ["b", "a"] and ranking["q069997"] == ["b", "a"]
    assert np.all(np.diff(fused.query_codes) >= 0)


def test_join_orders_keys_that_share_their_top_half():
    """Keys whose top 32 bits agree land in one group of the join's sort; they are ordered by the whole key."""
    a = read_run({"q": {"x": 3.0, "y": 2.0, "z": 1.0}})
    b = read_run({"q": {"z": 3.0, "y": 2.0, "x": 1.0}})
    top = np.uint64(0xABCDEF01) << np.uint64(32)
    crafted = {"x": top | np.uint64(3), "y": top | np.uint64(1), "z": top | np.uint64(2)}
    for run in (a, b):
        run.pair_keys = np.array([crafted[d] for d in run.docs.values()], dtype=np.uint64)
    fused = fuse([a, b], "combsum", norm="none")
    assert scores_of(fused)["q"] == {"x": 4.0, "y": 4.0, "z": 4.0}
    assert len(fused) == 3


def test_a_single_run_dict_is_one_run_and_inputs_are_not_renamed():
    assert scores_of(fuse({"q1": {"a": 2.0, "b": 1.0}}, "combsum", norm="none")) == {"q1": {"a": 2.0, "b": 1.0}}
    run = read_run({"q": {"a": 1.0}}, name="same")
    fused = fuse([run, run], "combsum", norm="none")
    assert fused.fusion["runs"] == ["same", "same#2"] and run.name == "same"


def test_fusing_leaves_the_input_runs_untouched(tmp_path):
    """A fused run takes over arrays the fusion made, never the inputs' (one run, reversed by minmax_inverted;
    a run read from a TREC file has writable arrays)."""
    path = tmp_path / "one.run"
    path.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\nq2 Q0 x 1 1 t\nq2 Q0 y 2 0.5 t\n")
    run = read_run(path)
    assert run.pair_keys.flags.writeable
    keys, scores, docs = run.pair_keys.copy(), run.scores.copy(), run.doc_ids.to_list()
    for method, norm in (("combsum", "minmax_inverted"), ("rrf", None), ("combsum", "none")):
        fuse([run], method, norm=norm)
        fuse([run, run], method, norm=norm)
    assert np.array_equal(run.pair_keys, keys) and np.array_equal(run.scores, scores)
    assert run.doc_ids.to_list() == docs
