"""Time and check cwl_eval's user models: stagewise's vectorised families beside ir_measures' ``cwl_eval`` provider.

On a TREC 2003 Robust run (``../shared/data/trec_robust03_runs``; the script says so and exits 0 when it is
absent) both tools compute the eight C/W/L measures in ir_measures' spelling, with ``max_rel=2`` (the qrels'
scale) and stagewise's ``ties="input"`` (the provider's order: score, then input order). The files are read
before the clock starts; each tool's time is one call for all eight measures. It prints both means, both times
and the largest per-query difference. Usage:

    .venv/bin/python benchmarks/cwl_speed.py [--run input.aplrob03a.gz]
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"
MEASURES = [
    "INST(T=1.0,max_rel=2)",
    "INSQ(T=1.0,max_rel=2)",
    "BPM(T=1.0,max_rel=2)@1000",
    "NERR8(max_rel=2)@10",
    "NERR9(max_rel=2)@10",
    "NERR10(p=0.9,max_rel=2)",
    "NERR11(T=1.0,max_rel=2)",
    "SDCG(max_rel=2)@10",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="input.aplrob03a.gz", help="a run file under the data's runs/ folder")
    args = parser.parse_args()
    qrels_path, run_path = DATA / "robust03_qrels.txt", DATA / "runs" / args.run
    if not run_path.exists():
        print(f"skipped: {run_path} is absent")
        return
    import ir_measures

    import stagewise

    logging.getLogger("ir_measures.cwl_eval").disabled = True  # its warnings about the observed label range
    qrels, run = stagewise.read_qrels(qrels_path), stagewise.read_run(run_path)
    their_qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    their_run = list(ir_measures.read_trec_run(str(run_path)))

    start = time.perf_counter()
    ours = stagewise.evaluate(qrels, run, MEASURES, ties="input").runs[0]
    our_time = time.perf_counter() - start

    provider = ir_measures.providers.registry["cwl_eval"]
    parsed = {name: ir_measures.parse_measure(name) for name in MEASURES}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = list(provider.iter_calc(list(parsed.values()), their_qrels, their_run))
    their_time = time.perf_counter() - start

    theirs = {(str(m.measure), m.query_id): float(m.value) for m in found}
    print(f"{'measure':30} {'stagewise':>10} {'ir_measures':>12} {'max |diff|':>11}")
    worst = 0.0
    for name in MEASURES:
        key = str(parsed[name])
        values = dict(zip(ours.query_ids.tolist(), ours.values[name].tolist(), strict=True))
        diffs = [abs(values[q] - v) for (m, q), v in theirs.items() if m == key]
        mean = sum(v for (m, _), v in theirs.items() if m == key) / len(diffs)
        worst = max(worst, *diffs)
        print(f"{name:30} {ours.means[name]:10.4f} {mean:12.4f} {max(diffs):11.1e}")
    print(f"time for {len(MEASURES)} measures, {len(ours.query_ids)} queries: stagewise {our_time:.2f} s, "
          f"ir_measures (cwl_eval) {their_time:.2f} s; largest per-query difference {worst:.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
