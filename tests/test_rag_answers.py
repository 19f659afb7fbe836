"""Answer metrics: EM and F1 equal the official SQuAD v1.1 evaluation; containment; abstention; criteria."""

from __future__ import annotations

import re
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError
from stagewise.rag.answers import (
    contains,
    exact_match,
    is_abstention,
    normalize_answer,
    parse_criterion,
    score_answer,
    token_f1,
)

# -- a transcription of the official SQuAD v1.1 evaluate-v1.1.py logic (our own code, kept naive) --------------


def ref_normalize_answer(s: str) -> str:
    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def ref_f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = ref_normalize_answer(prediction).split()
    ground_truth_tokens = ref_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def ref_exact_match_score(prediction: str, ground_truth: str) -> bool:
    return ref_normalize_answer(prediction) == ref_normalize_answer(ground_truth)


def ref_metric_max_over_ground_truths(metric_fn, prediction: str, ground_truths: list[str]) -> float:
    return max(metric_fn(prediction, gt) for gt in ground_truths)


# Cases that exercise every step of the normalisation.
NORMALISATION_CASES = [
    ("The Eiffel Tower", ["eiffel tower"]),
    ("  Eiffel\tTower\n", ["the eiffel tower."]),
    ("theater", ["the ater"]),  # 'the' only as a whole word
    ("An apple a day", ["apple day"]),
    ("A.B.C.", ["abc"]),
    ("the-end", ["end", "theend"]),  # punctuation removed before articles: 'the-end' -> 'theend'
    ("an-apple", ["apple"]),
    ("U.S.A.", ["usa", "u s a"]),
    ('Jane   Austen\'s "Emma"', ["jane austens emma"]),
    ("‘Emma’ — Austen", ["emma austen"]),  # typographic quotes and dashes are not in string.punctuation
    ("ÉMMA", ["émma"]),
    ("the the the", [""]),
    ("", ["the"]),
    ("", [""]),
    ("cat cat dog", ["cat dog dog"]),  # token multiplicity
    ("$1,000,000", ["1000000", "$1 million"]),
    ("1815", ["in 1815", "1815 AD"]),
    ("Paris, France", ["paris", "France, Paris"]),
    ("A", ["an"]),
    ("a(n) answer", ["an answer"]),
]


@pytest.mark.parametrize(("prediction", "golds"), NORMALISATION_CASES)
def test_em_and_f1_equal_official_squad_v11(prediction: str, golds: list[str]) -> None:
    assert normalize_answer(prediction) == ref_normalize_answer(prediction)
    assert exact_match(prediction, golds) == float(
        ref_metric_max_over_ground_truths(ref_exact_match_score, prediction, golds)
    )
    assert token_f1(prediction, golds) == ref_metric_max_over_ground_truths(ref_f1_score, prediction, golds)
    scores = score_answer(prediction, golds, abstained=False)
    assert scores.em == exact_match(prediction, golds)
    assert scores.f1 == token_f1(prediction, golds)


_ALPHABET = st.sampled_from(["the", "a", "an", "The", "AN", "cat", "Cat", "dog", "x", "-", ".", ",", "'", " ", "\t"])
_TEXT = st.lists(_ALPHABET, max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.lists(_TEXT, min_size=1, max_size=3))
def test_em_f1_match_reference_on_random_text(prediction: str, golds: list[str]) -> None:
    assert normalize_answer(prediction) == ref_normalize_answer(prediction)
    scores = score_answer(prediction, golds, abstained=False)
    assert scores.em == float(ref_metric_max_over_ground_truths(ref_exact_match_score, prediction, golds))
    assert scores.f1 == ref_metric_max_over_ground_truths(ref_f1_score, prediction, golds)
    assert scores.contains == contains(prediction, golds)


def test_f1_hand_values() -> None:
    assert token_f1("Austen wrote Emma", ["Jane Austen"]) == pytest.approx(0.4)
    assert token_f1("the cat sat", ["cat sat down"]) == pytest.approx(0.8)
    assert token_f1("anything", []) == 0.0
    assert exact_match("anything", []) == 0.0


@pytest.mark.parametrize(
    ("answer", "golds", "expected"),
    [
        ("It was written by Jane Austen in 1815.", ["jane austen"], True),
        ("Austenite", ["Austen"], False),  # token boundaries
        ("Jane Austens novel", ["Jane Austen"], False),
        ("the answer is Paris!", ["paris"], True),
        ("nothing", ["the"], False),  # a gold that normalises to nothing never matches
        ("", ["the"], False),
        ("New York City", ["york"], True),
        ("New York City", ["new city"], False),
    ],
)
def test_contains_on_token_boundaries(answer: str, golds: list[str], expected: bool) -> None:
    assert contains(answer, golds) is expected


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "I don't know.",
        "I do not know the answer.",
        "I don’t know",  # typographic apostrophe
        "Unknown",
        "N/A",
        "No answer.",
        "The provided passages do not mention his birth date.",
        "The context does not contain this information.",
        "There is not enough information to answer.",
        "I cannot answer this question based on the documents.",
        "Unable to determine from the context.",
        "This question is unanswerable.",
        "There is no information about that in the documents.",
        "This is not mentioned in the provided passages.",
        "The documents don't say.",
        "I'm unable to answer from the search results.",
        "It cannot be determined from the text.",
        "Insufficient context.",
    ],
)
def test_abstentions(answer: str) -> None:
    assert is_abstention(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Jane Austen.",
        "Paris. I don't know the year.",  # only the first sentence is read
        "No. 5 is the answer",
        "Known for Emma, Austen wrote six novels.",
        "None of them? Actually it is Emma.",
        "There is no one particular day on which all schools start.",  # a CLAP NQ gold answer
        "There is no evidence that vaccines cause autism.",
        "The king did not mention it in his speech.",
        "There was no answer from the crown.",
        "Not enough rain fell in 1816, the year without a summer.",
        "We cannot know for sure, but most historians say 1066.",
    ],
)
def test_not_abstentions(answer: str) -> None:
    assert not is_abstention(answer)


def test_abstained_override() -> None:
    assert score_answer("I don't know", ["x"], abstained=False).abstained is False
    assert score_answer("Paris", ["Paris"], abstained=True).abstained is True


def test_partial_token_recall() -> None:
    assert score_answer("Jane", ["Jane Austen"]).gold_recall == 0.5
    assert score_answer("Dickens", ["Jane Austen"]).gold_recall == 0.0


@pytest.mark.parametrize(
    ("spec", "name"),
    [("em", "em"), ("contains", "contains"), ("f1", "f1:0.5"), ("f1:0.7", "f1:0.7"), ("judge", "judge")],
)
def test_criterion_round_trip(spec: str, name: str) -> None:
    criterion = parse_criterion(spec)
    assert criterion.name == name
    assert parse_criterion(criterion.name) == criterion
    assert criterion.describe()


@pytest.mark.parametrize("spec", ["f1:2", "f1:x", "exact", "", "f1:-0.1"])
def test_bad_criterion(spec: str) -> None:
    with pytest.raises(ConventionError, match="'correct' parameter"):
        parse_criterion(spec)
