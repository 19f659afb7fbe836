"""``stagewise trec_eval`` against a real trec_eval 10 binary on random inputs: -R prefs, -R qrels_prefs,
-R qrels_jg, with -c, -M, -l, -J and -Z. Byte-identical output is the bar.

Needs a trec_eval built from usnistgov/trec_eval (``make`` at f4253652, version 10.0-rc3, which compares scores
as doubles: ``--ties docid-double`` here); give its path in ``STAGEWISE_TREC_EVAL``. Skipped without it. Cases
where that trec_eval stops with an error are left out: a judged topic absent from the run without -c (stagewise
skips it, as trec_eval documents) and a document at two levels of one sub-group (both refuse it).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from stagewise.errors import StagewiseError
from stagewise.trec_eval import measures as M
from stagewise.trec_eval.command import evaluate_command

BINARY = os.environ.get("STAGEWISE_TREC_EVAL")
pytestmark = pytest.mark.skipif(
    not (BINARY and Path(BINARY).is_file()), reason="set STAGEWISE_TREC_EVAL to a trec_eval 10 binary to run these"
)

DOCS = ["d1", "d10", "d2", "a", "B", "x9", "d100", "07", "7", "z", "m", "n"]
QIDS = ["q1", "q10", "2", "10", "q2"]
SCORES = [0.0, 0.5, 1.0, 2.0, 0.25, -1.0, 3.0, 0.1, 0.1 + 1e-12, 16777216.0, 16777217.0]


def _judgements(rng: random.Random, mode: str, topics: list[str]) -> list[str]:
    lines = []
    for q in topics:
        docs = rng.sample(DOCS, rng.randint(2, 10))
        for g in range(rng.randint(1, 3)):
            truth = {d: rng.choice([0, 0, 1, 2, 3, 0.5]) for d in docs}  # one user's consistent levels
            if mode == "prefs":
                for s in range(rng.choice([1, 1, 2, 3])):
                    scale = rng.choice([1, 2, 10])
                    lines += [
                        f"{q} g{g} s{s} {d} {truth[d] * scale}"
                        for d in rng.sample(docs, rng.randint(1, min(5, len(docs))))
                    ]
            else:
                for d in rng.sample(docs, rng.randint(1, len(docs))):
                    level = (-1 if rng.random() < 0.1 else int(truth[d] * 2)) if mode == "qrels_jg" else truth[d]
                    lines.append(f"{q} {g if mode == 'qrels_jg' else rng.choice([0, 0, 1])} {d} {level}")
    rng.shuffle(lines)
    return lines


def _case(rng: random.Random, folder: Path) -> list[str]:
    mode = rng.choice(["prefs", "qrels_prefs", "qrels_jg"])
    topics = rng.sample(QIDS, rng.randint(1, 4))
    (folder / "rel").write_text("\n".join(_judgements(rng, mode, topics)) + "\n")
    run_topics = topics if rng.random() < 0.6 else rng.sample(QIDS, rng.randint(1, 5))
    run = [
        f"{q} Q0 {d} 0 {rng.choice(SCORES)} t{rng.randint(0, 2)}"
        for q in run_topics
        for d in rng.sample(DOCS, rng.randint(1, 9))
    ]
    (folder / "run").write_text("\n".join(run) + "\n")
    flags = ["-q", "-R", mode, "-m", "qrels_jg" if mode == "qrels_jg" else "all_prefs"]
    flags += ["-c"] * (rng.random() < 0.5) + (["-M", str(rng.randint(1, 5))] if rng.random() < 0.3 else [])
    if mode == "qrels_jg":
        flags += (["-l", str(rng.randint(0, 3))] if rng.random() < 0.3 else []) + ["-J"] * (rng.random() < 0.3)
    if rng.random() < 0.4:  # every name the topic prints, so trec_eval's off-by-one binary search stays in bounds
        names = ["num_q", *M.PREFS_MEASURES, "map_avgjg", *(f"P_avgjg_{k}" for k in M.STANDARD_CUTOFFS)]
        names += [f"Rprec_mult_avgjg_{x:3.2f}" for x in M.FLOAT_CUTOFFS["Rprec_mult"]]
        z = [f"{q} {n} {rng.choice([0, 0.5, 1])} {rng.choice([0, 0.1, 2.5])}" for q in sorted(topics) for n in names]
        (folder / "z").write_text("\n".join(z) + "\n")
        flags += ["-Z", str(folder / "z")]
    return flags


@pytest.mark.parametrize("seed", range(40))
def test_byte_identical_to_trec_eval(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(10):
        flags = _case(rng, tmp_path)
        files = [str(tmp_path / "rel"), str(tmp_path / "run")]
        c = subprocess.run([BINARY, *flags, *files], capture_output=True, text=True, timeout=60)
        if c.returncode != 0:
            continue
        try:
            mine = evaluate_command([*flags, "--ties", "docid-double", *files])[0]
        except StagewiseError as exc:
            pytest.fail(f"trec_eval succeeded where stagewise refused: {exc} ({flags})")
        assert mine == c.stdout, flags
        compared += 1
    assert compared >= 3  # most cases reach the comparison
