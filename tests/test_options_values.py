"""Options as values and one evaluate (issue 20): ``conventions=`` is the same as its fields given as keywords on
every engine, a keyword override wins over the value, an unknown one is a ConventionError before any file is read;
the deprecated ``stagewise.metrics.evaluate`` gives the front door's numbers; a measure's behaviour (which way is
better, prefix-safety, its data-dependent defaults) lives on its family entry, and a new family registered the way
docs/architecture.md says is taken by the library and the command line with no other edit."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stagewise
from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.data.readers import read_qrels
from stagewise.engines import LocalEngine, StreamEngine, evaluate
from stagewise.errors import ConventionError, MetricError
from stagewise.metrics import kernels as K
from stagewise.metrics.context import (
    CONVENTION_FIELDS,
    Conventions,
    conventions_from,
    split_conventions,
)
from stagewise.metrics.measures import FAMILIES, Family, Measure

QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
METRICS = ["map", "ndcg@10", "P@5(rel=2)", "err@20", "bpref", "unj@10", "num_ret"]
ENGINES = ["local", "stream"]

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[str]:
    """Two runs grouped by query (the stream engine's need): the sample run and every other line of it."""
    thinned = tmp_path_factory.mktemp("runs") / "thinned.test"
    with open(RUN, encoding="utf-8") as fh:
        thinned.write_text("".join(line for i, line in enumerate(fh) if i % 2 == 0), encoding="utf-8")
    return [RUN, str(thinned)]


def _numbers(result) -> tuple:
    """Everything a result says, as plain values (per-query arrays included)."""
    return (
        result.conventions,
        [str(m) for _, m in result.measures],
        [
            (r.name, r.query_ids.tolist(), {k: v.tolist() for k, v in r.values.items()}, r.means, r.missing_queries)
            for r in result.runs
        ],
    )


# ------------------------------------------------------------------------------------------- Conventions helpers
def test_the_fields_are_read_from_the_dataclass() -> None:
    assert tuple(f.name for f in dataclasses.fields(Conventions)) == CONVENTION_FIELDS
    assert set(CONVENTION_FIELDS) == {"relevance_level", "ties", "missing", "max_ret", "judged_only", "ignore_self"}


def test_with_and_conventions_from() -> None:
    base = Conventions(relevance_level=2, missing="skip")
    assert base.with_(ties="input") == dataclasses.replace(base, ties="input")
    assert base.with_() is base
    assert conventions_from() == Conventions()
    assert conventions_from(base) is base
    assert conventions_from(base, relevance_level=3) == Conventions(relevance_level=3, missing="skip")
    with pytest.raises(ConventionError, match=r"unknown convention 'level'; the conventions are relevance_level, ties"):
        conventions_from(base, level=2)
    with pytest.raises(ConventionError, match="unknown ties policy"):  # a value is still checked by the dataclass
        base.with_(ties="random")
    with pytest.raises(ConventionError, match="must be a Conventions value"):
        conventions_from({"missing": "skip"})  # type: ignore[arg-type]
    assert split_conventions({"missing": "skip", "alpha": 0.01, "ties": "input"}) == (
        {"missing": "skip", "ties": "input"},
        {"alpha": 0.01},
    )


# ------------------------------------------------------------------------------------------------ one evaluate
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"relevance_level": 2},
        {"missing": "skip", "ties": "input"},
        {"max_ret": 5, "judged_only": True},
        {"ties": "docid-double", "missing": "zero"},
    ],
)
def test_a_conventions_value_equals_its_fields_as_keywords(engine: str, fields: dict, runs: list[str]) -> None:
    by_value = evaluate(QRELS, runs, METRICS, conventions=Conventions(**fields), engine=engine)
    by_keywords = evaluate(QRELS, runs, METRICS, engine=engine, **fields)
    assert _numbers(by_value) == _numbers(by_keywords)
    assert by_value.conventions == Conventions(**fields)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_override_wins_over_the_value(engine: str, runs: list[str]) -> None:
    value = Conventions(relevance_level=2, missing="skip")
    result = evaluate(QRELS, runs, METRICS, conventions=value, engine=engine, relevance_level=1)
    assert result.conventions == Conventions(relevance_level=1, missing="skip")
    assert _numbers(result) == _numbers(evaluate(QRELS, runs, METRICS, engine=engine, missing="skip"))


@pytest.mark.parametrize("engine", [*ENGINES, LocalEngine(), StreamEngine()])
def test_an_unknown_override_fails_before_anything_is_read(engine) -> None:
    def never() -> None:
        raise AssertionError("read before the options were checked")

    with pytest.raises(ConventionError, match=r"unknown convention 'relevance'.*relevance_level"):
        evaluate(never, never, METRICS, engine=engine, relevance=2)
    with pytest.raises(MetricError):
        evaluate(never, never, ["ndcg@ten"], engine=engine)


def test_the_package_front_door_is_the_engines_one() -> None:
    assert stagewise.evaluate is evaluate


