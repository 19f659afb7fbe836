"""The stream and Dask engines give the local engine's numbers, bit for bit: per-query values, means, fused runs,
comparison output; and a run they cannot read in parts fails cleanly, naming the line and the fix."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.data.writers import write_trec_run
from stagewise.engines import LocalEngine, StreamEngine, evaluate, get_engine
from stagewise.errors import ConventionError, InputError, StagewiseError
from stagewise.fusion import fuse
from stagewise.fusion.engine import fuse_to
from stagewise.metrics.diversity import DIVERSITY_FAMILIES
from stagewise.metrics.measures import FAMILIES, known_names
from stagewise.report import render
from stagewise.stats import compare
from tests.clean_failure import assert_clean_failure
from tests.conftest import SHARED

runner = CliRunner()


def evaluate_local(*args, **kwargs):
    """The front door on the local engine: the reference every other engine must match."""
    return evaluate(*args, engine="local", **kwargs)
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))  # not grouped by query: query 301's lines come back at line 3
ROBUST = SHARED / "data" / "trec_robust03_runs"


def every_family() -> list[str]:
    """One or two names of every metric family, cutoffs and options included (ndeval's, which need subtopic
    qrels, are checked on every engine in tests/test_ndeval.py)."""
    out = []
    subtopic_families = {family.name for family in DIVERSITY_FAMILIES}
    for name in known_names():
        if name in subtopic_families:
            continue
        fam = FAMILIES[name.lower()]
        if fam.cutoff == "required":
            out.append(f"{name}@{0.5 if fam.cutoff_kind is float else 5}")
        else:
            out.append(name)
            if fam.cutoff == "optional":
                out.append(f"{name}@10")
    # err's max_label at least the top label of the qrels used (qrels.rel_level has a 4): a lower one is an error
    return [*out, "ndcg@10(gain=exp)", "P@5(rel=2)", "rbp(p=0.8)", "err@20(max_label=4)", "map(rel=2)"]


METRICS = every_family()


def assert_same(expected, got) -> None:
    """Identical results: names, query order, per-query values (dtype and bits), means, notes, conventions."""
    assert [r.name for r in got.runs] == [r.name for r in expected.runs]
    for want, have in zip(expected.runs, got.runs, strict=True):
        assert np.array_equal(have.query_ids, want.query_ids)
        assert list(have.values) == list(want.values)
        for metric, values in want.values.items():
            assert have.values[metric].dtype == values.dtype, metric
            assert np.array_equal(have.values[metric], values, equal_nan=True), metric
        assert json.dumps(have.means) == json.dumps(want.means)
        assert have.missing_queries == want.missing_queries
        assert have.run_only_queries == want.run_only_queries
    assert got.conventions_report() == expected.conventions_report()
    assert render(got, "json", per_query=True) == render(expected, "json", per_query=True)


def grouped_copy(source: str | Path, target: Path) -> Path:
    """The run with its lines grouped by query (first-appearance order, lines in file order within a query)."""
    groups: dict[bytes, list[bytes]] = {}
    for line in Path(source).read_bytes().splitlines(keepends=True):
        groups.setdefault(line.split(None, 1)[0] if line.strip() else b"", []).append(line)
    target.write_bytes(b"".join(b"".join(lines) for lines in groups.values()))
    return target


def sorted_copy(source: Path, target: Path) -> Path:
    """``LC_ALL=C sort -k1,1 -s``: lines ordered by query id in byte order, stable."""
    data = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    lines = [x for x in data.splitlines(keepends=True) if x.strip()]
    target.write_bytes(b"".join(sorted(lines, key=lambda x: x.split(None, 1)[0])))
    return target


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("engines")
    return {"trunc_grouped": grouped_copy(TRUNC, folder / "results.trunc.grouped"), "folder": folder}


# --------------------------------------------------------------------------------------------------- stream
@pytest.mark.parametrize("block_bytes", [1, 700, 1 << 30])
@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_stream_matches_local_on_every_family(files, block_bytes: int, missing: str) -> None:
    runs = [RUN, str(files["trunc_grouped"])]
    expected = evaluate_local(QRELS, runs, METRICS, missing=missing)
    assert_same(expected, evaluate(QRELS, runs, METRICS, engine=StreamEngine(block_bytes=block_bytes), missing=missing))


@pytest.mark.parametrize(
    "conventions",
    [
        {"ties": "docid-double"},
        {"ties": "input"},
        {"ties": "rank"},
        {"relevance_level": 2},
        {"max_ret": 7},
        {"judged_only": True},
    ],
)
def test_stream_matches_local_under_each_convention(conventions: dict) -> None:
    expected = evaluate_local(QRELS, RUN, METRICS, **conventions)
    assert_same(expected, evaluate(QRELS, RUN, METRICS, engine=StreamEngine(block_bytes=997), **conventions))


def test_stream_on_trec_eval_test_files(trec_eval_test: Path, tmp_path: Path) -> None:
    pairs = [
        ("qrels.test", "results.test"),
        ("qrels-302.test", "results-302.test"),
        ("qrels.rel_level", "results.test"),
    ]
    for qrels, run in pairs:
        grouped = grouped_copy(trec_eval_test / run, tmp_path / run)
        expected = evaluate_local(trec_eval_test / qrels, [trec_eval_test / run], METRICS)
        got = evaluate(trec_eval_test / qrels, [grouped], METRICS, engine=StreamEngine(block_bytes=4096))
        assert_same(expected, got)


def test_stream_reads_gzip_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packed = tmp_path / "results.test.gz"
    packed.write_bytes(gzip.compress(Path(RUN).read_bytes()))
    expected = evaluate_local(QRELS, {"r": RUN}, ["map", "ndcg@10"])
    assert_same(expected, evaluate(QRELS, {"r": str(packed)}, ["map", "ndcg@10"], engine="stream"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(Path(RUN).read_bytes())))
    assert_same(expected, evaluate(QRELS, {"r": "-"}, ["map", "ndcg@10"], engine="stream"))


def test_err_default_max_label_follows_the_judged_queries_in_the_run() -> None:
    # Under missing=skip, ERR's default max_label is the top label of the judged queries the run has (here 3,
    # not the qrels' 4): the engine must not take it from a part, nor from the whole qrels.
    qrels = {"a": {"x": 1, "y": 3}, "b": {"z": 1}, "c": {"w": 4}}
    run = {"a": {"x": 1.0, "y": 0.5}, "b": {"z": 1.0}}
    for missing in ("zero", "skip"):
        expected = evaluate_local(qrels, run, ["err", "err@1"], missing=missing)
        assert_same(expected, evaluate(qrels, run, ["err", "err@1"], engine="stream", missing=missing))


SCORES = st.sampled_from([0.5, 1.0, 1.0000001, 2.0, 3.25])  # few values: ties, and ties only in single precision


@st.composite
def qrels_and_run(draw):
    queries = [f"q{i}" for i in range(draw(st.integers(1, 8)))]
    docs = [f"d{i}" for i in range(12)]
    qrels_lines, run_lines = [], []
    for q in queries:
        for d in draw(st.lists(st.sampled_from(docs), unique=True, max_size=6)):
            qrels_lines.append(f"{q} 0 {d} {draw(st.integers(-1, 3))}\n")
    for q in draw(st.permutations([*queries, "extra"]))[: draw(st.integers(1, len(queries) + 1))]:
        for rank, d in enumerate(draw(st.lists(st.sampled_from(docs), unique=True, min_size=1, max_size=10)), 1):
            run_lines.append(f"{q} Q0 {d} {rank} {draw(SCORES)} tag\n")
    if not qrels_lines:
        qrels_lines.append(f"{queries[0]} 0 d0 1\n")
    return "".join(qrels_lines), "".join(run_lines)


def write_pair(folder: str, qrels: str, run: str) -> tuple[str, str]:
    qrels_path, run_path = Path(folder) / "qrels.txt", Path(folder) / "run.txt"
    qrels_path.write_text(qrels)
    run_path.write_text(run)
    return str(qrels_path), str(run_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=qrels_and_run(), block_bytes=st.integers(1, 300), missing=st.sampled_from(["zero", "skip"]))
def test_stream_matches_local_on_random_runs(pair: tuple[str, str], block_bytes: int, missing: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = write_pair(folder, *pair)
        try:
            expected = evaluate_local(qrels, run, METRICS, missing=missing)
        except StagewiseError as exc:  # no query in common: the same error on every engine
            with pytest.raises(StagewiseError) as raised:
                evaluate(qrels, run, METRICS, engine=StreamEngine(block_bytes=block_bytes), missing=missing)
            assert str(raised.value) == str(exc)
            return
        got = evaluate(qrels, run, METRICS, engine=StreamEngine(block_bytes=block_bytes), missing=missing)
        assert_same(expected, got)


def test_stream_refuses_a_run_not_grouped_by_query() -> None:
    with pytest.raises(InputError) as raised:
        evaluate(QRELS, TRUNC, ["map"], engine="stream")
    message = str(raised.value)
    assert f"{TRUNC}:3: query '301' comes back here" in message
    assert "LC_ALL=C sort -k1,1 -s" in message and "--engine local" in message


def test_stream_refuses_a_query_that_comes_back_in_a_later_block(tmp_path: Path) -> None:
    lines = Path(RUN).read_bytes().splitlines(keepends=True)
    run = tmp_path / "run"
    run.write_bytes(b"".join(lines) + lines[0])  # query 301's first line again, at the very end
    with pytest.raises(InputError, match=rf":{len(lines) + 1}: query '301' comes back here"):
        evaluate(QRELS, str(run), ["map"], engine=StreamEngine(block_bytes=5000))


@pytest.mark.parametrize("block_bytes", [64, 5000, 1 << 30])
def test_stream_errors_name_the_same_line_as_the_local_engine(tmp_path: Path, block_bytes: int) -> None:
    lines = Path(RUN).read_bytes().splitlines(keepends=True)
    bad_score = tmp_path / "bad_score"
    bad_score.write_bytes(b"".join(lines[:700]) + b"301 Q0 DOC 1 notanumber tag\n" + b"".join(lines[700:]))
    at = 600 if lines[599].split()[0] == lines[600].split()[0] else 601
    duplicate = tmp_path / "duplicate"
    duplicate.write_bytes(b"".join(lines[:at]) + lines[at - 1] + b"".join(lines[at:]))
    for path in (bad_score, duplicate):
        with pytest.raises(InputError) as local:
            evaluate_local(QRELS, str(path), ["map"])
        with pytest.raises(InputError) as streamed:
            evaluate(QRELS, str(path), ["map"], engine=StreamEngine(block_bytes=block_bytes))
        assert str(streamed.value) == str(local.value)
        assert streamed.value.line is not None and streamed.value.line > 500


def test_stream_refuses_other_formats(tmp_path: Path) -> None:
    run = tmp_path / "run.csv"
    run.write_text("query_id,doc_id,score\nq,d,1\n")
    with pytest.raises(InputError, match="stream engine reads TREC run files"):
        evaluate({"q": {"d": 1}}, str(run), ["map"], engine="stream")


def test_runs_given_as_globs_are_expanded_and_named_by_file(tmp_path: Path) -> None:
    for name in ("b.run", "a.run"):
        (tmp_path / name).write_bytes(Path(RUN).read_bytes())
    result = evaluate(QRELS, str(tmp_path / "*.run"), ["map"], engine="stream")
    assert [r.name for r in result.runs] == ["a.run", "b.run"]
    with pytest.raises(InputError, match="matches no file"):
        evaluate(QRELS, str(tmp_path / "*.none"), ["map"], engine="stream")


def test_engine_choice_errors() -> None:
    with pytest.raises(ConventionError, match="unknown engine 'spark'"):
        get_engine("spark")
    with pytest.raises(ConventionError, match="scheduler address is for the dask engine"):
        get_engine("stream", scheduler="tcp://localhost:8786")
    assert isinstance(get_engine(None), LocalEngine)


def test_dask_engine_without_dask_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from stagewise.engines import _dask

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(StagewiseError, match=r"pip install 'stagewise\[dask\]'"):
        _dask.DaskEngine()


def test_compare_gives_the_same_output_on_the_stream_engine(files) -> None:
    runs = {"results.test": RUN, "trunc": str(files["trunc_grouped"])}
    for test in ("randomization", "bootstrap", "t"):
        local = compare(QRELS, runs, ["map", "ndcg@10", "P@10"], test=test, seed=11, resamples=2000)
        streamed = compare(QRELS, runs, ["map", "ndcg@10", "P@10"], test=test, seed=11, resamples=2000,
                           engine="stream")
        assert render(streamed, "json", per_query=True) == render(local, "json", per_query=True)


# --------------------------------------------------------------------------------------------------- fusion
@pytest.fixture(scope="module")
def robust_sorted(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if not (ROBUST / "runs").is_dir():
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    folder = tmp_path_factory.mktemp("robust")
    names = sorted(p.name for p in (ROBUST / "runs").iterdir())[:3]
    return [str(sorted_copy(ROBUST / "runs" / n, folder / n.removesuffix(".gz"))) for n in names]


FUSIONS = [
    ("rrf", {}),
    ("combmnz", {"norm": "zscore", "depth": 200}),
    ("combsum", {"queries": "intersection"}),
    ("bordafuse", {"depth": 50}),
    ("wsum", {"weights": [0.5, 0.3, 0.2], "missing": "min"}),
]


def fused_bytes(runs, method: str, options: dict) -> tuple[bytes, dict]:
    fused = fuse(runs, method, **options)
    sink = io.BytesIO()
    write_trec_run(fused, sink)
    return sink.getvalue(), fused.fusion


@pytest.mark.parametrize(("method", "options"), FUSIONS)
def test_stream_fusion_writes_the_local_bytes(robust_sorted: list[str], method: str, options: dict) -> None:
    want, statement = fused_bytes(robust_sorted, method, options)
    for engine in (StreamEngine(block_bytes=300_000), StreamEngine()):
        sink = io.BytesIO()
        assert fuse_to(robust_sorted, sink, method, engine=engine, **options) == statement
        assert sink.getvalue() == want


def test_stream_fusion_refuses_unsorted_runs_and_learned_methods(tmp_path: Path) -> None:
    run = tmp_path / "a.run"
    run.write_text("q2 Q0 d1 1 2.0 t\nq1 Q0 d1 1 2.0 t\n")
    with pytest.raises(InputError, match="not sorted by query id") as raised:
        fuse_to([str(run), str(run)], io.BytesIO(), "rrf", engine="stream")
    assert raised.value.line == 2 and "LC_ALL=C sort -k1,1 -s" in str(raised.value)
    with pytest.raises(StagewiseError, match="--engine local"):
        fuse_to([str(run)], io.BytesIO(), "probfuse", engine="stream")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(qrels_and_run(), min_size=2, max_size=3),
    method=st.sampled_from(["rrf", "combmnz", "combsum(norm=zscore)", "bordafuse", "condorcet"]),
    block_bytes=st.integers(1, 200),
)
def test_stream_fusion_matches_local_on_random_runs(runs, method: str, block_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, (_, text) in enumerate(runs):
            raw = Path(folder) / f"r{i}.raw"
            raw.write_text(text)
            paths.append(str(sorted_copy(raw, Path(folder) / f"r{i}")))
        name, _, rest = method.partition("(")
        options = {"norm": rest.rstrip(")").split("=")[1]} if rest else {}
        want, statement = fused_bytes(paths, name, options)
        sink = io.BytesIO()
        assert fuse_to(paths, sink, name, engine=StreamEngine(block_bytes=block_bytes), **options) == statement
        assert sink.getvalue() == want


# ------------------------------------------------------------------------------------------------------ CLI
def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_cli_eval_and_compare_print_the_same_bytes_on_the_stream_engine(files) -> None:
    runs = [RUN, str(files["trunc_grouped"])]
    for command in (["eval", QRELS, *runs, "-m", "map,ndcg@10,bpref", "-f", "json", "-q"],
                    ["compare", QRELS, *runs, "-m", "map", "--test", "randomization", "--seed", "4", "-f", "json"]):
        local, streamed = invoke(*command), invoke(*command, "--engine", "stream")
        assert local.exit_code == 0, local.output
        assert streamed.exit_code == 0, streamed.output
        assert streamed.stdout == local.stdout


def test_cli_fuse_writes_the_same_run_and_metadata(robust_sorted: list[str], tmp_path: Path) -> None:
    outputs = {}
    for engine in ("local", "stream"):
        out = tmp_path / f"{engine}.run"
        result = invoke("fuse", *robust_sorted, "-m", "combmnz", "--depth", "100", "--engine", engine, "-o", str(out))
        assert result.exit_code == 0, result.output
        outputs[engine] = (out.read_bytes(), (tmp_path / f"{engine}.run.meta.json").read_bytes())
    assert outputs["stream"] == outputs["local"]


def test_cli_failures_are_one_line() -> None:
    assert_clean_failure(invoke("eval", QRELS, TRUNC, "--engine", "stream"), "results.trunc:3", "sort -k1,1 -s")
    assert_clean_failure(invoke("eval", QRELS, RUN, "--scheduler", "tcp://x:1"), "--engine dask")
    assert_clean_failure(invoke("fuse", RUN, RUN, "--optimize", "--qrels", QRELS, "--engine", "stream"),
                         "--engine local")


# ----------------------------------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def dask_client():
    """One two-worker cluster for the module (a cluster takes seconds to start)."""
    distributed = pytest.importorskip("distributed", reason="dask's distributed is not installed: stagewise[dask]")
    cluster = distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=":0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def dask_engine(client, partition_bytes: int = 3000, block_bytes: int = 1000):
    from stagewise.engines import DaskEngine

    return DaskEngine(client=client, partition_bytes=partition_bytes, block_bytes=block_bytes)


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_dask_matches_local_on_every_family(dask_client, files, missing: str) -> None:
    runs = [RUN, str(files["trunc_grouped"])]
    expected = evaluate_local(QRELS, runs, METRICS, missing=missing)
    for partition_bytes in (2000, 1 << 30):
        engine = dask_engine(dask_client, partition_bytes)
        assert_same(expected, evaluate(QRELS, runs, METRICS, engine=engine, missing=missing))


def test_dask_on_trec_eval_test_files_and_other_formats(dask_client, trec_eval_test: Path, tmp_path: Path) -> None:
    packed = tmp_path / "results.test.gz"
    packed.write_bytes(gzip.compress((trec_eval_test / "results.test").read_bytes()))
    as_csv = tmp_path / "results.csv"
    from stagewise.data.readers import read_run

    read_run(trec_eval_test / "results.test").to_polars().write_csv(as_csv)
    pairs = [("qrels.test", "results.test"), ("qrels-302.test", "results-302.test")]
    for qrels, run in pairs:
        grouped = grouped_copy(trec_eval_test / run, tmp_path / run)
        expected = evaluate_local(trec_eval_test / qrels, {run: trec_eval_test / run}, METRICS)
        got = evaluate(trec_eval_test / qrels, {run: grouped}, METRICS, engine=dask_engine(dask_client))
        assert_same(expected, got)
    expected = evaluate_local(QRELS, {"gz": str(packed), "csv": str(as_csv)}, METRICS)
    assert_same(expected, evaluate(QRELS, {"gz": str(packed), "csv": str(as_csv)}, METRICS,
                                   engine=dask_engine(dask_client)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(pair=qrels_and_run(), partition_bytes=st.integers(1, 400), missing=st.sampled_from(["zero", "skip"]))
def test_dask_matches_local_on_random_runs(dask_client, pair, partition_bytes: int, missing: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = write_pair(folder, *pair)
        engine = dask_engine(dask_client, partition_bytes, block_bytes=64)
        try:
            expected = evaluate_local(qrels, [run, run], METRICS, missing=missing)
        except StagewiseError as exc:
            with pytest.raises(StagewiseError) as raised:
                evaluate(qrels, [run, run], METRICS, engine=engine, missing=missing)
            assert str(raised.value) == str(exc)
            return
        assert_same(expected, evaluate(qrels, [run, run], METRICS, engine=engine, missing=missing))


def test_dask_refuses_a_run_split_between_partitions(dask_client, tmp_path: Path) -> None:
    lines = Path(RUN).read_bytes().splitlines(keepends=True)
    run = tmp_path / "run"
    run.write_bytes(b"".join(lines) + lines[0])
    with pytest.raises(InputError, match="not grouped by query") as raised:
        evaluate(QRELS, str(run), ["map"], engine=dask_engine(dask_client, partition_bytes=5000))
    assert "LC_ALL=C sort -k1,1 -s" in str(raised.value)
    bad = tmp_path / "bad"  # an error inside a later partition names the file's line
    bad.write_bytes(b"".join(lines[:900]) + b"301 Q0 DOC 1 notanumber tag\n" + b"".join(lines[900:]))
    with pytest.raises(InputError) as local:
        evaluate_local(QRELS, str(bad), ["map"])
    with pytest.raises(InputError) as remote:
        evaluate(QRELS, str(bad), ["map"], engine=dask_engine(dask_client, partition_bytes=5000))
    assert str(remote.value) == str(local.value) and remote.value.line == 901


def test_dask_compare_gives_the_same_p_values(dask_client, files) -> None:
    runs = {"results.test": RUN, "trunc": str(files["trunc_grouped"])}
    for test in ("randomization", "bootstrap"):
        local = compare(QRELS, runs, ["map", "ndcg@10"], test=test, seed=5, resamples=3000)
        remote = compare(QRELS, runs, ["map", "ndcg@10"], test=test, seed=5, resamples=3000,
                         engine=dask_engine(dask_client))
        assert render(remote, "json", per_query=True) == render(local, "json", per_query=True)


@pytest.mark.parametrize(("method", "options"), FUSIONS)
def test_dask_fusion_writes_the_local_bytes(dask_client, robust_sorted: list[str], method: str, options: dict) -> None:
    want, statement = fused_bytes(robust_sorted, method, options)
    for partition_bytes in (2_000_000, 1 << 30):
        sink = io.BytesIO()
        engine = dask_engine(dask_client, partition_bytes, block_bytes=1 << 20)
        assert fuse_to(robust_sorted, sink, method, engine=engine, **options) == statement
        assert sink.getvalue() == want


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(runs=st.lists(qrels_and_run(), min_size=2, max_size=3), partition_bytes=st.integers(1, 300))
def test_dask_fusion_matches_local_on_random_runs(dask_client, runs, partition_bytes: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, (_, text) in enumerate(runs):
            raw = Path(folder) / f"r{i}.raw"
            raw.write_text(text)
            paths.append(str(sorted_copy(raw, Path(folder) / f"r{i}")))
        want, statement = fused_bytes(paths, "combmnz", {})
        sink = io.BytesIO()
        assert fuse_to(paths, sink, "combmnz", engine=dask_engine(dask_client, partition_bytes, 64)) == statement
        assert sink.getvalue() == want


def test_cli_dask_engine_starts_a_local_cluster(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="dask's distributed is not installed: stagewise[dask]")
    command = ["eval", QRELS, RUN, "-m", "map,ndcg@10,err", "-f", "json", "-q"]
    local, remote = invoke(*command), invoke(*command, "--engine", "dask")
    assert remote.exit_code == 0, remote.output
    assert remote.stdout == local.stdout


def test_dask_reports_progress_as_the_cluster_finishes_tasks(dask_client) -> None:
    from stagewise.engines import DaskEngine

    seen: list[tuple[int, int]] = []
    engine = DaskEngine(client=dask_client, partition_bytes=5000, progress=lambda *report: seen.append(report))
    evaluate(QRELS, [RUN, RUN], ["map"], engine=engine)
    total = seen[-1][1]
    assert total > 2 and seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == list(range(total + 1))


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw.rstrip(b"\n"),  # no newline at the end
        lambda raw: raw.replace(b"\n", b"\r\n"),  # CRLF
        lambda raw: b"# header\n" + raw.replace(b"\n301 ", b"\n# note\n\n301 ", 3),  # comments, blank lines
        lambda raw: b"\xef\xbb\xbf" + raw,  # a byte-order mark
    ],
    ids=["no-final-newline", "crlf", "comments", "bom"],
)
def test_stream_reads_what_the_local_reader_reads(tmp_path: Path, change) -> None:
    run = tmp_path / "run"
    run.write_bytes(change(Path(RUN).read_bytes()))
    expected = evaluate_local(QRELS, {"r": str(run)}, ["map", "ndcg@10", "bpref"])
    for block_bytes in (50, 3000, 1 << 30):
        engine = StreamEngine(block_bytes=block_bytes)
        got = evaluate(QRELS, {"r": str(run)}, ["map", "ndcg@10", "bpref"], engine=engine)
        assert_same(expected, got)
