"""``stagewise trec_eval -R qrels_jg`` (judgement-group averages) and ``-Z`` (z-scores).

Oracles: trec_eval's expected outputs (``out.test.qrels_jg``, ``out.test.aqZ``: byte-identical in
``test_trec_eval_golden.py``), the naive trec_eval oracle (``tests/reference/naive_trec_eval.py``) run on each
judgement group's qrels alone and averaged (per topic, to 1e-9, on random worlds), and hand-worked z-scores.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import StagewiseError
from stagewise.trec_eval import judgement_groups as JG
from stagewise.trec_eval import measures as M
from stagewise.trec_eval.command import Flags, evaluate_command, run_trec_eval
from tests.reference.naive_trec_eval import evaluate_naive

runner = CliRunner()

# -- qrels_jg ---------------------------------------------------------------------------------------------------

DOCS = ("d1", "d10", "d2", "a", "B", "07", "7", "x-é")
QIDS = ("q1", "q10", "2", "10")
GROUPS = ("0", "1", "u2", "10")


@st.composite
def group_worlds(draw: st.DrawFn):
    """Judgements {qid: {group: {doc: label}}} (labels -1..4), a run {qid: [(doc, score)]} with frequent ties, and
    conventions (-l, -M, -J, -c)."""
    judgements = {}
    for qid in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=3, unique=True)):
        judgements[qid] = {}
        for group in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=3, unique=True)):
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=6, unique=True))
            judgements[qid][group] = {d: draw(st.sampled_from((-1, 0, 0, 1, 1, 2, 4))) for d in docs}
    run = {}
    for qid in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
        run[qid] = [(d, draw(st.sampled_from((0.0, 0.5, 1.0, 2.0)))) for d in docs]
    flags = Flags(
        level=draw(st.sampled_from((1, 2, 0))),
        max_ret=draw(st.sampled_from((None, 2, 4))),
        judged_only=draw(st.booleans()),
        complete=draw(st.booleans()),
    )
    return judgements, run, flags


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_worlds())
def test_group_averages_agree_with_the_naive_oracle_per_group(world) -> None:
    judgements, run, flags = world
    measures = ["map", "P.5,10", "Rprec_mult"]
    with tempfile.TemporaryDirectory() as folder:
        qrels_path, run_path = Path(folder) / "qrels_jg", Path(folder) / "run"
        qrels_path.write_text(
            "".join(f"{q} {g} {d} {r}\n" for q, gs in judgements.items() for g, ds in gs.items() for d, r in ds.items())
        )
        run_path.write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds))
        try:
            ctx = JG.group_context(JG.read_qrels_jg(str(qrels_path)), _read(run_path), flags.conventions())
        except StagewiseError:  # no topic in common without -c: the naive oracle has nothing either
            assert not flags.complete and not set(judgements) & set(run)
            return
        got = {}
        for item in M.expand(["map_avgjg", "P_avgjg.5,10", "Rprec_mult_avgjg"]):
            topics, arrays = JG.topic_values(item, ctx)
            for name, values in zip(item.names, arrays, strict=True):
                for qid, value in zip(topics, values.tolist(), strict=True):
                    got.setdefault(qid, {})[name.replace("_avgjg", "")] = value
    expected: dict[str, dict[str, float]] = {}
    for qid, groups in judgements.items():
        if qid not in run and not flags.complete:
            continue  # skipped, as without -c
        per_group = [
            evaluate_naive(
                {qid: labels}, run, measures, rel_level=flags.level, max_ret=flags.max_ret,
                complete=flags.complete, judged_only=flags.judged_only, float_scores=True,
            ).get(qid)
            for _, labels in sorted(groups.items())
        ]  # fmt: skip
        expected[qid] = {name: sum(v[name] for v in per_group) / len(per_group) for name in per_group[0]}
    assert got.keys() == expected.keys()
    for qid, values in expected.items():
        for name, value in values.items():
            assert got[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)


def _read(path: Path):
    from stagewise.data.readers import read_run

    return read_run(str(path), format="trec")


def test_a_document_judged_twice_in_one_group_is_refused_naming_both_lines(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels_jg"
    qrels.write_text("q 0 d1 1\nq 1 d1 0\n# a comment\nq 0 d1 0\n")
    run = tmp_path / "run"
    run.write_text("q Q0 d1 1 1.0 t\n")
    result = runner.invoke(app, ["trec_eval", "-R", "qrels_jg", "-m", "qrels_jg", str(qrels), str(run)])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert f"{qrels}:4: document 'd1' is judged twice in group '0' of topic 'q' (first on line 1)" in result.output


# -- -Z ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    """q1: its one relevant document first (map 1); q2: second (map 0.5)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d1 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 2.0 t\nq2 Q0 d2 1 2.0 t\nq2 Q0 d1 2 1.0 t\n")
    return qrels, run


