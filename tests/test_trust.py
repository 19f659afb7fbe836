"""How far the qrels can be trusted (stagewise.assess.qrels_trust, stagewise trust): leave-one-run-out and
leave-one-group-out against a slow naive reference written here (sets of pooled pairs, AP and P@k by their
definitions), score bounds that bracket every labelling of the unjudged documents for precision, the ranking
agreement against the correlation functions, and the figures docs/assess.md gives for the 17 TREC 2003 Robust
runs computed here."""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.assess import TrustOptions, kendall_tau, trust
from stagewise.assess.qrels_trust import read_groups, run_groups
from stagewise.cli import app
from stagewise.errors import ConventionError, InputError
from stagewise.report import render

SHARED = Path(__file__).resolve().parents[2] / "shared"
ROBUST = SHARED / "data" / "trec_robust03_runs"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "assess.md"


# -- the naive reference --------------------------------------------------------------------------------------


def ranking(run: dict[str, dict[str, float]], query: str) -> list[str]:
    """trec_eval's order: score descending compared in single precision, then doc id descending."""
    by_doc = sorted(run.get(query, {}).items(), key=lambda x: x[0], reverse=True)
    return [d for d, _ in sorted(by_doc, key=lambda x: -float(np.float32(x[1])))]


def top(run: dict[str, dict[str, float]], depth: int) -> set[tuple[str, str]]:
    return {(q, d) for q in run for d in ranking(run, q)[:depth]}


def naive_ap(run: dict, qrels: dict, query: str) -> float:
    relevant = {d for d, label in qrels[query].items() if label >= 1}
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for i, d in enumerate(ranking(run, query), 1):
        if d in relevant:
            found += 1
            total += found / i
    return total / len(relevant)


def naive_p(run: dict, qrels: dict, query: str, k: int) -> float:
    return sum(1 for d in ranking(run, query)[:k] if qrels[query].get(d, 0) >= 1) / k


def naive_mean(run: dict, qrels: dict, metric: str) -> float:
    queries = sorted(qrels)  # every judged query; one the run lacks scores 0 (missing="zero")
    if not queries:
        return math.nan  # no judgement left
    if metric == "map":
        values = [naive_ap(run, qrels, q) for q in queries]
    else:
        k = int(metric.split("@")[1])
        values = [naive_p(run, qrels, q, k) for q in queries]
    return sum(values) / len(values)


def naive_leave_out(qrels: dict, runs: dict, groups: dict[str, str], depth: int, metric: str) -> dict[str, tuple]:
    """{run: (unique pairs, judged removed, reduced score, rank, reduced rank)}, by the definition."""
    full = {name: naive_mean(run, qrels, metric) for name, run in runs.items()}
    out = {}
    for group in set(groups.values()):
        members = [n for n in runs if groups[n] == group]
        mine = set().union(*(top(runs[n], depth) for n in members))
        others = set().union(*(top(runs[n], depth) for n in runs if groups[n] != group))
        unique = mine - others
        reduced_qrels = {q: {d: lab for d, lab in docs.items() if (q, d) not in unique} for q, docs in qrels.items()}
        reduced_qrels = {q: docs for q, docs in reduced_qrels.items() if docs}
        removed = sum(1 for q, docs in qrels.items() for d in docs if (q, d) in unique)
        reduced = {n: naive_mean(runs[n], reduced_qrels, metric) for n in members}
        mixed = {**full, **reduced}
        for n in members:
            rank = 1 + sum(1 for m, v in full.items() if m != n and v > full[n])
            reduced_rank = 1 + sum(1 for m, v in mixed.items() if m != n and v > reduced[n])
            reduced_rank = rank if math.isnan(reduced[n]) else reduced_rank
            out[n] = (len(unique), removed, reduced[n], rank, reduced_rank)
    return out


@st.composite
def collections(draw: st.DrawFn) -> tuple[dict, dict]:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_queries, n_runs, n_docs = draw(st.integers(1, 4)), draw(st.integers(2, 5)), draw(st.integers(3, 14))
    docs = [f"d{i:02d}" for i in range(n_docs)]
    queries = [f"q{i}" for i in range(n_queries)]
    qrels: dict[str, dict[str, int]] = {}
    for q in queries:
        judged = rng.sample(docs, rng.randint(1, n_docs))
        qrels[q] = {d: rng.choice([0, 0, 1, 2]) for d in judged}
    runs = {}
    for r in range(n_runs):
        run = {}
        for q in queries:
            if rng.random() < 0.9:
                chosen = rng.sample(docs, rng.randint(1, n_docs))
                run[q] = {d: rng.random() for d in chosen}  # distinct scores: no tie to break
        if not run:
            run[queries[0]] = {docs[0]: 1.0}
        runs[f"run{r}"] = run
    return qrels, runs


