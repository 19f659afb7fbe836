"""How well does each support judge agree with people, and how fast is it?

    python benchmarks/judge_quality.py [--data ../shared/data] [--resamples 1000] [--json OUT.json]
                                       [--judges lexical,calibrated(features=lexical),calibrated]
                                       [--no-scifact] [--encoder-floor] [--profile N]

Two human-labelled sets, neither of which any judge was fitted on:

- **ExpertQA rand_test** (the headline): the claims whose evidence includes passage text and whose expert
  support label is Complete (supported), Partial or Incomplete (not supported): 793 claims, 562 supported. The
  calibrated judge was fitted on rand_val (``tools/fit_support_judge.py``); rand_test was read only here.
- **SciFact validation** (attribution of another kind: short scientific claims against the abstracts they
  cite): each (claim, cited abstract) pair, supported when SciFact's annotators marked the abstract SUPPORT,
  not supported when CONTRADICT or when the abstract has no rationale for the claim.

For each judge: accuracy, macro-F1 (mean of the F1 of "supported" and of "not supported") and Cohen's kappa,
each with a 95% percentile bootstrap interval (claims resampled with replacement, ``--resamples`` times, seed
0), the confusion counts, and claims/s: claims judged divided by the seconds it took, after the judge is built
and has judged one claim (so a model's loading is not counted, its encoding is). Judges that have a batch
``scores(items)`` method are called once per set, others claim by claim. Each target line says PASS or MISS:

- ExpertQA: macro-F1 >= 0.65 and kappa >= 0.30 (issue 27's bar for a default; the lexical judge: 0.478, 0.082);
- SciFact: macro-F1 and kappa no lower than the lexical judge's;
- speed: >= 200 claims/s on ExpertQA (each judge's line also gives the 1-minute load average before and after
  its timing: the machine is shared, and a busy one slows every judge).

``--encoder-floor`` adds one line: the packaged all-MiniLM-L6-v2 (onnx backend) encoding ExpertQA's claims
alone, without a passage, in claims/s: an upper bound on the speed of any judge that encodes each claim with it,
measured beside the judges on the same machine (the load average is printed with it, the machine being shared).
``--profile N`` times the parts of the MiniLM judge on ExpertQA's first N claims, in float32 (onnxruntime) and in
bfloat16 (torch): the lexical features, then the encoder on the distinct claims, passage sentences and whole
passages the judge encodes (texts, tokens, padding, seconds).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import os
import re
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from fit_support_judge import items_of, load_claims  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_JUDGES = "lexical,calibrated(features=lexical),calibrated"
TARGET_F1, TARGET_KAPPA, TARGET_RATE = 0.65, 0.30, 200.0
_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def scifact_items(path: Path) -> tuple[list[tuple[list[Any], str]], list[bool]]:
    """(passages, claim) per (claim, cited abstract) of SciFact's validation claims, and whether it supports."""
    from stagewise.rag.judges import Passage

    csv.field_size_limit(1 << 28)
    with zipfile.ZipFile(path) as archive:
        corpus = archive.read("corpus_train.csv").decode("utf-8")
        claims = archive.read("claims_validation.csv").decode("utf-8")
    abstracts = {}
    for row in csv.DictReader(io.StringIO(corpus)):
        sentences = [ast.literal_eval(s) for s in _LITERAL.findall(row["abstract"])]
        abstracts[row["doc_id"]] = " ".join([row["title"] + ".", *sentences])
    verdicts: dict[tuple[str, str], tuple[str, bool]] = {}
    for row in csv.DictReader(io.StringIO(claims)):
        for doc in re.findall(r"\d+", row["cited_doc_ids"]):
            key = (row["id"], doc)
            supported = row["evidence_doc_id"] == doc and row["evidence_label"] == "SUPPORT"
            if key not in verdicts or supported:
                verdicts[key] = (row["claim"], supported)
    keys = sorted(verdicts, key=lambda k: (int(k[0]), int(k[1])))
    items = [([Passage(doc, abstracts[doc])], verdicts[(cid, doc)][0]) for cid, doc in keys]
    return items, [verdicts[k][1] for k in keys]


def figures(predicted: Any, reference: Any) -> dict[str, float]:
    """Accuracy, macro-F1 and Cohen's kappa of two boolean arrays."""
    import numpy as np

    tp = float(np.sum(predicted & reference))
    fp = float(np.sum(predicted & ~reference))
    fn = float(np.sum(~predicted & reference))
    n = float(len(reference))
    tn = n - tp - fp - fn
    f1_yes = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
    f1_no = 2 * tn / (2 * tn + fp + fn) if tn + fp + fn else 1.0
    observed = (tp + tn) / n
    p_pred, p_ref = (tp + fp) / n, (tp + fn) / n
    expected = p_pred * p_ref + (1 - p_pred) * (1 - p_ref)
    kappa = 0.0 if expected == 1 else (observed - expected) / (1 - expected)
    return {"accuracy": observed, "macro_f1": (f1_yes + f1_no) / 2, "kappa": kappa}


