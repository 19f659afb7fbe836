"""Pools: equal to trectools' on the 17 TREC 2003 Robust runs (depth-k, rrf, rbp), to slow naive pools written
here on random runs, and the command line's layouts and errors."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.assess import STRATEGIES, make_pool
from stagewise.assess.catalogue import parse_strategy
from stagewise.cli import app
from stagewise.errors import ConventionError, InputError

ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"
RUN_FILES = sorted(str(p) for p in (ROBUST / "runs").glob("input.*.gz"))


# ------------------------------------------------------------------------------------------- trectools


@pytest.fixture(scope="module")
def robust() -> tuple[list, list]:
    """trectools' runs and ours, read once (trectools takes about 10 s to read the 17 files)."""
    trectools = pytest.importorskip("trectools")
    if len(RUN_FILES) != 17:
        pytest.skip(f"the TREC 2003 Robust runs are not at {ROBUST} (../shared is absent)")
    from stagewise.data.readers import read_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' FutureWarnings inside trectools
        theirs = [trectools.TrecRun(f) for f in RUN_FILES]
    return theirs, read_runs(RUN_FILES)


def _theirs(runs: list, strategy: str, **options) -> dict[str, set[str]]:
    from trectools import TrecPoolMaker

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = TrecPoolMaker().make_pool(runs, strategy, **options)
    return {str(q): set(docs) for q, docs in pool.pool.items()}


@pytest.mark.parametrize("k", [10, 100])
def test_depth_k_pools_equal_trectools_topx(robust: tuple[list, list], k: int) -> None:
    theirs, ours = robust
    pool = make_pool(ours, f"depth:{k}", ranking="trectools")
    expected = _theirs(theirs, "topX", topX=k)
    assert pool.to_dict() == expected
    assert len(pool) == sum(len(d) for d in expected.values())


@pytest.mark.parametrize(("strategy", "order"), [("rrf", "rrf"), ("rbp", "rbp")])
def test_rrf_and_rbp_pools_equal_trectools(robust: tuple[list, list], strategy: str, order: str) -> None:
    """trectools' rrf and rbp pools read the rank column as written (several runs start at rank 0)."""
    theirs, ours = robust
    pool = make_pool(ours, f"take(n=100,order={order})", ranking="rank")
    assert pool.to_dict() == _theirs(theirs, strategy, topX=100)


def test_coverage_equals_trectools_check_coverage(robust: tuple[list, list]) -> None:
    from trectools import TrecPool

    theirs, ours = robust
    pool = make_pool(ours, "depth:5", ranking="trectools", coverage_at=20)
    reference = TrecPool(pool.to_dict())
    for run, contribution in zip(theirs[:4], pool.contributions[:4], strict=True):
        assert contribution.coverage == pytest.approx(reference.check_coverage(run, topX=20), abs=1e-12)


# ------------------------------------------------------------------------------- naive references


def _random_runs(seed: int, n_runs: int, n_queries: int, n_docs: int) -> list[dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in range(n_queries):
            docs = rng.sample(range(n_docs), rng.randint(1, n_docs))
            run[f"q{q}"] = {f"d{d}": float(rng.randint(0, 6)) for d in docs}  # ties on purpose
        runs.append(run)
    return runs


def _ranked(run: dict[str, float]) -> list[str]:
    """trectools' order: score descending, then doc id ascending."""
    return sorted(run, key=lambda d: (-run[d], d))


def _naive_depth(runs: list[dict], k: int, judged: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for run in runs:
        for q, scores in run.items():
            out.setdefault(q, set()).update(d for d in _ranked(scores)[:k] if d not in judged.get(q, set()))
    return out


def _naive_rrf(runs: list[dict], n: int, rrf_k: float, judged: dict[str, set[str]]) -> dict[str, set[str]]:
    fused: dict[str, dict[str, float]] = {}
    for run in runs:
        for q, scores in run.items():
            for rank, d in enumerate(_ranked(scores), start=1):
                if d not in judged.get(q, set()):
                    fused.setdefault(q, {}).setdefault(d, 0.0)
                    fused[q][d] += 1.0 / (rrf_k + rank)
    return {q: set(sorted(v, key=lambda d: (-v[d], d))[:n]) for q, v in fused.items()}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(1, 6), n_runs=st.integers(1, 4))
def test_depth_pool_equals_a_naive_union_with_judged_left_out(seed: int, k: int, n_runs: int) -> None:
    runs = _random_runs(seed, n_runs, 3, 8)
    judged = {"q0": {"d1", "d2"}, "q2": {"d5"}}
    qrels = {q: {d: 1 for d in docs} for q, docs in judged.items()}
    pool = make_pool(runs, f"depth(k={k})", ranking="trectools", qrels=qrels)
    expected = _naive_depth(runs, k, judged)
    assert {q: d for q, d in pool.to_dict().items() if d} == {q: d for q, d in expected.items() if d}
    # every pooled document's contributors have it in their first k
    for entry in pool.entries:
        for name in entry.runs:
            index = 0 if name == "run" else int(name.split("#")[1]) - 1
            assert entry.doc_id in _ranked(runs[index][entry.query_id])[:k]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 6), n_runs=st.integers(1, 4))