def check_against_naive(qrels: dict, runs: dict, groups: dict[str, str], depth: int, metric: str) -> None:
    report = trust(qrels, runs, metric=metric, depth=depth, group_by=groups)
    expected = naive_leave_out(qrels, runs, groups, depth, metric)
    assert {r.run for r in report.left_out} == set(runs)
    for row in report.left_out:
        unique, removed, reduced, rank, reduced_rank = expected[row.run]
        assert row.score == pytest.approx(naive_mean(runs[row.run], qrels, metric), abs=1e-12)
        assert (row.unique_pairs, row.judged_removed) == (unique, removed), row
        assert row.reduced_score == pytest.approx(reduced, abs=1e-12, nan_ok=True), row
        assert (row.rank, row.reduced_rank) == (rank, reduced_rank), row


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(1, 6), st.sampled_from(["map", "P@3"]))
def test_leave_one_run_out_equals_the_naive_reference(data: tuple[dict, dict], depth: int, metric: str) -> None:
    qrels, runs = data
    check_against_naive(qrels, runs, {n: n for n in runs}, depth, metric)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(1, 6), st.integers(0, 2**16))
def test_leave_one_group_out_equals_the_naive_reference(data: tuple[dict, dict], depth: int, seed: int) -> None:
    qrels, runs = data
    rng = random.Random(seed)
    groups = {n: f"g{rng.randint(0, 1)}" for n in runs}
    groups[next(iter(runs))], groups[list(runs)[-1]] = "g0", "g1"  # two groups at least
    check_against_naive(qrels, runs, groups, depth, "map")


# -- score bounds ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections(), st.integers(1, 5), st.integers(0, 2**16))
def test_precision_bounds_bracket_every_labelling_of_the_unjudged(data: tuple[dict, dict], k: int, seed: int) -> None:
    qrels, runs = data
    report = trust(qrels, runs, metric=f"P@{k}", depth=k)
    rng = random.Random(seed)
    for b in report.bounds:
        run = runs[b.run]
        unjudged = [(q, d) for q in qrels for d in ranking(run, q)[:k] if d not in qrels[q]]
        assert b.unjudged == len(unjudged)
        assert b.if_nonrelevant == pytest.approx(b.score, abs=1e-12)  # precision reads unjudged as non-relevant
        everything = {q: {**docs, **{d: 1 for qq, d in unjudged if qq == q}} for q, docs in qrels.items()}
        assert b.if_relevant == pytest.approx(naive_mean(run, everything, f"P@{k}"), abs=1e-12)
        for _ in range(5):  # any labelling of the unjudged documents lies between the two fillings
            some = {
                q: {**docs, **{d: rng.choice([0, 1, 2]) for qq, d in unjudged if qq == q}} for q, docs in qrels.items()
            }
            value = naive_mean(run, some, f"P@{k}")
            assert b.low - 1e-12 <= value <= b.high + 1e-12
        assert b.low <= b.score <= b.high


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    collections(),
    st.integers(1, 5),
    st.sampled_from(["dcg@{k}", "rbp(p=0.8,rel=1)", "rbp(p=0.8,scale=False)"]),
    st.integers(0, 2**16),
)
def test_dcg_and_rbp_bounds_bracket_every_labelling_up_to_the_stated_label(
    data: tuple[dict, dict], k: int, metric: str, seed: int
) -> None:
    from stagewise import evaluate

    qrels, runs = data
    metric = metric.format(k=k)
    report = trust(qrels, runs, metric=metric, depth=k, bound_label=2)
    rng = random.Random(seed)
    for b in report.bounds:
        unjudged = [(q, d) for q in qrels for d in ranking(runs[b.run], q)[:k] if d not in qrels[q]]
        # labels from 0 to the bound's label: a gain never falls as a label rises (not so for rbp's default,
        # which scales gains by the query's top label, nor for err)
        for _ in range(3):
            some = {
                q: {**docs, **{d: rng.choice([0, 1, 2]) for qq, d in unjudged if qq == q}} for q, docs in qrels.items()
            }
            value = evaluate(some, {b.run: runs[b.run]}, [metric]).means[b.run][metric]
            assert b.if_nonrelevant - 1e-12 <= value <= b.if_relevant + 1e-12