def with_intervals(predicted: list[bool], reference: list[bool], resamples: int) -> dict[str, Any]:
    """The figures, their 95% percentile bootstrap intervals and the confusion counts."""
    import numpy as np

    p, r = np.asarray(predicted, bool), np.asarray(reference, bool)
    point = figures(p, r)
    rng = np.random.default_rng(0)
    draws = [figures(p[i], r[i]) for i in rng.integers(0, len(r), size=(resamples, len(r)))]
    out: dict[str, Any] = {"n": len(r), "human_supported": int(r.sum())}
    for key, value in point.items():
        low, high = np.percentile([d[key] for d in draws], [2.5, 97.5])
        out[key] = [round(value, 4), round(float(low), 4), round(float(high), 4)]
    out["confusion"] = {
        "tp": int(np.sum(p & r)), "fp": int(np.sum(p & ~r)), "fn": int(np.sum(~p & r)), "tn": int(np.sum(~p & ~r))
    }  # fmt: skip
    return out


def judge_all(judge: Any, items: list[tuple[list[Any], str]]) -> tuple[list[bool], float, list[float]]:
    """Each item's verdict, the claims/s, after one warm-up claim (a model loads there), and the 1-minute load
    average before and after (the machine is shared: a busy one slows every judge) with the claims per CPU
    second of this process (all its threads: less sensitive to the load than the wall clock)."""
    judge.supports(*items[0])
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    if hasattr(judge, "scores"):
        cut = judge.threshold
        predicted = [s >= cut for s in judge.scores(items)]
    else:
        predicted = [bool(judge.supports(passages, claim)) for passages, claim in items]
    rate = len(items) / (time.perf_counter() - start)
    per_cpu_second = len(items) / max(time.process_time() - cpu, 1e-9)
    return predicted, rate, [round(load, 2), round(os.getloadavg()[0], 2), round(per_cpu_second, 1)]


def profile(items: list[tuple[list[Any], str]], precision: str) -> dict[str, Any]:
    """Where the MiniLM judge's time goes on ``items``: the lexical features, then the judge's encoder (in
    ``precision``) on the distinct claims, passage sentences and whole passages that the judge encodes, each
    with its texts, tokens, padding and seconds (the encoder loaded and warmed up first)."""
    from stagewise.rag.calibrated import CalibratedJudge, lexical_features, sentences

    encoder = CalibratedJudge(precision=precision).encoder
    encoder.encode(["a warm-up sentence"])
    start = time.perf_counter()
    for passages, claim in items:
        lexical_features(passages, claim)
    out: dict[str, Any] = {"claims": len(items), "lexical_s": round(time.perf_counter() - start, 3)}
    texts = [t for passages, _ in items for t in dict.fromkeys(p.text for p in passages if p.text)]
    kinds = {
        "claim": list(dict.fromkeys(claim for _, claim in items)),
        "sentence": list(dict.fromkeys(s for t in texts for s in sentences(t))),
        "passage": list(dict.fromkeys(texts)),
    }
    for kind, batch in kinds.items():
        start = time.perf_counter()
        encoder.encode(batch)
        report = encoder.last_report
        out[kind] = {"texts": len(batch), "tokens": report.tokens, "padding": report.padded,
                     "seconds": round(time.perf_counter() - start, 2)}  # fmt: skip
    out["load_average"] = round(os.getloadavg()[0], 2)
    return out


def encoder_floor(claims: list[str]) -> float:
    """Claims/s of the packaged MiniLM encoding the claims alone (after loading and one warm-up batch)."""
    from stagewise.dense.encoders import load_encoder

    encoder = load_encoder(backend="onnx")
    encoder.encode(claims[:8])
    start = time.perf_counter()
    encoder.encode(claims)
    return len(claims) / (time.perf_counter() - start)


def run(data: Path, names: list[str], resamples: int, scifact: bool = True) -> dict[str, Any]:
    from stagewise.rag.judges import judge_name, parse_judge

    expertqa = load_claims(data / "expertqa" / "rand_test.jsonl")
    sets = {"expertqa_rand_test": (items_of(expertqa), [c["support"] == "Complete" for c in expertqa])}
    if scifact and (data / "scifact" / "scifact.zip").is_file():
        sets["scifact_validation"] = scifact_items(data / "scifact" / "scifact.zip")
    elif scifact:
        print("SciFact not found: its set is skipped", file=sys.stderr)
    results: dict[str, Any] = {}
    for name in names:
        judge = parse_judge(name).build()
        row: dict[str, Any] = {"judge": judge_name(judge), "version": getattr(judge, "version", None)}
        for set_name, (items, reference) in sets.items():
            predicted, rate, (*load, per_cpu_second) = judge_all(judge, items)
            row[set_name] = {
                **with_intervals(predicted, reference, resamples),
                "claims_per_s": round(rate, 1),
                "claims_per_cpu_s": per_cpu_second,
                "load_average": load,
            }
        results[name] = row
        print(f"judged with {row['judge']}", file=sys.stderr, flush=True)
    return results


