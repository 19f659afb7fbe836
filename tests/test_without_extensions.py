"""Where no C compiler was available at install, stagewise runs on numpy and polars alone and must give the same
numbers: this runs one pipeline (read, evaluate, fuse, write, read back) in a fresh interpreter with the compiled
extensions hidden, and compares its output with the compiled run's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PIPELINE = r"""
import json, sys
if sys.argv[1] == "hidden":
    import importlib.abc

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.startswith("stagewise._native._"):
                raise ImportError(f"{name} hidden by the test")
            return None

    sys.meta_path.insert(0, Hide())

import stagewise
from stagewise._native import bm25, parser, rows
from stagewise.fusion import fuse

hidden = sys.argv[1] == "hidden"
assert (parser is None and rows is None and bm25 is None) == hidden, (parser, rows, bm25)
folder = sys.argv[2]
qrels = stagewise.read_qrels(folder + "/qrels.txt")
runs = [stagewise.read_run(folder + f"/run{i}.txt") for i in range(3)]
result = stagewise.evaluate(qrels, runs, ["map", "ndcg@10", "P@5", "recall@20", "bpref"])
out = {"means": result.means}
for method, norm in (("rrf", None), ("combmnz", "minmax"), ("bordafuse", None), ("wsum", "zscore")):
    fused = fuse(runs, method, norm=norm, depth=30)
    path = folder + f"/{method}.{sys.argv[1]}.run"
    stagewise.write_run(fused, path)
    back = stagewise.read_run(path, name=method)
    out[method] = {
        "rows": list(zip(back.query_ids[back.query_codes].tolist(), back.doc_ids.to_list(), back.scores.tolist())),
        "means": stagewise.evaluate(qrels, back, ["map", "ndcg@10"]).means,
    }
print(json.dumps(out))
"""


def _write_inputs(folder: Path) -> None:
    """Three runs over 25 queries with tied scores, ids that share prefixes, unordered lines; graded qrels."""
    import random

    rnd = random.Random(7)
    docs = [f"DOC-{i:03d}" for i in range(60)] + ["DOC-1", "DOC-10", "doc-é"]
    lines_q = []
    for q in range(25):
        for d in rnd.sample(docs, 12):
            lines_q.append(f"q{q} 0 {d} {rnd.choice([0, 0, 1, 2, 3])}")
    (folder / "qrels.txt").write_text("\n".join(lines_q) + "\n", encoding="utf-8")
    for r in range(3):
        lines = []
        for q in range(25):
            for rank, d in enumerate(rnd.sample(docs, 40), start=1):
                score = round(rnd.choice([1.0, 0.5, 0.25]) * rnd.randint(1, 6), 2)  # many ties
                lines.append(f"q{q} Q0 {d} {rank} {score} run{r}")
        rnd.shuffle(lines)
        (folder / f"run{r}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _pipeline(mode: str, folder: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PIPELINE, mode, str(folder)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_numpy_and_polars_paths_give_the_compiled_numbers(tmp_path: Path) -> None:
    from stagewise._native import parser, rows

    if parser is None or rows is None:
        pytest.skip("the C extensions are not built, so there is nothing to compare the fallbacks with")
    _write_inputs(tmp_path)
    compiled, fallback = _pipeline("compiled", tmp_path), _pipeline("hidden", tmp_path)
    assert fallback == compiled
    assert compiled["rrf"]["rows"]  # the comparison is not vacuous
