"""Golden outputs: every subcommand that prints results, in every format it offers, compared byte for byte with
the files under ``tests/golden/``.

They pin down the bytes a user (or a script) reads, so a refactor of the rendering cannot change them unseen.
The inputs are small and fixed: trec_eval's sample files (``src/stagewise/_bundled``) and the files in
``tests/golden/inputs`` (three small runs with graded qrels, a reversed-score copy of the sample run, RAG records).
The package version, the one part that changes by design, is stored as ``<VERSION>``.

To regenerate after an intended change of output (then read the diff before committing it)::

    STAGEWISE_REGEN_GOLDEN=1 PYTHONPATH=src python -m pytest -q tests/test_golden.py
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise import __version__
from stagewise.cli import app

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
INPUTS = GOLDEN / "inputs"
SAMPLE = HERE.parent / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
REGEN = os.environ.get("STAGEWISE_REGEN_GOLDEN") == "1"
VERSION = f"stagewise {__version__}"

EVAL = ["eval", "qrels.test", "results.test", "results.trunc"]
EVAL_M = [*EVAL, "-m", "map,ndcg@10,P@5,recall@100,ndcg@10(gain=exp),bpref"]
EVAL_PQ = ["eval", "small.qrels", "a.run", "b.run", "-m", "ndcg@5,P@3,rr", "--per-query"]
COMPARE = ["compare", "qrels.test", "results.test", "results.trunc", "results.rev", "-m", "map,ndcg@10,P@10"]
COMPARE_SMALL = ["compare", "small.qrels", "a.run", "b.run", "c.run", "-m", "ndcg@5,rr"]
FUSE = ["fuse", "a.run", "b.run", "c.run", "--qrels", "small.qrels", "--optimize", "--metric", "ndcg@5"]

#: name -> (argv, expected exit code, files the command writes whose bytes are golden too)
CASES: dict[str, tuple[list[str], int, tuple[str, ...]]] = {
    # eval: every format, means and per query
    "eval_table": (EVAL, 0, ()),
    "eval_m_table": (EVAL_M, 0, ()),
    "eval_m_markdown": ([*EVAL_M, "-f", "markdown"], 0, ()),
    "eval_m_latex": ([*EVAL_M, "-f", "latex"], 0, ()),
    "eval_m_csv": ([*EVAL_M, "-f", "csv"], 0, ()),
    "eval_m_json": ([*EVAL_M, "-f", "json"], 0, ()),
    "eval_m_digits": ([*EVAL_M, "--digits", "2", "-l", "2", "-M", "20", "-J"], 0, ()),
    "eval_pq_table": (EVAL_PQ, 0, ()),
    "eval_pq_markdown": ([*EVAL_PQ, "-f", "markdown"], 0, ()),
    "eval_pq_latex": ([*EVAL_PQ, "-f", "latex"], 0, ()),
    "eval_pq_csv": ([*EVAL_PQ, "-f", "csv"], 0, ()),
    "eval_pq_json": ([*EVAL_PQ, "-f", "json"], 0, ()),
    "eval_output_file": ([*EVAL_M, "-f", "markdown", "-o", "scores.md"], 0, ("scores.md",)),
    # compare: every format, with the pairs, per-query deltas, other tests and corrections
    "compare_table": (COMPARE, 0, ()),
    "compare_markdown": ([*COMPARE, "-f", "markdown"], 0, ()),
    "compare_latex": ([*COMPARE, "-f", "latex"], 0, ()),
    "compare_csv": ([*COMPARE, "-f", "csv"], 0, ()),
    "compare_json": ([*COMPARE, "-f", "json"], 0, ()),
    "compare_no_pairs": ([*COMPARE, "--no-pairs"], 0, ()),
    "compare_pq_table": ([*COMPARE_SMALL, "--per-query", "--top", "2"], 0, ()),
    "compare_pq_markdown": ([*COMPARE_SMALL, "--per-query", "-f", "markdown"], 0, ()),
    "compare_pq_latex": ([*COMPARE_SMALL, "--per-query", "--top", "2", "-f", "latex"], 0, ()),
    "compare_pq_json": ([*COMPARE_SMALL, "--per-query", "--top", "2", "-f", "json"], 0, ()),
    "compare_randomization": ([*COMPARE_SMALL, "-t", "randomization", "-B", "2000", "-c", "holm"], 0, ()),
    "compare_bootstrap": ([*COMPARE_SMALL, "-t", "bootstrap", "-B", "2000", "--ci", "bootstrap", "-f", "csv"], 0, ()),
    "compare_baseline": ([*COMPARE_SMALL, "--baseline", "a.run", "-t", "wilcoxon", "-c", "bh"], 0, ()),
    # validate: text and JSON (exit 1: the sample run misses judged queries or draws warnings)
    "validate_text": (["validate", "qrels.test", "results.test", "results.trunc", "a.run"], 1, ()),
    "validate_json": (["validate", "qrels.test", "results.test", "results.trunc", "a.run", "--format", "json"], 1, ()),
    "validate_small": (["validate", "small.qrels", "a.run", "b.run"], 0, ()),
    # fuse --optimize: the report in each format (spelled text, the old name, and table), on stdout and stderr
    "fuse_opt_text": ([*FUSE, "-o", "fused.run", "--format", "text"], 0, ("fused.run", "fused.run.meta.json")),
    "fuse_opt_default": ([*FUSE, "-o", "fused.run"], 0, ()),
    "fuse_opt_markdown": ([*FUSE, "-o", "fused.run", "--format", "markdown"], 0, ()),
    "fuse_opt_json": ([*FUSE, "-o", "fused.run", "--format", "json"], 0, ()),
    "fuse_opt_folds": ([*FUSE, "-o", "fused.run", "--folds", "2"], 0, ("fused.run", "fused.run.meta.json")),
    "fuse_opt_folds_markdown": ([*FUSE, "-o", "fused.run", "--folds", "2", "--format", "markdown"], 0, ()),
    "fuse_opt_folds_json": ([*FUSE, "-o", "fused.run", "--folds", "2", "--format", "json"], 0, ()),
    "fuse_opt_stdout": ([*FUSE, "--folds", "2", "--no-meta"], 0, ()),
    "fuse_opt_supervised": (
        [
            "fuse",
            "a.run",
            "b.run",
            "c.run",
            "--qrels",
            "small.qrels",
            "--optimize",
            "-m",
            "probfuse",
            "--folds",
            "2",
            "-o",
            "fused.run",
        ],
        0,
        ("fused.run",),
    ),
    # rag: every format
    "rag_table": (["rag", "records.jsonl"], 0, ()),
    "rag_markdown": (["rag", "records.jsonl", "-f", "markdown"], 0, ()),
    "rag_json": (["rag", "records.jsonl", "-f", "json"], 0, ()),
    "rag_json_per_sample": (["rag", "records.jsonl", "-f", "json", "--per-sample"], 0, ()),
    "rag_jsonl": (["rag", "records.jsonl", "-f", "jsonl"], 0, ()),
    "rag_f1": (["rag", "records.jsonl", "--correct", "f1:0.5", "--context-k", "2", "--digits", "3"], 0, ()),
    # trec_eval: the drop-in's own output
    "trec_eval": (["trec_eval", "qrels.test", "results.test"], 0, ()),
    "trec_eval_q": (["trec_eval", "-q", "-m", "map", "-m", "ndcg_cut.5,10", "qrels.test", "results.trunc"], 0, ()),
    "trec_eval_all": (["trec_eval", "-c", "-m", "all_trec", "qrels.test", "results.trunc"], 0, ()),
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding every input under its plain name (the names appear in the outputs), as the cwd."""
    for folder in (SAMPLE, INPUTS):
        for path in folder.iterdir():
            if path.is_file():
                shutil.copy(path, tmp_path / path.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(name: str, text: str) -> None:
    """``text`` against ``golden/name`` byte for byte (the version as ``<VERSION>``), or rewrite it."""
    path = GOLDEN / name
    stored = text.replace(VERSION, "stagewise <VERSION>")
    if REGEN:
        path.write_bytes(stored.encode("utf-8"))
        return
    assert path.is_file(), f"no golden file {path.name}: run with STAGEWISE_REGEN_GOLDEN=1 to create it"
    expected = path.read_bytes().decode("utf-8").replace("stagewise <VERSION>", VERSION)
    assert text == expected, f"{name} differs from its golden file"


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_output(case: str, workdir: Path) -> None:
    argv, code, written = CASES[case]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    check(f"{case}.out", result.stdout)
    if result.stderr or (GOLDEN / f"{case}.err").is_file():
        check(f"{case}.err", result.stderr)
    for filename in written:
        check(f"{case}.{filename}", (workdir / filename).read_bytes().decode("utf-8"))


def _rich_text(renderable: object, width: int) -> str:
    """What a terminal of ``width`` columns shows, without colour."""
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False).print(renderable)
    return buf.getvalue()


