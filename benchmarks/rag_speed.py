"""How fast is RAG stage diagnosis? Samples per second on one core.

Synthetic records (a fixed seed) shaped like a real RAG evaluation: 20 retrieved ids, 1-2 evidence alternatives
(some of them sets needed together), 1-3 gold answers, one-sentence-to-three-sentence answers with [id] markers,
10% unanswerable questions, 5% abstentions. Each configuration is timed end to end: reading the JSONL file,
validating every record, answer metrics, evidence in context, labels and reasons, citations, the ranking metrics
through the metrics engine, and rendering per-sample JSONL.

    python benchmarks/rag_speed.py            # 20,000 samples
    python benchmarks/rag_speed.py --n 5000

The polars thread pool is limited to one thread, so the figures are per core. The target (issue #6) is at
least 5,000 samples per second per core for the lexical metrics and labels.
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

_WORDS_TEXT = "austen novel emma published england century author river city war treaty king queen science energy cell "
_WORDS_TEXT += "protein market price bank law court election party music film actor season team league species forest"
WORDS = _WORDS_TEXT.split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_records(n: int, seed: int = 7, with_texts: bool = False) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        pool = [f"d{rng.randrange(100_000)}" for _ in range(20)]
        retrieved = list(dict.fromkeys(pool))
        unanswerable = rng.random() < 0.10
        alts: list = []
        if not unanswerable:
            g = rng.choice(retrieved) if rng.random() < 0.7 else f"d{rng.randrange(100_000, 200_000)}"
            alts.append(g)
            if rng.random() < 0.3:
                alts.append([rng.choice(retrieved), f"d{rng.randrange(100_000)}"])
        gold = [] if unanswerable else [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))]
        if gold and rng.random() < 0.3:
            gold.append(gold[0].split()[0])
        if rng.random() < 0.05:
            answer = "I don't know."
        else:
            parts = []
            for _ in range(rng.randint(1, 3)):
                cite = " ".join(f"[{rng.choice(retrieved[:6])}]" for _ in range(rng.randint(0, 2)))
                parts.append(_sentence(rng, rng.randint(6, 14))[:-1] + (f" {cite}" if cite else "") + ".")
            if gold and rng.random() < 0.5:
                parts[0] = f"{gold[0]} {parts[0]}"
            answer = " ".join(parts)
        rec = {
            "id": f"q{i}",
            "question": _sentence(rng, 8),
            "retrieved": retrieved,
            "gold_evidence": alts,
            "answer": answer,
            "gold_answers": gold,
        }
        if with_texts:
            rec["passages"] = {d: _sentence(rng, 40) for d in retrieved[:5]}
        out.append(rec)
    return out


def _time(label: str, path: Path, n: int, repeat: int, **kwargs) -> float:
    from stagewise.rag import evaluate_rag
    from stagewise.report import render

    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        report = evaluate_rag(path, **kwargs)
        text = render(report, "jsonl")
        report.summary()
        best = min(best, time.process_time() - start)
    assert text.count("\n") == n
    rate = n / best
    print(f"{label:<58} {best:7.3f} s CPU  {rate:>9,.0f} samples/s/core")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "records.jsonl"
        plain.write_text("".join(json.dumps(r) + "\n" for r in make_records(args.n)))
        texts = Path(tmp) / "records_texts.jsonl"
        texts.write_text("".join(json.dumps(r) + "\n" for r in make_records(args.n, with_texts=True)))
        import stagewise.rag  # noqa: F401  (imports outside the timing)

        print(f"{args.n:,} samples, best of {args.repeat}, CPU time of this process (polars on 1 thread)")
        rates = {
            "labels": _time(
                "labels + answer metrics + id citations (judge none)", plain, args.n, args.repeat, judge="none"
            ),
            "gold": _time("... + ALCE sentence citations, gold judge", plain, args.n, args.repeat, judge="gold"),
            "lexical": _time(
                "... + ALCE sentence citations, lexical judge (5 texts)", texts, args.n, args.repeat, judge="lexical"
            ),
            "f1": _time(
                "labels, correct = f1:0.5, judge none", plain, args.n, args.repeat, judge="none", correct="f1:0.5"
            ),
        }
        slowest = min(rates.values())
        verdict = "meets" if slowest >= 5000 else "MISSES"
        print(f"slowest configuration: {slowest:,.0f} samples/s/core ({verdict} the 5,000 target)")


if __name__ == "__main__":
    main()