def test_rrf_take_pool_equals_a_naive_fusion(seed: int, n: int, n_runs: int) -> None:
    runs = _random_runs(seed, n_runs, 3, 8)
    judged = {"q1": {"d0", "d3"}}
    pool = make_pool(runs, f"take(n={n},order=rrf,rrf_k=10)", ranking="trectools", qrels={"q1": {"d0": 0, "d3": 2}})
    assert {q: d for q, d in pool.to_dict().items() if d} == _naive_rrf(runs, n, 10.0, judged)
    # the judging order is the fused value, highest first
    for q in pool.queries:
        values = [e.priority for e in pool.entries if e.query_id == q]
        assert values == sorted(values, reverse=True)


def test_unique_counts_documents_one_run_alone_contributed() -> None:
    runs = [{"q": {"a": 3, "b": 2, "c": 1}}, {"q": {"b": 3, "d": 2, "e": 1}}, {"q": {"b": 5, "f": 4}}]
    pool = make_pool(runs, "depth:2", ranking="trectools")
    assert sorted(e.doc_id for e in pool.entries) == ["a", "b", "d", "f"]
    assert [(c.contributed, c.unique) for c in pool.contributions] == [(2, 1), (2, 1), (2, 1)]
    assert next(e for e in pool.entries if e.doc_id == "b").runs == ("run", "run#2", "run#3")
    # depth's judging order: best rank, then how many runs pooled it, then doc id
    assert [e.doc_id for e in pool.entries] == ["b", "a", "d", "f"]


def test_mtf_stays_on_a_run_that_finds_relevant_documents() -> None:
    """Run 1's first document is known relevant: the walk stays on run 1 for its next one; run 2's first
    is not, so after it the walk goes back to run 1."""
    runs = [{"q": {"r": 9, "a": 8, "b": 7, "c": 6}}, {"q": {"x": 9, "y": 8, "z": 7}}]
    pool = make_pool(runs, "mtf(n=4)", ranking="trectools", qrels={"q": {"r": 1}})
    assert [e.doc_id for e in pool.entries] == ["a", "x", "b", "y"]
    assert pool.judged_left_out == 1
    # without feedback the walk alternates
    assert [e.doc_id for e in make_pool(runs, "mtf(n=4)", ranking="trectools").entries] == ["r", "x", "a", "y"]


def test_shuffled_order_is_seeded_and_a_permutation_within_each_query() -> None:
    runs = _random_runs(5, 3, 4, 30)
    plain = make_pool(runs, "depth:10")
    one = make_pool(runs, "depth:10", shuffle=True, seed=11)
    again = make_pool(runs, "depth:10", shuffle=True, seed=11)
    other = make_pool(runs, "depth:10", shuffle=True, seed=12)
    assert one.entries == again.entries
    assert one.to_dict() == plain.to_dict()
    assert [e.doc_id for e in one.entries] != [e.doc_id for e in plain.entries]
    assert [e.doc_id for e in one.entries] != [e.doc_id for e in other.entries]
    for q in one.queries:
        orders = [e.order for e in one.entries if e.query_id == q]
        assert orders == list(range(1, len(orders) + 1))


def test_rankings_differ_only_where_scores_tie() -> None:
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    assert [e.doc_id for e in make_pool([run], "depth:1").entries] == ["b"]  # trec_eval: doc id descending
    assert [e.doc_id for e in make_pool([run], "depth:1", ranking="trectools").entries] == ["a"]


# ------------------------------------------------------------------------------------------ the grammar


