"""A retrieval pipeline as a value: first stages, then fusion, then reranking, every stage's run kept.

PyTerrier's idea (``bm25 >> reranker``), kept to the three stages stagewise measures: a :class:`Pipeline` is
frozen, prints as one name in the spec grammar, states its provenance, and :meth:`Pipeline.run` returns a
:class:`PipelineResult` that holds the run of **every** stage by label, so each can be evaluated on its own (the
point of stagewise: see which stage gained or lost what).

>>> from stagewise.pipeline import Fuse, Fusion, Pipeline, Rerank, Retrieve
>>> from stagewise.retrieval import BM25Index
>>> docs = {"d1": "wing lift in a slipstream", "d2": "lift of a flat plate", "d3": "heat transfer in a slab"}
>>> plain = BM25Index.build(docs)
>>> plus = BM25Index.build(docs, variant="bm25+")
>>> p = Pipeline(
...     [Retrieve("plain", plain, k=3), Retrieve("plus", plus, k=3)],
...     Fuse("fused", Fusion("rrf", rrf_k=60)),
...     Rerank("reranked", "bm25-proximity", depth=2),
... )
>>> p.name
'rrf(plain,plus,rrf_k=60)>>bm25-proximity(depth=2)'
>>> result = p.run({"q1": "lift of wings"}, docs=docs)
>>> list(result.runs)
['plain', 'plus', 'fused', 'reranked']
>>> result.final.rankings()
{'q1': ['d1', 'd2']}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise.errors import ConventionError
from stagewise.pipeline.stages import Fuse, Rerank, Retrieve, call_name

if TYPE_CHECKING:
    from stagewise.data.run import Run

__all__ = ["Pipeline", "PipelineResult", "StageEvent"]


@dataclass(frozen=True)
class StageEvent:
    """A stage starting (``done`` False) or finished (with its ``seconds`` and the ``component`` that did the
    work: the retriever built, the fuser, the reranker), as :meth:`Pipeline.run` tells its ``progress``."""

    label: str
    kind: str  # "retrieve", "fuse" or "rerank"
    done: bool
    seconds: float = 0.0
    component: Any = None


@dataclass
class PipelineResult:
    """What a pipeline made: the run of every stage by label (in pipeline order), the component each stage
    used, and each stage's time in seconds (rounded to the millisecond)."""

    pipeline: Pipeline
    runs: dict[str, Run]
    components: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def final(self) -> Run:
        """The last stage's run."""
        return self.runs[self.pipeline.stages()[-1].label]

    def __getitem__(self, label: str) -> Run:
        return self.runs[label]

    def describe(self) -> dict[str, Any]:
        """The pipeline's provenance, JSON-ready: its name, each stage's kind, run name and component
        statement (a retriever's ``describe()``, a fused run's ``fusion`` record, a reranked run's ``rerank``
        record), and the seconds."""
        stages: dict[str, Any] = {}
        for stage in self.pipeline.stages():
            run = self.runs[stage.label]
            entry: dict[str, Any] = {"kind": _kind(stage), "run": run.name}
            component = self.components.get(stage.label)
            if isinstance(stage, Retrieve) and hasattr(component, "describe"):
                entry["retriever"] = component.describe()
            elif isinstance(stage, Fuse):
                entry["inputs"] = list(self.pipeline.fuse_inputs())
                entry["fusion"] = getattr(run, "fusion", None)
            elif isinstance(stage, Rerank):
                entry["rerank"] = getattr(run, "rerank", None)
            stages[stage.label] = entry
        return {"pipeline": self.pipeline.name, "stages": stages, "seconds": self.seconds}


def _kind(stage: Any) -> str:
    return {Retrieve: "retrieve", Fuse: "fuse", Rerank: "rerank"}[type(stage)]