def test_the_deprecated_metrics_evaluate_warns_and_gives_the_same_numbers(runs: list[str]) -> None:
    from stagewise.metrics.evaluate import evaluate as old

    for fields in ({}, {"missing": "skip"}, {"relevance_level": 2, "ties": "input"}):
        with pytest.warns(DeprecationWarning, match="use stagewise.evaluate"):
            before = old(QRELS, runs, METRICS, **fields)
        with pytest.warns(DeprecationWarning):
            value = old(QRELS, runs, METRICS, conventions=Conventions(**fields))
        now = evaluate(QRELS, runs, METRICS, **fields)
        assert _numbers(before) == _numbers(now) == _numbers(value)


@pytest.mark.parametrize("engine", ENGINES)
def test_progress_reports_the_runs_done(engine: str, runs: list[str]) -> None:
    seen: list[tuple[int, int]] = []
    evaluate(QRELS, runs, ["map"], engine=engine, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 2) and seen[-1] == (2, 2)
    assert all(total == 2 for _, total in seen)


def test_an_engine_object_keeps_its_own_progress_after_the_call(runs: list[str]) -> None:
    engine = StreamEngine()
    evaluate(QRELS, runs, ["map"], engine=engine, progress=lambda done, total: None)
    assert engine.progress is None


def test_the_dask_engine_takes_the_value_too(runs: list[str]) -> None:
    distributed = pytest.importorskip("distributed", reason="dask's distributed is not installed: stagewise[dask]")
    from stagewise.engines import DaskEngine

    cluster = distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        engine = DaskEngine(client=client, partition_bytes=3000, block_bytes=1000)
        value = Conventions(missing="skip", relevance_level=2)
        remote = evaluate(QRELS, runs, METRICS, conventions=value, engine=engine)
        local = evaluate(QRELS, runs, METRICS, missing="skip", relevance_level=2)
        assert _numbers(remote) == _numbers(local)
        with pytest.raises(ConventionError, match="unknown convention"):
            evaluate(QRELS, runs, METRICS, engine=engine, missingness="skip")
    finally:
        client.close()
        cluster.close()


# ----------------------------------------------------------------------------------- behaviour on the measure
def test_which_way_is_better_lives_on_the_family() -> None:
    lower = {name for name in FAMILIES.names() if FAMILIES[name].better == "lower"}
    counts = {name for name in FAMILIES.names() if FAMILIES[name].better is None}
    assert lower == {"unj", "unjudged", "rbp_resid"}
    assert counts == {"num_ret", "num_rel"}
    assert Measure.parse("unj@10").better == "lower" and Measure.parse("map").better == "higher"


def test_prefix_safe_lives_on_the_family() -> None:
    safe = {name for name in FAMILIES.names() if FAMILIES[name].prefix_safe}
    assert safe == {"recall", "P", "ndcg", "mrr", "map", "success", "Rprec", "hits"}
    assert Measure.parse("ndcg@10").prefix_safe and not Measure.parse("bpref").prefix_safe


@settings(max_examples=40, deadline=None)
@given(
    labels=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    ranked=st.lists(st.integers(0, 15), min_size=1, max_size=15, unique=True),
)
def test_a_prefix_safe_measure_is_unchanged_when_the_list_is_cut_after_its_last_relevant(labels, ranked) -> None:
    """What prefix_safe promises (the RAG diagnosis relies on it): cutting a ranked list after its last relevant
    document leaves the value alone."""
    qrels = {"q": {f"d{i}": label for i, label in enumerate(labels)}}
    docs = [f"d{i}" for i in ranked]
    relevant = [i for i, d in enumerate(docs) if qrels["q"].get(d, 0) >= 1]
    cut = docs[: relevant[-1] + 1] if relevant else docs[:1]
    measures = [
        m
        for name in FAMILIES.names()
        if FAMILIES[name].prefix_safe
        for m in {"required": [f"{name}@3", f"{name}@10"], "optional": [name, f"{name}@5"], "none": [name]}[
            FAMILIES[name].cutoff
        ]
    ]

    def scores(ranking: list[str]) -> dict:
        run = {"q": {d: float(len(ranking) - r) for r, d in enumerate(ranking)}}
        return evaluate(qrels, run, measures).means["run"]

    assert scores(docs) == pytest.approx(scores(cut))


def test_err_states_its_default_through_the_family_hook() -> None:
    qrels = read_qrels({"q1": {"d1": 3, "d2": 1}, "q2": {"d3": 1}})
    assert str(Measure.parse("err@20").resolve(qrels)) == "err@20(max_label=3)"
    assert str(Measure.parse("err@20").resolve(qrels, np.array(["q2"]))) == "err@20(max_label=1)"
    assert Measure.parse("err(max_label=4)").resolve(qrels) == Measure.parse("err(max_label=4)")
    assert Measure.parse("map").resolve(qrels) == Measure.parse("map")  # no hook: itself


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_err_default_is_the_same_on_every_engine_and_as_stated(engine: str, missing: str) -> None:
    qrels = {"q1": {"a": 3, "b": 1}, "q2": {"c": 1, "d": 0}}
    run = {"q2": {"c": 2.0, "d": 1.0, "e": 0.5}}
    result = evaluate(qrels, run, ["err@5"], engine=engine, missing=missing)
    top = 3 if missing == "zero" else 1  # under skip the run's judged queries (q2 only) set the scale
    stated = evaluate(qrels, run, [f"err@5(max_label={top})"], missing=missing)
    assert result.means["run"]["err@5"] == stated.means["run"][f"err@5(max_label={top})"]
    assert result.metric_names == ["err@5"]  # the result keeps the measure as given