def test_z_scores_by_hand(tmp_path: Path, small) -> None:
    """map: q1 (1 - 0.5) / 0.25 = 2, q2 stddev 0 at the mean: 0; mean z 1. num_ret: q1 (1 - 1) / 1 = 0, q2 stddev 0
    off the mean: trec_eval's -1000000, summed as a count, with a warning. num_q is the topic count."""
    zfile = tmp_path / "z"
    zfile.write_text("q1 map 0.5 0.25\nq2 map 0.5 0\nq1 num_ret 1 1\nq2 num_ret 0 0\n")
    text, warnings = evaluate_command(
        ["-q", "-Z", str(zfile), "-m", "num_q", "-m", "num_ret", "-m", "map", *map(str, small)]
    )
    assert text.splitlines() == [
        "Znum_ret               \tq1\t0.0000",
        "Zmap                   \tq1\t2.0000",
        "Znum_ret               \tq2\t-1000000.0000",
        "Zmap                   \tq2\t0.0000",
        "Znum_q                 \tall\t2.0000",
        "Znum_ret               \tall\t-1000000.0000",
        "Zmap                   \tall\t1.0000",
    ]
    assert len(warnings) == 1 and "num_ret of topic q2" in warnings[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q1 map 0.5 0.25\n", "z: has no line for topic q2; expected qid measure mean stddev lines for every"),
        ("q1 map 0.5 0.25\nq2 map 0.5\n", "z:2: has 3 fields, not 4; expected qid measure mean stddev"),
        ("q1 map 0.5 0.25\nq2 map 0.5 wide\n", "z:2: stddev 'wide' is not a decimal number"),
        ("q1 map 0.5 0.25\nq1 map 0.5 0.3\n", "z:2: map of topic 'q1' is given twice (first on line 1)"),
    ],
)
def test_a_refused_z_file_is_one_line(tmp_path: Path, small, content: str, message: str) -> None:
    zfile = tmp_path / "z"
    zfile.write_text(content)
    result = runner.invoke(app, ["trec_eval", "-Z", str(zfile), "-m", "map", *map(str, small)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert message in result.output.replace(str(tmp_path) + "/", "")


def test_z_scores_apply_to_preference_measures_too(trec_eval_test: Path, tmp_path: Path) -> None:
    """-Z with -R prefs: each topic's prefs_simp z-score is (value - mean) / stddev of its printed value."""
    args = ["-q", "-R", "prefs", "-m", "prefs_simp"]
    files = [str(trec_eval_test / "prefs.test"), str(trec_eval_test / "prefs.results.test")]
    plain = {line.split("\t")[1]: float(line.split("\t")[2]) for line in run_trec_eval([*args, *files]).splitlines()}
    zfile = tmp_path / "z"
    zfile.write_text("".join(f"{q} prefs_simp 0.5 0.25\n" for q in plain if q != "all"))
    zed = run_trec_eval([*args, "-Z", str(zfile), *files]).splitlines()
    for line in zed[:-2]:
        name, qid, value = line.split("\t")
        assert name == "Zprefs_simp            "
        assert float(value) == pytest.approx((plain[qid] - 0.5) / 0.25, abs=5e-4)
