"""The calibrated support judge (issue 27): its shipped parameters, its arithmetic against a naive reference,
its registry entry, its dense path through any encoder, its refusal without the dense extra, and the fit script
that reproduces what ships."""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError, StagewiseError
from stagewise.rag import JUDGES, evaluate_rag
from stagewise.rag.calibrated import (
    DENSE_NAMES,
    LABELS,
    LEXICAL_NAMES,
    CalibratedJudge,
    lexical_features,
    load_parameters,
    sentences,
)
from stagewise.rag.judges import Judge, Passage, parse_judge

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "expertqa"
AUSTEN = [Passage("p1", "Jane Austen published Emma in 1815. It was not her first novel.")]


def naive_score(passages: list[Passage], claim: str) -> float:
    """The logistic model written out by hand from the shipped JSON: standardise, dot, sigmoid."""
    model = load_parameters()["models"]["lexical"]
    feats = lexical_features(passages, claim)
    z = sum(
        min(max((feats[n] - m) / s, -model["clip"]), model["clip"]) * c
        for n, m, s, c in zip(model["features"], model["mean"], model["scale"], model["coef"], strict=True)
    )
    return 1 / (1 + math.exp(-(z + model["intercept"])))


def test_the_shipped_parameters_name_their_features_data_and_thresholds() -> None:
    params = load_parameters()
    assert params["fitted_on"]["file"] == "expertqa/rand_val.jsonl"
    assert len(params["fitted_on"]["sha256"]) == 64
    for name, model in params["models"].items():
        expected = LEXICAL_NAMES + (DENSE_NAMES if name == "dense" else ())
        assert tuple(model["features"]) == expected
        for key in ("mean", "scale", "coef"):
            assert len(model[key]) == len(expected) and all(math.isfinite(v) for v in model[key])
        assert all(v > 0 for v in model["scale"])
        assert 0 < model["partial_threshold"] <= model["threshold"] < 1


@pytest.mark.skipif(not (SHARED / "rand_val.jsonl").is_file(), reason="ExpertQA not in ../shared/data")
def test_the_recorded_hash_is_the_validation_split_and_never_the_test_split() -> None:
    recorded = load_parameters()["fitted_on"]["sha256"]
    assert recorded == hashlib.sha256((SHARED / "rand_val.jsonl").read_bytes()).hexdigest()
    assert recorded != hashlib.sha256((SHARED / "rand_test.jsonl").read_bytes()).hexdigest()


def test_the_score_is_the_logistic_model_written_out_by_hand() -> None:
    judge = CalibratedJudge("lexical")
    claims = ["Emma was published by Jane Austen in 1815.", "Dickens never wrote Emma.", "It rained in Paris."]
    for claim in claims:
        assert judge.score(AUSTEN, claim) == pytest.approx(naive_score(AUSTEN, claim), rel=1e-12)
    assert judge.scores([(AUSTEN, c) for c in claims]) == pytest.approx([judge.score(AUSTEN, c) for c in claims])


def test_lexical_features_count_what_they_say() -> None:
    f = lexical_features([Passage("p", "In 1815 Austen published Emma. Critics did not like it.")],
                         "Austen published Emma in 1816 [2].")  # fmt: skip
    assert f["coverage"] == pytest.approx(3 / 4)  # austen, published, emma found; 1816 not
    assert f["numbers"] == 0.0 and f["has_numbers"] == 1.0  # the marker [2] is not a number of the claim
    assert f["bigram_coverage"] == pytest.approx(2 / 3)  # austen-published, published-emma; emma-1816 not
    assert f["negation"] == 0.0  # the best sentence ("In 1815 Austen published Emma.") is not negated either
    assert lexical_features([Passage("p", "Austen did not publish Emma.")], "Austen published Emma.")["negation"] == 1
    assert sentences("a " * 90) == ["a " * 39 + "a", "a " * 39 + "a", "a " * 9 + "a"]


@settings(max_examples=60, deadline=None)
@given(
    claim=st.text(st.sampled_from("ab cd 19 Emma not."), max_size=40),
    texts=st.lists(st.text(st.sampled_from("ab cd 19 Emma not."), max_size=60), max_size=3),
)
def test_scores_are_probabilities_and_labels_follow_the_score(claim: str, texts: list[str]) -> None:
    judge = CalibratedJudge("lexical")
    passages = [Passage(str(i), t) for i, t in enumerate(texts)]
    (verdict,) = judge.verdicts([(passages, claim)])
    assert 0.0 <= verdict.score <= 1.0
    assert verdict.supported == judge.supports(passages, claim) == (verdict.score >= judge.threshold)
    if verdict.score >= judge.threshold:
        assert verdict.label == "supported"
    elif verdict.score >= judge.params["partial_threshold"]:
        assert verdict.label == "partial"
    else:
        assert verdict.label == "not"
    if not any(t for t in texts):
        assert verdict == judge.verdicts([([], claim)])[0] and verdict.score == 0.0 and verdict.label == "not"


