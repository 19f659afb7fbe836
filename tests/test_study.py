"""stagewise.study: the library computes what a report shows, in one call; stagewise.report.html.render only
renders it (no evaluate, compare, fuse or evaluate_rag below render: pyproject.toml's report-renders contract,
and here a render with those functions made to fail). The whole CompareOptions reaches the page, through the
library and through ``stagewise report``; ids are numbered per page, so pages drawn at once in threads are the
pages drawn one at a time."""

from __future__ import annotations

import dataclasses
import importlib
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.errors import ConventionError, StagewiseError
from stagewise.stats.compare import CompareOptions
from stagewise.study import QrelsSummary, Study, fusion_statements
from tests.report_helpers import RAG_RECORDS, parse, rows, small_inputs

pytest.importorskip("matplotlib", reason="the HTML report's plots need matplotlib: pip install 'stagewise[report]'")
from stagewise.report.html import render, write
from tests import test_report_html

CUTS = (1, 5, 10)
runner = CliRunner()


@pytest.fixture(scope="module")
def study() -> Study:
    qrels, runs = small_inputs()
    return stagewise.study(qrels, runs, ["map", "ndcg@10"], cutoffs=CUTS, baseline="bm25", rag=RAG_RECORDS)


def test_the_study_holds_what_the_report_shows(study: Study) -> None:
    qrels, runs = small_inputs()
    assert isinstance(study, Study) and study.runs == ["bm25", "dense", "hybrid"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        study.title = "x"  # type: ignore[misc]
    expected = stagewise.compare(qrels, runs, ["map", "ndcg@10"], baseline="bm25")
    assert [p.p_value for p in study.comparison.pairs] == [p.p_value for p in expected.pairs]
    at_k = stagewise.evaluate(qrels, runs, [f"{f}@{k}" for f in ("P", "recall", "ndcg", "judged") for k in CUTS])
    assert study.at_k.means == at_k.means and study.health is study.at_k
    histogram = stagewise.read_qrels(qrels).label_histogram()
    assert study.qrels == QrelsSummary(dict(histogram), 8)
    assert study.plot_baseline == "bm25" and study.metrics == ("map", "ndcg@10") and study.cutoffs == CUTS
    assert study.rag.n == len(RAG_RECORDS) and study.answers["r2"] == "Dickens"
    assert study.fusion == {} and study.sources == ()


def test_render_computes_nothing(study: Study, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every computation made to fail: the page of a study already made is still drawn, byte for byte."""
    before = render(study)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("render computed")

    for module, name in [
        ("stagewise.engines", "evaluate"),
        ("stagewise.metrics.evaluate", "evaluate"),
        ("stagewise.stats.compare", "compare"),
        ("stagewise.stats.compare", "compare_scores"),
        ("stagewise.rag.diagnose", "evaluate_rag"),
        ("stagewise.fusion.api", "fuse"),
    ]:
        monkeypatch.setattr(importlib.import_module(module), name, refuse)
    assert render(study) == before


def test_pages_drawn_at_once_in_threads_are_the_pages_drawn_alone(study: Study) -> None:
    """No lock: each page numbers its own ids and draws on figures of its own (the web app's /report)."""
    qrels, runs = small_inputs()
    other = stagewise.study(qrels, {"bm25": runs["bm25"]}, ["map"], cutoffs=CUTS)
    alone = [render(study), render(other)]
    got: dict[int, str] = {}

    def draw(i: int) -> None:
        got[i] = render(study if i % 2 == 0 else other)

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [got[i] for i in range(6)] == [alone[i % 2] for i in range(6)]
    ids = [node.attrs["id"] for node in parse(alone[0]).walk() if "id" in node.attrs]
    assert len(ids) == len(set(ids)) and "f1-title" in ids


def test_the_whole_compare_options_reach_the_page() -> None:
    """A one-sided test, a bootstrap interval and a correction across metrics: the comparison holds them and
    the page states them."""
    qrels, runs = small_inputs()
    options = CompareOptions(test="sign", alternative="greater", ci="bootstrap", ci_level=0.9, family="all")
    made = stagewise.study(qrels, runs, ["map", "P@5"], cutoffs=CUTS, compare=options, correction="bonferroni")
    comp = made.comparison
    expected = stagewise.compare(qrels, runs, ["map", "P@5"], options=options, correction="bonferroni")
    assert [p.p_adjusted for p in comp.pairs] == [p.p_adjusted for p in expected.pairs]
    assert [(p.ci_low, p.ci_high) for p in comp.pairs] == [(p.ci_low, p.ci_high) for p in expected.pairs]
    section = parse(render(made)).by_id("comparison").content()
    assert "greater" in section and "bootstrap" in section and "Bonferroni" in section
    shown = [float(r[-2]) for r in rows(parse(render(made)).by_id("pairs-table"))]
    assert shown == pytest.approx([p.p_adjusted for p in comp.pairs], abs=5e-5)


def test_keywords_go_to_their_value_and_unknown_ones_are_named() -> None:
    qrels, runs = small_inputs()
    made = stagewise.study(qrels, runs, ["map"], cutoffs=CUTS, missing="skip", test="t", alpha=0.01)
    assert made.conventions.missing == "skip" and made.comparison.conventions["alpha"] == 0.01
    with pytest.raises(ConventionError, match="relevance_level") as err:
        stagewise.study(qrels, runs, ["map"], cutoffs=CUTS, levle=2)
    assert "alternative" in str(err.value)
    with pytest.raises(StagewiseError, match="cutoffs"):
        stagewise.study(qrels, runs, ["map"], cutoffs=(0, 5))
    with pytest.raises(StagewiseError, match=r"runs \(with their qrels\) or RAG records"):
        stagewise.study()


def test_a_comparison_given_is_kept_not_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels, runs = small_inputs()
    comp = stagewise.compare(qrels, runs, ["map"], test="randomization", seed=7, resamples=500)
    monkeypatch.setattr(importlib.import_module("stagewise.stats.compare"), "compare", None)  # calling it would fail
    made = stagewise.study(qrels, runs, ["map"], cutoffs=CUTS, comparison=comp)
    assert made.comparison is comp and made.scores is comp.scores


def test_the_report_is_the_study_rendered(tmp_path: Path) -> None:
    qrels, runs = small_inputs()
    made = stagewise.study(qrels, runs, ["map"], cutoffs=CUTS, title="T")
    page = render(made)
    assert stagewise.report(qrels, runs, ["map"], cutoffs=CUTS, title="T") == page
    assert render(made, title="U").count("<title>U</title>") == 1
    out = write(tmp_path / "r.html", made)
    assert out.read_text(encoding="utf-8") == page


def test_the_old_build_still_gives_the_page_with_a_warning() -> None:
    from stagewise.report.html import build

    qrels, runs = small_inputs()
    with pytest.warns(DeprecationWarning, match="stagewise.study"):
        page = build(qrels, runs, ["map"], cutoffs=CUTS, title="T")
    assert page == render(stagewise.study(qrels, runs, ["map"], cutoffs=CUTS), title="T")


def test_write_refuses_to_overwrite_an_input(tmp_path: Path) -> None:
    qrels, runs = small_inputs()
    path = tmp_path / "bm25.trec"
    stagewise.write_run(stagewise.read_run(runs["bm25"], name="bm25"), path)
    made = stagewise.study(qrels, [str(path), runs["dense"]], ["map"], cutoffs=CUTS)
    before = path.read_bytes()
    with pytest.raises(StagewiseError):
        write(path, made)
    assert path.read_bytes() == before


def test_fusion_statements_are_read_by_the_library(tmp_path: Path) -> None:
    from stagewise.fusion import write_fused

    qrels, runs = small_inputs()
    fused = stagewise.fuse([runs["bm25"], runs["dense"]], method="rrf")
    target = tmp_path / "fused.trec"
    write_fused(fused, target, metadata=True)
    (tmp_path / "broken.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    (tmp_path / "broken.trec.meta.json").write_text("{not json")
    statements = fusion_statements([str(target), str(tmp_path / "broken.trec")])
    assert list(statements) == ["fused.trec"] and statements["fused.trec"]["method"].startswith("rrf")
    made = stagewise.study(qrels, {"f": fused, "b": runs["bm25"]}, ["map"], cutoffs=CUTS)
    assert list(made.fusion) == ["f"] and made.fusion["f"]["method"].startswith("rrf")
    given = {"b": {"method": "made elsewhere"}}
    made = stagewise.study(qrels, {"f": fused, "b": runs["bm25"]}, ["map"], cutoffs=CUTS, fusion=given)
    assert list(made.fusion) == ["f", "b"] and "made elsewhere" in parse(render(made)).by_id("fusion").content()


# --------------------------------------------------------------------------------------------------- the CLI
files = test_report_html.files  # the small inputs as a qrels file and run files: the report CLI tests' fixture


def test_cli_takes_the_options_of_compare(files, tmp_path: Path) -> None:
    qpath, paths = files
    out = tmp_path / "r.html"
    args = ["report", str(qpath), *paths, "-m", "map", "-t", "sign", "--alternative", "less", "--ci", "bootstrap"]
    result = runner.invoke(app, [*args, "--family", "all", "-c", "holm-sidak", "--resamples", "300", "-o", str(out)])
    assert result.exit_code == 0, result.output
    comp = stagewise.compare(
        str(qpath), paths, ["map"], test="sign", alternative="less", ci="bootstrap", family="all",
        correction="holm-sidak", resamples=300,
    )  # fmt: skip
    table = parse(out.read_text(encoding="utf-8")).by_id("pairs-table")
    assert [float(r[4]) for r in rows(table)] == pytest.approx([p.ci_low for p in comp.pairs], abs=5e-5)
    assert "less" in parse(out.read_text(encoding="utf-8")).by_id("comparison").content()
    old = runner.invoke(app, ["report", str(qpath), *paths, "-m", "map", "--permutations", "300", "-o", str(out)])
    assert old.exit_code == 0 and "--permutations for --resamples is deprecated" in old.output


def test_a_test_registered_in_the_library_is_a_choice_of_the_report(files, tmp_path: Path) -> None:
    """A correction added as one registry entry: the library, ``stagewise report --help`` and the command take
    it, with no edit to the CLI."""
    from stagewise.stats.catalogue import CORRECTIONS, Correction

    def triple(p):  # a toy: Bonferroni for three
        import numpy as np

        return np.minimum(1.0, 3 * np.asarray(p, dtype=float))

    entry = Correction("triple", "tripled", "p-values times three", "p times 3, capped at 1", triple)
    CORRECTIONS.register(entry)
    try:
        qpath, paths = files
        assert "triple" in runner.invoke(app, ["report", "--help"]).output
        out = tmp_path / "r.html"
        result = runner.invoke(app, ["report", str(qpath), *paths, "-m", "map", "-c", "triple", "-o", str(out)])
        assert result.exit_code == 0, result.output
        made = stagewise.study(str(qpath), paths, ["map"], cutoffs=CUTS, correction="triple")
        assert [p.p_adjusted for p in made.comparison.pairs] == [min(1.0, 3 * p.p_value) for p in made.comparison.pairs]
        bad = runner.invoke(app, ["report", str(qpath), *paths, "-c", "quadruple", "-o", str(out)])
        assert bad.exit_code == 2 and "triple" in bad.output
    finally:
        CORRECTIONS.unregister("triple")