def verdicts(results: dict[str, Any]) -> dict[str, dict[str, bool]]:
    """PASS (True) or MISS per judge and target."""
    lexical = results.get("lexical", {}).get("scifact_validation")
    out = {}
    for name, row in results.items():
        eq, sf = row["expertqa_rand_test"], row.get("scifact_validation")
        out[name] = {
            "expertqa macro-F1 >= 0.65": eq["macro_f1"][0] >= TARGET_F1,
            "expertqa kappa >= 0.30": eq["kappa"][0] >= TARGET_KAPPA,
            "claims/s >= 200": eq["claims_per_s"] >= TARGET_RATE,
        }
        if sf is not None and lexical is not None:  # judged only when both ran on SciFact
            out[name]["scifact no worse than lexical"] = (
                sf["macro_f1"][0] >= lexical["macro_f1"][0] and sf["kappa"][0] >= lexical["kappa"][0]
            )
    return out


def show(results: dict[str, Any]) -> str:
    lines = []
    for set_name in ("expertqa_rand_test", "scifact_validation"):
        first = next(iter(results.values())).get(set_name)
        if first is None:
            continue
        lines.append(f"{set_name}: {first['n']} claims, {first['human_supported']} supported by people")
        lines.append(f"  {'judge':34} {'accuracy':>22} {'macro-F1':>22} {'kappa':>22} {'claims/s':>9}")
        for row in results.values():
            fig = row[set_name]
            cells = [f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" for v in (fig["accuracy"], fig["macro_f1"], fig["kappa"])]
            lines.append(
                f"  {row['judge']:34} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22} {fig['claims_per_s']:>9,.0f}"
            )
    lines.append(f"speed on ExpertQA, after loading ({os.cpu_count()} CPUs; 1-minute load average before -> after):")
    for row in results.values():
        fig = row["expertqa_rand_test"]
        verdict = "PASS" if fig["claims_per_s"] >= TARGET_RATE else "MISS"
        load = " -> ".join(f"{v:.1f}" for v in fig["load_average"])
        lines.append(
            f"  {row['judge']:34} {fig['claims_per_s']:>9,.1f} claims/s  {verdict} (>= 200)  load {load}; "
            f"{fig['claims_per_cpu_s']:,.1f} claims per CPU second"
        )
    lines.append("targets (issue 27):")
    for name, checks in verdicts(results).items():
        lines.append(
            f"  {results[name]['judge']}: " + "; ".join(f"{k} {'PASS' if v else 'MISS'}" for k, v in checks.items())
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Support judges against human labels: agreement and speed.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--judges", default=DEFAULT_JUDGES, help="comma-separated judge names (spec grammar)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    parser.add_argument("--encoder-floor", action="store_true", help="also time MiniLM encoding the claims alone")
    parser.add_argument("--no-scifact", action="store_true", help="ExpertQA only")
    parser.add_argument(
        "--profile", type=int, metavar="N", help="also time the MiniLM judge's parts on ExpertQA's first N claims"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = [n for n in re.split(r",(?![^()]*\))", args.judges) if n.strip()]
    results = run(args.data, names, args.resamples, scifact=not args.no_scifact)
    print(show(results))
    out: dict[str, Any] = {"results": results, "targets": verdicts(results)}
    if args.profile:
        items = items_of(load_claims(args.data / "expertqa" / "rand_test.jsonl"))[: args.profile]
        out["profile"] = {p: profile(items, p) for p in ("float32", "bfloat16")}
        for precision, parts in out["profile"].items():
            encoded = ", ".join(
                f"{k}s {v['texts']} ({v['tokens']:,} tokens, {v['padding']:,} padding) {v['seconds']:.1f} s"
                for k, v in parts.items()
                if isinstance(v, dict)
            )
            print(
                f"profile, MiniLM in {precision}, {parts['claims']} claims: lexical features "
                f"{parts['lexical_s']:.2f} s; encoding {encoded} (load average {parts['load_average']})"
            )
    if args.encoder_floor:
        claims = [c["claim"] for c in load_claims(args.data / "expertqa" / "rand_test.jsonl")]
        out["encoder_floor_claims_per_s"] = round(encoder_floor(claims), 1)
        out["load_average"] = [round(v, 2) for v in os.getloadavg()]
        print(
            f"encoder floor: all-MiniLM-L6-v2 (onnx) encodes {out['encoder_floor_claims_per_s']:,.1f} claims/s with "
            f"no passage at all (load average {out['load_average'][0]}, {os.cpu_count()} CPUs)"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
