"""How far can cheap signals go on ExpertQA? Nested cross-validation and a learning curve, on rand_val only.

    python tools/support_judge_evidence.py [--data ../shared/data/expertqa/rand_val.jsonl] [--seeds 3]
                                           [--dense] [--json OUT.json]

Issue 27 asks of the default support judge macro-F1 >= 0.65 and Cohen's kappa >= 0.30 against ExpertQA's
experts. This script estimates, **without reading rand_test**, what each candidate recipe can reach, so the
choice of recipe and the verdict "out of reach" rest on the fitting split alone:

- **recipes**: the shipped features (:data:`stagewise.rag.calibrated.LEXICAL_NAMES`, and with ``--dense`` the
  MiniLM cosines), alone or with the candidate features below, under logistic regression (C = 1 as shipped, and
  C = 0.1) and gradient-boosted stumps (100 stumps of depth 1, learning rate 0.1, subsample 0.8);
- **nested cross-validation**: 5 outer stratified folds, repeated with ``--seeds`` seeds; in each outer
  training part, the supported threshold is the one that maximises macro-F1 on 5-fold out-of-fold
  probabilities of that part (as ``fit_support_judge.py`` chooses it), and is then applied to the held-out fold.
  So the estimate counts the threshold's own noise, unlike an out-of-fold figure with the threshold chosen on it;
- **learning curve**: the shipped recipe trained on 25%, 50%, 75% and 100% of each outer training part: if the
  estimate still climbed steeply at 100%, more labelled claims of the same kind might close the gap.

Candidate features (stemmed with PyStemmer's English Snowball stemmer, stop words dropped; none ships):
``stem_bigram`` and ``stem_trigram`` (the share of the claim's adjacent stem pairs / triples found adjacent in a
passage sentence), ``char5`` (the share of the claim's character 5-grams in the passages: paraphrase by
morphology), ``lcs`` (the longest common stem subsequence with the best of the three most-overlapping
sentences, over the claim's stems: ROUGE-L recall), ``stem_window2`` (the best two adjacent sentences' share of
the claim's stems), ``missing`` (log(1 + the claim's stems found nowhere)), ``markers`` (the claim's citation
markers). The passages' length is left out on purpose (see ``docs/rag.md``: it measures how ExpertQA cut its
excerpts, not support).

scikit-learn is needed to run this script only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fit_support_judge import DEFAULT_DATA, SUPPORTED, items_of, load_claims

CANDIDATES = ("stem_bigram", "stem_trigram", "char5", "lcs", "stem_window2", "missing", "markers")
SHARES = (0.25, 0.5, 0.75, 1.0)
_WORD = re.compile(r"[a-z0-9]+")


def _lcs(a: list[str], b: list[str]) -> int:
    """The length of the longest common subsequence (dynamic programming, one row kept)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(previous[j] + 1 if x == y else max(previous[j + 1], row[j]))
        previous = row
    return previous[-1]


def candidate_features(passages: list[Any], claim: str) -> dict[str, float]:
    """The candidate signals of one claim against its passages (see the module's docstring)."""
    import Stemmer

    from stagewise.rag.calibrated import _MARKER, sentences
    from stagewise.rag.judges import STOPWORDS

    stemmer = Stemmer.Stemmer("english")

    def stems(text: str) -> list[str]:
        return stemmer.stemWords([w for w in _WORD.findall(_MARKER.sub(" ", text).lower()) if w not in STOPWORDS])

    def grams(text: str) -> set[str]:
        flat = " ".join(_WORD.findall(_MARKER.sub(" ", text).lower()))
        return {flat[i : i + 5] for i in range(len(flat) - 4)}

    wanted = stems(claim)
    distinct, n = set(wanted), max(len(set(wanted)), 1)
    texts = [p.text for p in passages if p.text]
    per_sentence = [stems(s) for t in texts for s in sentences(t)]
    found = set(itertools.chain.from_iterable(per_sentence))

    def share_found(mine: set[Any], theirs: set[Any]) -> float:
        return len(mine & theirs) / len(mine) if mine else 0.0

    pairs = set(itertools.pairwise(wanted))
    triples = set(zip(wanted, wanted[1:], wanted[2:], strict=False))
    best = sorted(per_sentence, key=lambda s: -len(distinct & set(s)))[:3]
    windows = [set(a) | set(b) for a, b in itertools.pairwise(per_sentence)] or [set(s) for s in per_sentence]
    claim_grams = grams(claim)
    return {
        "stem_bigram": share_found(pairs, {p for s in per_sentence for p in itertools.pairwise(s)}),
        "stem_trigram": share_found(triples, {t for s in per_sentence for t in zip(s, s[1:], s[2:], strict=False)}),
        "char5": share_found(claim_grams, set().union(*(grams(t) for t in texts))) if texts else 0.0,
        "lcs": max((_lcs(wanted, s) / max(len(wanted), 1) for s in best), default=0.0),
        "stem_window2": max((len(distinct & w) / n for w in windows), default=0.0),
        "missing": math.log1p(len(distinct - found)),
        "markers": float(len(_MARKER.findall(claim))),
    }