def test_bounds_of_a_measure_that_counts_judged_non_relevant_documents_differ_from_its_score() -> None:
    # bpref reads an unjudged document as nothing, a judged non-relevant one as a penalty: the 0 filling lowers it
    qrels = {"q": {"a": 1, "b": 0}}
    runs = {"x": {"q": {"u": 3.0, "a": 2.0}}, "y": {"q": {"a": 3.0, "b": 2.0}}}
    b = trust(qrels, runs, metric="bpref", depth=2).bounds[0]
    assert (b.unjudged, b.score, b.if_nonrelevant, b.if_relevant) == (1, 1.0, 0.0, 1.0)


def test_the_label_and_depth_of_the_bounds_are_stated_and_used() -> None:
    qrels = {"q": {"a": 2, "b": 0}}
    runs = {"x": {"q": {"u": 3.0, "a": 2.0, "v": 1.0}}, "y": {"q": {"a": 3.0}}}
    one = trust(qrels, runs, metric="ndcg@3(gain=exp)", depth=1).bounds[0]
    two = trust(qrels, runs, metric="ndcg@3(gain=exp)", depth=1, bound_label=2, bound_depth=3).bounds[0]
    assert (one.depth, one.label, one.unjudged, two.depth, two.label, two.unjudged) == (1, 1, 1, 3, 2, 2)
    assert two.if_relevant != one.if_relevant


# -- ranking agreement, options, errors -------------------------------------------------------------------------


def test_the_agreement_is_between_the_full_and_the_left_out_scores_and_a_second_qrels(tmp_path: Path) -> None:
    qrels = {"q1": {"a": 1, "b": 1, "c": 1, "d": 0}, "q2": {"a": 1, "e": 1}}
    runs = {
        "r1": {"q1": {"a": 4.0, "b": 3.0, "x": 2.0}, "q2": {"e": 1.0}},
        "r2": {"q1": {"c": 4.0, "a": 3.0}, "q2": {"a": 2.0, "e": 1.0}},
        "r3": {"q1": {"d": 4.0, "b": 3.0}, "q2": {"z": 1.0}},
    }
    other = tmp_path / "other.qrels"
    other.write_text("q1 0 d 1\nq1 0 a 0\nq2 0 z 1\n")
    report = trust(qrels, runs, metric="map", depth=1, other_qrels=str(other))
    full, reduced = dict(report.scores), {r.run: r.reduced_score for r in report.left_out}
    first, second = report.agreements
    assert first.kendall_tau == pytest.approx(kendall_tau(full, reduced), nan_ok=True)
    assert second.kendall_tau == pytest.approx(kendall_tau(full, dict(report.other_scores)), nan_ok=True)
    assert second.second == "other.qrels" and second.systems == 3
    assert math.isnan(second.tau_ap)  # two runs tie on the other qrels: undefined, and null in JSON
    data = json.loads(render(report, "json"))
    assert data["agreements"][1]["tau_ap"] is None and data["agreements"][1]["rbo"] is None


def test_options_are_one_value_with_overrides_and_wrong_ones_are_refused() -> None:
    qrels, runs = {"q": {"a": 1}}, {"x": {"q": {"a": 1.0}}, "y": {"q": {"b": 1.0}}}
    opts = TrustOptions(metric="P@1", depth=1)
    assert trust(qrels, runs, opts, relevance_level=2).conventions.relevance_level == 2
    assert trust(qrels, runs, opts, depth=5).options == TrustOptions(metric="P@1", depth=5)
    with pytest.raises(ConventionError, match="depth"):
        TrustOptions(depth=0)
    with pytest.raises(ConventionError, match="group_by"):
        TrustOptions(group_by="suffix")
    with pytest.raises(ConventionError, match=r"unknown keyword.*'colour'"):
        trust(qrels, runs, colour=1)
    with pytest.raises(InputError, match="at least two"):
        trust(qrels, {"x": runs["x"]})
    with pytest.raises(InputError, match="no group for run"):
        trust(qrels, runs, group_by={"x": "g"})


