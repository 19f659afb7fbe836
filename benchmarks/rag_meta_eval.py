"""Do stagewise's claim-level RAG metrics agree with people? RAGChecker's meta-evaluation, rerun.

    python benchmarks/rag_meta_eval.py [--data ../shared/data/ragchecker] [--json OUT.json]
                                       [--judges lexical,calibrated(features=lexical),calibrated]

The data (``human_labeled_data.json``, ``baseline_ragchecker.json``; RAGChecker's meta-evaluation, Apache-2.0):
280 instances, each a query, a ground-truth answer and the responses of two RAG systems; two annotators each
compared the two responses on correctness, completeness and overall quality, on a scale -2..2 (positive: the
second response is better). 560 human labels.

The protocol is RAGChecker's own (``data/meta_evaluation/meta_eval.py``; the facts carried, the code is ours):
for each metric, delta = metric(response 2) - metric(response 1) per instance; a NaN delta is replaced by the
median delta; delta is scaled linearly to [-2, 2] (which changes no correlation); each instance's delta is
repeated for its two annotators; then Pearson's r and Spearman's rho with the 560 human labels, x 100. We add
Kendall's tau-b (scipy's default), which their script does not compute. RAGChecker paired its precision with
correctness, recall with completeness and F1 with overall; every metric here is reported against all three.

The metrics that can be computed on this data (it holds no retrieved chunks, so only the overall group of
RAGChecker's eleven):

- ``ragchecker``: RAGChecker's own values stored in ``baseline_ragchecker.json`` (its LLM extractor and checker):
  ``correctness_label`` = its precision, ``completeness_label`` = its recall, ``overall_label`` = its F1;
- ``claim precision / recall / F1 [judge]``: stagewise's (``stagewise.rag.claims``): each response split into
  sentence claims, each checked against the ground-truth answer (precision), each ground-truth sentence checked
  against the response (recall), F1 per instance, by each stagewise judge (binary: only ``supported`` counts);
- ``graded precision / recall [judge]``: the same claims, the mean of the judge's support score in [0, 1]
  instead of the share called supported;
- ``answer token F1``: SQuAD token F1 of the response against the ground-truth answer (``stagewise rag``'s f1).

Also printed: a 95% percentile bootstrap interval of each Pearson r (instances resampled with replacement, both
of an instance's labels kept together, ``--resamples`` times, seed 0), the human sanity check (annotator 1
against annotator 2, as RAGChecker's script does), and the seconds each judge took.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "ragchecker"
DEFAULT_JUDGES = "lexical,calibrated(features=lexical)"
ASPECTS = ("correctness_label", "completeness_label", "overall_label")
RAGCHECKER_PAIRS = {"correctness_label": "precision", "completeness_label": "recall", "overall_label": "f1"}


def load(data: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    human = json.loads((data / "human_labeled_data.json").read_text(encoding="utf-8"))
    instances = json.loads((data / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    if len(human) != 2 * len(instances):
        raise SystemExit(f"expected two human labels per instance; got {len(human)} for {len(instances)}")
    for i, row in enumerate(human):  # RAGChecker's script pairs label i with instance i // 2: check it
        if row["instance_id"] != instances[i // 2]["instance_id"]:
            raise SystemExit(
                f"human label {i} is for instance {row['instance_id']}, not {instances[i // 2]['instance_id']}"
            )
    return human, instances


def normalised_delta(first: list[float], second: list[float]) -> Any:
    """RAGChecker's delta: second - first, NaN -> the median, scaled linearly to [-2, 2]."""
    import numpy as np

    delta = np.asarray(second, dtype=float) - np.asarray(first, dtype=float)
    delta[np.isnan(delta)] = np.nanmedian(delta)
    low, high = float(delta.min()), float(delta.max())
    return ((delta - low) / (high - low) - 0.5) * 4 if high > low else delta


def correlations(delta: Any, human: Any) -> tuple[float, float, float]:
    """Pearson, Spearman and Kendall (tau-b) x 100 of each instance's delta, repeated per annotator, with the
    human labels."""
    import numpy as np
    from scipy import stats

    x = np.repeat(delta, 2)
    if np.all(x == x[0]):
        return (float("nan"),) * 3
    return (
        100 * float(stats.pearsonr(x, human)[0]),
        100 * float(stats.spearmanr(x, human)[0]),
        100 * float(stats.kendalltau(x, human)[0]),
    )


