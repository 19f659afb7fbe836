"""Outputs hold what they say and the line naming them says what they hold, run as a user runs the commands
(the console entry point): the format taken from -o's extension or a contradiction refused, the summary line
stating format and rows, and fuse saying when its run was cross-validated and how deep it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stagewise._bundled import sample_path

STAGEWISE = Path(sys.executable).with_name("stagewise")
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))
GOLDEN_INPUTS = Path(__file__).resolve().parent / "golden" / "inputs"


def stagewise(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(STAGEWISE), *args], capture_output=True, text=True, timeout=120, **kwargs)


def test_eval_writes_the_format_its_file_name_asks_for(tmp_path: Path) -> None:
    out = tmp_path / "scores.json"
    result = stagewise("eval", QRELS, RUN, TRUNC, "-m", "map,P@10", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert set(json.loads(out.read_text())["runs"]) == {"results.test", "results.trunc"}
    assert result.stderr == f"wrote {out} (json, 2 runs x 2 metrics)\n"


def test_a_format_the_extension_contradicts_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "scores.json"
    result = stagewise("eval", QRELS, RUN, "-m", "map", "-f", "csv", "-o", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "its extension asks for json but --format is csv" in result.stderr
    assert not out.exists()


def test_compare_and_rag_take_the_extension_too(tmp_path: Path) -> None:
    md = tmp_path / "comparison.md"
    result = stagewise("compare", QRELS, RUN, TRUNC, "-m", "map", "-o", str(md))
    assert result.returncode == 0, result.stderr
    assert md.read_text().startswith("**stagewise compare")
    assert "(markdown, 2 runs, 1 metric(s), 1 pairs)" in result.stderr
    records = str(GOLDEN_INPUTS / "records.jsonl")
    as_json = tmp_path / "rag.json"
    result = stagewise("rag", records, "-o", str(as_json))
    assert result.returncode == 0, result.stderr
    assert isinstance(json.loads(as_json.read_text()), dict)
    assert "(json, " in result.stderr and " samples)" in result.stderr
    refused = stagewise("rag", records, "-o", str(tmp_path / "rag.csv"))
    assert refused.returncode == 2 and "asks for csv, which this command does not write" in refused.stderr


def test_per_query_summary_counts_the_rows(tmp_path: Path) -> None:
    out = tmp_path / "pq.md"
    result = stagewise("eval", QRELS, RUN, "-m", "map", "-q", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "(markdown, 1 run x 1 metric, 3 per-query rows and each run's mean as query 'all')" in result.stderr


def _depth(run: Path) -> int:
    counts: dict[str, int] = {}
    for line in run.read_text().splitlines():
        counts[line.split()[0]] = counts.get(line.split()[0], 0) + 1
    return max(counts.values())


def test_fuse_says_how_deep_and_cuts_with_k(tmp_path: Path) -> None:
    a, b = str(GOLDEN_INPUTS / "a.run"), str(GOLDEN_INPUTS / "b.run")
    full = tmp_path / "full.run"
    result = stagewise("fuse", a, b, "--method", "rrf", "-o", str(full))
    assert result.returncode == 0, result.stderr
    deepest = _depth(full)
    assert f"up to {deepest} per query (all fused; -k N keeps N)" in result.stderr
    cut = tmp_path / "cut.run"
    result = stagewise("fuse", a, b, "--method", "rrf", "-k", "2", "-o", str(cut))
    assert result.returncode == 0, result.stderr
    assert _depth(cut) == 2 and "the first 2 per query" in result.stderr
    meta = json.loads(Path(str(cut) + ".meta.json").read_text())
    assert meta["output_depth"] == 2 and meta["n_results"] == len(cut.read_text().splitlines())
    # the first 2 of each query are the full run's first 2, in the same order
    first_two: dict[str, list[str]] = {}
    for line in full.read_text().splitlines():
        first_two.setdefault(line.split()[0], []).append(line)
    assert cut.read_text().splitlines() == [line for rows in first_two.values() for line in rows[:2]]


def test_cross_validated_fuse_says_so(tmp_path: Path) -> None:
    ins = [str(GOLDEN_INPUTS / n) for n in ("a.run", "b.run", "c.run")]
    qrels = str(GOLDEN_INPUTS / "small.qrels")
    out = tmp_path / "cv.run"
    result = stagewise(
        "fuse", *ins, "--qrels", qrels, "--optimize", "--metric", "ndcg@5", "--folds", "2", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "cross-validated over 2 folds" in line and "fold 1: " in line and "fold 2: " in line


def test_report_says_what_its_page_holds(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = stagewise("report", QRELS, RUN, TRUNC, "-m", "map", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"wrote {out} (HTML report: 2 runs, compared with tests)"