def best_cut(probability: Any, reference: Any) -> float:
    """The macro-F1-maximising cut (a midpoint between distinct probabilities; the lowest on a tie), every cut
    scored at once from cumulative counts (the threshold search of ``fit_support_judge.py``, vectorised)."""
    import numpy as np

    values, index = np.unique(probability, return_inverse=True)
    if len(values) == 1:
        return float(values[0])
    reference = np.asarray(reference, dtype=bool)
    positives = np.bincount(index, weights=reference, minlength=len(values))
    negatives = np.bincount(index, weights=~reference, minlength=len(values))
    # the cut between values[i] and values[i + 1] calls supported every claim with a value above index i
    tp = np.cumsum(positives[::-1])[::-1][1:]
    fp = np.cumsum(negatives[::-1])[::-1][1:]
    fn, tn = positives.sum() - tp, negatives.sum() - fp
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_yes = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        f1_no = np.where(2 * tn + fp + fn > 0, 2 * tn / (2 * tn + fp + fn), 0.0)
    best = int(np.argmax((f1_yes + f1_no) / 2))  # the first maximum: the lowest cut on a tie
    return float((values[best] + values[best + 1]) / 2)


def model_of(kind: str) -> Any:
    """A fresh, unfitted model of one of the recipes' kinds."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "stumps":
        return GradientBoostingClassifier(
            n_estimators=100, max_depth=1, learning_rate=0.1, subsample=0.8, random_state=0
        )
    regularisation = float(kind.removeprefix("logistic C="))
    return make_pipeline(StandardScaler(), LogisticRegression(C=regularisation, max_iter=2000))


def nested_estimate(x: Any, y: Any, kind: str, seeds: int, share: float = 1.0) -> dict[str, Any]:
    """Macro-F1 and kappa of held-out folds, each judged with a threshold chosen inside its training part."""
    import numpy as np
    from sklearn.metrics import cohen_kappa_score, f1_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    f1s, kappas = [], []
    for seed in range(seeds):
        predicted = np.zeros(len(y), dtype=bool)
        for train, held in StratifiedKFold(5, shuffle=True, random_state=seed).split(x, y):
            if share < 1.0:
                keep = np.random.default_rng(seed).permutation(len(train))[: max(int(share * len(train)), 20)]
                train = train[np.sort(keep)]
            inner = StratifiedKFold(5, shuffle=True, random_state=0)
            oof = cross_val_predict(model_of(kind), x[train], y[train], cv=inner, method="predict_proba")[:, 1]
            cut = best_cut(oof, y[train])
            model = model_of(kind).fit(x[train], y[train])
            predicted[held] = model.predict_proba(x[held])[:, 1] >= cut
        f1s.append(f1_score(y, predicted, average="macro"))
        kappas.append(cohen_kappa_score(y, predicted))
    return {
        "macro_f1": round(float(np.mean(f1s)), 4),
        "macro_f1_sd": round(float(np.std(f1s)), 4),
        "kappa": round(float(np.mean(kappas)), 4),
        "kappa_sd": round(float(np.std(kappas)), 4),
    }


def feature_table(data: Path, dense: bool) -> tuple[list[dict[str, float]], list[bool], tuple[str, ...]]:
    """Every shipped and candidate signal of each rand_val claim, the expert verdicts and the shipped names."""
    from stagewise.rag.calibrated import DENSE_NAMES, LEXICAL_NAMES, CalibratedJudge

    claims = load_claims(data)
    items = items_of(claims)
    judge = CalibratedJudge("dense" if dense else "lexical", parameters={"version": "evidence", "models": {}})
    rows = judge.feature_rows(items)
    for row, (passages, claim) in zip(rows, items, strict=True):
        row.update(candidate_features(passages, claim))
    return rows, [c["support"] == SUPPORTED for c in claims], LEXICAL_NAMES + (DENSE_NAMES if dense else ())


def feature_auc(rows: list[dict[str, float]], verdicts: list[bool]) -> dict[str, float]:
    """Each signal alone: the ROC AUC of its value against the expert verdict (0.5 is chance, below 0.5 the
    signal points the other way)."""
    from sklearn.metrics import roc_auc_score

    return {name: round(float(roc_auc_score(verdicts, [row[name] for row in rows])), 3) for name in rows[0]}


def evidence(data: Path, seeds: int, dense: bool) -> dict[str, Any]:
    """Each signal's AUC, the nested estimate of each recipe, and the shipped recipe's learning curve."""
    import numpy as np

    rows, verdicts, shipped = feature_table(data, dense)
    y = np.asarray(verdicts)
    auc = feature_auc(rows, verdicts)
    print("  ROC AUC of each signal alone:", auc, file=sys.stderr, flush=True)
    sets = {"shipped": shipped, "shipped + candidates": shipped + CANDIDATES}
    recipes = []
    for (set_name, names), kind in itertools.product(sets.items(), ("logistic C=1", "logistic C=0.1", "stumps")):
        x = np.array([[row[n] for n in names] for row in rows])
        recipes.append({"features": set_name, "model": kind, **nested_estimate(x, y, kind, seeds)})
        print(f"  {set_name:22} {kind:15} {recipes[-1]}", file=sys.stderr, flush=True)
    x = np.array([[row[n] for n in shipped] for row in rows])
    curve = [
        {"training_share": s, "claims": int(0.8 * len(y) * s), **nested_estimate(x, y, "logistic C=1", seeds, s)}
        for s in SHARES
    ]
    return {
        "claims": len(y),
        "supported": int(y.sum()),
        "seeds": seeds,
        "auc": auc,
        "recipes": recipes,
        "learning_curve": curve,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seeds", type=int, default=3, help="repeats of the outer 5-fold split")
    parser.add_argument("--dense", action="store_true", help="add the MiniLM cosines (slow: the dense extra)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if "rand_test" in args.data.name:
        sys.exit("refusing to read rand_test: it is the split the judge is reported on")
    if not args.data.is_file():
        sys.exit(f"ExpertQA file not found: {args.data}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    out = evidence(args.data, args.seeds, args.dense)
    print(f"rand_val: {out['claims']} claims, {out['supported']} supported; nested 5-fold CV x {out['seeds']} seeds")
    print("ROC AUC of each signal alone: " + ", ".join(f"{k} {v:.3f}" for k, v in out["auc"].items()))
    print(f"  {'features':22} {'model':15} {'macro-F1':>15} {'kappa':>15}")
    for r in out["recipes"]:
        f1, kappa = f"{r['macro_f1']:.3f} ± {r['macro_f1_sd']:.3f}", f"{r['kappa']:.3f} ± {r['kappa_sd']:.3f}"
        print(f"  {r['features']:22} {r['model']:15} {f1:>15} {kappa:>15}")
    print("learning curve (shipped recipe):")
    for r in out["learning_curve"]:
        size = f"{r['training_share']:>4.0%} ({r['claims']} claims)"
        print(f"  {size}: macro-F1 {r['macro_f1']:.3f} ± {r['macro_f1_sd']:.3f}, kappa {r['kappa']:.3f}")
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
