"""``stagewise demo``: the bundled CLAP NQ dev data, and every output of the pipeline checked against an independent
computation (pytrec_eval for the metrics, a fresh ``stagewise.compare`` for the tests, a hand-written SQuAD F1 and
the lesson's ``diagnose`` for the RAG labels), the verdict, the extractive answerer, the report, the output folder's
safety, the degraded modes and ``--serve``.

The demo runs once per module (``dense="off"``) and once with a tiny hashing encoder for the dense path; the CLI
tests run it a few more times with ``--no-report``.
"""

from __future__ import annotations

import fnmatch
import gzip
import importlib.util
import itertools
import json
import math
import re
import socket
import string
import sys
import tomllib
import zlib
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stagewise
from stagewise import lesson
from stagewise._bundled import clapnq_path
from stagewise.cli import app
from stagewise.demo import run_demo
from stagewise.demo.pipeline import METRICS
from stagewise.demo.verdict import verdict
from stagewise.errors import StagewiseError
from stagewise.rag.extractive import ABSTENTION, ExtractiveAnswerer
from stagewise.store.labels import LabelStore
from tests.conftest import REPO, SHARED
from tests.dense_helpers import needs_model

CLAPNQ_SOURCE = SHARED / "data" / "clapnq"
BUNDLED = clapnq_path()
FIRST_STAGE = ["bm25-stem", "bm25-plain"]
STAGES_NO_DENSE = ["bm25-stem", "bm25-plain", "rrf", "reranked"]
STAGES_DENSE = ["bm25-stem", "bm25-plain", "dense", "rrf", "reranked"]
INPUTS = {"corpus.jsonl", "queries.jsonl", "qrels.txt", "NOTICE.md", "LICENSE-Apache-2.0.txt"}
OUTPUTS = {"rag.jsonl", "rag-labels.jsonl", "evaluation.json", "comparison.json", "pipeline.json", "summary.md"}
runner = CliRunner()


# ----------------------------------------------------------------------------------------------------------------
# independent readers and computations


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, rel = line.split()
        qrels[qid][doc] = int(rel)
    return dict(qrels)