def test_groups_by_prefix_and_from_a_file(tmp_path: Path) -> None:
    from stagewise import read_run

    runs = [read_run({"q": {"d": 1.0}}, name=n) for n in ("UAmsT03RDesc", "UAmsT03RTitle", "pircRBa1", "x7")]
    assert run_groups(runs, "prefix") == ["UAmsT", "UAmsT", "pircRBa", "x"]
    assert run_groups(runs, "prefix:4") == ["UAms", "UAms", "pirc", "x7"]
    (tmp_path / "g.txt").write_text("# run group\nUAmsT03RDesc uva\nUAmsT03RTitle uva\n\npircRBa1 pirc\nx7 x\n")
    (tmp_path / "g.json").write_text(json.dumps({"UAmsT03RDesc": "uva"}))
    assert run_groups(runs, read_groups(tmp_path / "g.txt")) == ["uva", "uva", "pirc", "x"]
    assert read_groups(tmp_path / "g.json") == {"UAmsT03RDesc": "uva"}
    (tmp_path / "bad.txt").write_text("a b\nc d e\n")
    with pytest.raises(InputError, match=r"bad.txt:2: has 3 fields"):
        read_groups(tmp_path / "bad.txt")


# -- the command line ----------------------------------------------------------------------------------------


def _write(tmp_path: Path) -> tuple[str, list[str]]:
    (tmp_path / "q.qrels").write_text("q1 0 a 1\nq1 0 b 1\nq1 0 c 0\nq2 0 a 1\n")
    (tmp_path / "one.run").write_text("q1 Q0 a 1 3 one\nq1 Q0 c 2 2 one\nq2 Q0 a 1 1 one\n")
    (tmp_path / "two.run").write_text("q1 Q0 b 1 3 two\nq1 Q0 x 2 2 two\nq2 Q0 z 1 1 two\n")
    return str(tmp_path / "q.qrels"), [str(tmp_path / "one.run"), str(tmp_path / "two.run")]


def test_the_command_prints_the_table_and_json_of_the_library(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path)
    runner = CliRunner()
    table = runner.invoke(app, ["trust", qrels, *runs, "-m", "P@1", "--depth", "1"])
    assert table.exit_code == 0, table.output
    report = trust(qrels, {"one.run": runs[0], "two.run": runs[1]}, metric="P@1", depth=1)
    assert table.output == render(report, "table")
    assert "of 2 runs change rank" in table.output and "Kendall's tau" in table.output
    out = tmp_path / "t.json"
    written = runner.invoke(app, ["trust", qrels, *runs, "-m", "P@1", "-k", "1", "-o", str(out)])
    assert written.exit_code == 0, written.output
    data = json.loads(out.read_text())
    assert data["summary"]["runs_changing_rank"] == report.rank_changes
    assert [r["reduced_score"] for r in data["left_out"]] == [r.reduced_score for r in report.left_out]


def test_the_command_refuses_bad_input_on_one_line(tmp_path: Path) -> None:
    qrels, runs = _write(tmp_path)
    runner = CliRunner()
    bad_metric = runner.invoke(app, ["trust", qrels, *runs, "-m", "nope@3"])
    assert bad_metric.exit_code == 2 and bad_metric.output.startswith("stagewise: error:")
    assert "Traceback" not in bad_metric.output
    bad_depth = runner.invoke(app, ["trust", qrels, *runs, "--depth", "0"])
    assert bad_depth.exit_code == 2
    no_file = runner.invoke(app, ["trust", qrels, *runs, "--group-by", str(tmp_path / "missing.txt")])
    assert no_file.exit_code == 2 and "missing.txt" in no_file.output


# -- the 17 TREC 2003 Robust runs ----------------------------------------------------------------------------


def _robust_runs() -> dict[str, dict[str, dict[str, float]]]:
    runs = {}
    for path in sorted((ROBUST / "runs").glob("input.*.gz")):
        run: dict[str, dict[str, float]] = {}
        with gzip.open(path, "rt") as fh:
            for line in fh:
                q, _, d, _, s, _ = line.split()
                run.setdefault(q, {})[d] = float(s)
        runs[path.name] = run
    return runs


