"""What the pages show, computed by the library: the lesson's widget and each query's metrics for every run."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stagewise import lesson
from stagewise.app.ids import to_segment
from stagewise.app.query_values import QueryValues
from stagewise.data.columns import pair_keys
from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_run
from stagewise.data.run import Run
from stagewise.data.strings import StringColumn
from stagewise.engines import evaluate
from stagewise.metrics import Conventions
from stagewise.metrics.evaluate import measure_run
from stagewise.metrics.measures import Measure
from stagewise.store.labels import LabelStore

__all__ = ["METRICS", "Workspace", "playground"]

# Both gain conventions, always side by side: the engine's default (linear, trec_eval) and exponential.
METRICS = ("ndcg@10", "ndcg@10(gain=exp)", "map", "mrr@10", "P@10", "recall@100")
# Every one of them is a function of one query's results and labels (none has a default drawn from all the
# judgements, as ERR's max_label is), which is what lets a relabel recompute one query only.

_QUERY_RUNS_KEPT = 256  # queries whose results are kept read as a Run (a relabel's query is read once, not each time)


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
    """Runs held in memory, labels in the store, and per-query metric values kept current on every change.

    The values start from one :func:`stagewise.evaluate` of every run. A relabel changes one query's labels, so
    only that query is evaluated again (every run at once, by the engine's own ``measure_run`` on that query's
    results and labels) and the means are re-aggregated from the per-query values
    (:class:`~stagewise.app.query_values.QueryValues`): the numbers are those of a full evaluation of the current
    labels, bit for bit (``tests/test_app_incremental.py``), at the cost of one query.

    The labels are also held in memory, as the store has them: written through :meth:`write` and :meth:`undo`,
    which apply a change here once the store has committed it, so the server's recomputation
    (:meth:`refresh` with ``reread=False``) reads no database.
    """

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
        # two locks: _lock guards the values for the moment they are read or replaced (the event loop takes
        # it), _recompute orders the recomputations (a slower one must not replace newer labels' values)
        self._lock = threading.Lock()
        self._recompute = threading.Lock()
        self._query_runs: OrderedDict[str, Run | None] = OrderedDict()
        self._measures = [(m, Measure.parse(m)) for m in METRICS]
        self._conventions = Conventions()  # stagewise.evaluate's defaults, as the evaluation of every label
        if any(measure.spec.resolve is not None for _, measure in self._measures):
            raise ValueError("a metric with a default drawn from all the judgements cannot be recomputed per query")
        self.table = QueryValues(list(self.runs), self._measures)
        self.values = self.table.by_query  # run -> query id -> metric -> value
        labels = store.labels()
        if self.runs and labels:
            self.table.load(evaluate(labels, self.runs, list(METRICS)).runs)
        self.judged = set(labels)
        self._labels = labels  # qid -> docid -> label, as committed (self._lock guards it)
        self._write_lock = threading.Lock()  # a write and its application here, one at a time, in commit order

    def query_ids(self) -> list[str]:
        ids = set(self.judged)
        for run in self.runs.values():
            ids.update(run)
        return sorted(ids)

    def known(self, qid: str) -> bool:
        return qid in self.judged or any(qid in run for run in self.runs.values())

    def known_doc(self, qid: str, docid: str) -> bool:
        if any(docid in run.get(qid, ()) for run in self.runs.values()):
            return True
        with self._lock:
            return docid in self._labels.get(qid, ())

    def labels(self, qid: str) -> dict[str, int]:
        """One query's labels as committed (a copy)."""
        with self._lock:
            return dict(self._labels.get(qid, {}))

    def write(self, changes: Sequence[tuple[str, str, int | None, str]]) -> list[int | None]:
        """Set (or, with None, clear) labels in one transaction of the store (``(qid, docid, label, who)``, in
        order; :meth:`LabelStore.set_many`); returns each one's old label once they are on disk. Blocks for the
        disk: call it from a worker thread. The values are not recomputed: :meth:`refresh` each query whose
        labels changed."""
        with self._write_lock:
            olds = self.store.set_many(changes)
            with self._lock:
                for qid, docid, label, _ in changes:
                    self._apply(qid, docid, label)
        return olds

    def undo(self, who: str = "") -> dict[str, object] | None:
        """:meth:`LabelStore.undo`, applied here once committed (None: nothing to undo). Blocks for the disk."""
        with self._write_lock:
            change = self.store.undo(who)
            if change is not None:
                with self._lock:
                    self._apply(str(change["qid"]), str(change["docid"]), change["label"])  # type: ignore[arg-type]
        return change

    def _apply(self, qid: str, docid: str, label: int | None) -> None:
        if label is not None:
            self._labels.setdefault(qid, {})[docid] = label
        elif docid in self._labels.get(qid, ()):
            del self._labels[qid][docid]
            if not self._labels[qid]:
                del self._labels[qid]

    def refresh(self, qid: str, *, reread: bool = True) -> None:
        """Recompute one query's values for every run (its labels changed), and so the means. The query's labels
        are read from the store (they may have been written to it directly); ``reread=False`` takes those held
        here instead, current when every change went through :meth:`write` and :meth:`undo` (the server)."""
        with self._recompute:  # labels read in order: the last recomputation reads the last write
            if reread:
                stored = self.store.labels(qid).get(qid)
                with self._lock:
                    if stored:
                        self._labels[qid] = stored
                    else:
                        self._labels.pop(qid, None)
            with self._lock:  # in document order, as the store reads them out (the order evaluate is given)
                labels = dict(sorted(self._labels.get(qid, {}).items()))
            fresh = self._evaluate_query(qid, labels) if labels and self.runs else None
            with self._lock:
                if labels:
                    self.judged.add(qid)
                    if fresh is not None:
                        self.table.put(qid, fresh)
                else:
                    self.judged.discard(qid)
                    self.table.drop(qid)

    def _evaluate_query(self, qid: str, labels: Mapping[str, int]) -> dict[str, dict[str, float]]:
        """Every run's values for one query, from one evaluation: run ``i``'s results for the query stand as
        query ``"i:qid"`` (every query is measured on its own rows and labels, so sharing one evaluation
        changes no value, and costs one call, not one a run). A run without the query scores 0, as
        evaluate's default for a judged query missing from a run. The evaluation is ``measure_run``, the one
        the local engine runs for ``stagewise.evaluate``, with the measures parsed once, not each time."""
        run = self._query_run(qid)
        if run is None:  # no run retrieved anything for it
            return {name: dict.fromkeys(METRICS, 0.0) for name in self.runs}
        scores = measure_run(_query_qrels(qid, labels, len(self.runs)), run, self._measures, self._conventions)
        row = {str(q): i for i, q in enumerate(scores.query_ids)}
        return {
            name: {m: float(scores.values[m][row[f"{i}:{qid}"]]) for m in METRICS} for i, name in enumerate(self.runs)
        }

    def _query_run(self, qid: str) -> Run | None:
        """Every run's results for ``qid`` as one run (query ids ``"i:qid"``), read once and kept for the most
        recently relabelled queries."""
        if qid in self._query_runs:
            self._query_runs.move_to_end(qid)
            return self._query_runs[qid]
        rows = {f"{i}:{qid}": run[qid] for i, run in enumerate(self.runs.values()) if run.get(qid)}
        built = read_run(rows, name="query") if rows else None
        self._query_runs[qid] = built
        if len(self._query_runs) > _QUERY_RUNS_KEPT:
            self._query_runs.popitem(last=False)
        return built

    def metrics(self, qid: str) -> dict[str, dict[str, float | None]]:
        """One query's values for every run: 0 for a run that has not retrieved a judged query, None for a query
        without judgements (no metric is defined, and it is in no mean)."""
        with self._lock:
            missing = 0.0 if qid in self.judged else None
            return {name: dict(self.table.get(name, qid) or dict.fromkeys(METRICS, missing)) for name in self.runs}

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
        """Each run's mean over the judged queries (a judged query missing from a run scores 0), as
        :func:`stagewise.evaluate` computes it on the current labels."""
        with self._lock:
            return self.table.means()

    def query_rows(self) -> list[dict[str, Any]]:
        rows = []
        with self._lock:
            every = {q: dict(docs) for q, docs in self._labels.items()}
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
        labels = dict(sorted(self.labels(qid).items()))
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