def test_strategy_spellings_read_as_one_value() -> None:
    assert str(parse_strategy("depth:10")) == str(parse_strategy("depth(k=10)")) == str(parse_strategy("depth@10"))
    assert str(parse_strategy("take:50(rbp)")) == "take(n=50,order=rbp)"
    assert str(parse_strategy("TAKE(n=5, order=rrf, rrf_k=10)")) == "take(n=5,order=rrf,rrf_k=10)"
    for name in STRATEGIES.names():
        value = parse_strategy(name)
        assert parse_strategy(str(value)) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("wide:10", "choose one of depth, take, mtf"),
        ("depth(k=0)", "must be an int >= 1"),
        ("take(n=5,order=borda)", "one of rrf, rbp, combsum"),
        ("depth(n=5)", "its parameters: k"),
    ],
)
def test_a_bad_strategy_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConventionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_pool([{"q": {"a": 1.0}}], text)


def test_bad_options_fail_before_reading() -> None:
    with pytest.raises(ConventionError, match="pool ranking"):
        make_pool(["/no/such/run"], "depth:1", ranking="bm25")
    with pytest.raises(ConventionError, match="shuffle"):
        make_pool(["/no/such/run"], "depth:1", seed=3)
    with pytest.raises(InputError):
        make_pool([], "depth:1")


# ----------------------------------------------------------------------------------------- the command


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    runs = _random_runs(9, 2, 2, 12)
    paths = {}
    for i, run in enumerate(runs):
        path = tmp_path / f"r{i}.run"
        lines = []
        for q, scores in run.items():
            for rank, d in enumerate(_ranked(scores), start=1):
                lines.append(f"{q} Q0 {d} {rank} {scores[d]} r{i}\n")
        path.write_text("".join(lines))
        paths[f"r{i}"] = path
    qrels = tmp_path / "judged.qrels"
    qrels.write_text("q0 0 d1 1\nq0 0 d2 0\nq1 0 d3 2\n")
    paths["qrels"] = qrels
    return paths


def test_pool_command_writes_trec_with_qrels_first(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pool.txt"
    args = ["pool", str(files["qrels"]), str(files["r0"]), str(files["r1"]), "-s", "depth:3", "-o", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    expected = make_pool([files["r0"], files["r1"]], "depth(k=3)", qrels=files["qrels"])
    lines = [line.split() for line in out.read_text().splitlines()]
    assert [(f[0], f[2], int(f[3])) for f in lines] == [(e.query_id, e.doc_id, e.order) for e in expected.entries]
    assert {f[1] for f in lines} == {"Q0"} and {f[5] for f in lines} == {"depth(k=3)"}
    assert not {("q0", "d1"), ("q0", "d2"), ("q1", "d3")} & {(f[0], f[2]) for f in lines}
    assert "contributed" in done.output  # the summary, on stderr


def test_pool_command_writes_jsonl_by_extension(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pool.jsonl"
    args = ["pool", str(files["r0"]), str(files["r1"]), "-s", "take:4(rbp)", "--shuffle", "--seed", "1", "-o", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(records[0]) == {"query_id", "doc_id", "order", "priority", "runs"}
    assert len(records) == 8


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-s", "depth(k=-1)"], "must be an int >= 1"),
        (["--ranking", "best"], "pool ranking"),
        (["--seed", "3"], "shuffle"),
    ],
)
def test_pool_command_errors_are_one_line(files: dict[str, Path], extra: list[str], message: str) -> None:
    done = CliRunner().invoke(app, ["pool", str(files["r0"]), *extra])
    assert done.exit_code == 2
    assert message in done.output and "Traceback" not in done.output


@pytest.mark.parametrize(
    ("spelling", "said"), [("depth:-5", "Got -5"), ("take:0(rrf)", "Got 0"), ("depth:x", "Got 'x'")]
)
def test_a_bad_size_in_the_colon_spelling_names_the_parameter(spelling, said):
    """``depth:-5`` is the depth strategy with a bad size, not an unknown strategy named 'depth:-5'."""
    from stagewise.assess.catalogue import parse_strategy
    from stagewise.errors import ConventionError

    with pytest.raises(ConventionError, match="must be an int >= 1") as raised:
        parse_strategy(spelling)
    assert said in str(raised.value)


def test_the_same_run_twice_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\n")
    result = CliRunner().invoke(app, ["pool", str(run), str(tmp_path / "." / "r.run")])
    assert result.exit_code == 2, result.output
    assert "the same file as" in result.output and "Traceback" not in result.output