@dataclass(frozen=True)
class Pipeline:
    """First stages (one or more :class:`Retrieve`), an optional :class:`Fuse` of them, an optional
    :class:`Rerank` of the fused run (or of the one first stage).

    Checked when made: labels are distinct words; fusion's inputs are first stages; reranking reads one run
    (so several first stages need a fusion before it). Its ``name`` is canonical in the spec grammar: the
    fusion with its inputs' labels, then ``>>`` and the reranker with its depth
    (``rrf(bm25,dense)>>cross-encoder(depth=100)``).
    """

    retrieve: tuple[Retrieve, ...]
    fuse: Fuse | None = None
    rerank: Rerank | None = None

    def __post_init__(self) -> None:
        retrieve = (self.retrieve,) if isinstance(self.retrieve, Retrieve) else tuple(self.retrieve)
        object.__setattr__(self, "retrieve", retrieve)
        if not retrieve or not all(isinstance(s, Retrieve) for s in retrieve):
            raise ConventionError("a pipeline starts with one or more Retrieve stages")
        if self.fuse is not None and not isinstance(self.fuse, Fuse):
            raise ConventionError(f"fuse must be a Fuse stage, not {type(self.fuse).__name__}")
        if self.rerank is not None and not isinstance(self.rerank, Rerank):
            raise ConventionError(f"rerank must be a Rerank stage, not {type(self.rerank).__name__}")
        labels = [s.label for s in self.stages()]
        twice = next((label for label in labels if labels.count(label) > 1), None)
        if twice is not None:
            raise ConventionError(f"two stages are labelled {twice!r}; each stage's run is kept under its label")
        first = [s.label for s in retrieve]
        if self.fuse is not None:
            unknown = [label for label in self.fuse_inputs() if label not in first]
            if unknown:
                raise ConventionError(
                    f"fusion input {unknown[0]!r} is no retrieval stage; the retrieval stages: {', '.join(first)}"
                )
        elif self.rerank is not None and len(retrieve) > 1:
            raise ConventionError("reranking reads one run: fuse the retrieval stages first (add a Fuse stage)")

    def stages(self) -> tuple[Retrieve | Fuse | Rerank, ...]:
        """Every stage, in the order they run."""
        rest = tuple(s for s in (self.fuse, self.rerank) if s is not None)
        return (*self.retrieve, *rest)

    def fuse_inputs(self) -> tuple[str, ...]:
        """The labels of the runs fusion reads (every retrieval stage unless the Fuse stage names some)."""
        if self.fuse is None:
            return ()
        return self.fuse.inputs or tuple(s.label for s in self.retrieve)

    def rerank_input(self) -> str:
        """The label of the run reranking reads: the fused one, else the one first stage's."""
        return self.fuse.label if self.fuse is not None else self.retrieve[0].label

    @property
    def name(self) -> str:
        """The canonical name: ``rrf(bm25,dense,rrf_k=60)>>bm25-proximity(depth=100)``."""
        if self.fuse is not None:
            head = call_name(self.fuse.fuser.name, *((None, label) for label in self.fuse_inputs()))
        else:
            head = ",".join(s.label for s in self.retrieve)
        if self.rerank is None:
            return head
        return f"{head}>>{call_name(self.rerank.reranker_name, ('depth', self.rerank.depth))}"

    def __str__(self) -> str:
        return self.name

    def run(
        self, queries: Any, *, docs: Any = None, progress: Callable[[StageEvent], None] | None = None
    ) -> PipelineResult:
        """Run every stage on ``queries`` (a mapping id -> text, or a :class:`~stagewise.retrieval.Documents`).

        ``docs`` holds the documents' texts (a mapping id -> text), which a reranker needs; ``progress`` is
        told as each stage starts and ends (a :class:`StageEvent`). Settings are checked before any stage
        runs: a reranker given by name is made first, so a misspelt one fails at once.
        """
        if self.rerank is not None and docs is None:
            raise ConventionError("reranking needs the documents' texts: give docs (the CLI's --corpus)")
        reranker = self.rerank.component() if self.rerank is not None else None
        result = PipelineResult(self, {}, {})
        tell = progress or (lambda event: None)
        for stage in self.stages():
            kind = _kind(stage)
            tell(StageEvent(stage.label, kind, False))
            started = time.perf_counter()
            if isinstance(stage, Retrieve):
                component = stage.component()
                run = stage.run(component, queries)
            elif isinstance(stage, Fuse):
                component = stage.fuser
                run = stage.run({label: result.runs[label] for label in self.fuse_inputs()})
            else:
                component = reranker
                run = stage.run(reranker, queries, result.runs[self.rerank_input()], docs)
            seconds = round(time.perf_counter() - started, 3)
            result.runs[stage.label], result.components[stage.label] = run, component
            result.seconds[stage.label] = seconds
            tell(StageEvent(stage.label, kind, True, seconds, component))
        return result

    def __rshift__(self, other: Any) -> Pipeline:
        """``pipeline >> Rerank(...)`` (or ``>> Fuse(...)``): this pipeline with one more stage."""
        if isinstance(other, Rerank) and self.rerank is None:
            return Pipeline(self.retrieve, self.fuse, other)
        if isinstance(other, Fuse) and self.fuse is None and self.rerank is None:
            return Pipeline(self.retrieve, other)
        raise ConventionError(f"cannot add {type(other).__name__} after {self.name}: retrieve >> fuse >> rerank")

    @classmethod
    def of(cls, *retrieve: Retrieve | Iterable[Retrieve]) -> Pipeline:
        """A pipeline of first stages only (add the others with ``>>``)."""
        flat: list[Retrieve] = []
        for item in retrieve:
            flat.extend([item] if isinstance(item, Retrieve) else list(item))
        return cls(tuple(flat))