def read_run(path: Path) -> dict[str, list[tuple[int, str, float]]]:
    """``{qid: [(rank, doc, score), ...]}`` in the file's rank order."""
    run: dict[str, list[tuple[int, str, float]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, rank, score, _tag = line.split()
        run[qid].append((int(rank), doc, float(score)))
    return {qid: sorted(rows) for qid, rows in run.items()}


def trec_order(rows: list[tuple[int, str, float]]) -> list[str]:
    """trec_eval's order: score descending in single precision, then doc id descending."""
    ordered = sorted(((doc, score) for _, doc, score in rows), key=lambda x: (np.float32(x[1]), x[0]), reverse=True)
    return [doc for doc, _ in ordered]


def normalize(text: str) -> list[str]:
    """SQuAD's answer normalisation, after dropping ``[...]`` citation markers."""
    text = re.sub(r"\[[^\]]*\]", " ", text).lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return text.split()


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction), normalize(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def load_bundle_tool():
    spec = importlib.util.spec_from_file_location("bundle_clapnq_under_test", REPO / "tools" / "bundle_clapnq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class HashedWords:
    """A tiny deterministic encoder for the dense stage: hashed bag of words, 64 dimensions, L2-normalised."""

    name, dimension, normalized = "hashed-words", 64, True

    def encode(self, texts):
        out = np.zeros((len(texts), self.dimension), np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[i, zlib.crc32(word.encode()) % self.dimension] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


# ----------------------------------------------------------------------------------------------------------------
# fixtures: one demo without dense retrieval, one with the hashing encoder


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    result = run_demo(out, dense="off")
    return result, out


@pytest.fixture(scope="module")
def dense_demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("dense") / "out"
    result = run_demo(out, encoder=HashedWords(), report=False)
    return result, out


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return read_jsonl_gz(BUNDLED / "questions.jsonl.gz")


# ----------------------------------------------------------------------------------------------------------------
# 1. the bundled data


def test_bundled_data_rebuilds_byte_identical_from_the_source():
    if not CLAPNQ_SOURCE.is_dir():
        pytest.skip(f"CLAP NQ dev is not at {CLAPNQ_SOURCE} (../shared is absent)")
    built = load_bundle_tool().build(CLAPNQ_SOURCE)
    assert set(built) == {"corpus.jsonl.gz", "questions.jsonl.gz", "qrels.txt"}
    for name, data in built.items():
        assert (BUNDLED / name).read_bytes() == data, f"{name} differs from a rebuild"


def test_bundled_counts_and_qrels(questions):
    corpus = read_jsonl_gz(BUNDLED / "corpus.jsonl.gz")
    ids = [p["_id"] for p in corpus]
    assert len(ids) == len(set(ids)) == 592
    assert all(p["text"] == " ".join(p["sentences"]) for p in corpus)
    assert len(questions) == len({q["_id"] for q in questions}) == 600
    answerable = [q for q in questions if q["answerable"]]
    assert len(answerable) == 300
    assert all(q["gold_passage"] in set(ids) and q["gold_answers"] for q in answerable)
    assert all(q["gold_passage"] is None and not q["gold_answers"] for q in questions if not q["answerable"])
    lines = (BUNDLED / "qrels.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 300
    qrels = read_qrels(BUNDLED / "qrels.txt")
    assert qrels == {q["_id"]: {q["gold_passage"]: 1} for q in answerable}


def test_bundled_corpus_has_no_duplicate_text():
    corpus = read_jsonl_gz(BUNDLED / "corpus.jsonl.gz")
    texts = Counter(" ".join(p["text"].split()) for p in corpus)
    assert [t[:60] for t, n in texts.items() if n > 1] == []  # NOTICE.md: "Identical texts are one passage"


def test_bundled_notice_licence_and_package_data():
    notice = (BUNDLED / "NOTICE.md").read_text(encoding="utf-8")
    assert "Apache License 2.0" in notice or "Apache-2.0" in notice
    assert "CC BY-SA 3.0" in notice and "Wikipedia" in notice
    commit = re.search(r"commit `([0-9a-f]{40})`", notice)
    assert commit is not None, "NOTICE.md names no source commit"
    if (CLAPNQ_SOURCE / "SOURCE.md").is_file():
        assert commit.group(1) in (CLAPNQ_SOURCE / "SOURCE.md").read_text(encoding="utf-8")
    licence = (BUNDLED / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0" in licence
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["stagewise"]
    package_root = REPO / "src" / "stagewise"
    shipped = sorted(p.relative_to(package_root).as_posix() for p in BUNDLED.iterdir() if p.is_file())
    assert {"corpus.jsonl.gz", "questions.jsonl.gz", "qrels.txt", "NOTICE.md", "LICENSE-Apache-2.0.txt"} <= {
        Path(p).name for p in shipped
    }
    for path in shipped:
        assert any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns), f"{path} is not package data"


def test_demo_copies_the_bundled_inputs(demo, questions):
    _, out = demo
    assert (out / "qrels.txt").read_bytes() == (BUNDLED / "qrels.txt").read_bytes()
    assert (out / "NOTICE.md").read_bytes() == (BUNDLED / "NOTICE.md").read_bytes()
    assert [q["_id"] for q in read_jsonl(out / "queries.jsonl")] == [q["_id"] for q in questions]
    corpus = {p["_id"]: p for p in read_jsonl(out / "corpus.jsonl")}
    assert corpus.keys() == {p["_id"] for p in read_jsonl_gz(BUNDLED / "corpus.jsonl.gz")}


# ----------------------------------------------------------------------------------------------------------------
# 2. evaluation against pytrec_eval


def test_evaluation_agrees_with_pytrec_eval(demo):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    _, out = demo
    evaluation = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    qrels = read_qrels(out / "qrels.txt")
    assert set(evaluation["runs"]) == set(STAGES_NO_DENSE)
    assert sorted(p.stem for p in out.glob("*.run")) == sorted(STAGES_NO_DENSE)
    measures = {"ndcg_cut_10", "recall_3", "recall_100", "recip_rank"}
    for path in sorted(out.glob("*.run")):
        rows = read_run(path)
        assert set(qrels) <= set(rows), "a judged question is missing from the run"
        run = {qid: {doc: score for _, doc, score in r} for qid, r in rows.items()}
        top10 = {qid: {doc: run[qid][doc] for doc in trec_order(r)[:10]} for qid, r in rows.items()}
        full = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        cut = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
        assert set(full) == set(qrels)

        def mean(results, measure):
            return sum(results[q][measure] for q in qrels) / len(qrels)

        means = evaluation["runs"][path.stem]
        assert means["ndcg@10"] == pytest.approx(mean(full, "ndcg_cut_10"), abs=1e-9)
        assert means["recall@3"] == pytest.approx(mean(full, "recall_3"), abs=1e-9)
        assert means["recall@100"] == pytest.approx(mean(full, "recall_100"), abs=1e-9)
        assert means["mrr@10"] == pytest.approx(mean(cut, "recip_rank"), abs=1e-9)
        # the file's rank column is trec_eval's order, so the RAG context and the metrics see the same ranking
        assert all([d for _, d, _ in r] == trec_order(r) for r in rows.values())
        # binary qrels: exponential gain is linear gain
        assert means["ndcg@10(gain=exp)"] == pytest.approx(means["ndcg@10"], abs=1e-12)


def test_gain_statement_in_the_summary_is_true(demo):
    _, out = demo
    qrels = read_qrels(out / "qrels.txt")
    assert {rel for docs in qrels.values() for rel in docs.values()} == {1}
    # graded labels do part: the lesson's ranking [1, 0, 2]
    graded = stagewise.evaluate(
        {"q": {"a": 1, "b": 0, "c": 2}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, ["ndcg@3", "ndcg@3(gain=exp)"]
    ).means["run"]
    linear, exp = lesson.ndcg([1, 0, 2], gain="linear"), lesson.ndcg([1, 0, 2], gain="exp")
    assert graded["ndcg@3"] == pytest.approx(linear, abs=1e-12)
    assert graded["ndcg@3(gain=exp)"] == pytest.approx(exp, abs=1e-12)
    assert abs(linear - exp) > 0.05
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "They agree here because every judged passage has label 1" in summary
    assert f"nDCG {linear:.4f} linear, {exp:.4f} exp" in summary


# ----------------------------------------------------------------------------------------------------------------
# 3. significance


def test_comparison_is_reproduced_by_compare(demo):
    _, out = demo
    written = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    runs = {name: str(out / f"{name}.run") for name in STAGES_NO_DENSE}
    fresh = stagewise.compare(
        str(out / "qrels.txt"), runs, list(METRICS), test="randomization", seed=0, correction="holm"
    )
    n_pairs = math.comb(len(STAGES_NO_DENSE), 2)
    assert len(written["pairs"]) == len(fresh.pairs) == len(METRICS) * n_pairs
    by_key = {(p.metric, p.a, p.b): p for p in fresh.pairs}
    assert len(by_key) == len(fresh.pairs)
    for pair in written["pairs"]:
        again = by_key[(pair["metric"], pair["a"], pair["b"])]
        assert pair["test"] == "randomization" and pair["correction"] == "holm"
        assert pair["p_value"] == pytest.approx(again.p_value, abs=1e-12)
        assert pair["p_adjusted"] == pytest.approx(again.p_adjusted, abs=1e-12)
    assert written["conventions"]["seed"] == 0
    # Holm within each metric's family, recomputed by hand
    for metric in METRICS:
        family = [p for p in written["pairs"] if p["metric"] == metric]
        assert len(family) == n_pairs
        for pair, adjusted in zip(family, holm([p["p_value"] for p in family]), strict=True):
            assert pair["p_adjusted"] == pytest.approx(adjusted, abs=1e-12)


# ----------------------------------------------------------------------------------------------------------------
# 4. the RAG labels, recomputed


def test_rag_labels_recomputed_independently(demo, questions):
    _, out = demo
    reranked = read_run(out / "reranked.run")
    records = {r["id"]: r for r in read_jsonl(out / "rag.jsonl")}
    labels = read_jsonl(out / "rag-labels.jsonl")
    assert [row["id"] for row in labels] == [q["_id"] for q in questions]
    assert len(records) == 600
    for q, row in zip(questions, labels, strict=True):
        ranked = [doc for _, doc, _ in reranked[q["_id"]]]
        record = records[q["_id"]]
        assert record["context"] == ranked[:3] and record["retrieved"] == ranked
        answer = record["answer"]
        abstained = answer.strip() == ABSTENTION
        if q["answerable"]:
            evidence = q["gold_passage"] in ranked[:3]
            f1 = max(token_f1(answer, gold) for gold in q["gold_answers"])
            correct = not abstained and f1 >= 0.5
            if not abstained:
                assert row["f1"] == pytest.approx(f1, abs=1e-9), q["_id"]
            if not evidence:
                retrieved = q["gold_passage"] in ranked
                assert row["reason"] == ("ranked_too_low" if retrieved else "not_retrieved"), q["_id"]
        else:
            evidence = True  # nothing to retrieve: the evidence is never missing
            correct = abstained
        assert (row["evidence_in_context"], row["answer_correct"]) == (evidence, correct), q["_id"]
        assert row["label"] == lesson.diagnose(evidence, correct), q["_id"]
        if not abstained:  # every answer cites a passage of its context and quotes one of its sentences
            cited = re.fullmatch(r"(.+) \[([^\]]+)\]", answer)
            assert cited is not None and cited.group(2) in record["context"]
            assert cited.group(1) in record["passages"][cited.group(2)]


# ----------------------------------------------------------------------------------------------------------------
# 5. the verdict


def test_verdict_counts_match_the_labels(demo):
    result, out = demo
    labels = read_jsonl(out / "rag-labels.jsonl")
    retrieval = [r for r in labels if r["label"] == "retrieval_failure"]
    expected = {
        "retrieval": sum(r["reason"] == "not_retrieved" for r in retrieval),
        "ranking": sum(r["reason"] != "not_retrieved" for r in retrieval),
        "generation": sum(r["label"] == "generation_failure" for r in labels),
    }
    pipeline = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    written = pipeline["verdict"]
    assert written["losses"] == expected == result.verdict.losses
    assert written["samples"] == 600
    assert written["ok"] == sum(r["label"] == "ok" for r in labels)
    assert written["lucky"] == sum(r["label"] == "lucky" for r in labels)
    gen_reasons = Counter(r["reason"] for r in labels if r["label"] == "generation_failure")
    assert written["reasons"]["generation"] == dict(gen_reasons)
    assert sum(written["reasons"]["ranking"].values()) == expected["ranking"]
    side = expected["retrieval"] + expected["ranking"]
    fix = "fix retrieval" if side >= expected["generation"] and side else "fix generation"
    assert written["fix_first"] == fix
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"What to fix first: {fix}." in summary
    assert f"Where the {len(labels)} questions were lost" in summary
    # each stage change quotes the written comparison
    comparison = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    pairs = {(p["metric"], p["a"], p["b"]): p for p in comparison["pairs"]}
    assert next((c["stage"], c["against"]) for c in written["changes"]) == ("bm25-plain", "bm25-stem")
    for change in written["changes"]:
        pair = (
            pairs.get((change["metric"], change["against"], change["stage"]))
            or pairs[(change["metric"], change["stage"], change["against"])]
        )
        assert change["p_adjusted"] == pair["p_adjusted"]
        assert change["diff"] == pytest.approx(change["after"] - change["before"], abs=1e-15)
        assert change["after"] == comparison["means"][change["stage"]][change["metric"]]


def rows(**counts: int) -> list[SimpleNamespace]:
    reason = {
        "ok": "correct_answer",
        "lucky": "correct_without_evidence",
        "generation_failure": "hallucinated_answer",
        "not_retrieved": "not_retrieved",
        "ranked_too_low": "ranked_too_low",
    }
    out = []
    for key, n in counts.items():
        label = "retrieval_failure" if key in ("not_retrieved", "ranked_too_low") else key
        out += [SimpleNamespace(label=label, reason=reason[key])] * n
    return out


class Rag:
    def __init__(self, rows_: list[SimpleNamespace]) -> None:
        self.rows = rows_


@pytest.mark.parametrize(
    ("counts", "fix", "worst"),
    [
        ({"generation_failure": 5, "not_retrieved": 1, "ranked_too_low": 2, "ok": 3}, "fix generation", "generation"),
        ({"generation_failure": 4, "not_retrieved": 3, "ranked_too_low": 2}, "fix retrieval", "retrieval"),
        ({"generation_failure": 3, "not_retrieved": 1, "ranked_too_low": 2, "ok": 1}, "fix retrieval", "retrieval"),
        ({"generation_failure": 2, "ranked_too_low": 2}, "fix retrieval", "retrieval"),
        ({"ok": 4, "lucky": 1}, "nothing to fix", None),
        ({"generation_failure": 1}, "fix generation", "generation"),
        ({"not_retrieved": 1}, "fix retrieval", "retrieval"),
    ],
)
def test_verdict_rule(counts, fix, worst):
    v = verdict(Rag(rows(**counts)), None, [], primary="ndcg@10", depth=100, context_k=3)
    assert v.fix_first == fix and v.worst == worst
    assert v.headline().endswith(f"{fix}.")
    assert ("lose the most" in v.headline() or "loses the most" in v.headline()) == (worst is not None)
    assert v.samples == sum(counts.values())
    assert v.losses == {
        "retrieval": counts.get("not_retrieved", 0),
        "ranking": counts.get("ranked_too_low", 0),
        "generation": counts.get("generation_failure", 0),
    }
    assert (v.ok, v.lucky) == (counts.get("ok", 0), counts.get("lucky", 0))
    assert v.changes == []


# ----------------------------------------------------------------------------------------------------------------
# 6. the extractive answerer




def test_answerer_units():
    answerer = ExtractiveAnswerer(
        {"p1": ["Emma is a novel by Jane Austen.", "It was published in 1815."], "p2": ["Persuasion is her last."]}
    )
    assert answerer.answer("when was it published", ["p1"]) == "It was published in 1815. [p1]"
    assert answerer.answer("who wrote Emma", ["p2"]) == ABSTENTION  # the answer's passage is not in the context
    assert answerer.answer("who wrote Emma", []) == ABSTENTION
    assert answerer.answer("what is it", ["p1", "p2"]) == ABSTENTION  # only stopwords: nothing asked about
    with pytest.raises(KeyError):
        answerer.answer("who wrote Emma", ["p1", "nope"])
    with pytest.raises(ValueError):
        ExtractiveAnswerer({}, abstain_below=1.5)
    # ties go to the earlier passage of the context
    twins = ExtractiveAnswerer({"a": ["Tungsten melts late."], "b": ["Tungsten melts late."]})
    assert twins.answer("tungsten melts", ["b", "a"]) == "Tungsten melts late. [b]"
    assert twins.answer("tungsten melts", ["a", "b"]) == "Tungsten melts late. [a]"


WORDS = st.sampled_from(["emma", "austen", "novel", "the", "of", "who", "1815", "bath", "river", "is", "Tea", "x"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=6).map(lambda ws: " ".join(ws) + ".")
PASSAGES = st.dictionaries(
    st.text("abcdef0123-_", min_size=1, max_size=4), st.lists(SENTENCE, min_size=1, max_size=3), min_size=1, max_size=5
)


def reference_best_share(passages, question, context) -> float:
    """The share of the question's IDF mass held by the best context sentence, computed afresh (a question word
    that no sentence holds counts in the mass at the IDF of df = 0)."""
    terms = [set(re.findall(r"[a-z0-9]+", s.lower())) for ss in passages.values() for s in ss]
    n = len(terms)
    idf = {}
    for t in set().union(*terms):
        df = sum(t in s for s in terms)
        idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    stop = {"the", "of", "who", "is"}
    wanted = {t for t in re.findall(r"[a-z0-9]+", question.lower()) if t not in stop}
    unseen = math.log(1 + (n + 0.5) / 0.5)  # a word no sentence holds: the IDF of df = 0
    total = sum(idf.get(t, unseen) for t in wanted)
    best = max(
        (sum(idf[t] for t in wanted & set(re.findall(r"[a-z0-9]+", s.lower()))) for p in context for s in passages[p]),
        default=0.0,
    )
    return best / total if total else 0.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(passages=PASSAGES, question=st.lists(WORDS, max_size=5).map(" ".join), data=st.data())
def test_answerer_quotes_a_context_sentence_or_abstains(passages, question, data):
    context = data.draw(st.lists(st.sampled_from(sorted(passages)), max_size=4, unique=True))
    answer = ExtractiveAnswerer(passages).answer(question, context)
    share = reference_best_share(passages, question, context)
    if answer == ABSTENTION:
        assert share < 0.3 + 1e-9
    else:
        assert any(answer == f"{s} [{pid}]" for pid in context for s in passages[pid]), answer
        assert share >= 0.3 - 1e-9


# ----------------------------------------------------------------------------------------------------------------
# 7. the report


VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.stack: list[str] = []
        self.mismatched: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.ids.update(v for k, v in attrs if k == "id" and v)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.ids.update(v for k, v in attrs if k == "id" and v)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.mismatched.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_report_is_self_contained_html(demo):
    result, out = demo
    assert result.report == out / "report.html"
    page = (out / "report.html").read_text(encoding="utf-8")
    parser = Collect()
    parser.feed(page)
    parser.close()
    assert parser.mismatched == [] and parser.stack == [], (parser.mismatched[:5], parser.stack[:5])
    assert "rag" in parser.ids
    text = " ".join(parser.text)
    assert "RAG diagnosis" in text
    for stage in STAGES_NO_DENSE:
        assert stage in text, stage
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+", page))
    assert urls <= {"http://www.w3.org", "//www.w3.org"}, urls
    # the report tells the same story as the written files: the verdict, and every pair's adjusted p-value
    fix_first = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))["verdict"]["fix_first"]
    assert "verdict" in parser.ids and f"What to fix first: {fix_first}." in text
    comparison = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    table = re.search(r'<table id="pairs-table".*?<tbody>(.*?)</tbody>', page, re.S)
    assert table is not None
    shown = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S):
        cells = re.findall(r"<td([^>]*)>(.*?)</td>", row, re.S)
        shown[tuple(c[1] for c in cells[:3])] = float(re.search(r'data-v="([^"]+)"', cells[11][0]).group(1))
    assert shown == {(p["metric"], p["a"], p["b"]): pytest.approx(p["p_adjusted"]) for p in comparison["pairs"]}


def test_report_opens_clean_in_a_browser(demo):
    from tests import browser_helpers

    if (why := browser_helpers.missing()) is not None:
        pytest.skip(why)
    _, out = demo
    with browser_helpers.open_report(out / "report.html") as opened:
        assert opened.page.locator("#rag").count() == 1
        assert opened.console_errors == [] and opened.page_errors == []
        assert opened.blocked == [], opened.blocked[:3]


# ----------------------------------------------------------------------------------------------------------------
# 8. the output folder, through the CLI


def cli_demo(out: Path, *extra: str):
    return runner.invoke(app, ["demo", "--out", str(out), "--no-dense", "--no-report", *extra])


def no_partial_left(parent: Path) -> bool:
    return not [p for p in parent.iterdir() if "stagewise-partial" in p.name or "stagewise-previous" in p.name]


def test_cli_reruns_in_place_and_keeps_labels(tmp_path):
    out = tmp_path / "new" / "deeper" / "demo"
    missing = cli_demo(out)  # a mistyped parent is not created silently
    assert missing.exit_code == 2 and "mkdir -p" in missing.output and missing.output.count("\n") == 1
    assert not (tmp_path / "new").exists()
    out.parent.mkdir(parents=True)
    first = cli_demo(out)
    assert first.exit_code == 0, first.output
    assert {p.name for p in out.iterdir()} == INPUTS | OUTPUTS | {f"{s}.run" for s in STAGES_NO_DENSE}
    # a relabelling still in SQLite's write-ahead log, as a server killed before its checkpoint leaves it
    store = LabelStore(out / "labels.sqlite", read_qrels(out / "qrels.txt"))
    qid, docid = "6401197308716204890", "c0000000000ff"
    store.set(qid, docid, 3)
    assert (out / "labels.sqlite-wal").is_file()
    (out / "summary.md").write_text("stale\n", encoding="utf-8")
    (out / "dense.run").write_text("q 0 d 1 1.0 dense\n", encoding="utf-8")  # a previous demo's, owned
    again = cli_demo(out)
    store.close()
    assert again.exit_code == 0, again.output
    kept = LabelStore(out / "labels.sqlite")
    try:
        assert kept.get(qid, docid) == 3 and len(kept.history()) == 1
    finally:
        kept.close()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "stale" not in summary and "## Each stage on its own" in summary
    assert not (out / "dense.run").exists()  # replaced as a whole, not merged
    assert no_partial_left(out.parent)


def test_cli_refuses_a_foreign_folder_then_force_replaces_it(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious\n", encoding="utf-8")
    refused = cli_demo(out)
    assert refused.exit_code == 2
    assert refused.output.count("\n") == 1 and refused.output.startswith("stagewise: error:"), refused.output
    assert "thesis.tex" in refused.output and "--force" in refused.output
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    assert (out / "thesis.tex").read_text(encoding="utf-8") == "precious\n"
    assert no_partial_left(tmp_path)
    forced = cli_demo(out, "--force")
    assert forced.exit_code == 0, forced.output
    assert not (out / "thesis.tex").exists() and (out / "summary.md").is_file()
    assert no_partial_left(tmp_path)


def test_cli_refuses_an_existing_file(tmp_path):
    out = tmp_path / "demo.txt"
    out.write_text("a file\n", encoding="utf-8")
    refused = cli_demo(out)
    assert refused.exit_code == 2
    assert refused.output.count("\n") == 1 and refused.output.startswith("stagewise: error:"), refused.output
    assert out.read_text(encoding="utf-8") == "a file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.txt"]


# ----------------------------------------------------------------------------------------------------------------
# 9. degraded modes, and the dense path


def test_without_the_dense_extra_or_matplotlib(tmp_path, monkeypatch):
    from stagewise.dense import _deps

    def unavailable(module):
        raise StagewiseError(f"dense retrieval needs the package {module} (test: not installed)")

    monkeypatch.setattr(_deps, "require", unavailable)
    with pytest.raises(StagewiseError, match="not installed"):
        run_demo(tmp_path / "on", dense="on", report=False)
    assert not (tmp_path / "on").exists() and no_partial_left(tmp_path)
    refused = runner.invoke(app, ["demo", "--out", str(tmp_path / "cli"), "--dense", "--no-report"])
    assert refused.exit_code == 2 and "stagewise: error:" in refused.output and "not installed" in refused.output
    assert not (tmp_path / "cli").exists() and no_partial_left(tmp_path)

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "auto"
    result = run_demo(out, dense="auto")
    assert result.report is None and "dense" not in result.runs
    assert {p.name for p in out.iterdir()} == INPUTS | OUTPUTS | {f"{s}.run" for s in STAGES_NO_DENSE}
    skipped = result.skipped
    assert set(skipped) == {"dense", "report"}
    assert "not installed" in skipped["dense"] and "matplotlib" in skipped["report"]
    assert json.loads((out / "pipeline.json").read_text(encoding="utf-8"))["skipped"]["dense"] == skipped["dense"]
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"Skipped: dense: {skipped['dense']}." in summary
    assert f"Skipped: report: {skipped['report']}." in summary
    assert "Report:" not in summary


def test_pipeline_json_states_a_skipped_report(dense_demo):
    _, out = dense_demo
    skipped = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))["skipped"]
    assert skipped.get("report") == "turned off (--no-report)"


def test_dense_path_with_a_small_encoder(dense_demo):
    result, out = dense_demo
    assert list(result.stages) == STAGES_DENSE == list(result.runs)
    assert result.skipped == {"report": "turned off (--no-report)"}
    pipeline = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    assert pipeline["stages"]["rrf"] == "reciprocal rank fusion (rrf_k=60) of bm25-stem, bm25-plain, dense"
    assert "dense" not in pipeline["skipped"]
    evaluation = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    assert list(evaluation["runs"]) == STAGES_DENSE
    comparison = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert len(comparison["pairs"]) == len(METRICS) * math.comb(5, 2)
    # the fused run is RRF of the three written first-stage runs, recomputed from the files
    firsts = {name: read_run(out / f"{name}.run") for name in ("bm25-stem", "bm25-plain", "dense")}
    fused = read_run(out / "rrf.run")
    for qid, rows_ in itertools.islice(fused.items(), 50):
        expected: dict[str, float] = defaultdict(float)
        for run in firsts.values():
            for rank, doc in enumerate(trec_order(run[qid]), start=1):
                expected[doc] += 1.0 / (60 + rank)
        assert {doc: score for _, doc, score in rows_} == pytest.approx(dict(expected), abs=1e-9)
    # the dense run really is the encoder's cosine ranking
    corpus = {p["_id"]: p for p in read_jsonl(out / "corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in read_jsonl(out / "queries.jsonl")}
    ids = list(corpus)
    encoder = HashedWords()
    docs = encoder.encode([f"{corpus[i]['title']} {corpus[i]['text']}" for i in ids])
    for qid, rows_ in itertools.islice(firsts["dense"].items(), 20):
        sims = docs @ encoder.encode([queries[qid]])[0]
        top = rows_[0]
        assert top[2] == pytest.approx(float(sims.max()), abs=1e-5)
        assert float(sims[ids.index(top[1])]) == pytest.approx(float(sims.max()), abs=1e-5)


# ----------------------------------------------------------------------------------------------------------------
# 10. --serve


def test_serve_gets_every_stage_and_every_sample(tmp_path, monkeypatch, questions):
    pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
    pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")
    from starlette.testclient import TestClient

    from stagewise.app.server import create_app
    from stagewise.cli import common

    captured: dict = {}

    def fake_serve(workspace, records, **kwargs):
        captured.update(workspace=workspace, records=records, **kwargs)

    monkeypatch.setattr(common, "serve_app", fake_serve)
    out = tmp_path / "served"
    port = free_port()
    result = runner.invoke(app, ["demo", "--out", str(out), "--serve", "--no-dense", "--no-report", "--port", port])
    assert result.exit_code == 0, result.output
    assert captured["host"] == "127.0.0.1" and captured["port"] == int(port) and captured["token"] is None
    workspace, records = captured["workspace"], captured["records"]
    assert set(workspace.runs) == set(STAGES_NO_DENSE)
    for name in STAGES_NO_DENSE:
        written = read_run(out / f"{name}.run")
        assert {q: set(d) for q, d in workspace.runs[name].items()} == {
            q: {doc for _, doc, _ in r} for q, r in written.items()
        }
    assert workspace.store.labels() == read_qrels(out / "qrels.txt")
    assert records.order == [q["_id"] for q in questions]
    assert (out / "labels.sqlite").is_file()
    client = TestClient(create_app(workspace, rag=records), base_url="http://127.0.0.1:8765")
    assert client.get("/queries").status_code == 200
    api = client.get("/api/queries").json()
    assert set(api["runs"]) == set(STAGES_NO_DENSE)


# ----------------------------------------------------------------------------------------------------------------
# 11. the real dense stage (the packaged MiniLM; about 30 s on 2 cores)


@needs_model
def test_demo_with_the_packaged_model(tmp_path):
    """``--dense`` end to end, as a user with the dense extra runs it: the dense stage runs, fusion takes three
    runs, and on questions written from the gold passage MiniLM ranks it first more often than BM25 does."""
    result = run_demo(tmp_path / "demo", dense="on", report=False)
    assert list(result.runs) == ["bm25-stem", "bm25-plain", "dense", "rrf", "reranked"]
    assert "dense" not in result.skipped
    assert result.runs["rrf"].fusion["runs"] == ["bm25-stem", "bm25-plain", "dense"]
    means = result.evaluation.means
    assert means["dense"]["mrr@10"] > means["bm25-stem"]["mrr@10"]
    dense_run = read_run(tmp_path / "demo" / "dense.run")
    assert len(dense_run) == 600 and all(len(rows) == 100 for rows in dense_run.values())
    change = next(c for c in result.verdict.changes if c.stage == "dense")
    assert change.against == "bm25-stem" and change.diff == means["dense"]["ndcg@10"] - means["bm25-stem"]["ndcg@10"]


def test_cli_refuses_a_damaged_label_database_and_keeps_the_folder(tmp_path):
    out = tmp_path / "demo"
    assert cli_demo(out).exit_code == 0
    (out / "labels.sqlite").write_bytes(b"not a database, but someone's file\n" * 50)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    refused = cli_demo(out)
    assert refused.exit_code == 2
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and "labels.sqlite" in lines[0] and "cannot be read" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert no_partial_left(tmp_path)


def test_verdict_headline_agrees_with_what_to_fix_and_ties_go_upstream():
    v = verdict(
        Rag(rows(not_retrieved=5, ranked_too_low=5, generation_failure=8)),
        None,
        [],
        primary="ndcg@10",
        depth=100,
        context_k=3,
    )
    assert v.worst == "retrieval" and v.fix_first == "fix retrieval"
    assert v.headline().startswith("Retrieval and ranking lose the most: 10 of 18 (5 not retrieved, 5 ranked too low)")
    assert v.advice.startswith("5 of 10: the gold passage is not in the top 100")  # tie: the earlier reason


def test_answerer_does_not_forget_question_words_it_has_never_seen():
    """'boiling' and 'tungsten' are in no sentence: they must weigh against the one sentence sharing 'point'."""
    answerer = ExtractiveAnswerer({"p1": ["Emma is a novel by Jane Austen.", "The point of the novel is marriage."]})
    assert answerer.answer("what is the boiling point of tungsten", ["p1"]) == ABSTENTION
    assert answerer.answer("what is the point of the novel Emma", ["p1"]).endswith("[p1]")


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def test_cli_refuses_a_folder_of_files_with_the_demos_names_that_is_not_a_demo(tmp_path):
    """qrels.txt, corpus.jsonl and summary.md are common names: only the demo's own pipeline.json makes a folder
    the demo's."""
    out = tmp_path / "myproject"
    out.mkdir()
    mine = {"qrels.txt": "q1 0 d1 1\n", "corpus.jsonl": '{"_id": "d1", "text": "mine"}\n', "summary.md": "notes\n"}
    for name, text in mine.items():
        (out / name).write_text(text, encoding="utf-8")
    refused = cli_demo(out)
    assert refused.exit_code == 2 and "--force" in refused.output and refused.output.count("\n") == 1
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == mine
    (out / "pipeline.json").write_text('{"made_by": "someone else"}\n', encoding="utf-8")
    assert cli_demo(out).exit_code == 2


def test_force_never_replaces_a_folder_holding_a_folder_nor_home(tmp_path, monkeypatch):
    out = tmp_path / "project"
    (out / "src").mkdir(parents=True)
    (out / "README").write_text("mine\n", encoding="utf-8")
    refused = cli_demo(out, "--force")
    assert refused.exit_code == 2 and "holds a folder (src)" in refused.output
    assert sorted(p.name for p in out.iterdir()) == ["README", "src"]
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("x\n", encoding="utf-8")
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    refused = cli_demo(home, "--force")
    assert refused.exit_code == 2 and "home folder" in refused.output
    assert (home / ".bashrc").is_file()
    tilde = runner.invoke(app, ["demo", "--out", "~/demo", "--no-dense"])
    assert tilde.exit_code == 2 and "no shell expanded" in tilde.output


def test_a_folder_being_served_is_not_replaced(tmp_path):
    from stagewise.demo.folder import serving_lock

    out = tmp_path / "demo"
    assert cli_demo(out).exit_code == 0
    before = (out / "summary.md").read_bytes()
    with serving_lock(out):
        refused = cli_demo(out)
    assert refused.exit_code == 2 and "stagewise demo --serve" in refused.output
    assert (out / "summary.md").read_bytes() == before
    assert cli_demo(out).exit_code == 0  # once the server is gone


def test_serve_is_checked_before_the_work(tmp_path):
    pytest.importorskip("uvicorn", reason="the app extra is not installed (make test installs it)")
    exposed = runner.invoke(app, ["demo", "--out", str(tmp_path / "a"), "--serve", "--host", "0.0.0.0"])
    assert exposed.exit_code == 2 and "--token" in exposed.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        taken = runner.invoke(app, ["demo", "--out", str(tmp_path / "b"), "--serve", "--port", port])
    assert taken.exit_code == 2 and f"127.0.0.1:{port} cannot be bound" in taken.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