# ---------------------------------------------------------------------- a new measure: its module and its test
def _top_hit(ctx, k, opts) -> np.ndarray:
    """1 where the first result is relevant (a toy family for the test: success@1 by another name)."""
    return K.success(ctx, 1)


TOP_HIT = Family(
    "top_hit",
    "1 if the first result is relevant",
    _top_hit,
    options={"rel": FAMILIES["P"].options["rel"]},
    prefix_safe=True,
)


@pytest.fixture
def top_hit():
    FAMILIES.register(TOP_HIT)
    yield TOP_HIT
    FAMILIES.unregister("top_hit")


def test_a_registered_measure_is_taken_by_the_library_and_the_command_line(top_hit, runs: list[str]) -> None:
    assert Measure.parse("top_hit").better == "higher" and Measure.parse("top_hit").prefix_safe
    for engine in ENGINES:
        result = evaluate(QRELS, runs, ["top_hit", "success@1"], engine=engine)
        for run in result.runs:
            assert run.means["top_hit"] == run.means["success@1"]
    out = runner.invoke(app, ["eval", QRELS, runs[0], "-m", "top_hit", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert "top_hit" in json.loads(out.stdout)["runs"]["results.test"]
    unknown = runner.invoke(app, ["eval", QRELS, runs[0], "-m", "top_hat"])
    assert unknown.exit_code == 2
    assert "top_hit" in unknown.output  # the error lists the registry's names, the new one included


def test_the_command_line_passes_one_conventions_value(runs: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the command goes through the front door
        out = runner.invoke(
            app,
            ["eval", QRELS, *runs, "-m", "map", "-m", "err@20", "--missing", "skip",
             "--relevance-level", "2", "--format", "json"],
        )  # fmt: skip
    assert out.exit_code == 0, out.output
    library = evaluate(QRELS, runs, ["map", "err@20"], conventions=Conventions(missing="skip", relevance_level=2))
    assert json.loads(out.stdout)["runs"] == library.means


# ------------------------------------------------------------------------ a new engine: its module and its test
class CountingEngine(LocalEngine):
    """The local engine, counting the runs it measures (a toy engine for the registry test)."""

    name = "counting"
    measured = 0

    def score_runs(self, qrels, sources, parsed, base, duplicates):
        CountingEngine.measured += len(sources)
        return super().score_runs(qrels, sources, parsed, base, duplicates)


@pytest.fixture
def counting():
    from stagewise.engines import ENGINES, EngineEntry

    entry = ENGINES.register(EngineEntry("counting", "the local engine, counting runs", f"{__name__}:CountingEngine"))
    CountingEngine.measured = 0
    yield entry
    ENGINES.unregister("counting")


def test_a_registered_engine_is_taken_by_the_front_door(counting, runs: list[str]) -> None:
    from stagewise.engines import get_engine

    result = evaluate(QRELS, runs, METRICS, engine="Counting", missing="skip")
    assert CountingEngine.measured == 2
    assert _numbers(result) == _numbers(evaluate(QRELS, runs, METRICS, missing="skip"))
    with pytest.raises(ConventionError, match="takes no options"):
        get_engine("counting", block_bytes=10)
    with pytest.raises(ConventionError, match="scheduler address is for the dask engine, not 'counting'"):
        get_engine("counting", scheduler="tcp://localhost:8786")
    with pytest.raises(ConventionError, match="unknown engine 'spark'; choose one of local, stream, dask, counting"):
        get_engine("spark")


def test_the_engines_catalogue_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, stagewise.engines as e; e.ENGINES.names(); "
        "print(sorted(m for m in sys.modules if m in ('numpy', 'polars')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_registered_engine_is_taken_by_the_command_line(counting, runs: list[str]) -> None:
    out = runner.invoke(app, ["eval", QRELS, runs[0], "-m", "map", "--engine", "counting", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert CountingEngine.measured == 1
    assert "counting" in runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output


def test_an_unresolved_err_is_refused_by_the_kernel_entry() -> None:
    from stagewise.data.readers import read_run
    from stagewise.metrics.evaluate import measure_run, parse_metrics, resolve_measures

    qrels = read_qrels({"q1": {"a": 3, "b": 1}})
    run = read_run({"q1": {"a": 1.0, "b": 0.5}})
    with pytest.raises(MetricError, match="max_label comes from the judgements: resolve the measure first"):
        measure_run(qrels, run, parse_metrics(["err@5"]), Conventions())
    resolved = measure_run(qrels, run, resolve_measures(parse_metrics(["err@5"]), qrels), Conventions())
    assert resolved.means == evaluate(qrels, run, ["err@5"]).runs[0].means
