"""Typed records in place of long keyword lists and untyped dicts: compare's options as one value, a RAG
sample's fields as a dataclass, the fusion report built with the run's metadata in one place. Each keeps the
numbers and the JSON of the dicts it replaces (the golden tests hold the bytes)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.errors import ConventionError, StagewiseError
from stagewise.stats import CompareOptions, compare, compare_scores


def _scores(seed: int, runs: int = 3, n: int = 12) -> dict:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return {
        f"r{r}": {"m": {f"q{i}": float(v) for i, v in enumerate(np.clip(base + rng.normal(0.05 * r, 0.2, n), 0, 1))}}
        for r in range(runs)
    }


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 1000),
    test=st.sampled_from(["t", "wilcoxon", "sign", "randomization"]),
    correction=st.sampled_from(["none", "holm", "bh", "bonferroni"]),
    family=st.sampled_from(["metric", "all"]),
)
def test_options_value_equals_keywords(seed: int, test: str, correction: str, family: str) -> None:
    scores = _scores(seed)
    keywords = dict(test=test, correction=correction, family=family, resamples=500, seed=seed)
    by_keywords = compare_scores(scores, **keywords)
    by_value = compare_scores(scores, options=CompareOptions(**keywords))
    assert by_value.pairs == by_keywords.pairs
    assert by_value.conventions == by_keywords.conventions


def test_keyword_overrides_the_options_field() -> None:
    scores = _scores(3)
    opts = CompareOptions(test="sign", alpha=0.5)
    mixed = compare_scores(scores, options=opts, alpha=0.01)
    assert mixed.alpha == 0.01 and mixed.pairs[0].test == "sign"
    assert mixed.pairs == compare_scores(scores, test="sign", alpha=0.01).pairs
    assert opts.alpha == 0.5  # frozen: the caller's value is untouched


def test_unknown_option_is_an_error_naming_the_function_and_the_options() -> None:
    with pytest.raises(ConventionError, match=r"compare_scores\(\) got unknown keyword\(s\) 'tets'; the options are"):
        compare_scores(_scores(0), tets="t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        CompareOptions().test = "sign"  # type: ignore[misc]


def test_bad_option_fails_before_files_are_read(tmp_path) -> None:
    """compare checks its cheap arguments first: a misspelt test is named, not the missing file."""
    with pytest.raises(StagewiseError, match="unknown statistical test 'studnet'"):
        compare(tmp_path / "absent.qrels", [tmp_path / "a.run", tmp_path / "b.run"], ["map"], test="studnet")


# ------------------------------------------------------------------------------------------------- RAG sample
def test_rag_rows_are_the_samples_fields_in_order(tmp_path) -> None:
    """A row is RagSample.to_dict(): the dataclass's fields in order, then ``line`` (records from a file),
    then the ranking metrics; every field is documented in docs/rag.md."""
    import json
    import re
    from pathlib import Path

    from stagewise.rag import evaluate_rag
    from stagewise.rag.diagnose import RagSample

    path = tmp_path / "records.jsonl"
    records = [
        {"id": "q1", "retrieved": ["p3", "p9"], "gold_evidence": ["p9"], "answer": "Jo [p9]", "gold_answers": ["Jo"]},
        {"id": "q2", "retrieved": ["p1"], "answer": "no idea", "gold_answers": []},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = evaluate_rag(path, metrics=["mrr", "recall@1"])
    names = [f.name for f in dataclasses.fields(RagSample) if f.name not in ("line", "metrics")]
    assert [list(row.to_dict()) for row in report.rows] == [[*names, "line", "mrr", "recall@1"]] * 2
    assert report.rows[0].line == 1 and report.rows[1].metrics["mrr"] is None  # no gold evidence: no metric
    bare = RagSample(**dict.fromkeys(names))  # no line, no metrics: the row has neither
    assert list(bare.to_dict()) == names
    documented = set(re.findall(r"`([a-z_@0-9]+)`", (Path(__file__).parents[1] / "docs" / "rag.md").read_text()))
    assert set(names) <= documented
