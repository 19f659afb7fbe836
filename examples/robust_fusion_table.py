"""Regenerate the Robust 2003 fusion table of docs/fusion.md: 14 fusions of the top three runs against the best
single run, paired randomization test (10,000 sign flips, seed 0), Holm over the 14 fusions per metric.

    .venv/bin/python examples/robust_fusion_table.py [--data ../shared/data/trec_robust03_runs]

Prints the markdown table; tests/test_fusion_robust.py checks the means in docs/fusion.md against the code.
The runs are research-only data (see their SOURCE.md), so they stay outside the repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from stagewise import compare, evaluate, read_qrels, read_run
from stagewise.fusion import fuse, optimize

TOP3 = ("pircRBa1", "aplrob03a", "uwmtCR0")
BASELINE = "pircRBa1 (best single run)"
FUSIONS = (
    ("rrf", "rrf", None),
    ("combsum, minmax", "combsum", "minmax"),
    ("combmnz, minmax", "combmnz", "minmax"),
    ("combsum, zscore", "combsum", "zscore"),
    ("combmnz, zscore", "combmnz", "zscore"),
    ("combmax, minmax", "combmax", "minmax"),
    ("bordafuse", "bordafuse", None),
    ("condorcet", "condorcet", None),
    ("isr", "isr", None),
    ("rbc", "rbc", None),
)
TUNED = (
    ("wsum, minmax (5-fold CV)", "wsum", "minmax"),
    ("posfuse (5-fold CV)", "posfuse", None),
    ("mapfuse (5-fold CV)", "mapfuse", None),
    ("bayesfuse (5-fold CV)", "bayesfuse", None),
)
METRICS = ("map", "ndcg@10")


def main() -> None:
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=default, help="the trec_robust03_runs folder")
    args = parser.parse_args()
    qrels = read_qrels(args.data / "robust03_qrels.txt")
    runs = {name: read_run(args.data / "runs" / f"input.{name}.gz", name=name) for name in TOP3}
    systems = {BASELINE: runs[TOP3[0]].renamed(BASELINE)}
    for label, method, norm in FUSIONS:
        systems[label] = fuse(runs, method, norm=norm, name=label)
    for label, method, norm in TUNED:
        systems[label] = optimize(runs, qrels, method, norm=norm, metric="map", folds=5, seed=0).run.renamed(label)
    means = evaluate(qrels, systems, METRICS).means
    result = compare(qrels, systems, METRICS, test="randomization", baseline=BASELINE, correction="holm", seed=0)
    print("| fusion of the top 3 | map | Δ map | p (Holm) | ndcg@10 | Δ ndcg@10 | p (Holm) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = means[BASELINE]
    print(f"| {BASELINE} | {base['map']:.4f} | | | {base['ndcg@10']:.4f} | | |")
    for label in systems:
        if label == BASELINE:
            continue
        cells = []
        for metric in METRICS:
            pair = result.pair(metric, BASELINE, label)
            value = f"{means[label][metric]:.4f}"
            cells += [f"**{value}**" if pair.significant else value, f"{pair.mean_diff:+.4f}", f"{pair.p_adjusted:.3f}"]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
