"""The HTML report read as a person reads it (issue 24): the RAG samples show their answers, the conventions are
said in words and once, the best-value mark follows each metric's sense and counts print as integers, and the
plots' colours and legends stay readable with many runs. Pages are parsed with the standard library's parser."""

from __future__ import annotations

import re

import pytest

from stagewise.report.html.page import PALETTE, conventions, plain, term
from tests.report_helpers import RAG_RECORDS, header, parse, report_page, rows, small_inputs

pytest.importorskip("matplotlib", reason="the HTML report's plots need matplotlib: pip install 'stagewise[report]'")
CUTS = (1, 5, 10)


def _dl(node) -> dict[str, str]:
    terms = [dt.content() for dt in node.all("dt")]
    values = [dd.content() for dd in node.all("dd")]
    return dict(zip(terms, values, strict=True))


def test_rag_samples_show_each_answer_from_records_and_from_a_report_made_before() -> None:
    from stagewise.rag.diagnose import evaluate_rag

    answers = {r["id"]: r["answer"] for r in RAG_RECORDS}
    for page in (
        report_page(rag=RAG_RECORDS),
        report_page(rag=evaluate_rag(RAG_RECORDS), rag_answers=answers),
    ):
        table = parse(page).by_id("rag-samples")
        col = header(table).index("answer")
        got = {r[0]: r[col] for r in rows(table)}
        assert got == answers


def test_conventions_are_said_in_words() -> None:
    assert (term("depth"), plain("depth", None)) == ("depth", "all")
    assert plain("parameters", {"rrf_k": 60.0, "weights": None}) == "rrf k: 60, weights: equal"
    assert term("evaluation.judged_only") == "judged only (evaluation)"
    assert plain("evaluation.judged_only", False) == "no"
    qrels, runs = small_inputs()
    root = parse(report_page(qrels, runs, ["map"], cutoffs=CUTS))
    for dl in root.all("dl"):
        text = dl.content()
        assert not re.search(r"\bNone\b|\bFalse\b|\bTrue\b|=None", text), text[:300]
        assert not any("_" in dt.content() for dt in dl.all("dt")), [dt.content() for dt in dl.all("dt")]
    said = _dl(root.by_id("comparison"))
    assert said["judged only (evaluation)"] == "no" and said["max ret (evaluation)"] == "all"


def test_fusion_statement_in_words(tmp_path) -> None:
    import stagewise

    qrels, runs = small_inputs()
    fused = stagewise.fuse({"bm25": runs["bm25"], "dense": runs["dense"]}, "rrf", name="rrf")
    root = parse(report_page(qrels, {"bm25": runs["bm25"], "rrf": fused}, ["map"], cutoffs=CUTS))
    said = _dl(root.by_id("fusion"))
    assert said["depth"] == "all"
    assert "weights: equal" in said["parameters"] and "None" not in said["parameters"]


def test_each_convention_is_said_once() -> None:
    qrels, runs = small_inputs()
    section = parse(report_page(qrels, runs, ["map"], cutoffs=CUTS)).by_id("comparison")
    values = [dd.content() for dd in section.all("dd")]
    notes = [li.content() for li in section.first("ul").all("li")]
    for value in values:
        if len(value) >= 20:
            assert not any(value in n for n in notes), value
    assert sum("paired Student's t-test" in x for x in values + notes) == 1
    # the helper itself: a long value a note states is left to the note
    html = conventions([("test_description", "a long description of the test"), ("alpha", 0.05)],
                       ["test: a long description of the test"])  # fmt: skip
    assert html.count("a long description of the test") == 1 and "<dt>alpha</dt>" in html


def test_best_mark_follows_the_metric_and_counts_are_integers() -> None:
    qrels, runs = small_inputs()
    metrics = ["map", "unj@10", "num_ret"]
    import stagewise

    means = stagewise.evaluate(qrels, runs, metrics).means
    table = parse(report_page(qrels, runs, metrics, cutoffs=CUTS)).by_id("comparison-table")
    head = header(table)
    body = table.first("tbody").all("tr")
    cells = {tr.all("td")[1].content(): tr.all("td") for tr in body}
    lowest = min(means[r]["unj@10"] for r in runs)
    for run, tds in cells.items():
        unj = tds[head.index("unj@10")]
        assert bool(unj.all("span") and unj.all("span")[0].attrs.get("class") == "best") == (
            means[run]["unj@10"] == lowest
        )
        count = tds[head.index("num_ret")]
        assert count.content().split()[0] == str(int(means[run]["num_ret"]))
        assert not count.all("span")  # a count of results is not better for being larger


def test_plain_text_comparison_marks_the_lowest_unjudged_share() -> None:
    import stagewise
    from stagewise.report import render

    qrels, runs = small_inputs()
    comp = stagewise.compare(qrels, runs, ["unj@10", "num_ret"])
    text = render(comp, "table")
    lowest = min(comp.means[r]["unj@10"] for r in comp.runs)
    for run in comp.runs:
        line = next(x for x in text.splitlines() if f" {run} " in f" {x} ")
        assert ("*" in line.split()[2]) == (comp.means[run]["unj@10"] == lowest), line
        assert "100000" not in line and f" {int(comp.means[run]['num_ret'])}" in line


def _contrast(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)


def test_no_pale_line_colours_and_a_readable_legend_with_17_runs() -> None:
    assert all(_contrast(c) >= 3.0 for c in PALETTE), [(c, round(_contrast(c), 2)) for c in PALETTE]
    qrels, base = small_inputs()
    runs = {f"run-{i:02d}": base[list(base)[i % 3]] for i in range(17)}
    root = parse(report_page(qrels, runs, ["map"], cutoffs=CUTS, baseline="run-00"))
    svg = next(s for s in root.by_id("curves").all("svg"))
    page_svg = "".join(t.content() for t in svg.all("text"))
    assert all(f"run-{i:02d}" in page_svg for i in range(17))
    names = [t for t in svg.all("text") if t.content().startswith("run-")]
    sizes = {float(re.search(r"font-size: ?([0-9.]+)px", t.attrs["style"]).group(1)) for t in names}
    assert len(names) == 17 and min(sizes) >= 9, sizes  # the legend's names as large as the plot's text
    assert "#f0e442" not in _raw(svg).lower()


def _raw(node) -> str:
    """A parsed SVG's attributes and text, enough to find its styles and colours."""
    out = []
    for n in node.walk():
        out.append(" ".join(f"{k}={v}" for k, v in n.attrs.items()))
        out.append("".join(n.text))
    return " ".join(out)
