"""The reranker protocol, the shared pair-scoring machinery and the score cache.

A :class:`Reranker` has a ``name`` and ``rerank(queries, run, docs, depth) -> Run``: it rescores each query's
first ``depth`` results of ``run`` and returns them reordered (results below ``depth`` are dropped, so the
reranked run is the stage's own output and can be evaluated alone). A test double is a few lines.

:class:`PairReranker` is what the built-in rerankers share: candidates become (query, document) pairs; pairs
already in the :class:`ScoreCache` (keyed by model, query hash, document hash) are not scored again; the rest
are packed across queries into batches sorted by length (a batch pads only to its own longest pair) and
scored by the subclass's ``score_pairs``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from stagewise.errors import ConventionError, InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from stagewise.data.run import Run

    class RerankedRun(Run):  # made at run time by _reranked_run_class
        rerank: dict[str, Any]


Progress = Callable[[int, int], None]


@runtime_checkable
class Reranker(Protocol):
    """What the rerank stage needs from a reranker."""

    name: str

    def rerank(self, queries: Any, run: Run, docs: Any, depth: int = 100) -> Run:
        """``run``'s first ``depth`` results per query, rescored and reordered."""
        ...


def _reranked_run_class() -> type[RerankedRun]:
    """``RerankedRun``, made on first use: it subclasses Run (numpy and polars), and this module, with the
    rerankers built on it, imports light (the registry imports them all to list them in `stagewise rerank --help`)."""
    made = globals().get("RerankedRun")
    if made is None:
        from stagewise.data.run import Run

        class RerankedRun(Run):
            """A :class:`~stagewise.data.run.Run` made by a reranker; ``rerank`` states how (reranker, its
            version and parameters, depth, input run, pairs scored and taken from the cache, seconds)."""

            __slots__ = ("rerank",)

        RerankedRun.__module__ = __name__
        made = globals()["RerankedRun"] = RerankedRun
    return made


def __getattr__(name: str) -> Any:
    if name == "RerankedRun":
        return _reranked_run_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def text_hash(text: str) -> str:
    """The key of a text in the score cache: the first 16 bytes of its SHA-256, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ScoreCache:
    """Scores by (model, query hash, document hash): in memory, and in an SQLite file when ``path`` is given,
    so a rerun (even in a new process) scores nothing again."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else Path(path)
        self._memory: dict[tuple[str, str, str], float] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = sqlite3.connect(self.path, check_same_thread=False)
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS scores (model TEXT, query TEXT, doc TEXT, score REAL, "
                    "PRIMARY KEY (model, query, doc))"
                )
            except sqlite3.DatabaseError as exc:
                raise InputError(
                    self.path, f"is not a usable score cache ({exc})", hint="remove it or give --cache another path"
                ) from None

    def __len__(self) -> int:
        if self._db is not None:
            return int(self._db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
        return len(self._memory)

    def get_many(self, model: str, keys: Sequence[tuple[str, str]]) -> np.ndarray:
        """Scores of ``(query hash, doc hash)`` keys; NaN where not cached."""
        import numpy as np

        out = np.full(len(keys), np.nan)
        missing = []
        with self._lock:
            for i, (q, d) in enumerate(keys):
                value = self._memory.get((model, q, d))
                if value is None:
                    missing.append(i)
                else:
                    out[i] = value
            if self._db is not None and missing:
                wanted = {(keys[i][0], keys[i][1]): i for i in missing}
                queries = sorted({keys[i][0] for i in missing})
                for start in range(0, len(queries), 500):
                    chunk = queries[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        f"SELECT query, doc, score FROM scores WHERE model = ? AND query IN ({marks})", (model, *chunk)
                    )
                    for q, d, score in rows:
                        i = wanted.get((q, d))
                        if i is not None:
                            out[i] = score
                            self._memory[(model, q, d)] = score
        return out

    def put_many(self, model: str, keys: Sequence[tuple[str, str]], scores: np.ndarray) -> None:
        with self._lock:
            for (q, d), score in zip(keys, scores.tolist(), strict=True):
                self._memory[(model, q, d)] = score
            if self._db is not None:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                        [(model, q, d, s) for (q, d), s in zip(keys, scores.tolist(), strict=True)],
                    )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def as_mapping(items: Any, what: str) -> Mapping[str, str]:
    """Query or document texts by id, from a mapping or an object with ``ids`` and ``texts``."""
    if isinstance(items, Mapping):
        return items
    if hasattr(items, "ids") and hasattr(items, "texts"):
        return dict(zip(map(str, items.ids), map(str, items.texts), strict=True))
    raise ConventionError(f"{what} must be a mapping of id to text or a Documents object, not {type(items).__name__}")


