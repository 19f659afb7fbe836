"""An evaluation as the result JSON that BEIR and MTEB write, so their readers and leaderboards take it.

- ``beir``: ``{"ndcg": {"NDCG@10": ...}, "map": {"MAP@100": ...}, "recall": {"Recall@100": ...},
  "precision": {"P@10": ...}, "mrr": {"MRR@10": ...}}``, the dictionaries of BEIR's
  ``EvaluateRetrieval.evaluate`` (and ``evaluate_custom(..., "mrr")``), rounded to 5 decimals as BEIR rounds them.
- ``mteb``: one MTEB task result, ``{"task_name", "scores": {"test": [{"ndcg_at_10": ..., "map_at_100": ...,
  "main_score": ..., "hf_subset": "default", "languages": [...]}]}}``, ``main_score`` nDCG@10 as MTEB's retrieval
  tasks have it (the first measure when there is no nDCG@10), values unrounded.

Only the measures both tools compute are written: nDCG@k (linear gain, trec_eval's ``ndcg_cut``), MAP@k
(``map_cut``), Recall@k, P@k and MRR@k, each with its default options; another measure is refused naming these.
With several runs the document is keyed by run name. The conventions the numbers were measured under (ties,
missing queries, ``ignore_self``...) are written under ``"stagewise"``, a key neither tool reads: BEIR averages
over the queries the run answered (``--missing skip``) and drops a query found as its own result
(``--ignore-self``), so those are what make the numbers BEIR's.
"""

from __future__ import annotations

import json
from typing import Any

from stagewise.errors import MetricError
from stagewise.metrics.measures import Measure
from stagewise.metrics.result import EvalResult

#: family -> (BEIR's group, BEIR's key prefix, MTEB's key prefix)
_NAMES: dict[str, tuple[str, str, str]] = {
    "ndcg": ("ndcg", "NDCG", "ndcg_at_"),
    "map": ("map", "MAP", "map_at_"),
    "recall": ("recall", "Recall", "recall_at_"),
    "P": ("precision", "P", "precision_at_"),
    "mrr": ("mrr", "MRR", "mrr_at_"),
}
_WRITTEN = "ndcg@k, map@k, recall@k, P@k and mrr@k with their default options"


def _checked(name: str, measure: Measure, fmt: str) -> tuple[str, str, str, int]:
    if measure.family not in _NAMES or measure.options or not isinstance(measure.cutoff, int):
        raise MetricError(f"the {fmt} format writes {_WRITTEN} (the measures {fmt} computes); {name!r} is none of them")
    group, beir, mteb = _NAMES[measure.family]
    return group, beir, mteb, measure.cutoff


def _differences(result: EvalResult) -> list[str]:
    """Where this result's conventions differ from what BEIR's ``EvaluateRetrieval.evaluate`` does by default."""
    conv, out = result.conventions, []
    if conv.missing != "skip":
        out.append(
            f"judged queries absent from the run: {conv.missing} here; BEIR averages nDCG, MAP, recall and P over the "
            "queries the run answered (use --missing skip), and MRR over every judged query"
        )
    if not conv.ignore_self:
        out.append("a query found as its own result is kept here; BEIR drops it by default (use --ignore-self)")
    if conv.ties != "docid":
        out.append(f"ties: {conv.ties} here; BEIR's nDCG, MAP, recall and P break ties as pytrec_eval (ties docid)")
    if any(m.family == "mrr" for _, m in result.measures):
        out.append("BEIR's MRR@k breaks score ties in the run's input order (here: the ties convention)")
    return out


def _stated(result: EvalResult) -> dict[str, Any]:
    return {
        "conventions": result.conventions_report(),
        "notes": result.notes(),
        "differs_from_beir": _differences(result),
    }


def _beir_run(result: EvalResult, run: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    means = result.means[run]
    for name, measure in result.measures:
        group, prefix, _, k = _checked(name, measure, "beir")
        out.setdefault(group, {})[f"{prefix}@{k}"] = round(float(means[name]), 5)
    return out


def _mteb_run(result: EvalResult, run: str) -> dict[str, Any]:
    scores: dict[str, Any] = {}
    means = result.means[run]
    for name, measure in result.measures:
        _, _, prefix, k = _checked(name, measure, "mteb")
        scores[f"{prefix}{k}"] = float(means[name])
    main = scores.get("ndcg_at_10", next(iter(scores.values()), None))
    return {
        "task_name": result.qrels_name,
        "scores": {"test": [{**scores, "main_score": main, "hf_subset": "default", "languages": ["default"]}]},
    }


def _document(result: EvalResult, one_run: Any) -> dict[str, Any]:
    runs = list(result.means)
    if len(runs) == 1:
        return {**one_run(result, runs[0]), "stagewise": _stated(result)}
    return {**{run: one_run(result, run) for run in runs}, "stagewise": _stated(result)}


def render_beir(result: EvalResult, **_: Any) -> str:
    """``result`` as BEIR's result JSON (see the module docstring)."""
    return json.dumps(_document(result, _beir_run), indent=2, ensure_ascii=False) + "\n"


def render_mteb(result: EvalResult, **_: Any) -> str:
    """``result`` as an MTEB task result JSON (see the module docstring)."""
    return json.dumps(_document(result, _mteb_run), indent=2, ensure_ascii=False) + "\n"
