"""Fit the calibrated support judge's parameters on ExpertQA's rand_val split, and ship them.

    python tools/fit_support_judge.py [--data ../shared/data/expertqa/rand_val.jsonl]
                                      [--out src/stagewise/_bundled/support_judge.json] [--features dense,lexical]

What it does, for each feature set (``dense``: every signal of :mod:`stagewise.rag.calibrated`, MiniLM's
cosines included; ``lexical``: the signals without MiniLM):

1. reads the claims of ``rand_val.jsonl`` whose evidence includes passage text and whose expert support label is
   Complete (supported), Partial or Incomplete (not supported) (``load_claims``); records the file's SHA-256;
2. computes the signals (:meth:`CalibratedJudge.feature_rows`), standardises them (mean and scale of rand_val),
   clips them to [-3, 3] (so a claim unlike rand_val's is not extrapolated) and fits scikit-learn's
   ``LogisticRegression`` (L2, C=1, lbfgs);
3. chooses the ``supported`` threshold that maximises macro-F1 on **out-of-fold** probabilities of rand_val (5
   stratified folds, seed 0), so the threshold is not chosen on scores the model was fitted to; and the
   ``partial`` threshold (at most the first) that best separates Complete and Partial from Incomplete, the same
   way;
4. writes the JSON that :func:`stagewise.rag.calibrated.load_parameters` reads: per feature set the feature
   names, means, scales, coefficients, intercept and thresholds, with the data's path, hash and counts.

rand_test is never read here: ``benchmarks/judge_quality.py`` reports the fitted judge on it.
``tools/support_judge_evidence.py`` estimates, by nested cross-validation on rand_val, what this recipe and
others (more features, other models, less data) can reach: the evidence for the choices made here. scikit-learn is
needed only to run this script (it is not a dependency of stagewise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "expertqa" / "rand_val.jsonl"
DEFAULT_OUT = ROOT / "src" / "stagewise" / "_bundled" / "support_judge.json"
VERSION = "1"
CLIP = 3.0  # standardised features are clipped to [-3, 3]: a value far outside rand_val's range is not extrapolated
SUPPORTED = "Complete"
NOT_SUPPORTED = ("Partial", "Incomplete")


def evidence_text(item: str) -> str:
    """The passage part of an ExpertQA evidence string ``"[n] URL\\n\\ntext"`` ("" when it is a URL alone)."""
    _head, sep, rest = item.partition("\n\n")
    return rest.strip() if sep else ""


def load_claims(path: Path) -> list[dict[str, Any]]:
    """The claims with passage text and a Complete / Partial / Incomplete label: ``claim``, ``texts``, ``support``."""
    claims = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        for answer in item["answers"].values():
            for claim in answer["claims"]:
                texts = [t for t in (evidence_text(e) for e in claim["evidence"]) if t]
                if texts and claim["support"] in (SUPPORTED, *NOT_SUPPORTED):
                    claims.append({"claim": claim["claim_string"], "texts": texts, "support": claim["support"]})
    return claims


def items_of(claims: list[dict[str, Any]]) -> list[tuple[list[Any], str]]:
    from stagewise.rag.judges import Passage

    return [([Passage(str(i), t) for i, t in enumerate(c["texts"])], c["claim"]) for c in claims]


def macro_f1(predicted: list[bool], reference: list[bool]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(reference, predicted, average="macro", zero_division=0))


def best_threshold(probability: Any, reference: list[bool], ceiling: float = 1.0) -> float:
    """The cut (a midpoint between two distinct probabilities, at most ``ceiling``) that maximises macro-F1;
    the lowest such cut on a tie."""
    import numpy as np

    values = np.unique(probability)
    cuts = [float(c) for c in (values[:-1] + values[1:]) / 2 if c <= ceiling]
    scored = [(macro_f1(list(probability >= c), reference), -c) for c in cuts]
    return -max(scored)[1]


def fit(rows: list[dict[str, float]], names: tuple[str, ...], labels: list[str]) -> dict[str, Any]:
    """Standardise, fit the logistic regression, choose both thresholds on out-of-fold probabilities."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    x = np.array([[row[n] for n in names] for row in rows], dtype=np.float64)
    y = np.array([label == SUPPORTED for label in labels])
    out_of_fold = np.zeros(len(y))
    for train, held in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        clip = FunctionTransformer(lambda z: np.clip(z, -CLIP, CLIP))
        model = make_pipeline(StandardScaler(), clip, LogisticRegression(C=1.0, max_iter=1000))
        model.fit(x[train], y[train])
        out_of_fold[held] = model.predict_proba(x[held])[:, 1]
    threshold = best_threshold(out_of_fold, list(y))
    at_least_partial = [label != "Incomplete" for label in labels]
    partial = best_threshold(out_of_fold, at_least_partial, ceiling=threshold)
    scaler, model = StandardScaler().fit(x), LogisticRegression(C=1.0, max_iter=1000)
    model.fit(np.clip(scaler.transform(x), -CLIP, CLIP), y)
    return {
        "features": list(names),
        "mean": [round(float(v), 10) for v in scaler.mean_],
        "scale": [round(float(v), 10) for v in scaler.scale_],
        "coef": [round(float(v), 10) for v in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 10),
        "clip": CLIP,
        "threshold": round(threshold, 10),
        "partial_threshold": round(partial, 10),
        "out_of_fold_macro_f1": round(macro_f1(list(out_of_fold >= threshold), list(y)), 4),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--features", default="dense,lexical")
    args = parser.parse_args(argv)
    if "rand_test" in args.data.name:
        sys.exit("refusing to fit on rand_test: it is the split the judge is reported on")
    if not args.data.is_file():
        sys.exit(f"ExpertQA file not found: {args.data}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from stagewise.rag.calibrated import DENSE_NAMES, LEXICAL_NAMES, CalibratedJudge

    claims = load_claims(args.data)
    labels = [c["support"] for c in claims]
    sets = [s.strip() for s in args.features.split(",") if s.strip()]
    rows = CalibratedJudge("dense" if "dense" in sets else "lexical", parameters={"version": "fit", "models": {}})
    rows = rows.feature_rows(items_of(claims))
    models = {}
    for name in sets:
        names = LEXICAL_NAMES + (DENSE_NAMES if name == "dense" else ())
        models[name] = fit(rows, names, labels)
        print(f"{name}: out-of-fold macro-F1 on rand_val {models[name]['out_of_fold_macro_f1']}", file=sys.stderr)
    data = {
        "version": VERSION,
        "fitted_on": {
            "file": "expertqa/" + args.data.name,
            "sha256": hashlib.sha256(args.data.read_bytes()).hexdigest(),
            "claims": len(claims),
            "supported": labels.count(SUPPORTED),
            "rule": "claims with passage text; supported = Complete, not = Partial or Incomplete",
            "model": "scikit-learn LogisticRegression(C=1), standardised features; thresholds on 5-fold "
            "out-of-fold probabilities (seed 0), supported: macro-F1, partial: Complete+Partial vs Incomplete",
        },
        "models": models,
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
