"""The stages of a :class:`~stagewise.pipeline.Pipeline`, as values: :class:`Retrieve`, :class:`Fuse`,
:class:`Rerank`, and :class:`Fusion`, the :class:`~stagewise.protocols.Fuser` over :func:`stagewise.fuse`.

Each stage has a ``label`` (the key of its run in the result, and its name in the pipeline's name), the
component that does the work (a retriever, a fuser, a reranker) and its own settings. ``run_name`` names the
run the stage makes; ``None`` keeps the component's own name (``bm25-lucene(k1=1.2,b=0.75)``, ``rrf``,
``bm25-proximity``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise.errors import ConventionError
from stagewise.spec import canonical, format_value, parse_call

if TYPE_CHECKING:
    from stagewise.data.run import Run

__all__ = ["Fuse", "Fusion", "Rerank", "Retrieve", "call_name"]


def call_name(name: str, *extra: tuple[str | None, Any]) -> str:
    """``name`` (a name in the spec grammar, with or without parameters) with ``extra`` appended inside its
    parentheses: ``(None, value)`` as a positional value, ``(key, value)`` as ``key=value`` (left out when the
    value is ``None``).

    >>> call_name("rrf(rrf_k=60)", (None, "bm25"), (None, "dense"))
    'rrf(bm25,dense,rrf_k=60)'
    >>> call_name("bm25-proximity", ("depth", 100))
    'bm25-proximity(depth=100)'
    """
    call = parse_call(name, "stage", "rrf(rrf_k=60)")
    head = canonical(call.name, call.at)
    items = [format_value(v) for k, v in extra if k is None]
    items += [f"{k}={format_value(v)}" for k, v in call.params.items() if v is not None]
    items += [f"{k}={format_value(v)}" for k, v in extra if k is not None and v is not None]
    return f"{head}({','.join(items)})" if items else head


def _label(label: Any, what: str) -> str:
    if not isinstance(label, str) or not label.strip() or any(c in label for c in "()>,@= \t\n"):
        raise ConventionError(
            f"a {what} stage's label must be a non-empty word (no spaces, parentheses, commas, '@', '=' or '>'), "
            f"not {label!r}"
        )
    return label


def _depth(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        from stagewise.errors import parameter_error

        raise parameter_error("k" if what == "retrieve" else "depth", what, "an int >= 1", value)
    return value


@dataclass(frozen=True)
class Retrieve:
    """A first stage: the top ``k`` of each query from ``retriever``.

    ``retriever`` is a :class:`~stagewise.protocols.Retriever` (a :class:`~stagewise.retrieval.BM25Index`, a
    :class:`~stagewise.dense.DenseIndex`, or your own), or a function of no argument that makes one when the
    stage runs (so that building an index counts in the stage's time). ``options`` go to its ``search`` as
    keywords (a dense index's ``encoder`` or ``backend``, a BM25 index's ``k1``).
    """

    label: str
    retriever: Any
    k: int = 1000
    run_name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _label(self.label, "retrieve")
        _depth(self.k, "retrieve")

    def component(self) -> Any:
        """The retriever (made now when the stage holds a function that makes it)."""
        if callable(self.retriever) and not hasattr(self.retriever, "search"):
            return self.retriever()
        return self.retriever

    def run(self, retriever: Any, queries: Any) -> Run:
        """``retriever``'s run for ``queries``."""
        return retriever.search(queries, k=self.k, name=self.run_name, **self.options)


class Fusion:
    """The :class:`~stagewise.protocols.Fuser` of every method :func:`stagewise.fuse` knows: ``method`` (with
    its parameters, ``rrf(rrf_k=20)``) and ``fuse``'s keywords (``norm``, ``depth``, ``weights``, ``rrf_k``...).
    ``name`` names the fused run (default: the method's name).

    >>> Fusion("rrf", rrf_k=60).name
    'rrf(rrf_k=60)'
    >>> Fusion("wsum(weights=(0.3,0.7))", norm="zscore", depth=None).name
    'wsum(weights=(0.3,0.7),norm=zscore)'
    """

    def __init__(self, method: Any = "rrf", *, name: str | None = None, **options: Any) -> None:
        self.method = method
        self.run_name = name
        self.options = dict(options)

    @property
    def name(self) -> str:
        """The method and its parameters in the spec grammar (``None`` options and in-memory values such as
        qrels left out)."""
        shown = [(k, v) for k, v in self.options.items() if isinstance(v, str | int | float | bool | tuple | list)]
        return call_name(str(self.method), *((k, tuple(v) if isinstance(v, list) else v) for k, v in shown))

    def __repr__(self) -> str:
        return f"Fusion({self.name})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fusion):
            return NotImplemented
        return (str(self.method), self.run_name, self.options) == (str(other.method), other.run_name, other.options)

    def __hash__(self) -> int:
        return hash((self.name, self.run_name))

    def fuse(self, runs: Mapping[str, Run]) -> Run:
        """:func:`stagewise.fuse` of ``runs`` (a ``{name: run}`` mapping) with this method and options."""
        from stagewise.fusion.api import fuse

        return fuse(dict(runs), self.method, name=self.run_name, **self.options)


@dataclass(frozen=True)
class Fuse:
    """Fusion of the retrieval stages ``inputs`` (default: every one) by ``fuser`` (a
    :class:`~stagewise.protocols.Fuser`, or a method name for :class:`Fusion`)."""

    label: str
    fuser: Any = "rrf"
    inputs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _label(self.label, "fuse")
        if isinstance(self.fuser, str):
            object.__setattr__(self, "fuser", Fusion(self.fuser))
        if self.inputs is not None:
            object.__setattr__(self, "inputs", tuple(self.inputs))

    def run(self, runs: Mapping[str, Run]) -> Run:
        """The fused run of ``runs`` (the inputs' runs, by label)."""
        return self.fuser.fuse(runs)


@dataclass(frozen=True)
class Rerank:
    """The first ``depth`` results of the previous stage's run, rescored by ``reranker`` (a
    :class:`~stagewise.rerank.base.Reranker`, or a name :func:`stagewise.rerank.make_reranker` takes, such as
    ``bm25-proximity`` or ``cross-encoder(path='DIR')``). It reads the documents' texts, given to
    :meth:`~stagewise.pipeline.Pipeline.run` as ``docs``."""

    label: str
    reranker: Any
    depth: int = 100
    run_name: str | None = None

    def __post_init__(self) -> None:
        _label(self.label, "rerank")
        _depth(self.depth, "rerank")

    @property
    def reranker_name(self) -> str:
        return self.reranker if isinstance(self.reranker, str) else str(self.reranker.name)

    def component(self, make: Callable[[str], Any] | None = None) -> Any:
        """The reranker (made from its name now when the stage holds a name)."""
        if not isinstance(self.reranker, str):
            return self.reranker
        if make is None:
            from stagewise.rerank.rerankers import make_reranker as make
        return make(self.reranker)

    def run(self, reranker: Any, queries: Any, run: Run, docs: Any) -> Run:
        """``reranker``'s reordering of ``run``'s first ``depth`` results per query."""
        if self.run_name is None:
            return reranker.rerank(queries, run, docs, self.depth)
        return reranker.rerank(queries, run, docs, self.depth, name=self.run_name)
