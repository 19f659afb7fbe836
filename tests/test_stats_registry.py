"""Statistical tests and corrections are registry entries, and the comparison's options are a value.

A new test or correction is one entry in :data:`stagewise.stats.TESTS` / :data:`stagewise.stats.CORRECTIONS` (and its
test): the library, ``stagewise compare`` and its ``--help`` take it with no other edit. Shown here with a toy of each.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.errors import ConventionError, StagewiseError
from stagewise.metrics.context import Conventions
from stagewise.stats import CORRECTIONS, TESTS, CompareOptions, Correction, PairedTest, compare, compare_scores
from stagewise.stats.catalogue import ALTERNATIVE

QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))
SCORES = {
    "bm25": {"ndcg@10": {"q1": 0.2, "q2": 0.4, "q3": 0.1, "q4": 0.5}},
    "dense": {"ndcg@10": {"q1": 0.3, "q2": 0.6, "q3": 0.2, "q4": 0.6}},
}
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["compare", *args], env={"COLUMNS": "200"})


# ------------------------------------------------------------------------------------------- the toys
def half_kernel(a: np.ndarray, b: np.ndarray, opts) -> tuple[np.ndarray, np.ndarray, str]:
    """A toy test: the mean difference as statistic, and p = 0.01 for every comparison (rows are comparisons)."""
    return (b - a).mean(axis=1), np.full(a.shape[0], 0.01), "a toy p-value"


def describe_toy(opts) -> str:
    return f"the toy test ({opts.alternative})"


def halve(p: np.ndarray) -> np.ndarray:
    """A toy correction: half of each p-value."""
    return np.asarray(p, dtype=np.float64) / 2


TOY_TEST = PairedTest(
    "toy", "toy test", "a toy test for the registry", half_kernel, describe_toy, {"alternative": ALTERNATIVE}
)
TOY_CORRECTION = Correction("halve", "Halving", "halving (a toy)", "half of each p-value", halve, ("half",))


@pytest.fixture
def toys() -> Iterator[None]:
    """The toy test and correction, registered the way docs/architecture.md says, for one test."""
    TESTS.register(TOY_TEST)
    CORRECTIONS.register(TOY_CORRECTION)
    try:
        yield
    finally:
        TESTS.unregister("toy")
        CORRECTIONS.unregister("halve")


# --------------------------------------------------------------------------------------- the registries
def test_the_registries_hold_every_test_and_correction() -> None:
    assert TESTS.names() == ["t", "wilcoxon", "randomization", "bootstrap", "sign", "anova", "tukey-hsd", "maxt"]
    assert CORRECTIONS.names() == ["none", "bonferroni", "holm", "bh", "holm-sidak", "by"]
    assert TESTS.lookup("Fisher").name == "randomization" and TESTS.lookup("t-test").name == "t"
    assert CORRECTIONS.lookup("FDR_BY").name == "by" and CORRECTIONS.lookup("sidak-holm").name == "holm-sidak"
    assert [t.name for t in (TESTS["randomization"], TESTS["bootstrap"]) if t.seeded and t.resampling] == [
        "randomization",
        "bootstrap",
    ]
    assert not TESTS["t"].seeded and not TESTS["sign"].resampling


def test_a_correction_entry_adjusts() -> None:
    assert CORRECTIONS["holm"]([0.01, 0.04, 0.03, 0.005]).tolist() == [0.03, 0.06, 0.06, 0.02]


def test_errors_list_the_registered_names() -> None:
    with pytest.raises(ConventionError, match="unknown statistical test 'kruskal'; choose one of t, wilcoxon, "):
        compare_scores(SCORES, test="kruskal")
    with pytest.raises(ConventionError, match="unknown correction 'sidak'; choose one of none, bonferroni, holm"):
        compare_scores(SCORES, correction="sidak")


def test_a_name_taken_is_refused() -> None:
    with pytest.raises(ConventionError, match="'fisher' is already registered"):
        TESTS.register(replace(TOY_TEST, aliases=("fisher",)))
    assert "toy" not in TESTS


def test_the_catalogue_imports_no_numpy() -> None:
    code = "import sys, stagewise.stats.catalogue; print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------- one entry, used everywhere
def test_a_registered_test_and_correction_work_in_the_library(toys: None) -> None:
    comp = compare_scores(SCORES, test="toy", correction="half")
    pair = comp.pairs[0]
    assert (pair.test, pair.correction, pair.p_value, pair.p_adjusted) == ("toy", "halve", 0.01, 0.005)
    assert comp.conventions["test_description"] == "the toy test (two-sided)"
    assert comp.conventions["correction_description"] == "halving (a toy)"
    assert comp.conventions["permutations"] is None and comp.conventions["seed"] is None  # no resamples, no seed
    from stagewise.report.compare import render

    assert "toy test (two-sided); Halving" in render(comp, "table")
    evaluated = compare(QRELS, [RUN, TRUNC], ["map"], test="toy", correction="halve")
    assert evaluated.pairs[0].p_adjusted == 0.005


def test_a_registered_test_and_correction_work_on_the_command_line(toys: None) -> None:
    result = invoke(QRELS, RUN, TRUNC, "-m", "map", "--test", "toy", "--correction", "halve", "-f", "json")
    assert result.exit_code == 0, result.output
    pair = json.loads(result.stdout)["pairs"][0]
    assert (pair["test"], pair["correction"], pair["p_adjusted"]) == ("toy", "halve", 0.005)
    shown = invoke("--help")
    assert shown.exit_code == 0
    flat = " ".join(shown.stdout.split())
    assert "sign, anova, tukey-hsd, maxt, toy" in flat and "holm-sidak, by, halve" in flat
    wrong = invoke(QRELS, RUN, TRUNC, "--test", "nope")
    listed = "choose one of t, wilcoxon, randomization, bootstrap, sign, anova, tukey-hsd, maxt, toy"
    assert wrong.exit_code == 2 and listed in wrong.output


def test_an_unregistered_test_is_gone_everywhere() -> None:
    assert "toy" not in TESTS
    result = invoke(QRELS, RUN, TRUNC, "--test", "toy")
    assert result.exit_code == 2 and "unknown statistical test 'toy'" in result.output


# ------------------------------------------------------------------------------------ options as a value
def test_options_as_a_value_or_as_keywords_are_the_same() -> None:
    options = CompareOptions(test="randomization", resamples=500, seed=3, correction="bh")
    as_value = compare_scores(SCORES, options=options)
    as_keywords = compare_scores(SCORES, test="randomization", resamples=500, seed=3, correction="bh")
    assert as_value.to_dict() == as_keywords.to_dict()
    overridden = compare_scores(SCORES, options=options, seed=4, test="sign")
    assert overridden.conventions["test"] == "sign" and options.seed == 3  # the value is left as it was


def test_conventions_as_a_value_or_as_keywords_are_the_same() -> None:
    strict = Conventions(relevance_level=2, missing="skip")
    by_value = compare(QRELS, [RUN, TRUNC], ["map", "P@5"], conventions=strict)
    by_keywords = compare(QRELS, [RUN, TRUNC], ["map", "P@5"], relevance_level=2, missing="skip")
    assert by_value.to_dict() == by_keywords.to_dict()
    assert by_value.conventions["evaluation"]["relevance_level"] == 2
    both = compare(QRELS, [RUN, TRUNC], ["map"], conventions=strict, options=CompareOptions(alpha=0.1), missing="zero")
    assert both.alpha == 0.1 and both.conventions["evaluation"]["relevance_level"] == 2
    assert both.to_dict() != compare(QRELS, [RUN, TRUNC], ["map"], conventions=strict, alpha=0.1).to_dict()


def test_an_unknown_keyword_names_the_options_and_the_conventions() -> None:
    with pytest.raises(ConventionError) as raised:
        compare(QRELS, [RUN, TRUNC], ["map"], relevance=2)
    said = str(raised.value)
    assert "'relevance'" in said and "the options are test, baseline, correction" in said
    assert "the conventions are relevance_level, ties, missing, max_ret, judged_only" in said
    with pytest.raises(ConventionError, match=r"unknown keyword.s. 'missing'; the options are"):
        compare_scores(SCORES, missing="skip")  # scores already computed: their conventions are fixed


def test_options_must_be_a_compare_options_value() -> None:
    with pytest.raises(ConventionError, match="options must be a CompareOptions value, not dict"):
        compare_scores(SCORES, options={"test": "t"})  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- one word: resamples
def test_permutations_is_the_old_name_of_resamples() -> None:
    new = compare_scores(SCORES, test="bootstrap", resamples=300, seed=1)
    with pytest.warns(DeprecationWarning, match=r"permutations=\.\.\.\) is deprecated; use resamples"):
        old = compare_scores(SCORES, test="bootstrap", permutations=300, seed=1)
    with pytest.warns(DeprecationWarning, match="CompareOptions"):
        value = CompareOptions(test="bootstrap", permutations=300, seed=1)
    assert value.resamples == 300
    assert old.to_dict() == new.to_dict() == compare_scores(SCORES, options=value).to_dict()
    from stagewise.stats import randomization_test

    with pytest.warns(DeprecationWarning):
        assert randomization_test([0.1, 0.3, 0.2], [0.2, 0.5, 0.2], permutations=50, exact=False).p_value == (
            randomization_test([0.1, 0.3, 0.2], [0.2, 0.5, 0.2], resamples=50, exact=False).p_value
        )


def test_resamples_alone_warns_of_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare_scores(SCORES, test="randomization", resamples=200)
        CompareOptions(resamples=5)


# ------------------------------------------------------------------------------- which way is better
def test_best_and_better_than_follow_the_measure() -> None:
    scores = {
        "a": {"unj@10": [0.5, 0.6, 0.4, 0.7, 0.5, 0.6], "num_ret": [10] * 6, "P@10": [0.1, 0.2, 0.1, 0.2, 0.1, 0.2]},
        "b": {"unj@10": [0.1, 0.2, 0.0, 0.1, 0.2, 0.1], "num_ret": [9] * 6, "P@10": [0.5, 0.6, 0.4, 0.7, 0.5, 0.6]},
    }
    comp = compare_scores(scores, correction="none")
    assert [comp.direction(m) for m in ("unj@10", "num_ret", "P@10", "my score")] == ["lower", None, "higher", "higher"]
    assert comp.best("unj@10") == ["b"] and comp.best("P@10") == ["b"] and comp.best("num_ret") == []
    assert comp.better_than("b", "unj@10") == ["a"] and comp.better_than("a", "unj@10") == []
    assert comp.better_than("b", "P@10") == ["a"] and comp.better_than("a", "num_ret") == []


def test_stats_errors_are_stagewise_errors() -> None:
    with pytest.raises(StagewiseError):
        compare_scores(SCORES, resamples=0)
