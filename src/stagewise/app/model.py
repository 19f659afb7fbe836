"""What the pages show, computed by the library: the lesson's widget and each query's metrics for every run."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from stagewise import lesson
from stagewise.app.ids import to_segment
from stagewise.data.readers import read_run
from stagewise.engines import evaluate
from stagewise.metrics import Conventions
from stagewise.store.labels import LabelStore

__all__ = ["METRICS", "Workspace", "playground"]

# Both gain conventions, always side by side: the engine's default (linear, trec_eval) and exponential.
METRICS = ("ndcg@10", "ndcg@10(gain=exp)", "map", "mrr@10", "P@10", "recall@100")


def playground(labels: Sequence[int], gain: str = "exp") -> dict[str, Any]:
    """The lesson's widget for one ranked list: every DCG term, the ideal order, nDCG both ways, RR."""
    ideal = sorted(labels, reverse=True)

    def term(rank: int, rel: int) -> dict[str, float]:
        value = lesson.dcg([rel], gain=gain)  # a one-item DCG is the item's gain (its discount is log2(2) = 1)
        return {"rank": rank, "label": rel, "gain": value, "discount": math.log2(rank + 1),
                "term": value / math.log2(rank + 1)}  # fmt: skip

    def terms(rels: Sequence[int]) -> list[dict[str, float]]:
        return [term(r, rel) for r, rel in enumerate(rels, start=1)]

    relevant = [i for i, rel in enumerate(labels) if rel >= 1]
    return {
        "labels": list(labels),
        "gain": gain,
        "terms": terms(labels),
        "dcg": lesson.dcg(labels, gain=gain),
        "ideal": ideal,
        "ideal_terms": terms(ideal),
        "ideal_dcg": lesson.dcg(ideal, gain=gain),
        "ndcg_exp": lesson.ndcg(labels, gain="exp"),
        "ndcg_linear": lesson.ndcg(labels, gain="linear"),
        "rr": lesson.reciprocal_rank(list(range(len(labels))), relevant),
    }


class Workspace:
    """Runs held in memory, labels in the store, and per-query metric values kept current on every change."""

    def __init__(
        self,
        store: LabelStore,
        runs: Mapping[str, Mapping[str, Mapping[str, float]]],
        texts: Mapping[str, str] | None = None,
        queries: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self.texts = dict(texts or {})  # document id -> text, when a corpus is given
        self.queries = dict(queries or {})  # query id -> text
        self.runs = {name: {q: dict(docs) for q, docs in run.items()} for name, run in runs.items()}
        # the order the metrics score (scores compared in single precision, then doc id descending, as trec_eval),
        # so the rank a page shows is the rank every metric on it counts
        self.ranked = {name: read_run(run, name=name).rankings() for name, run in self.runs.items()}
        self._lock = threading.Lock()
        self.values: dict[str, dict[str, dict[str, float]]] = {name: {} for name in self.runs}
        labels = store.labels()
        if self.runs and labels:
            result = evaluate(labels, self.runs, list(METRICS))
            for name, by_metric in result.per_query().items():
                for metric, by_query in by_metric.items():
                    for qid, value in by_query.items():
                        self.values[name].setdefault(qid, {})[metric] = value
        self.judged = set(labels)

    def query_ids(self) -> list[str]:
        ids = set(self.judged)
        for run in self.runs.values():
            ids.update(run)
        return sorted(ids)

    def known(self, qid: str) -> bool:
        return qid in self.judged or any(qid in run for run in self.runs.values())

    def known_doc(self, qid: str, docid: str) -> bool:
        return any(docid in run.get(qid, ()) for run in self.runs.values()) or self.store.get(qid, docid) is not None

    def refresh(self, qid: str) -> None:
        """Recompute one query's values for every run (its labels changed)."""
        with self._lock:  # read the labels under the lock: a slower refresh must not write older labels' values
            labels = self.store.labels(qid)
            if not labels:
                self.judged.discard(qid)
                for name in self.runs:
                    self.values[name].pop(qid, None)
                return
            self.judged.add(qid)
            runs = {name: {qid: run.get(qid, {})} for name, run in self.runs.items()}
            runs = {name: run for name, run in runs.items() if run[qid]}
            if runs:
                result = evaluate(labels, runs, list(METRICS))
            for name in self.runs:
                if name in runs:
                    per = result.per_query(name)
                    self.values[name][qid] = {m: per[m][qid] for m in METRICS}
                else:
                    self.values[name][qid] = dict.fromkeys(METRICS, 0.0)

    def metrics(self, qid: str) -> dict[str, dict[str, float | None]]:
        """One query's values for every run: 0 for a run that has not retrieved a judged query, None for a query
        without judgements (no metric is defined, and it is in no mean)."""
        with self._lock:
            missing = 0.0 if qid in self.judged else None
            return {name: dict(self.values[name].get(qid, dict.fromkeys(METRICS, missing))) for name in self.runs}

    @staticmethod
    def conventions() -> list[str]:
        """The conventions behind every number the pages show, one sentence each (from the engine's own)."""
        conv = Conventions().describe()
        return [
            f"relevant when label >= {conv['relevance_level']}; negative labels: {conv['negative_labels']}",
            "ndcg@10: linear gain (the label); ndcg@10(gain=exp): 2^label - 1; ideal DCG from all judged "
            "documents; discount log2(rank + 1)",
            f"ties: {conv['ties']}",
            f"means over the judged queries; {conv['missing_queries']}; {conv['run_only_queries']} (shown as -)",
        ]

    def means(self) -> dict[str, dict[str, float]]:
        """Each run's mean over the judged queries (a judged query missing from a run scores 0)."""
        with self._lock:
            n = len(self.judged)
            return {
                name: {m: (sum(vals[q][m] for q in self.judged if q in vals) / n if n else 0.0) for m in METRICS}
                for name, vals in self.values.items()
            }

    def query_rows(self) -> list[dict[str, Any]]:
        rows = []
        every = self.store.labels()  # one read, not one a query
        for qid in self.query_ids():
            labels = every.get(qid, {})
            row: dict[str, Any] = {
                "qid": qid,
                "key": to_segment(qid),  # the id as the page puts it in a URL
                "text": self.queries.get(qid, ""),
                "judged": len(labels),
                "runs": {},
            }
            for name in self.runs:
                top = self.ranked[name].get(qid, [])[:10]
                unjudged = sum(1 for d in top if d not in labels) / len(top) if top else 0.0
                missing = 0.0 if labels else None  # a query without judgements has no metric values
                values = self.values[name].get(qid, dict.fromkeys(METRICS, missing))
                row["runs"][name] = {**values, "unjudged@10": unjudged}
            rows.append(row)
        return rows

    def query(self, qid: str, depth: int = 100) -> dict[str, Any]:
        labels = self.store.labels(qid).get(qid, {})
        return {
            "qid": qid,
            "key": to_segment(qid),
            "text": self.queries.get(qid, ""),
            "metrics": self.metrics(qid),
            "means": self.means(),
            "runs": {
                name: [
                    {
                        "rank": i,
                        "docid": d,
                        "key": to_segment(d),
                        "score": self.runs[name][qid][d],
                        "label": labels.get(d),
                        "text": self.texts.get(d, "")[:400],
                    }
                    for i, d in enumerate(self.ranked[name].get(qid, [])[:depth], start=1)
                ]
                for name in self.runs
            },
            "labels": labels,
            "conventions": self.conventions(),
        }
