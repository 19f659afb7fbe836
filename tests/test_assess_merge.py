"""Merge policies against slow per-pair references on randomised label tables (assessors judging different
subsets, several labels), with the policy stated on the result."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.assess.merge import merge_adjudicator, merge_majority, merge_max, merge_mean
from stagewise.data.qrels import Qrels
from stagewise.errors import ConventionError, InputError

PAIRS = [(f"q{q}", f"d{d}") for q in range(3) for d in range(5)]


@st.composite
def label_tables(draw):
    table = {}
    for name in draw(st.lists(st.sampled_from(["ann", "bob", "cy", "dee"]), min_size=1, max_size=4, unique=True)):
        judged = draw(st.dictionaries(st.sampled_from(PAIRS), st.integers(0, 3), min_size=1))
        nested: dict[str, dict[str, int]] = {}
        for (query, doc), label in judged.items():
            nested.setdefault(query, {})[doc] = label
        table[name] = nested
    return table


def _votes(table) -> dict[tuple[str, str], list[int]]:
    votes: dict[tuple[str, str], list[int]] = {}
    for nested in table.values():
        for query, docs in nested.items():
            for doc, label in docs.items():
                votes.setdefault((query, doc), []).append(label)
    return votes


def _flat(qrels: Qrels) -> dict[tuple[str, str], int]:
    return {(q, d): label for q, docs in qrels.to_dict().items() for d, label in docs.items()}


def slow_majority(labels: list[int], ties: str) -> int:
    counts = Counter(labels)
    best = max(counts.values())
    tied = [label for label, count in counts.items() if count == best]
    return max(tied) if ties == "max" else min(tied)


@settings(max_examples=100, deadline=None)
@given(label_tables(), st.sampled_from(["max", "min"]))
def test_majority_and_max_equal_the_slow_reference(table, ties) -> None:
    votes = _votes(table)
    merged = merge_majority(table, ties=ties)
    assert _flat(merged.qrels) == {pair: slow_majority(v, ties) for pair, v in votes.items()}
    assert str(merged.policy) == f"majority(ties={ties})"
    assert _flat(merge_max(table).qrels) == {pair: max(v) for pair, v in votes.items()}


@settings(max_examples=100, deadline=None)
@given(label_tables(), st.sampled_from([0.5, 1.0, 1.5, 2]))
def test_mean_with_a_threshold_equals_the_slow_reference(table, threshold) -> None:
    merged = merge_mean(table, threshold=threshold)
    expected = {pair: int(sum(v) / len(v) >= threshold) for pair, v in _votes(table).items()}
    assert _flat(merged.qrels) == expected
    assert merged.policy.parameters == (("threshold", float(threshold)),)


@settings(max_examples=100, deadline=None)
@given(label_tables())
def test_adjudicator_decides_where_they_judged(table) -> None:
    boss = sorted(table)[0]
    theirs = _flat(merge_max({boss: table[boss]}).qrels)
    others = {name: t for name, t in table.items() if name != boss}
    other_votes = _votes(others) if others else {}
    expected = {}
    for pair in _votes(table):
        expected[pair] = theirs[pair] if pair in theirs else slow_majority(other_votes[pair], "max")
    merged = merge_adjudicator(table, boss)
    assert _flat(merged.qrels) == expected
    assert str(merged.policy) == f"adjudicator(name={boss},fallback=majority,ties=max)"


def test_a_tie_goes_by_the_stated_rule() -> None:
    table = {"a": {"q": {"d": 0}}, "b": {"q": {"d": 2}}}
    assert merge_majority(table).qrels.to_dict() == {"q": {"d": 2}}
    assert merge_majority(table, ties="min").qrels.to_dict() == {"q": {"d": 0}}


def test_bad_parameters_and_empty_tables_are_refused() -> None:
    table = {"a": {"q": {"d": 1}}}
    with pytest.raises(ConventionError, match="'ties' parameter"):
        merge_majority(table, ties="random")
    with pytest.raises(ConventionError, match="'ties' parameter"):
        merge_adjudicator(table, "a", ties="coin")
    with pytest.raises(ConventionError, match=r"'adjudicator' parameter .* Got 'zed'"):
        merge_adjudicator(table, "zed")
    with pytest.raises(ConventionError, match="'threshold' parameter"):
        merge_mean(table, threshold="high")
    with pytest.raises(InputError, match="empty"):
        merge_max({})