def test_registered_by_name_with_its_version_and_parameter() -> None:
    assert "calibrated" in JUDGES.names()
    spec = parse_judge("CALIBRATED(features=lexical)")
    judge = spec.build()
    assert isinstance(judge, Judge) and spec.name == judge.name == "calibrated(features=lexical)"
    assert judge.version == f"{load_parameters()['version']}-lexical"
    assert parse_judge("calibrated").name == "calibrated"
    assert set(LABELS) == {"supported", "partial", "not"}
    with pytest.raises(ConventionError, match="features"):
        parse_judge("calibrated(features=nli)")


def test_the_diagnosis_names_the_calibrated_judge() -> None:
    record = {"id": "q1", "retrieved": ["p1"], "answer": "Emma was published by Jane Austen in 1815 [p1].",
              "gold_answers": ["Jane Austen"], "passages": {"p1": AUSTEN[0].text}}  # fmt: skip
    report = evaluate_rag([record], judge="calibrated(features=lexical)", context_k=1)
    assert report.judges["support"]["name"] == "calibrated(features=lexical)"


class Letters:
    """A test encoder: letter counts, unit length; it records every text it is asked to encode."""

    name, dimension, normalized = "letters", 26, True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        rows = np.array([[t.lower().count(c) + 1e-3 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts])
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_dense_features_take_any_encoder_and_encode_each_text_once() -> None:
    encoder = Letters()
    judge = CalibratedJudge("dense", encoder=encoder)
    items = [(AUSTEN, "Austen wrote Emma."), (AUSTEN, "Austen wrote Emma."), (AUSTEN, "Emma appeared in 1815.")]
    rows = judge.feature_rows(items)
    vectors = encoder.encode(["Austen wrote Emma.", "Jane Austen published Emma in 1815."])
    encoder.seen.clear()
    assert rows[0]["cosine_max"] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-6)
    assert rows[0]["cosine_passage"] <= rows[0]["cosine_max"] + 1e-6 or rows[0]["cosine_passage"] >= 0
    scores = judge.scores(items)
    assert all(0 <= s <= 1 for s in scores) and scores[0] == scores[1]
    assert encoder.seen == []  # every text was encoded by the first call and kept
    assert judge.name == "calibrated" and judge.version.endswith("-dense")


def test_a_batch_with_more_texts_than_the_cache_holds_is_scored_whole() -> None:
    items = [(AUSTEN, "Austen wrote Emma."), (AUSTEN, "Emma appeared in 1815."), (AUSTEN, "Dickens wrote Emma.")]
    small = CalibratedJudge("dense", encoder=Letters(), cache_size=2)
    assert small.scores(items) == pytest.approx(CalibratedJudge("dense", encoder=Letters()).scores(items))
    assert len(small._vectors) == 2


def test_without_the_dense_extra_the_dense_judge_refuses_with_the_install_line(monkeypatch) -> None:
    real = importlib.import_module

    def missing(name: str, *args, **kwargs):
        if name.startswith("stagewise.dense"):
            raise ImportError("No module named 'onnxruntime'", name="onnxruntime")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)
    judge = parse_judge("calibrated").build()  # building is cheap: the model loads on the first claim
    with pytest.raises(StagewiseError, match=r"stagewise\[dense\].*calibrated\(features=lexical\)") as info:
        judge.supports(AUSTEN, "Austen wrote Emma.")
    assert str(info.value).count("stagewise[dense]") == 1 and "\n" not in str(info.value)


def test_the_install_line_is_said_once_when_the_encoder_says_it_too(monkeypatch) -> None:
    encoders = importlib.import_module("stagewise.dense.encoders")

    def refuse(**_: object) -> None:
        raise StagewiseError("the onnx backend needs onnxruntime: pip install 'stagewise[dense]'")

    monkeypatch.setattr(encoders, "load_encoder", refuse)
    with pytest.raises(StagewiseError, match=r"calibrated\(features=lexical\)") as info:
        parse_judge("calibrated").build().supports(AUSTEN, "Austen wrote Emma.")
    assert str(info.value).count("stagewise[dense]") == 1


def test_the_fit_script_refuses_the_test_split(tmp_path: Path) -> None:
    fake = tmp_path / "rand_test.jsonl"
    fake.write_text("")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "fit_support_judge.py"), "--data", str(fake),
                          "--out", str(tmp_path / "x.json")], capture_output=True, text=True)  # fmt: skip
    assert out.returncode != 0 and "refusing to fit on rand_test" in out.stderr


