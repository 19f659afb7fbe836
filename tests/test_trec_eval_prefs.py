"""trec_eval's preference measures (``-R prefs``, ``-R qrels_prefs``) in ``stagewise trec_eval``.

Oracles: trec_eval's own expected outputs (``out.test.prefs``, ``out.test.qrels_prefs``: byte-identical in
``test_trec_eval_golden.py``; here the naive oracle is checked against them), a hand-worked topic, and the
naive loop-by-loop oracle ``tests/reference/naive_prefs.py`` on random judgements (per topic, to 1e-9).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import StagewiseError
from stagewise.trec_eval.command import run_trec_eval
from stagewise.trec_eval.prefs import TopicPrefs, prefs_rankings, read_prefs, topic_counts
from stagewise.trec_eval.prefs_measures import topic_values
from tests.reference.naive_prefs import naive_prefs_values, rank_for_prefs

runner = CliRunner()


def _per_topic(text: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        name, qid, value = line.split("\t")
        if qid != "all":
            out.setdefault(qid, {})[name.strip()] = float(value)
    return out


def _read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, float]]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, *_ = line.split()
        run.setdefault(qid, []).append((doc, float(score)))
    return run


@pytest.mark.parametrize(
    ("expected", "judgements", "results", "sub_groups"),
    [
        ("out.test.prefs", "prefs.test", "prefs.results.test", True),
        ("out.test.qrels_prefs", "qrels.test", "results.test", False),
    ],
)
def test_naive_oracle_reproduces_trec_eval(trec_eval_test: Path, expected, judgements, results, sub_groups) -> None:
    """The oracle's per-topic values round to trec_eval's printed ones (4 decimals; counts exactly)."""
    prefs = read_prefs(str(trec_eval_test / judgements), sub_groups=sub_groups)
    run = _read_run(trec_eval_test / results)
    printed = _per_topic((trec_eval_test / expected).read_text())
    assert set(printed) == set(prefs.topics)
    for qid, topic in prefs.topics.items():
        lines = list(zip(topic.group, topic.sub_group, topic.doc, topic.level, strict=True))
        values = naive_prefs_values(lines, rank_for_prefs(run.get(qid, [])))
        for name, shown in printed[qid].items():
            assert f"{values[name]:6.4f}".strip() == f"{shown:6.4f}".strip() or values[name] == shown, (qid, name)


def test_a_hand_worked_topic(tmp_path: Path) -> None:
    """One user judges A (2) > B (1) > C (0); the run ranks C then A, B unretrieved. Document places: C 0, A 1
    (retrieved), B 2. A>B is kept by implication, A>C is broken among retrieved documents, B>C is broken by
    implication: 1 of 3 kept. Rnonrel: R = 2 relevant, N = 1 non-relevant, so R - N = 1 fulfilled preference is
    added per retrieved relevant document (A) and 1 possible per relevant one: (1 + 1) / (3 + 2) = 0.4. Among
    retrieved documents R = N = 1 and the one preference (A>C) is broken: 0."""
    prefs = tmp_path / "prefs"
    prefs.write_text("q u s A 2\nq u s B 1\nq u s C 0\n")
    run = tmp_path / "run"
    run.write_text("q Q0 C 1 2.0 t\nq Q0 A 2 1.0 t\n")
    values = _per_topic(run_trec_eval(["-q", "-n", "-R", "prefs", "-m", "all_prefs", str(prefs), str(run)]))["q"]
    assert values == {
        "prefs_num_prefs_poss": 3, "prefs_num_prefs_ful": 1, "prefs_num_prefs_ful_ret": 0,
        "prefs_simp": pytest.approx(1 / 3, abs=5e-5), "prefs_pair": pytest.approx(1 / 3, abs=5e-5),
        "prefs_avgjg": pytest.approx(1 / 3, abs=5e-5), "prefs_avgjg_Rnonrel": 0.4,
        "prefs_simp_ret": 0, "prefs_pair_ret": 0, "prefs_avgjg_ret": 0, "prefs_avgjg_Rnonrel_ret": 0,
        "prefs_simp_imp": pytest.approx(1 / 3, abs=5e-5), "prefs_pair_imp": pytest.approx(1 / 3, abs=5e-5),
        "prefs_avgjg_imp": pytest.approx(1 / 3, abs=5e-5),
    }  # fmt: skip


def test_sub_groups_of_one_user_are_closed_transitively(tmp_path: Path) -> None:
    """trec_eval's own example (formats.c): sub-group 1 ranks 1 > 2 > 3, sub-group 2 ranks 2 > 4, so the user
    also prefers 1 > 4: 5 preferences (3 and 4 stay unordered)."""
    prefs = tmp_path / "prefs"
    prefs.write_text("q u s1 d1 3\nq u s1 d2 2\nq u s1 d3 1\nq u s2 d2 5\nq u s2 d4 4\n")
    run = tmp_path / "run"
    run.write_text("q Q0 d1 1 1.0 t\n")
    asked = ["-m", "prefs_num_prefs_poss", "-m", "prefs_num_prefs_ful"]
    text = run_trec_eval(["-R", "prefs", *asked, str(prefs), str(run)])
    assert text.splitlines() == ["prefs_num_prefs_poss  \tall\t5", "prefs_num_prefs_ful   \tall\t3"]


# -- random judgements against the naive oracle ----------------------------------------------------------------

DOCS = ("d1", "d10", "d2", "a", "B", "x-é", "07", "7")
LEVELS = (0.0, 0.0, 1.0, 2.0, 3.0, 0.5)


@st.composite
def topics(draw: st.DrawFn) -> tuple[list[tuple[str, str, str, float]], list[tuple[str, float]], int | None]:
    """(judgement lines, scored run, -M) of one topic: 1-3 users, each with 1-3 sub-groups drawn from the user's
    own consistent levels (so sub-groups never contradict each other), levels 0 to 3."""
    docs = draw(st.lists(st.sampled_from(DOCS), min_size=2, max_size=8, unique=True))
    lines = []
    for user in range(draw(st.integers(1, 3))):
        truth = {d: draw(st.sampled_from(LEVELS)) for d in docs}
        for sub in range(draw(st.sampled_from((1, 1, 2, 3)))):
            scale = draw(st.sampled_from((1.0, 2.0, 10.0)))
            for doc in draw(st.lists(st.sampled_from(docs), min_size=1, max_size=5, unique=True)):
                lines.append((f"u{user}", f"s{sub}", doc, truth[doc] * scale))
    ranked = draw(st.lists(st.sampled_from(DOCS), max_size=8, unique=True))
    run = [(doc, draw(st.sampled_from((0.0, 0.5, 1.0, 2.0)))) for doc in ranked]
    return lines, run, draw(st.sampled_from((None, None, 1, 3)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topics())
def test_every_measure_agrees_with_the_naive_oracle(case) -> None:
    lines, run, max_ret = case
    topic = TopicPrefs()
    for number, (group, sub, doc, level) in enumerate(lines, 1):
        topic.group.append(group)
        topic.sub_group.append(sub)
        topic.doc.append(doc)
        topic.level.append(level)
        topic.line.append(number)
    ranking = rank_for_prefs(run, max_ret)
    try:
        expected = naive_prefs_values(lines, ranking)
    except ValueError:  # a document at two levels of one sub-group: trec_eval refuses it, and so must we
        with pytest.raises(StagewiseError):
            topic_counts(topic, ranking, "prefs", "q")
        return
    got = topic_values(topic_counts(topic, ranking, "prefs", "q"))
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9, rel=1e-9), name


def test_rankings_break_ties_by_doc_id_ascending(tmp_path: Path) -> None:
    """form_prefs_counts orders equal scores by doc id ascending (the qrels measures: descending), comparing
    scores as C floats by default and as doubles with --ties docid-double."""
    from stagewise.data.readers import read_run

    path = tmp_path / "run"
    path.write_text("q Q0 b 1 0.1 t\nq Q0 a 2 0.1 t\nq Q0 c 3 0.1000000000001 t\n")
    run = read_run(str(path), format="trec")
    assert prefs_rankings(run, double=False, max_ret=None) == {"q": ["a", "b", "c"]}
    assert prefs_rankings(run, double=True, max_ret=None) == {"q": ["c", "a", "b"]}
    assert prefs_rankings(run, double=True, max_ret=2) == {"q": ["c", "a"]}


# -- refused inputs: one line, file and line named -------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q u s d1 2\nq u s d2\n", "prefs:2: has 4 fields, not 5; expected qid jg jsg docno level"),
        ("q u s d1 2\nq u s d2 high\n", "prefs:2: level 'high' is not a decimal number"),
        ("q u s d1 2\nq u s d1 1\n", "prefs:2: topic 'q': document 'd1' has two levels in judgement group 'u'"),
        ("q u s1 d1 2\nq u s1 d2 1\nq u s2 d2 3\nq u s2 d1 1\n", "prefer 'd1' to 'd2' and 'd2' to 'd1'"),
        ("q u s1 d1 2\nq u s1 d2 0\nq u s2 d2 3\nq u s2 d3 1\n", "is non-relevant (level 0) and relevant"),
    ],
)
def test_a_refused_prefs_file_is_one_line_naming_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    prefs = tmp_path / "prefs"
    prefs.write_text(content)
    run = tmp_path / "run"
    run.write_text("q Q0 d1 1 1.0 t\n")
    result = runner.invoke(app, ["trec_eval", "-R", "prefs", "-m", "all_prefs", str(prefs), str(run)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert message in result.output.replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-R", "prefs"], "need -R qrels, not -R prefs (no -m: the default set, official); with -R prefs ask for"),
        (["-R", "prefs", "-m", "map"], "map needs -R qrels, not -R prefs"),
        (["-m", "prefs_simp"], "prefs_simp needs -R prefs, not -R qrels"),
        (["-R", "qrels_jg", "-m", "all_prefs"], "need -R prefs, not -R qrels_jg; with -R qrels_jg ask for -m qrels_jg"),
        (["-R", "xml"], "-R takes qrels, prefs, qrels_prefs, qrels_jg, not 'xml'"),
    ],
)
def test_measures_that_need_another_format_are_refused_saying_which(tmp_path: Path, flags, message) -> None:
    judgements = tmp_path / "j"
    judgements.write_text("q 0 d1 1\n")
    run = tmp_path / "run"
    run.write_text("q Q0 d1 1 1.0 t\n")
    with pytest.raises(StagewiseError, match="trec_eval") as caught:
        run_trec_eval([*flags, str(judgements), str(run)])
    assert message in str(caught.value)
