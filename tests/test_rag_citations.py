"""Citations and judges: markers, precision and recall against gold evidence, flags, ALCE sentence-level scores
against a transcription of ALCE's logic, the judge protocol with call counts and caching, agreement."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import StagewiseError
from stagewise.rag import CachedJudge, GoldEvidenceJudge, LexicalJudge, Passage, evaluate_rag
from stagewise.rag.citations import CitedSentence, alce_scores, split_cited_sentences, strip_markers
from stagewise.rag.judges import agreement
from stagewise.report import render


def row_of(record: dict, **kwargs) -> dict:
    base = {"id": "q", "gold_answers": ["Jane Austen"]}
    return evaluate_rag([{**base, **record}], **kwargs).rows[0]


# -- markers -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "clean", "cited"),
    [
        ("Jane Austen [p9].", "Jane Austen.", ("p9",)),
        ("A [p4, p5] and B [p5; p6]", "A and B", ("p4", "p5", "p6")),
        ("A [1][2]", "A", ("c1", "c2")),  # ALCE numbering: the n-th context passage
        ("A [3]", "A", ("3",)),  # beyond the context: kept, and will be flagged unseen
        ("A [p1]", "A", ("p1",)),  # a known id wins over numbering
        ("see [citation needed]", "see [citation needed]", ()),
        ("x [] y", "x [] y", ()),
        ("no markers", "no markers", ()),
    ],
)
def test_markers(text: str, clean: str, cited: tuple) -> None:
    assert strip_markers(text, {"p1", "p4", "p5", "p6", "p9"}, ["c1", "c2"]) == (clean, cited)


def test_numeric_ids_that_exist_are_ids() -> None:
    assert strip_markers("A [2]", {"2"}, ["c1", "c2"]) == ("A", ("2",))


def test_sentences_and_trailing_markers() -> None:
    sentences = split_cited_sentences("One [a]. Two. [b]\nThree [c]? Four!", {"a", "b", "c"})
    assert sentences == [
        CitedSentence("One.", ("a",)),
        CitedSentence("Two.", ("b",)),
        CitedSentence("Three?", ("c",)),
        CitedSentence("Four!", ()),
    ]


# -- id-level precision, recall and flags --------------------------------------------------------------------------


def test_precision_recall_and_flags() -> None:
    row = row_of(
        {
            "retrieved": ["p3", "p9", "p4", "p1"],
            "context": ["p3", "p9"],
            "gold_evidence": ["p9", ["p4", "p5"]],
            "answer": "Jane Austen [p9][p3]. Emma [p4][p7].",
        },
        judge="none",
    )
    assert row.citations == ["p9", "p3", "p4", "p7"]
    assert row.citation_precision == 0.5  # p9 and p4 are gold
    assert row.citation_recall == 1.0  # the alternative p9 is wholly cited
    assert row.cited_unseen == ["p4", "p7"]  # the generator never saw them
    assert row.no_citations is False


def test_partial_set_recall_and_missing_citations() -> None:
    row = row_of(
        {"retrieved": ["p4"], "gold_evidence": [["p4", "p5"]], "citations": ["p4"], "answer": "x"}, judge="none"
    )
    assert row.citation_recall == 0.5
    uncited = row_of({"retrieved": ["p4"], "gold_evidence": ["p4"], "answer": "Jane Austen"}, judge="none")
    assert uncited.no_citations is True and uncited.citation_precision is None
    assert uncited.citation_recall == 0.0
    declined = row_of({"retrieved": ["p4"], "gold_evidence": ["p4"], "answer": "I don't know."}, judge="none")
    assert declined.no_citations is False  # an abstention needs no citation


def test_record_citations_override_markers() -> None:
    row = row_of(
        {"retrieved": ["p1", "p2"], "gold_evidence": ["p2"], "citations": ["p2"], "answer": "Austen [p1]"}, judge="none"
    )
    assert row.citations == ["p2"]


# -- ALCE ----------------------------------------------------------------------------------------------------------


def alce_reference(sentences: list[tuple[str, list[int]]], n_docs: int, nli) -> tuple[float, float]:
    """A transcription of ALCE's compute_autoais per-sample logic (eval.py), citations as 0-based doc indices.

    ``nli(passage_ids, sentence) -> 0/1`` stands for _run_nli_autoais over the joined passages."""
    entail = entail_prec = total_citations = 0
    for target_sent, ref in sentences:
        joint_entail = -1
        if len(ref) == 0 or any(ref_id >= n_docs for ref_id in ref):
            joint_entail = 0
        else:
            total_citations += len(ref)
        if joint_entail == -1:
            joint_entail = nli(list(ref), target_sent)
        entail += joint_entail
        if joint_entail and len(ref) > 1:
            for psgs_id in ref:
                nli_result = nli([psgs_id], target_sent)
                if not nli_result:
                    subset_exclude = copy.deepcopy(ref)
                    subset_exclude.remove(psgs_id)
                    nli_result = nli(subset_exclude, target_sent)
                    if not nli_result:
                        entail_prec += 1
                else:
                    entail_prec += 1
        else:
            entail_prec += joint_entail
    return entail / len(sentences), (entail_prec / total_citations if total_citations > 0 else 0)


class TableJudge:
    """Supported when the passages hold every id a sentence needs (a deterministic stand-in for NLI)."""

    name = "table"

    def __init__(self, needs: dict[str, set[str]]) -> None:
        self.needs = needs
        self.calls = 0

    def supports(self, passages, claim: str) -> bool:
        self.calls += 1
        return self.needs[claim] <= {p.id for p in passages}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 4), max_size=3, unique=True),  # cited doc indices (4 is out of range)
            st.sets(st.integers(0, 3), min_size=1, max_size=2),  # docs the sentence needs
        ),
        min_size=1,
        max_size=4,
    )
)
def test_alce_scores_equal_the_reference(spec) -> None:
    docs = ["d0", "d1", "d2", "d3"]
    needs = {f"s{i}": {docs[j] for j in need} for i, (_, need) in enumerate(spec)}
    sentences = [CitedSentence(f"s{i}", tuple(f"d{j}" for j in cited)) for i, (cited, _) in enumerate(spec)]
    judge = TableJudge(needs)
    recall, precision = alce_scores(sentences, set(docs), judge, {})

    def nli(ids: list[int], sentence: str) -> int:
        return int(needs[sentence] <= {docs[i] for i in ids})

    ref_recall, ref_precision = alce_reference([(f"s{i}", list(c)) for i, (c, _) in enumerate(spec)], 4, nli)
    assert recall == pytest.approx(ref_recall)
    assert (precision if precision is not None else 0) == pytest.approx(ref_precision)


def test_alce_hand_example() -> None:
    judge = TableJudge({"A.": {"p1"}, "B.": {"p2"}})
    sentences = [CitedSentence("A.", ("p1", "p3")), CitedSentence("B.", ())]
    recall, precision = alce_scores(sentences, {"p1", "p2", "p3"}, judge, {})
    assert (recall, precision) == (0.5, 0.5)  # p3 is an over-citation


def test_sentence_scores_with_the_gold_judge() -> None:
    row = row_of(
        {"retrieved": ["p1", "p2"], "gold_evidence": ["p1"], "answer": "Jane Austen [p1]. She was English [p2]."},
        judge="gold",
    )
    assert row.sentence_citation_recall == 0.5
    assert row.sentence_citation_precision == 0.5


def test_sentence_scores_with_the_lexical_judge() -> None:
    row = row_of(
        {
            "retrieved": ["p1", "p2"],
            "gold_evidence": ["p1"],
            "answer": "Emma was written by Jane Austen [p1]. It is set in Highbury [p2].",
            "passages": {"p1": "Emma is a novel written by Jane Austen.", "p2": "Bath is a city in Somerset."},
        }
    )
    assert row.sentence_citation_recall == 0.5


# -- judges: protocol, counts, caching -----------------------------------------------------------------------------


class CountingJudge:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def supports(self, passages, claim: str) -> bool:
        self.calls += 1
        return "Austen" in " ".join(p.text for p in passages)


def test_custom_judge_is_counted_and_cached(tmp_path: Path) -> None:
    record = {
        "retrieved": ["p1"],
        "gold_evidence": ["p1"],
        "answer": "Jane Austen [p1]. Jane Austen [p1].",
        "passages": {"p1": "Jane Austen wrote Emma."},
    }
    judge = CountingJudge()
    cache = tmp_path / "judge.jsonl"
    report = evaluate_rag(
        [{"id": "a", "gold_answers": ["x"], **record}, {"id": "b", "gold_answers": ["x"], **record}],
        judge=judge,
        judge_cache=cache,
    )
    assert report.judges["support"] == {"name": "counting", "requests": 4, "calls": 1, "cache_hits": 3}
    assert judge.calls == 1
    assert report.rows[0].sentence_citation_recall == 1.0
    again = CountingJudge()
    report = evaluate_rag([{"id": "a", "gold_answers": ["x"], **record}], judge=again, judge_cache=cache)
    assert again.calls == 0  # answered from the file
    assert report.judges["support"]["cache_hits"] == 2
    assert len(cache.read_text().splitlines()) == 1


def test_cached_judge_rejects_non_judges() -> None:
    with pytest.raises(StagewiseError, match="supports"):
        CachedJudge(object())  # type: ignore[arg-type]


def test_answer_judge_for_correctness() -> None:
    judge = CountingJudge()
    report = evaluate_rag(
        [{"id": "q", "retrieved": ["p"], "gold_evidence": ["p"], "answer": "Austen", "gold_answers": ["Jane Austen"]}],
        correct="judge",
        answer_judge=judge,
        judge="none",
    )
    assert report.rows[0].answer_correct is True  # the judge reads the answer as the passage
    assert report.judges["answer"]["calls"] == 1
    assert report.conventions()["answer_judge"] == "counting"


def test_lexical_and_gold_judges() -> None:
    lexical = LexicalJudge()
    passages = [Passage("p1", "Emma is a novel by Jane Austen, published in 1815.")]
    assert lexical.supports(passages, "Jane Austen published Emma in 1815 [p1].")
    assert not lexical.supports(passages, "Dickens published Bleak House.")
    assert not lexical.supports(passages, "the of and")  # no content word
    assert lexical.coverage([], "Emma") == 0.0
    assert LexicalJudge(0.3).name == "lexical(threshold=0.3)"
    gold = GoldEvidenceJudge([("p9",), ("p4", "p5")])
    assert gold.supports([Passage("p9", "")], "x")
    assert not gold.supports([Passage("p4", "")], "x")


def test_agreement_against_a_hand_computation() -> None:
    predicted = [True, True, True, False, False, False, True, False]
    reference = [True, True, False, False, False, True, True, False]
    out = agreement(predicted, reference)
    # observed 6/8; both sides 4/8 True, so chance agreement 0.5 and kappa (0.75 - 0.5) / 0.5
    assert out["accuracy"] == 0.75 and out["kappa"] == pytest.approx(0.5)
    assert (out["tp"], out["fp"], out["fn"], out["tn"]) == (3, 1, 1, 3)
    assert agreement([True, True], [True, True])["kappa"] == 0.0
    with pytest.raises(ValueError):
        agreement([True], [])


def test_judge_loaded_from_a_module(tmp_path: Path, monkeypatch) -> None:
    from stagewise.cli.rag_cmd import _load_judge

    (tmp_path / "myjudge.py").write_text(
        "class Judge:\n    name = 'mine'\n    def supports(self, passages, claim):\n        return True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _load_judge("myjudge:Judge").name == "mine"
    assert _load_judge("lexical") == "lexical"
    with pytest.raises(StagewiseError, match="cannot load judge"):
        _load_judge("myjudge:Missing")


def test_rows_are_json(tmp_path: Path) -> None:
    report = evaluate_rag([{"id": "q", "retrieved": ["p"], "answer": "x [p]", "gold_answers": ["x"]}])
    rows = [json.loads(line) for line in render(report, "jsonl").splitlines()]
    assert [row["id"] for row in rows] == ["q"]  # one row a sample: an empty rendering fails here