def pearson_interval(delta: Any, human: Any, resamples: int, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of Pearson's r x 100: instances resampled with replacement, each with
    both of its annotators' labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(delta)
    pairs = human.reshape(n, 2)
    values = []
    for _ in range(resamples):
        idx = rng.integers(0, n, n)
        x, y = np.repeat(delta[idx], 2), pairs[idx].ravel()
        if x.std() > 0 and y.std() > 0:
            values.append(np.corrcoef(x, y)[0, 1])
    low, high = np.percentile(values, [2.5, 97.5])
    return 100 * float(low), 100 * float(high)


def stagewise_scores(judge_spec: str, instances: list[dict[str, Any]]) -> tuple[dict[str, list[list[float]]], float]:
    """Per metric, [response 1 values, response 2 values] over the instances, from one judge; and its seconds."""
    from stagewise.rag.claims import check_claims, sample_metrics, split_claims
    from stagewise.rag.judges import Passage, parse_judge
    from stagewise.rag.verdicts import support_verdicts

    judge = parse_judge(judge_spec).build()
    name = parse_judge(judge_spec).name
    out: dict[str, list[list[float]]] = {}
    start = time.perf_counter()
    for side in ("model1", "model2"):
        samples = [
            {"id": i, "response": inst[side]["response"], "gt_answer": inst["gt_answer"], "chunks": []}
            for i, inst in enumerate(instances)
        ]
        metrics = [sample_metrics(c) for c in check_claims(judge, samples)]
        for metric in ("precision", "recall", "f1"):
            out.setdefault(f"claim {metric} [{name}]", []).append([m[metric] for m in metrics])
        # graded: the mean support score of the same claims (one batch per direction)
        for metric, claims_of, other in (
            ("precision", lambda s: split_claims(s["response"]), "gt_answer"),
            ("recall", lambda s: split_claims(s["gt_answer"]), "response"),
        ):
            claims = [claims_of(s) for s in samples]
            items = [([Passage(other, s[other])], c) for s, cs in zip(samples, claims, strict=True) for c in cs]
            scores = iter(v.score or 0.0 for v in support_verdicts(judge, items))
            values = []
            for cs in claims:
                got = [next(scores) for _ in cs]
                values.append(sum(got) / len(got) if got else 0.0)
            out.setdefault(f"graded {metric} [{name}]", []).append(values)
    return out, time.perf_counter() - start


def all_scores(
    instances: list[dict[str, Any]], judges: list[str]
) -> tuple[dict[str, list[list[float]]], dict[str, float]]:
    from stagewise.rag.answers import score_answer

    scores: dict[str, list[list[float]]] = {}
    for aspect in ASPECTS:
        name = f"ragchecker {RAGCHECKER_PAIRS[aspect]} (stored)"
        scores[name] = [[inst[side]["ragchecker"][aspect] for inst in instances] for side in ("model1", "model2")]
    scores["answer token F1"] = [
        [score_answer(inst[side]["response"], [inst["gt_answer"]]).f1 for inst in instances]
        for side in ("model1", "model2")
    ]
    seconds = {}
    for spec in judges:
        got, took = stagewise_scores(spec, instances)
        scores.update(got)
        seconds[spec] = took
    return scores, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--judges", default=DEFAULT_JUDGES, help="stagewise judges, comma-separated")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the intervals")
    args = parser.parse_args(argv)
    if not (args.data / "human_labeled_data.json").exists():
        print(f"RAGChecker's meta-evaluation data not found in {args.data}", file=sys.stderr)
        return 2
    import numpy as np

    human, instances = load(args.data)
    judges = [j.strip() for j in _split(args.judges) if j.strip()]
    scores, seconds = all_scores(instances, judges)
    table: dict[str, dict[str, tuple[float, float, float]]] = {}
    intervals: dict[str, dict[str, tuple[float, float]]] = {}
    for metric, (first, second) in scores.items():
        delta = normalised_delta(first, second)
        labels = {a: np.array([h[a] for h in human], dtype=float) for a in ASPECTS}
        table[metric] = {a: correlations(delta, labels[a]) for a in ASPECTS}
        intervals[metric] = {a: pearson_interval(delta, labels[a], args.resamples) for a in ASPECTS}
    sanity = {}
    for aspect in ASPECTS:
        labels = np.array([h[aspect] for h in human], dtype=float)
        first, second = labels[0::2], labels[1::2]
        from scipy import stats

        sanity[aspect] = (
            100 * float(stats.pearsonr(first, second)[0]),
            100 * float(stats.spearmanr(first, second)[0]),
            100 * float(stats.kendalltau(first, second)[0]),
        )
    print(render(table, sanity, seconds, len(instances)))
    print(render_intervals(table, intervals))
    if args.json:
        payload = {
            "instances": len(instances),
            "table": table,
            "pearson_95_interval": intervals,
            "human_sanity": sanity,
            "judge_seconds": seconds,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _split(text: str) -> list[str]:
    """Comma-separated judge specs; commas inside parentheses stay."""
    out, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    return [*out, current]


def render(table: dict[str, Any], sanity: dict[str, Any], seconds: dict[str, float], n: int) -> str:
    heads = ["correctness", "completeness", "overall"]
    width = max(len(m) for m in table) + 2
    lines = [
        f"RAGChecker meta-evaluation: {n} instances, {2 * n} human labels; Pearson / Spearman / Kendall x 100",
        "metric".ljust(width) + "".join(h.rjust(22) for h in heads),
    ]
    for metric, row in table.items():
        cells = "".join(f"{p:6.1f} {s:6.1f} {k:6.1f}".rjust(22) for p, s, k in (row[a] for a in ASPECTS))
        lines.append(metric.ljust(width) + cells)
    cells = "".join(f"{p:6.1f} {s:6.1f} {k:6.1f}".rjust(22) for p, s, k in (sanity[a] for a in ASPECTS))
    lines.append("human: annotator 1 vs 2".ljust(width) + cells)
    lines.append("")
    lines += [f"judge {spec}: {took:.1f} s for both responses of every instance" for spec, took in seconds.items()]
    return "\n".join(lines)


def render_intervals(table: dict[str, Any], intervals: dict[str, Any]) -> str:
    width = max(len(m) for m in table) + 2
    lines = ["", "Pearson x 100 with its 95% bootstrap interval", "metric".ljust(width) + "".join(
        h.rjust(22) for h in ("correctness", "completeness", "overall"))]  # fmt: skip
    for metric, row in intervals.items():
        cells = "".join(
            f"{table[metric][a][0]:5.1f} [{low:5.1f}, {high:5.1f}]".rjust(22) for a, (low, high) in row.items()
        )
        lines.append(metric.ljust(width) + cells)
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