@pytest.mark.parametrize("width", [200, 60])
def test_terminal_tables(width: int, workdir: Path) -> None:
    """The rich tables a terminal shows (eval's transposes when narrow; compare's pairs drop two columns)."""
    from stagewise import evaluate
    from stagewise.report import rich
    from stagewise.stats import compare

    result = evaluate("qrels.test", ["results.test", "results.trunc"], ["map", "ndcg@10", "P@5", "recall@100"])
    check(f"rich_eval_{width}.txt", _rich_text(rich(result, width=width), width))
    check(f"rich_eval_pq_{width}.txt", _rich_text(rich(result, per_query=True, width=width), width))
    comp = compare("small.qrels", ["a.run", "b.run", "c.run"], ["ndcg@5", "rr"])
    check(f"rich_compare_{width}.txt", _rich_text(rich(comp), width))
    check(f"rich_compare_pq_{width}.txt", _rich_text(rich(comp, per_query=True, top=2), width))


def test_one_format_vocabulary(workdir: Path) -> None:
    """Every result renders through ``stagewise.report``; ``text`` (fuse's old name) is ``table``; an unknown
    format names the ones offered; what report cannot render says so."""
    from stagewise import report
    from stagewise.fusion import optimize

    tuned = optimize(["a.run", "b.run"], "small.qrels", "wsum", metric="ndcg@5", step=0.5)
    assert report.render(tuned, "text") == report.render(tuned, "table") == report.render(tuned)
    assert report.formats(tuned) == ("table", "markdown", "json")
    with pytest.raises(ValueError, match=r"choose one of .*markdown"):
        report.render(tuned, "latex")
    with pytest.raises(TypeError, match="cannot render a dict"):
        report.render({}, "table")
    assert set(report.formats(tuned)) <= set(report.FORMATS)


