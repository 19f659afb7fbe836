"""stagewise.define: a custom measure, per query or vectorised, is a family every front door takes.

The oracle is a built-in measure written again by hand: reciprocal rank as a per-query function of the views
(``qrels_for_q``, ``run_for_q``) and as a vectorised function of the context must give ``mrr``'s numbers per query,
through evaluate, compare (library and command line, ``-m module:attr``) and the HTML report.
"""

from __future__ import annotations

import json
import random
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.errors import MetricError
from stagewise.metrics import kernels as K
from stagewise.metrics.custom import QueryQrels, QueryRun, load_plugin
from stagewise.metrics.measures import FAMILIES, Measure
from tests.report_helpers import header, parse, rows

runner = CliRunner()


def first_hit(qrels_for_q: QueryQrels, run_for_q: QueryRun) -> float:
    """Reciprocal rank of the first relevant result, from the per-query views."""
    hits = np.flatnonzero(run_for_q.relevant)
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0


def first_hit_vectorised(ctx, k):
    return K.reciprocal_rank(ctx, k)


@pytest.fixture
def defined():
    names = [
        stagewise.define("my_rr", first_hit, description="reciprocal rank, per query").name,
        stagewise.define("my_rr_vec", first_hit_vectorised, vectorised=True).name,
    ]
    yield names
    for name in names:
        FAMILIES.unregister(name)


def make_data(seed: int) -> tuple[dict, dict]:
    """Qrels with labels -1..3, three runs with tied scores (one decimal), queries missing from some runs."""
    rng = random.Random(seed)
    qrels = {
        f"q{q}": {f"d{i}": rng.choice([-1, 0, 0, 1, 2, 3]) for i in rng.sample(range(30), rng.randint(1, 12))}
        for q in range(12)
    }
    runs = {
        name: {
            f"q{q}": {f"d{i}": round(rng.random(), 1) for i in rng.sample(range(30), rng.randint(1, 20))}
            for q in range(12)
            if rng.random() > 0.1
        }
        for name in ("bm25", "dense", "hybrid")
    }
    return qrels, runs


def per_query(result, name: str) -> dict[str, dict[str, float]]:
    return {r.name: dict(zip(r.query_ids.tolist(), r.values[name].tolist(), strict=True)) for r in result.runs}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_defined_measure_equals_the_built_in_one_two_ways(defined, seed: int) -> None:
    qrels, runs = make_data(seed)
    for ours, builtin in [
        ("my_rr", "mrr"),
        ("my_rr_vec", "mrr"),
        ("my_rr@3", "mrr@3"),
        ("my_rr(rel=2)", "mrr(rel=2)"),
        ("my_rr@5(judged_only=True)", "mrr@5(judged_only=True)"),
    ]:
        for ties in ("docid", "input"):
            result = stagewise.evaluate(qrels, runs, [ours, builtin], ties=ties)
            assert per_query(result, ours) == per_query(result, builtin), (ours, ties)
            for run in result.runs:
                assert run.means[ours] == run.means[builtin]
    streamed = stagewise.evaluate(qrels, runs, ["my_rr", "my_rr_vec", "mrr"], engine="stream")
    assert per_query(streamed, "my_rr") == per_query(streamed, "mrr") == per_query(streamed, "my_rr_vec")


def test_the_views_hold_the_labels_by_rank() -> None:
    """A hand-made case: the run view has one label per retrieved rank (NaN unjudged) and the judgement view
    every label of the query."""
    seen = {}

    def spy(qrels_for_q: QueryQrels, run_for_q: QueryRun) -> float:
        seen[qrels_for_q.query_id] = (qrels_for_q, run_for_q)
        return float(len(run_for_q))

    stagewise.define("spy_views", spy, cutoff="optional")
    try:
        qrels = {"q1": {"a": 2, "b": -1, "c": 0, "z": 1}}
        run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "c": 0.6}}
        assert stagewise.evaluate(qrels, run, ["spy_views@3"]).means["run"]["spy_views@3"] == 3.0
        judged, ranked = seen["q1"]
        assert sorted(judged.labels.tolist()) == [-1, 0, 1, 2] and judged.num_rel == 2
        assert ranked.k == 3 and np.array_equal(ranked.labels, [2.0, np.nan, -1.0], equal_nan=True)
        assert ranked.relevant.tolist() == [True, False, False] and ranked.judged.tolist() == [True, False, False]
    finally:
        FAMILIES.unregister("spy_views")


def test_compare_and_the_report_take_a_defined_measure(defined) -> None:
    qrels, runs = make_data(4)
    comparison = stagewise.compare(qrels, runs, ["my_rr", "mrr"])
    for a, b in [("bm25", "dense"), ("bm25", "hybrid"), ("dense", "hybrid")]:
        mine, theirs = comparison.pair("my_rr", a, b), comparison.pair("mrr", a, b)
        assert (mine.mean_diff, mine.p_value, mine.wins, mine.losses) == (
            theirs.mean_diff,
            theirs.p_value,
            theirs.wins,
            theirs.losses,
        )
    from stagewise.report.html import render

    mine = parse(render(stagewise.study(qrels, runs, ["my_rr"])))
    theirs = parse(render(stagewise.study(qrels, runs, ["mrr"])))
    assert "my_rr" in header(mine.by_id("comparison-table"))
    assert rows(mine.by_id("comparison-table")) == rows(theirs.by_id("comparison-table"))