@pytest.mark.skipif(not ROBUST.exists(), reason="needs ../shared/data/trec_robust03_runs")
def test_robust_leave_one_run_out_matches_the_naive_pool_and_the_figures_in_the_docs() -> None:
    from stagewise import evaluate

    runs = _robust_runs()
    qrels_path = ROBUST / "robust03_qrels.txt"
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, label = line.split()
        qrels.setdefault(q, {})[d] = int(label)
    paths = {p.name: str(p) for p in sorted((ROBUST / "runs").glob("input.*.gz"))}
    report = trust(str(qrels_path), paths, metric="map", depth=100)
    # the naive pool (sets; ranks by score, then doc id descending), each run scored on its reduced qrels
    pooled = {name: top(run, 100) for name, run in runs.items()}
    for row in report.left_out:
        others = set().union(*(p for n, p in pooled.items() if n != row.run))
        unique = pooled[row.run] - others
        reduced = {q: {d: lab for d, lab in docs.items() if (q, d) not in unique} for q, docs in qrels.items()}
        assert row.unique_pairs == len(unique)
        assert row.judged_removed == sum(len(qrels[q]) - len(reduced[q]) for q in qrels)
        expected = evaluate(reduced, {row.run: paths[row.run]}, ["map"]).means[row.run]["map"]
        assert row.reduced_score == pytest.approx(expected, abs=1e-12)
    # docs/assess.md states the figures this computation gives
    text = DOCS.read_text(encoding="utf-8")
    big = report.largest_change
    assert f"{report.rank_changes} of 17 runs change rank" in text
    assert f"{big.run.removeprefix('input.').removesuffix('.gz')} ({big.change:+.4f}" in text
    tau = report.agreements[0].kendall_tau
    assert re.search(rf"Kendall's tau between the full and the left-out rankings\s+{tau:.4f}", text)


def test_the_command_leaves_out_groups_by_prefix_or_file_and_compares_a_second_qrels(tmp_path: Path) -> None:
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 1\nq1 0 c 0\nq1 0 d 1\nq2 0 a 1\nq2 0 e 0\n")
    rows = {"teamA1": "a c b", "teamA2": "c a e", "teamB1": "d b a"}
    paths = []
    for tag, docs in rows.items():
        path = tmp_path / f"{tag}.run"
        lines = [f"{q} Q0 {d} {i} {10 - i} {tag}" for q in ("q1", "q2") for i, d in enumerate(docs.split(), 1)]
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    (tmp_path / "groups.txt").write_text("teamA1 A\nteamA2 A\nteamB1 B\n")
    other = tmp_path / "other.qrels"
    other.write_text("q1 0 a 0\nq1 0 d 1\nq2 0 e 1\n")
    runner = CliRunner()
    common = ["trust", str(qrels), *paths, "-m", "map", "-k", "2", "--format", "json"]
    by_prefix = runner.invoke(app, [*common, "--group-by", "prefix:5", "--other-qrels", str(other)])
    by_file = runner.invoke(app, [*common, "--group-by", str(tmp_path / "groups.txt")])
    assert by_prefix.exit_code == 0 and by_file.exit_code == 0, by_prefix.output + by_file.output
    prefix, listed = json.loads(by_prefix.output), json.loads(by_file.output)
    groups = {"teamA1.run": "A", "teamA2.run": "A", "teamB1.run": "B"}
    named = {f"{t}.run": p for t, p in zip(rows, paths, strict=True)}
    expected = trust(str(qrels), named, metric="map", depth=2, group_by=groups)
    assert [r["reduced_score"] for r in listed["left_out"]] == [r.reduced_score for r in expected.left_out]
    assert [r["reduced_score"] for r in prefix["left_out"]] == [r.reduced_score for r in expected.left_out]
    assert [r["group"] for r in prefix["left_out"]] == ["teamA", "teamA", "teamB"]
    assert prefix["left_out_unit"] == "group (prefix:5)" and len(prefix["agreements"]) == 2
    assert prefix["agreements"][1]["second"] == "other.qrels"


def test_a_run_or_the_qrels_given_twice_is_refused(tmp_path: Path) -> None:
    qrels = tmp_path / "a.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\n")
    other = tmp_path / "s.run"
    other.write_text("q1 Q0 d2 1 3.0 s\n")
    again = str(tmp_path / "." / "r.run")
    for args in ([str(qrels), str(run), again], [str(qrels), str(run), str(other), "--other-qrels", str(qrels)]):
        result = CliRunner().invoke(app, ["trust", *args])
        assert result.exit_code == 2, result.output
        assert "the same file as" in result.output and "Traceback" not in result.output
