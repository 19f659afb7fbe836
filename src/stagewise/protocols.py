"""What a pipeline stage must do, as protocols: a retriever searches, a fuser fuses.

A stage is any object with the methods below; nothing has to inherit from anything (httpx's transport idea:
a test double is a few lines). The two other stage protocols live with their stage and are not copied here:

- a reranker is :class:`stagewise.rerank.base.Reranker` (``name`` and ``rerank(queries, run, docs, depth)``);
- a support judge is :class:`stagewise.rag.judges.SupportJudge` (``supports(passages, claim)``).

:class:`stagewise.pipeline.Pipeline` composes them (retrieve, then fuse, then rerank), and
:mod:`stagewise.pipeline` re-exports all four names.

This module sits in the base layer: every stage may import it, and it imports nothing at run time (``Run`` only
for type checkers).

>>> class Fixed:  # a retriever that always returns the same ranking: enough for a test
...     name = "fixed"
...     def search(self, queries, *, k=1000, name=None):
...         from stagewise.data.readers import read_run
...         return read_run({q: {"d1": 2.0, "d2": 1.0} for q in queries}, name=name or self.name)
...     def describe(self):
...         return {"retriever": "fixed"}
>>> isinstance(Fixed(), Retriever)
True
>>> Fixed().search({"q1": "wing"}, k=2).to_dict()
{'q1': {'d1': 2.0, 'd2': 1.0}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from stagewise.data.run import Run

__all__ = ["Fuser", "Retriever"]


@runtime_checkable
class Retriever(Protocol):
    """A first-stage retriever: ranks documents for a batch of queries.

    ``name`` is the retriever's canonical name (the default name of the runs it makes, such as
    ``bm25-lucene(k1=0.9,b=0.4)`` or ``dense-all-MiniLM-L6-v2``); ``describe()`` is its provenance, JSON-ready
    (what it is, what it indexes, its parameters). :class:`~stagewise.retrieval.BM25Index` and
    :class:`~stagewise.dense.DenseIndex` are retrievers.
    """

    @property
    def name(self) -> str: ...

    def search(self, queries: Any, *, k: int = 1000, name: str | None = None) -> Run:
        """The top ``k`` documents of each query (a mapping id -> text, or an object with ``ids`` and ``texts``)
        as a run named ``name`` (default: the retriever's own name)."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready statement of what this retriever is."""
        ...


@runtime_checkable
class Fuser(Protocol):
    """Fuses the runs of several retrievers into one run.

    ``runs`` maps each input's stage name to its run, in pipeline order. ``name`` is the canonical name of the
    method with its parameters (``rrf(rrf_k=60)``); :class:`stagewise.pipeline.Fusion` wraps every method of
    :func:`stagewise.fuse`.
    """

    @property
    def name(self) -> str: ...

    def fuse(self, runs: Mapping[str, Run]) -> Run:
        """One run from ``runs``."""
        ...
