"""How well does the lexical support judge agree with ExpertQA's human support labels?

ExpertQA (Malaviya et al. 2024) splits each system answer into claims; each claim comes with the evidence the
system cited (a URL and usually the retrieved passage text) and an expert's support label: Complete, Partial,
Incomplete, Missing (no evidence) or N/A. Here the judge sees the claim and the evidence texts and says
supported or not; the human label counts as supported only when it is ``Complete`` (attribution in the AIS
sense: the evidence fully supports the claim).

Two settings:

- ``with_text`` (the headline): claims whose evidence includes passage text and whose label is Complete, Partial
  or Incomplete. This is the question the judge can actually answer.
- ``all_labelled``: every claim except N/A, so also claims with no evidence (Missing) or with URLs only; the judge
  sees no text for those and says unsupported.

The lexical judge's threshold (0.6) was fixed before this data was looked at; the sweep is printed to show how
agreement moves with it, not to tune it.

    python examples/expertqa_agreement.py [--data ../shared/data/expertqa/rand_test.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "expertqa" / "rand_test.jsonl"
SUPPORTED = "Complete"
NOT_SUPPORTED = ("Partial", "Incomplete")


def evidence_text(item: str) -> str:
    """The passage part of an evidence string ``"[n] URL\\n\\ntext"`` ("" when it is a URL alone)."""
    _head, sep, rest = item.partition("\n\n")
    return rest.strip() if sep else ""


def load_claims(path: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """One dict per claim: ``claim``, ``texts`` (evidence passages), ``support`` (the human label), ``system``."""
    claims = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        for system, answer in item["answers"].items():
            for claim in answer["claims"]:
                texts = [t for t in (evidence_text(e) for e in claim["evidence"]) if t]
                claims.append(
                    {"claim": claim["claim_string"], "texts": texts, "support": claim["support"], "system": system}
                )
    return claims


def measure(claims: list[dict[str, Any]], judge: Any = None) -> dict[str, dict[str, Any]]:
    """Agreement (n, accuracy, Cohen's kappa, confusion counts) in both settings."""
    from stagewise.rag.judges import LexicalJudge, Passage, agreement

    judge = judge or LexicalJudge()
    out = {}
    for setting in ("with_text", "all_labelled"):
        if setting == "with_text":
            chosen = [c for c in claims if c["texts"] and c["support"] in (SUPPORTED, *NOT_SUPPORTED)]
        else:
            chosen = [c for c in claims if c["support"] != "N/A"]
        predicted = [judge.supports([Passage(str(i), t) for i, t in enumerate(c["texts"])], c["claim"]) for c in chosen]
        reference = [c["support"] == SUPPORTED for c in chosen]
        out[setting] = {**agreement(predicted, reference), "human_supported": sum(reference)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Lexical support judge vs ExpertQA human support labels.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        sys.exit(f"ExpertQA file not found: {args.data}")
    from stagewise.rag.judges import LexicalJudge

    claims = load_claims(args.data)
    print(f"{len(claims)} claims in {args.data.name}")
    for setting, r in measure(claims).items():
        print(
            f"{setting:<13} n={r['n']:<5} human supported={r['human_supported']:<4} accuracy={r['accuracy']:.4f} "
            f"kappa={r['kappa']:.4f}  (tp {r['tp']}, fp {r['fp']}, fn {r['fn']}, tn {r['tn']})"
        )
    print("threshold sweep (with_text):")
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        r = measure(claims, LexicalJudge(threshold))["with_text"]
        print(f"  {threshold:.1f}  accuracy={r['accuracy']:.4f}  kappa={r['kappa']:.4f}")


if __name__ == "__main__":
    main()