@pytest.mark.skipif(not (SHARED / "rand_val.jsonl").is_file(), reason="ExpertQA not in ../shared/data")
def test_the_fit_script_reproduces_the_shipped_lexical_model(tmp_path: Path) -> None:
    out = tmp_path / "support_judge.json"
    subprocess.run([sys.executable, str(ROOT / "tools" / "fit_support_judge.py"), "--features", "lexical",
                    "--out", str(out)], check=True, capture_output=True)  # fmt: skip
    fitted, shipped = json.loads(out.read_text()), load_parameters()
    assert fitted["fitted_on"] == shipped["fitted_on"]
    assert fitted["models"]["lexical"] == shipped["models"]["lexical"]


@pytest.mark.filterwarnings("ignore:.*cohen_kappa_score. is undefined")  # sklearn's nan: both sides one label
@settings(max_examples=80, deadline=None)
@given(pairs=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=40))
def test_the_benchmark_figures_equal_scikit_learns(pairs: list[tuple[bool, bool]]) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from judge_quality import figures

    predicted, reference = (np.array(column, bool) for column in zip(*pairs, strict=True))
    got = figures(predicted, reference)
    assert got["accuracy"] == pytest.approx(metrics.accuracy_score(reference, predicted))
    labels = [False, True]
    f1 = metrics.f1_score(reference, predicted, average="macro", labels=labels, zero_division=1.0)
    assert got["macro_f1"] == pytest.approx(f1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = metrics.cohen_kappa_score(reference, predicted, labels=labels)
    assert got["kappa"] == pytest.approx(0.0 if np.isnan(kappa) else kappa)  # both constant and equal: 0 here


def _evidence_tool():
    sys.path.insert(0, str(ROOT / "tools"))
    return importlib.import_module("support_judge_evidence")


def test_the_candidate_features_count_what_they_say() -> None:
    tool = _evidence_tool()
    faithful = tool.candidate_features(AUSTEN, "Austen published Emma [1].")
    # stems austen, publish, emma: both pairs and the triple adjacent in the first sentence; nothing missing
    assert (faithful["stem_bigram"], faithful["stem_trigram"], faithful["lcs"]) == (1.0, 1.0, 1.0)
    assert (faithful["missing"], faithful["markers"], faithful["stem_window2"]) == (0.0, 1.0, 1.0)
    false = tool.candidate_features(AUSTEN, "Dickens published Emma.")
    # dicken is found nowhere: one of two pairs, no triple, a subsequence of two stems out of three
    assert false["stem_bigram"] == 0.5 and false["stem_trigram"] == 0.0
    assert false["lcs"] == pytest.approx(2 / 3) and false["missing"] == pytest.approx(math.log(2))
    assert false["char5"] < faithful["char5"] == 1.0
    assert tool.candidate_features([], "Austen wrote Emma.")["char5"] == 0.0


def test_the_nested_estimate_finds_a_clean_signal_and_no_signal_in_noise() -> None:
    pytest.importorskip("sklearn")
    tool = _evidence_tool()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    clean = tool.nested_estimate(x, x[:, 0] > 0.3, "logistic C=1", seeds=1)
    noise = tool.nested_estimate(x, rng.random(200) < 0.7, "logistic C=1", seeds=1)
    assert clean["macro_f1"] > 0.9 and clean["kappa"] > 0.8
    assert noise["macro_f1"] < 0.6 and noise["kappa"] < 0.15  # no agreement invented (noise can go below 0)


def test_the_evidence_script_refuses_the_test_split(tmp_path: Path) -> None:
    fake = tmp_path / "rand_test.jsonl"
    fake.write_text("")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "support_judge_evidence.py"), "--data", str(fake)],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode != 0 and "refusing to read rand_test" in out.stderr


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 9), st.booleans()), min_size=2, max_size=40))
def test_the_vectorised_threshold_search_equals_the_fit_scripts(pairs: list[tuple[int, bool]]) -> None:
    pytest.importorskip("sklearn")
    sys.path.insert(0, str(ROOT / "tools"))
    from fit_support_judge import best_threshold

    probability = np.array([p / 10 for p, _ in pairs])
    reference = [r for _, r in pairs]
    if len(set(probability)) > 1:
        expected = best_threshold(probability, reference)
        assert _evidence_tool().best_cut(probability, reference) == pytest.approx(expected)


def test_each_signals_auc_is_one_when_it_is_the_verdict_and_zero_when_reversed() -> None:
    pytest.importorskip("sklearn")
    verdicts = [True, False, True, True, False]
    rows = [{"same": float(v), "reversed": float(not v), "flat": 0.5} for v in verdicts]
    assert _evidence_tool().feature_auc(rows, verdicts) == {"same": 1.0, "reversed": 0.0, "flat": 0.5}