def _query_qrels(qid: str, labels: Mapping[str, int], copies: int) -> Qrels:
    """One query's labels as the judgements of queries ``"0:qid"`` to ``"{copies - 1}:qid"`` (see
    ``Workspace._evaluate_query``), built from columns: the Qrels ``read_qrels`` builds from that dict, without
    the data frame it goes through (milliseconds, where a relabel has a few to spend)."""
    ids = [f"{i}:{qid}" for i in range(copies)]
    names = list(labels)
    n = len(names)
    joined = "".join(names)
    if joined.isascii():  # one encode for all (the usual ids): a document's bytes are its characters
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, names), dtype=np.int64, count=n)
    else:
        docs = [d.encode("utf-8") for d in names]
        data = b"".join(docs)
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=n)
    # the documents once per copy, and each copy's query id once per document: offsets laid end to end
    doc_offsets = np.zeros(n * copies + 1, dtype=np.int64)
    np.cumsum(np.tile(lengths, copies), out=doc_offsets[1:])
    doc_column = StringColumn(doc_offsets, data * copies)
    id_bytes = [q.encode("utf-8") for q in ids]
    query_offsets = np.zeros(n * copies + 1, dtype=np.int64)
    np.cumsum(np.repeat(np.fromiter(map(len, id_bytes), dtype=np.int64, count=copies), n), out=query_offsets[1:])
    query_column = StringColumn(query_offsets, b"".join(q * n for q in id_bytes))
    return Qrels.from_columns(
        ids,
        np.repeat(np.arange(copies, dtype=np.int32), n),
        doc_column,
        np.tile(np.fromiter(labels.values(), dtype=np.int32, count=n), copies),
        pair_keys(query_column, doc_column),
        name="query",
    )
