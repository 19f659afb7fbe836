"""The HTML report's structure, parsed with the standard library: every plot with its title, description and
the numbers behind it, tables with the right rows, the conventions stated, nothing fetched from elsewhere; and
the numbers cross-checked against stagewise.evaluate and stagewise.compare, computed independently."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise
from stagewise.cli import app
from stagewise.report.html.curves import FAMILIES
from tests.report_helpers import QUERIES, RAG_RECORDS, attr, header, parse, report_page, rows, small_inputs

pytest.importorskip("matplotlib", reason="the HTML report's plots need matplotlib: pip install 'stagewise[report]'")
CUTS = (1, 5, 10, 30)
runner = CliRunner()


@pytest.fixture(scope="module")
def small() -> tuple[dict, dict, str]:
    qrels, runs = small_inputs()
    page = report_page(qrels, runs, ["map", "ndcg@10"], cutoffs=CUTS, baseline="bm25", rag=RAG_RECORDS)
    return qrels, runs, page


def figures(root):
    return [f for f in root.all("figure") if "plot" in (attr(f, "class") or "")]


def test_every_plot_has_a_title_a_description_and_its_numbers(small) -> None:
    _, runs, page = small
    root = parse(page)
    figs = figures(root)
    # 3 curves, one difference plot per non-baseline run, 2 judgement plots, 1 RAG reasons plot
    assert len(figs) == len(FAMILIES) + (len(runs) - 1) + 2 + 1
    assert len(root.all("svg")) == len(figs)
    for fig in figs:
        svg = fig.first("svg")
        assert attr(svg, "role") == "img"
        title, desc = svg.first("title"), svg.first("desc")
        assert title.content().strip() and desc.content().strip()
        assert attr(svg, "aria-labelledby") == f"{attr(title, 'id')} {attr(desc, 'id')}"
        assert fig.first("figcaption").content().strip() == title.content().strip()
        data = fig.first("details").first("table")
        assert rows(data), "a plot without the numbers behind it"
        texts = [t.content() for t in svg.all("text")]
        assert any(t for t in texts), "axis labels are text in the SVG"


def test_ids_are_unique(small) -> None:
    ids = [n.attrs["id"] for n in parse(small[2]).walk() if n.attrs.get("id")]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})[:5]


def test_nothing_is_fetched_from_elsewhere(small) -> None:
    page = small[2]
    root = parse(page)
    for node in root.walk():
        for name, value in node.attrs.items():
            if name in ("src", "href", "xlink:href", "action", "data") and value:
                assert value.startswith("#"), f"<{node.tag} {name}={value!r}>"
    assert not root.all("link") and not root.all("img") and not root.all("iframe")
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+", page))
    assert urls <= {"http://www.w3.org", "//www.w3.org"}, urls  # only the SVG namespace names
    assert "default-src 'none'" in page  # the browser refuses any request the page might make


def test_curve_numbers_are_the_evaluation(small) -> None:
    qrels, runs, page = small
    root = parse(page)
    names = [f"{fam}@{k}" for fam, _ in FAMILIES for k in CUTS]
    means = stagewise.evaluate(qrels, runs, names).means
    for fam, label in FAMILIES:
        title = f"{label.split(' ')[0]} at k"
        fig = next(f for f in figures(root) if f.first("svg").first("title").content() == title)
        table = fig.first("details").first("table")
        assert header(table) == ["run", *(f"k={k}" for k in CUTS)]
        got = {r[0]: [float(x) for x in r[1:]] for r in rows(table)}
        assert list(got) == list(runs)
        for run in runs:
            assert got[run] == pytest.approx([means[run][f"{fam}@{k}"] for k in CUTS], abs=5e-5)


def test_comparison_table_letters_and_conventions(small) -> None:
    qrels, runs, page = small
    root = parse(page)
    comp = stagewise.compare(qrels, runs, ["map", "ndcg@10"], baseline="bm25")
    table = root.by_id("comparison-table")
    assert header(table) == ["", "run", "map", "ndcg@10"]
    body = rows(table)
    assert [r[1] for r in body] == list(runs)
    for r in body:
        for metric, cell in zip(["map", "ndcg@10"], r[2:], strict=True):
            value = float(cell.split()[0])
            assert value == pytest.approx(comp.means[r[1]][metric], abs=5e-5)
            marks = cell.split()[1] if len(cell.split()) > 1 else ""
            assert marks == "".join(comp.labels[x] for x in comp.better_than(r[1], metric))
    section = root.by_id("comparison")
    dl = section.first("dl")
    terms = [dt.content() for dt in dl.all("dt")]
    for term in ("test", "correction", "alpha", "baseline", "tie tolerance"):
        assert term in terms
    assert "paired Student's t-test" in section.content()
    pairs = root.by_id("pairs-table")
    assert len(rows(pairs)) == len(comp.pairs) == 2 * (len(runs) - 1)


def test_difference_plots_count_wins_ties_losses(small) -> None:
    qrels, runs, page = small
    root = parse(page)
    per_query = stagewise.evaluate(qrels, runs, ["map"]).per_query()
    for run in ("dense", "hybrid"):
        fig = next(f for f in figures(root) if f.first("svg").first("title").content().startswith(f"{run} − bm25"))
        deltas = [per_query[run]["map"][q] - per_query["bm25"]["map"][q] for q in QUERIES]
        wins = sum(d > 1e-9 for d in deltas)
        losses = sum(d < -1e-9 for d in deltas)
        assert f"{wins} wins, {len(deltas) - wins - losses} ties, {losses} losses" in fig.first("desc").content()
        shown = [float(r[1]) for r in rows(fig.first("details").first("table"))]
        assert shown == sorted(shown, reverse=True)
        assert shown == pytest.approx(sorted(deltas, reverse=True), abs=5e-5)


def test_per_query_table_worst_first(small) -> None:
    qrels, runs, page = small
    root = parse(page)
    table = root.by_id("per-query-table-0")
    head = header(table)
    assert head[:5] == ["query", "mean", "spread (max − min)", "best run", "worst run"]
    assert head[-3:] == list(runs)
    body = rows(table)
    assert sorted(r[0] for r in body) == sorted(QUERIES)
    values = stagewise.evaluate(qrels, runs, ["map"]).per_query()
    means = {q: np.mean([values[r]["map"][q] for r in runs]) for q in QUERIES}
    assert [r[0] for r in body] == sorted(QUERIES, key=lambda q: (means[q], q))
    for r in body:
        spread = max(values[x]["map"][r[0]] for x in runs) - min(values[x]["map"][r[0]] for x in runs)
        assert float(r[2]) == pytest.approx(spread, abs=5e-5)
    # the table's sort keys are the exact values, so the browser sorts numbers, not text
    cell = table.first("tbody").first("tr").all("td")[1]
    assert float(attr(cell, "data-v")) == pytest.approx(means[body[0][0]])
    assert root.by_id("per-query-table-1")  # the second metric has its own table


def test_judgement_health(small) -> None:
    qrels, runs, page = small
    root = parse(page)
    labels = [v for q in qrels.values() for v in q.values()]
    fig = next(f for f in figures(root) if f.first("svg").first("title").content() == "Relevance labels in the qrels")
    got = {int(r[0]): int(r[1]) for r in rows(fig.first("details").first("table"))}
    assert got == {lab: labels.count(lab) for lab in set(labels)}
    missing = rows(root.by_id("missing-table"))
    assert [r[0] for r in missing] == list(runs)
    assert all(r[1] == "0" for r in missing)


def test_a_run_missing_queries_is_reported() -> None:
    qrels, runs = small_inputs()
    runs["dense"] = {q: v for q, v in runs["dense"].items() if q not in ("q2", "q5")}
    root = parse(report_page(qrels, runs, ["map"], cutoffs=CUTS))
    missing = {r[0]: r for r in rows(root.by_id("missing-table"))}
    assert missing["dense"][1] == "2" and missing["dense"][2] == "q2, q5"
    assert missing["bm25"][1] == "0"


def test_rag_section(small) -> None:
    page = small[2]
    root = parse(page)
    report = stagewise.evaluate_rag(RAG_RECORDS)
    table = root.by_id("rag-samples")
    body = table.first("tbody").all("tr")
    assert [attr(tr, "data-label") for tr in body] == [r.label for r in report.rows]
    assert [r[0] for r in rows(table)] == [r["id"] for r in RAG_RECORDS]
    select = root.by_id("rag").first("select")
    from stagewise.rag import LABELS

    assert [attr(o, "value") for o in select.all("option")] == ["", *LABELS]
    grid = rows(root.by_id("rag-2x2"))
    counts = report.counts()
    assert grid[0][1].startswith(f"ok: {counts['ok']} ")
    assert grid[1][2].startswith(f"retrieval_failure: {counts['retrieval_failure']} ")
    assert "Why each sample got its label" in page


def test_fused_runs_state_their_fusion(tmp_path: Path) -> None:
    qrels, runs = small_inputs()
    fused = stagewise.fuse([runs["bm25"], runs["dense"]], method="rrf")
    from stagewise.fusion import write_fused

    target = tmp_path / "fused.trec"
    write_fused(fused, target, metadata=True)
    paths = []
    for name in ("bm25", "dense"):
        path = tmp_path / f"{name}.trec"
        stagewise.write_run(stagewise.read_run(runs[name], name=name), path)
        paths.append(str(path))
    page = report_page(qrels, [*paths, str(target)], ["map"], cutoffs=CUTS)
    section = parse(page).by_id("fusion")
    text = section.content()
    assert "fused.trec" in text and "rrf" in text
    assert json.loads(target.with_name("fused.trec.meta.json").read_text())["method"] in text


def test_one_run_and_rag_only() -> None:
    qrels, runs = small_inputs()
    root = parse(report_page(qrels, {"bm25": runs["bm25"]}, ["map"], cutoffs=CUTS))
    assert [attr(s, "id") for s in root.all("section")] == ["curves", "per-query", "judgements"]
    root = parse(report_page(rag=RAG_RECORDS))
    assert [attr(s, "id") for s in root.all("section")] == ["rag"]


def test_the_package_is_callable(tmp_path: Path) -> None:
    qrels, runs = small_inputs()
    out = tmp_path / "r.html"
    text = stagewise.report(qrels, runs, ["map"], cutoffs=CUTS, output=out)
    assert out.read_text(encoding="utf-8") == text
    assert stagewise.report.render is not None  # still the package of the renderers
    assert text == stagewise.report(qrels, runs, ["map"], cutoffs=CUTS)  # the same inputs, the same bytes


# --------------------------------------------------------------------------------------------------- the CLI
@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, list[str]]:
    qrels, runs = small_inputs()
    qpath = tmp_path / "qrels.txt"
    stagewise.write_qrels(stagewise.read_qrels(qrels), qpath)
    paths = []
    for name, run in runs.items():
        path = tmp_path / f"{name}.run"
        stagewise.write_run(stagewise.read_run(run, name=name), path)
        paths.append(str(path))
    return qpath, paths


def test_cli_writes_the_report(files, tmp_path: Path) -> None:
    qpath, paths = files
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(qpath), *paths, "-m", "map", "-b", paths[0], "-o", str(out)])
    assert result.exit_code == 0, result.output
    root = parse(out.read_text(encoding="utf-8"))
    assert [r[1] for r in rows(root.by_id("comparison-table"))] == ["bm25.run", "dense.run", "hybrid.run"]
    assert "baseline" in root.by_id("comparison").content()


def test_cli_rag_with_a_run(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "retrieved"}) + "\n" for r in RAG_RECORDS)
    )
    run = tmp_path / "run.trec"
    ranked = {r["id"]: {d: 10.0 - i for i, d in enumerate(r["retrieved"])} for r in RAG_RECORDS}
    stagewise.write_run(stagewise.read_run(ranked, name="bm25"), run)
    out = tmp_path / "rag.html"
    result = runner.invoke(app, ["report", "--rag", str(answers), "--rag-run", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(rows(parse(out.read_text(encoding="utf-8")).by_id("rag-samples"))) == len(RAG_RECORDS)


@pytest.mark.parametrize(
    "args, message",
    [
        (["-m", "nope@10"], "nope"),
        (["--test", "t", "--alpha", "2"], "alpha"),
        (["--baseline", "missing.run"], "baseline"),
    ],
)
def test_cli_errors_are_one_line_and_write_nothing(files, tmp_path: Path, args: list[str], message: str) -> None:
    qpath, paths = files
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(qpath), *paths, *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("stagewise: error:") and message in lines[0], result.output
    assert not out.exists()


def test_cli_refuses_to_overwrite_an_input(files) -> None:
    qpath, paths = files
    before = Path(paths[1]).read_bytes()
    result = runner.invoke(app, ["report", str(qpath), *paths, "-o", paths[1]])
    assert result.exit_code == 2
    assert Path(paths[1]).read_bytes() == before


def test_without_matplotlib_the_cli_says_what_to_install(files, tmp_path: Path, monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    qpath, paths = files
    result = runner.invoke(app, ["report", str(qpath), *paths, "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "stagewise[report]" in result.output


def test_cli_needs_runs_or_records(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", "-o", str(tmp_path / "x.html")])
    assert result.exit_code == 2 and "--rag" in result.output


def test_cli_checks_metrics_and_options_before_reading(tmp_path: Path) -> None:
    absent = [str(tmp_path / "absent.qrels"), str(tmp_path / "a.run"), str(tmp_path / "b.run")]
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", *absent, "-m", "ndcg@ten", "-o", str(out)])
    assert result.exit_code == 2 and "ndcg" in result.output and "absent" not in result.output
    result = runner.invoke(app, ["report", *absent, "--alpha", "0", "-o", str(out)])
    assert result.exit_code == 2 and "alpha" in result.output and "absent" not in result.output


def test_a_comparison_given_is_shown_as_it_is_and_must_be_of_these_runs() -> None:
    qrels, runs = small_inputs()
    comp = stagewise.compare(qrels, runs, ["map"], test="randomization", seed=7, resamples=500)
    page = report_page(qrels, runs, ["map"], cutoffs=CUTS, comparison=comp)
    shown = [float(r[-2]) for r in rows(parse(page).by_id("pairs-table"))]  # p adj., as the comparison has it
    assert shown == pytest.approx([p.p_adjusted for p in comp.pairs], abs=5e-5)
    assert "seed 7" in page and "exact (all 2^8 sign assignments)" in page
    with pytest.raises(stagewise.StagewiseError, match="comparison given is of runs"):
        report_page(qrels, runs, ["ndcg@10"], cutoffs=CUTS, comparison=comp)
    with pytest.raises(stagewise.StagewiseError, match="comparison given is of runs"):
        report_page(qrels, dict(list(runs.items())[:2]), ["map"], cutoffs=CUTS, comparison=comp)


def test_conventions_other_than_the_defaults_are_the_ones_stated() -> None:
    """relevance level 2, missing queries left out, judged-only scoring: the curves state them, and the unjudged
    share is measured on the runs as given (a judged-only evaluation would show 0 everywhere)."""
    qrels, runs = small_inputs()
    page = report_page(qrels, runs, ["map"], cutoffs=CUTS, relevance_level=2, missing="skip", judged_only=True)
    root = parse(page)
    curves_text = root.by_id("curves").content()
    assert "relevance level 2" in curves_text and "judged only" in curves_text
    expected = stagewise.evaluate(qrels, runs, [f"judged@{k}" for k in CUTS]).means
    shown = {r[0]: [float(x) for x in r[1:]] for r in rows(root.by_id("judgements").all("table")[1])}
    for run in runs:
        assert shown[run] == pytest.approx([round(1 - expected[run][f"judged@{k}"], 4) for k in CUTS], abs=1e-9)
    assert any(v > 0 for values in shown.values() for v in values)
    assert "missing=skip" in root.by_id("missing-table").content()


def test_pair_p_values_read_as_the_text_tables_print_them(small) -> None:
    from stagewise.report.compare import p_text

    qrels, runs, page = small
    comp = stagewise.compare(qrels, runs, ["map", "ndcg@10"], baseline="bm25")
    shown = [(r[10], r[11]) for r in rows(parse(page).by_id("pairs-table"))]
    assert shown == [(p_text(p.p_value), p_text(p.p_adjusted)) for p in comp.pairs]
    assert p_text(1e-20) == "1.0e-20" and p_text(0.04) == "0.0400"  # never 0.0000 for a tiny p