def test_results_do_not_render_themselves() -> None:
    """No module below ``report`` imports it (an HTML report importing EvalResult would close a cycle)."""
    import ast

    src = HERE.parent / "src" / "stagewise"
    offenders = []
    for path in src.rglob("*.py"):
        # entry layers (the demo wires a pipeline and adds its section to the HTML report); report/html/ is in report
        if path.relative_to(src).parts[0] in ("report", "cli", "app", "demo"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if any(n == "stagewise.report" or n.startswith("stagewise.report.") for n in names):
                offenders.append(str(path.relative_to(src)))
    assert offenders == []


def test_cli_format_choices_are_reports() -> None:
    """Each command's --format choices are the formats its renderer offers, in report's vocabulary (fuse also
    keeps ``text``, the old name of ``table``)."""
    from stagewise import report
    from stagewise.report import compare, fusion, rag
    from stagewise.report import eval as evaluation

    # eval's --format reads the registry (format_option): its module's formats, then those a plug-in renders
    assert report.offered("EvalResult") == (*evaluation.FORMATS, "beir", "mteb")
    assert report.offered("Comparison") == compare.FORMATS  # compare's --format reads the registry too
    assert report.offered("RagReport") == rag.FORMATS
    assert set(report.offered("FusionReport")) == set(fusion.FORMATS)  # fuse's --format reads the registry too