def test_better_and_aggregate_are_the_measures(defined) -> None:
    stagewise.define("cost_sum", lambda q, r: float(len(r)), better="lower", aggregate="sum", cutoff="none")
    try:
        assert Measure.parse("cost_sum").better == "lower"
        with pytest.raises(MetricError, match="takes no cutoff"):
            Measure.parse("cost_sum@10")
        qrels, runs = make_data(5)
        result = stagewise.evaluate(qrels, runs["bm25"], ["cost_sum", "num_ret"])
        assert result.means["run"]["cost_sum"] == result.means["run"]["num_ret"]
    finally:
        FAMILIES.unregister("cost_sum")


# -- the command line: a metric spelt module:attr -------------------------------------------------------------------

PLUGIN = """
import numpy as np
import stagewise


def first_hit(qrels_for_q, run_for_q):
    hits = np.flatnonzero(run_for_q.relevant)
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0


plugin_rr = stagewise.define("plugin_rr", first_hit, description="reciprocal rank, from a plug-in module")
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    qrels, runs = make_data(6)
    (tmp_path / "my_measures.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    qpath = tmp_path / "qrels.txt"
    stagewise.write_qrels(stagewise.read_qrels(qrels), qpath)
    paths = []
    for name, run in runs.items():
        stagewise.write_run(stagewise.read_run(run, name=name), tmp_path / f"{name}.run")
        paths.append(str(tmp_path / f"{name}.run"))
    yield qpath, paths
    for name in ("plugin_rr", "first_hit"):
        if name in FAMILIES:
            FAMILIES.unregister(name)
    sys.modules.pop("my_measures", None)


def test_eval_and_compare_take_module_attr(plugin) -> None:
    qpath, paths = plugin
    out = runner.invoke(app, ["eval", str(qpath), *paths, "-m", "my_measures:plugin_rr@10", "-m", "mrr@10",
                              "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    means = json.loads(out.stdout)["runs"]
    for run in means.values():
        assert run["my_measures:plugin_rr@10"] == run["mrr@10"]
    # a plain function in the module is defined under its attribute name
    out = runner.invoke(app, ["compare", str(qpath), *paths, "-m", "my_measures:first_hit", "-m", "mrr",
                              "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    pairs = json.loads(out.stdout)["pairs"]
    by_metric: dict[str, list] = {}
    for pair in pairs:
        by_metric.setdefault(pair["metric"], []).append((pair["a"], pair["b"], pair["mean_diff"], pair["p_value"]))
    assert by_metric["my_measures:first_hit"] == by_metric["mrr"]


def test_report_takes_module_attr(plugin, tmp_path: Path) -> None:
    qpath, paths = plugin
    pages = {}
    for metric in ("my_measures:plugin_rr", "mrr"):
        out = tmp_path / f"{metric.replace(':', '_')}.html"
        result = runner.invoke(app, ["report", str(qpath), *paths, "-m", metric, "-o", str(out)])
        assert result.exit_code == 0, result.output
        pages[metric] = parse(out.read_text(encoding="utf-8")).by_id("comparison-table")
    assert rows(pages["my_measures:plugin_rr"]) == rows(pages["mrr"])
    assert any("plugin_rr" in cell for cell in header(pages["my_measures:plugin_rr"]))


# -- mistakes -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: stagewise.define("my rr", first_hit), "letters, digits and '_'"),
        (lambda: stagewise.define("map", first_hit), "already registered; pass replace=True"),
        (lambda: stagewise.define("x_rr", 3), "must be callable"),
        (lambda: stagewise.define("x_rr", first_hit, better="up"), "'better' parameter of define"),
        (lambda: stagewise.define("x_rr", first_hit, cutoff="sometimes"), "'cutoff' parameter of define"),
        (lambda: load_plugin("no_such_module_here:x"), "no module 'no_such_module_here'"),
        (lambda: load_plugin("json:no_such_attr"), "module 'json' has no 'no_such_attr'"),
        (lambda: load_plugin("math:pi"), "it is a float, not a measure"),
    ],
)
def test_mistakes_are_one_clear_error(call, words: str) -> None:
    with pytest.raises(MetricError) as error:
        call()
    assert words in str(error.value)
    assert "x_rr" not in FAMILIES


@pytest.mark.parametrize(
    ("fn", "vectorised", "words"),
    [
        (lambda q, r: "high", False, "returned 'high' for query"),
        (lambda q, r: float("nan"), False, "returned nan for query"),
        (lambda ctx, k: np.zeros(2), True, "one value per query"),
    ],
)
def test_a_measure_that_returns_no_number_is_an_error(fn, vectorised: bool, words: str) -> None:
    stagewise.define("bad_measure", fn, vectorised=vectorised)
    try:
        qrels, runs = make_data(7)
        with pytest.raises(MetricError) as error:
            stagewise.evaluate(qrels, runs["bm25"], ["bad_measure"])
        assert words in str(error.value) and "bad_measure" in str(error.value)
    finally:
        FAMILIES.unregister("bad_measure")
