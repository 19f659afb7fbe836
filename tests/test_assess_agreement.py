"""Agreement figures against their oracles: scikit-learn's cohen_kappa_score, statsmodels' fleiss_kappa and the
krippendorff package, on randomised label tables with missing values and several categories."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from stagewise.assess.agreement import (
    assessor_figures,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    krippendorff_alpha,
    qrels_agreement,
)
from stagewise.assess.qrels_diff import qrels_diff
from stagewise.errors import ConventionError, InputError

TOL = 1e-9


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL


@st.composite
def two_raters(draw):
    n = draw(st.integers(2, 40))
    k = draw(st.integers(2, 5))
    label = st.one_of(st.none(), st.integers(0, k - 1)) if draw(st.booleans()) else st.integers(0, k - 1)
    a = draw(st.lists(label, min_size=n, max_size=n))
    b = draw(st.lists(label, min_size=n, max_size=n))
    return a, b


@settings(max_examples=150, deadline=None)
@given(two_raters(), st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_equals_scikit_learn(pair, weights) -> None:
    a, b = pair
    both = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not both:
        with pytest.raises(InputError, match="labelled by both"):
            cohen_kappa(a, b, weights=weights)
        return
    xs, ys = zip(*both, strict=True)
    if len(set(xs) | set(ys)) == 1:  # scikit-learn returns nan with a warning there; so do we, silently
        assert math.isnan(cohen_kappa(a, b, weights=weights))
        return
    expected = cohen_kappa_score(list(xs), list(ys), weights=weights)
    assert _close(cohen_kappa(a, b, weights=weights), expected)


@st.composite
def full_tables(draw):
    items, raters, k = draw(st.integers(2, 30)), draw(st.integers(2, 6)), draw(st.integers(2, 5))
    rows = draw(
        st.lists(st.lists(st.integers(0, k - 1), min_size=raters, max_size=raters), min_size=items, max_size=items)
    )
    return np.array(rows)


@settings(max_examples=150, deadline=None)
@given(full_tables())
def test_fleiss_kappa_equals_statsmodels(table) -> None:
    counts, _ = aggregate_raters(table)
    if len(np.unique(table)) == 1:
        assert math.isnan(fleiss_kappa(table))
        return
    assert _close(fleiss_kappa(table), sm_fleiss(counts))
    assert _close(fleiss_kappa(counts, counts=True), sm_fleiss(counts))


@st.composite
def gappy_tables(draw):
    items, raters, k = draw(st.integers(2, 30)), draw(st.integers(2, 6)), draw(st.integers(2, 6))
    cell = st.one_of(st.none(), st.integers(1, k))
    rows = draw(st.lists(st.lists(cell, min_size=raters, max_size=raters), min_size=items, max_size=items))
    return np.array([[np.nan if v is None else float(v) for v in row] for row in rows])


@settings(max_examples=200, deadline=None)
@given(gappy_tables(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_krippendorff_alpha_equals_the_krippendorff_package(table, level) -> None:
    pairable = (~np.isnan(table)).sum(axis=1) >= 2
    if not pairable.any():
        with pytest.raises(InputError, match="two labels"):
            krippendorff_alpha(table, level=level)
        return
    if len(np.unique(table[pairable][~np.isnan(table[pairable])])) < 2 or len(np.unique(table[~np.isnan(table)])) < 2:
        assert math.isnan(krippendorff_alpha(table, level=level))
        return
    expected = krippendorff.alpha(reliability_data=table.T, level_of_measurement=level)
    assert _close(krippendorff_alpha(table, level=level), float(expected))


def test_missing_values_as_none_or_nan_are_the_same() -> None:
    with_none = [[1, None, 2], [2, 2, None], [1, 1, 1]]
    with_nan = [[1, np.nan, 2], [2, 2, np.nan], [1, 1, 1]]
    assert krippendorff_alpha(with_none) == krippendorff_alpha(with_nan)


def test_bad_input_is_an_input_error_with_a_clear_message() -> None:
    with pytest.raises(InputError, match="differ in length"):
        cohen_kappa([0, 1], [0, 1, 1])
    with pytest.raises(InputError, match="are empty"):
        cohen_kappa([], [])
    with pytest.raises(ConventionError, match="'weights' parameter of cohen_kappa"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")
    with pytest.raises(ConventionError, match="'level' parameter"):
        krippendorff_alpha([[1, 2]], level="ratio")
    with pytest.raises(InputError, match="same number"):
        fleiss_kappa([[0, 1, None], [1, 1, 1]])
    with pytest.raises(InputError, match="not a number"):
        cohen_kappa(["a", "b"], [0, 1])
    with pytest.raises(InputError, match="non-empty"):
        krippendorff_alpha([])


def test_single_category_is_nan_not_perfect() -> None:
    assert math.isnan(cohen_kappa([2, 2, 2], [2, 2, 2], weights="linear"))
    assert math.isnan(fleiss_kappa([[1, 1], [1, 1]]))
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))


def test_confusion_matrix_counts_pairs_labelled_by_both() -> None:
    c = confusion_matrix([0, 1, 2, None, 2], [0, 2, 2, 1, np.nan], categories=[0, 1, 2])
    assert c.counts.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    with pytest.raises(InputError, match="outside the given categories"):
        confusion_matrix([0, 3], [0, 1], categories=[0, 1])


def test_assessor_figures_against_others_and_a_reference() -> None:
    table = [[0, 0, 1], [1, 1, 1], [2, None, 2], [1, 0, None]]
    figures = assessor_figures(table, names=["a", "b", "c"], reference=[0, 1, 2, 1])
    a = figures[0]
    assert a.kappa_with_reference == 1.0
    expected = np.mean([cohen_kappa_score([0, 1, 1], [0, 1, 0]), cohen_kappa_score([0, 1, 2], [1, 1, 2])])
    assert _close(a.kappa_with_others, float(expected))
    assert figures[1].labelled == 3 and figures[1].share_labelled == 0.75
    assert figures[1].label_counts == {0.0: 2, 1.0: 1}
    with pytest.raises(InputError, match="one name per table column"):
        assessor_figures(table, names=["a"])


def test_qrels_agreement_aligns_pairs_and_counts_the_unshared() -> None:
    first = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 1, "d9": 0}}
    second = {"q1": {"d1": 1, "d2": 0, "d4": 1}, "q2": {"d1": 1}, "q3": {"d1": 3}}
    result = qrels_agreement(first, second, weights="linear")
    assert (result.both, result.only_first, result.only_second) == (3, 2, 2)
    assert _close(result.kappa, cohen_kappa_score([2, 0, 1], [1, 0, 1], weights="linear"))
    binary = qrels_agreement(first, second, relevance_level=2)
    assert binary.confusion.counts.tolist() == [[2, 0], [1, 0]]
    with pytest.raises(InputError, match="no \\(query, document\\) pair in common"):
        qrels_agreement({"q1": {"d1": 1}}, {"q1": {"d2": 1}})


def test_qrels_diff_reports_added_removed_relabelled_per_query() -> None:
    old = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 1}}
    new = {"q1": {"d1": 1, "d2": 0, "d4": 1}, "q2": {"d1": 0}, "q3": {"d5": 3}}
    diff = qrels_diff(old, new)
    assert (diff.added, diff.removed, diff.relabelled, diff.unchanged) == (2, 1, 2, 1)
    assert diff.transitions == {(2, 1): 1, (1, 0): 1}
    by_query = {q.query_id: q for q in diff.per_query}
    assert (by_query["q1"].added, by_query["q1"].removed, by_query["q1"].relabelled) == (1, 1, 1)
    assert by_query["q3"].added == 1
    changes = {(c.query_id, c.doc_id): (c.old, c.new) for c in diff.changes}
    assert changes[("q1", "d3")] == (1, None) and changes[("q3", "d5")] == (None, 3)
    assert changes[("q2", "d1")] == (1, 0) and ("q1", "d2") not in changes


def test_qrels_agreement_reads_trec_files_and_qrels_values(tmp_path) -> None:
    from stagewise.data.readers import read_qrels

    first = tmp_path / "a.qrels"
    first.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\n", encoding="utf-8")
    second = read_qrels({"q1": {"d1": 2, "d2": 1}})
    result = qrels_agreement(first, second)
    assert (result.both, result.only_first, result.only_second) == (2, 1, 0)
    assert result.confusion.counts.tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 1]]


def test_text_labels_are_refused_in_one_line() -> None:
    with pytest.raises(InputError, match="not a number") as err:
        krippendorff_alpha([[1, "high"], [2, 3]])
    assert "\n" not in str(err.value)


QRELS_PAIRS = [(f"q{q}", f"d{d}") for q in range(4) for d in range(6)]
qrels_dicts = st.dictionaries(st.sampled_from(QRELS_PAIRS), st.integers(0, 3), min_size=1)


def _nested(flat: dict) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (query, doc), label in flat.items():
        out.setdefault(query, {})[doc] = label
    return out


@settings(max_examples=100, deadline=None)
@given(qrels_dicts, qrels_dicts, st.sampled_from([None, "linear", "quadratic"]), st.sampled_from([None, 1, 2]))
def test_qrels_agreement_equals_scikit_learn_on_the_shared_pairs(first, second, weights, level) -> None:
    shared = sorted(set(first) & set(second))
    if not shared:
        with pytest.raises(InputError):
            qrels_agreement(_nested(first), _nested(second))
        return
    x = [first[p] if level is None else int(first[p] >= level) for p in shared]
    y = [second[p] if level is None else int(second[p] >= level) for p in shared]
    result = qrels_agreement(_nested(first), _nested(second), weights=weights, relevance_level=level)
    assert (result.both, result.only_first, result.only_second) == (
        len(shared),
        len(first) - len(shared),
        len(second) - len(shared),
    )
    expected = float("nan") if len(set(x) | set(y)) == 1 else cohen_kappa_score(x, y, weights=weights)
    assert _close(result.kappa, expected)


@settings(max_examples=100, deadline=None)
@given(qrels_dicts, qrels_dicts)
def test_qrels_diff_equals_a_slow_dict_diff(old, new) -> None:
    diff = qrels_diff(_nested(old), _nested(new))
    expected = {p: (old.get(p), new.get(p)) for p in set(old) | set(new) if old.get(p) != new.get(p)}
    assert {(c.query_id, c.doc_id): (c.old, c.new) for c in diff.changes} == expected
    assert diff.unchanged == sum(1 for p in set(old) & set(new) if old[p] == new[p])
    assert sum(q.added + q.removed + q.relabelled for q in diff.per_query) == len(expected)


def test_krippendorff_interval_on_real_valued_scores() -> None:
    rng = np.random.default_rng(3)
    table = rng.normal(size=(60, 4)).round(2)
    table[rng.random(table.shape) < 0.25] = np.nan
    for level in ("interval", "ordinal", "nominal"):
        expected = krippendorff.alpha(reliability_data=table.T, level_of_measurement=level)
        assert _close(krippendorff_alpha(table, level=level), float(expected))


@settings(max_examples=60, deadline=None)
@given(gappy_tables())
def test_assessor_figures_equal_pairwise_scikit_learn(table) -> None:
    figures = assessor_figures(table)
    for i, fig in enumerate(figures):
        kappas = []
        for j in range(table.shape[1]):
            both = ~(np.isnan(table[:, i]) | np.isnan(table[:, j]))
            if j == i or not both.any() or len(np.unique(table[both][:, [i, j]])) == 1:
                continue
            kappas.append(cohen_kappa_score(table[both, i], table[both, j]))
        assert _close(fig.kappa_with_others, float(np.mean(kappas)) if kappas else float("nan"))
        assert fig.labelled == int((~np.isnan(table[:, i])).sum())


def test_fleiss_counts_must_be_whole_numbers() -> None:
    with pytest.raises(InputError, match="whole number"):
        fleiss_kappa([[1.5, 0.5], [2, 0]], counts=True)


def test_categories_in_a_given_order_set_the_rows_and_the_weights() -> None:
    # searchsorted on the categories as given only worked when they were ascending
    from sklearn.metrics import cohen_kappa_score

    from stagewise.assess import cohen_kappa, confusion_matrix

    a, b = [0, 1, 2, 2, 1], [0, 1, 1, 2, 2]
    reversed_ = confusion_matrix(a, b, categories=[2, 1, 0])
    plain = confusion_matrix(a, b, categories=[0, 1, 2])
    assert np.array_equal(np.asarray(reversed_.counts), np.asarray(plain.counts)[::-1, ::-1])
    for order in ([0, 2, 1], [2, 0, 1]):
        assert cohen_kappa(a, b, categories=order, weights="linear") == pytest.approx(
            cohen_kappa_score(a, b, labels=order, weights="linear"), abs=1e-12
        )