def candidates(run: Run, depth: int) -> tuple[list[str], list[str]]:
    """``(query ids, doc ids)`` of each query's first ``depth`` results of ``run``, in the run's order."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConventionError(f"The 'depth' parameter of rerank must be an int >= 1. Got {depth!r} instead.")
    docs = run.docs.values()
    q_out: list[str] = []
    d_out: list[str] = []
    for code, query in enumerate(run.query_ids.tolist()):
        start = int(run.offsets[code])
        end = min(int(run.offsets[code + 1]), start + depth)
        q_out.extend([str(query)] * (end - start))
        d_out.extend(docs[start:end])
    return q_out, d_out


def build_run(query_ids: list[str], doc_ids: list[str], scores: np.ndarray, name: str, statement: dict) -> RerankedRun:
    import numpy as np
    import polars as pl

    frame = pl.DataFrame({"query_id": query_ids, "doc_id": doc_ids, "score": np.asarray(scores, dtype=np.float64)})
    out = _reranked_run_class().from_frame(frame, name=name)
    out.rerank = statement
    return out


class PairReranker:
    """Base of the built-in rerankers: cache look-up, length-sorted batches packed across queries, a run.

    Subclasses set ``name`` and implement ``score_pairs(query_texts, doc_texts) -> float array``; they may
    override ``prepare(docs)`` (called once per :meth:`rerank` with all document texts) and ``cache_name``
    (what identifies the scores in the cache: the model, and anything else the score depends on). A subclass
    registered with :func:`stagewise.rerank.registry.reranker` has its ``entry`` and calls :meth:`configure`
    with its parameters, which sets ``params`` and ``name`` from the entry's one declaration.
    """

    name: str = "pairs"
    batch_size: int = 32
    entry: ClassVar[Any] = None  # the RerankerEntry, set by the @reranker decorator
    params: dict[str, Any] = {}  # noqa: RUF012 (the parameters' values; replaced, never mutated)

    def __init__(
        self, *, cache: ScoreCache | str | os.PathLike[str] | None = None, batch_size: int | None = None
    ) -> None:
        self.cache = cache if isinstance(cache, ScoreCache) else ScoreCache(cache)
        if batch_size is not None:
            if batch_size < 1:
                raise ConventionError(
                    f"The 'batch_size' parameter of {self.name} must be an int >= 1. Got {batch_size!r} instead."
                )
            self.batch_size = batch_size
        self.last_stats: dict[str, Any] = {}

    def configure(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``given`` against the entry's parameters (``None`` meaning "the default"), keep the values as
        ``params`` and name the reranker from them (:meth:`RerankerEntry.canonical`); the values are returned."""
        if self.entry is None:
            raise ConventionError(
                f"{type(self).__name__} has no registry entry: decorate it with @reranker(name, help=..., params=...)"
            )
        self.params = self.entry.values(given)
        self.name = self.entry.canonical(self.params)
        return self.params

    def describe(self) -> dict[str, Any]:
        """The reranker in the reranked run's provenance: its name, and for a registered one its registry
        name, version and every parameter's value (defaults included)."""
        if self.entry is None:
            return {"reranker": self.name}
        return {"reranker": self.name, "kind": self.entry.name, "version": self.entry.version,
                "params": dict(self.params)}  # fmt: skip

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def prepare(self, docs: Mapping[str, str]) -> None:
        """Called once per rerank with every document text (corpus statistics, if the reranker needs them)."""

    def cache_name(self) -> str:
        return self.name

    def score_pairs(self, query_texts: list[str], doc_texts: list[str]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def rerank(
        self, queries: Any, run: Run | Any, docs: Any, depth: int = 100, *, progress: Progress | None = None,
        name: str | None = None,
    ) -> RerankedRun:  # fmt: skip
        """Rescore each query's first ``depth`` results of ``run`` and return them reordered (score
        descending, then doc id descending, as every run is ordered). Results below ``depth`` are dropped.

        ``queries`` and ``docs`` map ids to texts (or are :class:`~stagewise.retrieval.Documents`); a query
        or document of the run with no text is an error naming it."""
        import numpy as np

        from stagewise.data.run import Run

        started = time.perf_counter()
        if not isinstance(run, Run):
            from stagewise.data.readers import read_run

            run = read_run(run)
        query_texts = as_mapping(queries, "queries")
        doc_texts = as_mapping(docs, "docs")
        q_ids, d_ids = candidates(run, depth)
        missing_q = next((q for q in dict.fromkeys(q_ids) if q not in query_texts), None)
        if missing_q is not None:
            raise InputError(
                "queries",
                f"query {missing_q!r} of run {run.name!r} has no text",
                hint="give the queries file the run was made from",
            )
        missing_d = next((d for d in d_ids if d not in doc_texts), None)
        if missing_d is not None:
            raise InputError(
                "corpus",
                f"document {missing_d!r} of run {run.name!r} is not in the corpus",
                hint="give the corpus the run was made from",
            )
        self.prepare(doc_texts)
        qt = [query_texts[q] for q in q_ids]
        dt = [doc_texts[d] for d in d_ids]
        q_hash = {q: text_hash(query_texts[q]) for q in dict.fromkeys(q_ids)}
        d_hash: dict[str, str] = {}
        keys = []
        for q, d in zip(q_ids, d_ids, strict=True):
            h = d_hash.get(d)
            if h is None:
                h = d_hash[d] = text_hash(doc_texts[d])
            keys.append((q_hash[q], h))
        model = self.cache_name()
        scores = self.cache.get_many(model, keys)
        todo = np.flatnonzero(np.isnan(scores))
        # Pack the pairs of every query together, shortest first: batches pad only to their own longest pair.
        lengths = np.array([len(qt[i]) + len(dt[i]) for i in todo.tolist()], dtype=np.int64)
        todo = todo[np.argsort(lengths, kind="stable")]
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            got = np.asarray(self.score_pairs([qt[i] for i in batch], [dt[i] for i in batch]), dtype=np.float64)
            if got.shape != (len(batch),):
                raise ConventionError(
                    f"reranker {self.name!r} returned {got.shape} scores for {len(batch)} pairs; one per pair is needed"
                )
            if not np.isfinite(got).all():
                raise ConventionError(f"reranker {self.name!r} returned a score that is not a finite number")
            scores[batch] = got
            self.cache.put_many(model, [keys[i] for i in batch.tolist()], got)
            if progress is not None:
                progress(min(start + self.batch_size, len(todo)), len(todo))
        self.last_stats = {
            "pairs": len(keys),
            "scored": len(todo),
            "from_cache": len(keys) - len(todo),
            "seconds": round(time.perf_counter() - started, 3),
        }
        statement = {
            **self.describe(),
            "depth": depth,
            "input_run": run.name,
            "queries": len(q_hash),
            **self.last_stats,
            "cache": None if self.cache.path is None else str(self.cache.path),
            "below_depth": "dropped",
        }
        return build_run(q_ids, d_ids, scores, name or self.name, statement)
