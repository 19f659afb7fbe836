"""The built-in rerankers, chosen by a name that round-trips: ``bm25-proximity``, ``bi-encoder``,
``cross-encoder(path='/models/ce')``.

- ``bm25-proximity`` needs no extra: Lucene BM25 (k1, b) with corpus statistics from the documents given,
  plus Tao and Zhai's (2007) proximity bonus ``log(alpha + exp(-MinDist))``, where MinDist is the smallest
  distance in analysed tokens between occurrences of two different query terms (the document's length when
  fewer than two query terms occur).
- ``bi-encoder`` is the cosine of the query's and the document's vectors (the packaged all-MiniLM-L6-v2, or
  ``model=PATH``), documents encoded once per rerank.
- ``cross-encoder`` scores each (query, document) pair with a sentence-transformers ``CrossEncoder`` loaded
  from a local folder (``path=``); nothing is downloaded.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from stagewise import spec
from stagewise.errors import ConventionError, InputError
from stagewise.rerank.base import PairReranker, ScoreCache


def canonical(kind: str, params: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The reranker's name as the one grammar writes names (:func:`stagewise.spec.canonical`), leaving out the
    parameters at their defaults."""
    return spec.canonical(kind, None, [(k, v) for k, v in params.items() if v != defaults.get(k)])


# bm25-proximity's parameters, checked as every parameter of the grammar is
_PROXIMITY_PARAMS = {
    "k1": spec.Param(float, 1.2, "term-frequency saturation", "a finite number >= 0", lambda v: v >= 0),
    "b": spec.Param(float, 0.75, "document-length normalisation", "a number in [0, 1]", lambda v: 0 <= v <= 1),
    "alpha": spec.Param(float, 0.3, "floor of the proximity bonus", "a number > 0", lambda v: v > 0),
}


_POSITIONS_KEPT = 50_000  # analysed texts memoised by the BM25-proximity reranker
_VECTORS_KEPT = 200_000  # unit vectors memoised by the bi-encoder reranker within one rerank


class BM25ProximityReranker(PairReranker):
    """BM25 plus a term-proximity bonus over the candidates; no extra needed."""

    kind = "bm25-proximity"
    defaults: ClassVar[dict[str, Any]] = {"k1": 1.2, "b": 0.75, "alpha": 0.3}

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, alpha: float = 0.3, **kwargs: Any) -> None:
        given = {"k1": k1, "b": b, "alpha": alpha}
        self.k1, self.b, self.alpha = (_PROXIMITY_PARAMS[k].coerce(self.kind, k, v) for k, v in given.items())
        self.name = canonical(self.kind, {"k1": self.k1, "b": self.b, "alpha": self.alpha}, self.defaults)
        super().__init__(**kwargs)
        self._checksum = ""
        self._positions: dict[str, tuple[dict[str, list[int]], int]] = {}

    def prepare(self, docs: Mapping[str, str]) -> None:
        from stagewise.dense.index import corpus_checksum

        checksum = corpus_checksum(list(docs), list(docs.values()))[7:23]
        if checksum == self._checksum:  # the same corpus (an object's id would be reused by another)
            return
        from stagewise.dense.index import corpus_checksum
        from stagewise.retrieval.analysis import Analyser

        self.analyser = Analyser()
        analysed = self.analyser.analyse_many(list(docs.values()))
        self.n_docs = len(analysed)
        lengths = np.diff(analysed.offsets)
        self.avgdl = float(lengths.mean()) if len(lengths) else 0.0
        # document frequency: distinct (doc, term) pairs
        doc_of = np.repeat(np.arange(len(analysed)), lengths)
        keep = analysed.term_ids >= 0
        pairs = np.unique(doc_of[keep].astype(np.int64) * (len(analysed.terms) + 1) + analysed.term_ids[keep])
        df = np.bincount(pairs % (len(analysed.terms) + 1), minlength=len(analysed.terms))
        self.df = dict(zip(analysed.terms, df.tolist(), strict=True))
        self._checksum = checksum

    def cache_name(self) -> str:
        return f"{self.name}@{self._checksum}"  # IDF and avgdl depend on the corpus

    def _term_positions(self, text: str) -> tuple[dict[str, list[int]], int]:
        """Each term's positions in ``text`` and its length in terms, kept for the next pair with the same text
        (a document is a candidate of many queries, a query has many candidates); the memo is bounded."""
        found = self._positions.get(text)
        if found is None:
            if len(self._positions) >= _POSITIONS_KEPT:
                self._positions.clear()
            positions: dict[str, list[int]] = {}
            tokens = self.analyser.analyse(text)
            for pos, token in enumerate(tokens):
                positions.setdefault(token, []).append(pos)
            found = self._positions[text] = (positions, len(tokens))
        return found

    def score_pairs(self, query_texts: list[str], doc_texts: list[str]) -> np.ndarray:
        out = np.zeros(len(query_texts))
        for i, (query, doc) in enumerate(zip(query_texts, doc_texts, strict=True)):
            q_terms = list(self._term_positions(query)[0])  # distinct terms, in order of first use
            positions, length = self._term_positions(doc)
            norm = self.k1 * (1 - self.b + self.b * length / self.avgdl) if self.avgdl else self.k1
            score = 0.0
            for term in q_terms:
                tf = len(positions.get(term, ()))
                if tf:
                    df = self.df.get(term, 0)
                    idf = math.log(1 + (self.n_docs - df + 0.5) / (df + 0.5))
                    score += idf * tf * (self.k1 + 1) / (tf + norm)
            present = [positions[t] for t in q_terms if t in positions]
            min_dist = float(length)
            for a in range(len(present)):
                for b in range(a + 1, len(present)):
                    min_dist = min(min_dist, _min_gap(present[a], present[b]))
            out[i] = score + math.log(self.alpha + math.exp(-min_dist))
        return out


def _min_gap(a: list[int], b: list[int]) -> float:
    """Smallest |x - y| over x in a, y in b (both sorted): a merge walk."""
    i = j = 0
    best = math.inf
    while i < len(a) and j < len(b):
        gap = a[i] - b[j]
        best = min(best, abs(gap))
        if gap < 0:
            i += 1
        else:
            j += 1
    return best


class BiEncoderReranker(PairReranker):
    """Cosine of query and document vectors from a dense encoder (default: the packaged MiniLM)."""

    kind = "bi-encoder"
    defaults: ClassVar[dict[str, Any]] = {"model": None, "backend": "torch"}
    batch_size = 4096  # pairs per batch; the encoder batches texts itself

    def __init__(self, *, model: str | None = None, backend: str = "torch", encoder: Any = None, **kwargs: Any) -> None:
        self.model, self.backend = model, backend
        self._encoder = encoder
        label = {"model": model, "backend": backend} if encoder is None else {"model": encoder.name}
        self.name = canonical(self.kind, label, self.defaults)
        super().__init__(**kwargs)

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from stagewise.dense.encoders import load_encoder

            self._encoder = load_encoder(self.model, backend=self.backend)
        return self._encoder

    def cache_name(self) -> str:
        # Named without loading the model, so a rerun served from the cache never imports torch.
        if self._encoder is not None:
            return f"{self.kind}:{self._encoder.name}"
        from stagewise.dense._deps import PACKAGED_MODEL, resolve_model
        from stagewise.dense.encoders import folder_stamp

        name, folder = resolve_model(self.model)
        # the weights' stamp: another model at the same path, or one saved again, never reads these scores
        return f"{self.kind}:{name if name == PACKAGED_MODEL else folder}@{folder_stamp(folder)}"

    def prepare(self, docs: Mapping[str, str]) -> None:
        self._vectors: dict[str, np.ndarray] = {}  # text -> unit vector, for this rerank's batches

    def _unit_vectors(self, texts: list[str]) -> np.ndarray:
        """Each text's unit vector, encoding only those no earlier batch of this rerank encoded (bounded)."""
        from stagewise.dense.encoders import normalize_rows

        memo = self.__dict__.setdefault("_vectors", {})
        new = [t for t in dict.fromkeys(texts) if t not in memo]
        if new:
            if len(memo) + len(new) > _VECTORS_KEPT:
                memo.clear()
                new = list(dict.fromkeys(texts))
            memo.update(zip(new, normalize_rows(self.encoder.encode(new)), strict=True))
        return np.stack([memo[t] for t in texts])

    def score_pairs(self, query_texts: list[str], doc_texts: list[str]) -> np.ndarray:
        qv, dv = self._unit_vectors(query_texts), self._unit_vectors(doc_texts)
        return (qv * dv).sum(axis=1, dtype=np.float32).astype(np.float64)


class CrossEncoderReranker(PairReranker):
    """A sentence-transformers ``CrossEncoder`` from a local folder scores each pair (one score a pair)."""

    kind = "cross-encoder"
    defaults: ClassVar[dict[str, Any]] = {"path": None, "max_length": None}

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, max_length: int | None = None, **kwargs: Any
    ) -> None:
        if path is None:
            raise ConventionError(
                "cross-encoder needs a local model folder: --reranker \"cross-encoder(path='DIR')\" (no cross-encoder "
                "is packaged, and nothing is downloaded)"
            )
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            raise InputError(
                self.path,
                "is not a local cross-encoder folder",
                hint="models are never downloaded; give a folder saved with CrossEncoder.save",
            )
        self.max_length = max_length
        self.name = canonical(self.kind, {"path": self.path, "max_length": max_length}, self.defaults)
        super().__init__(**kwargs)
        self._model: Any = None

    def cache_name(self) -> str:
        from stagewise.dense.encoders import folder_stamp

        # the folder as resolved, and its weights' stamp: a path typed the same from another folder, or a model
        # saved again, never reads these scores
        return f"{self.name}@{os.path.realpath(self.path)}@{folder_stamp(self.path)}"

    @property
    def model(self) -> Any:
        if self._model is None:
            from stagewise.dense._deps import require

            st = require("sentence_transformers")
            try:
                self._model = st.CrossEncoder(self.path, device="cpu", max_length=self.max_length)
            except (OSError, ValueError) as exc:
                raise InputError(self.path, f"cannot be loaded as a cross-encoder ({exc})") from None
        return self._model

    def score_pairs(self, query_texts: list[str], doc_texts: list[str]) -> np.ndarray:
        pairs = list(zip(query_texts, doc_texts, strict=True))
        scores = np.asarray(
            self.model.predict(pairs, batch_size=len(pairs), show_progress_bar=False, convert_to_numpy=True)
        )
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.ndim != 1:
            raise ConventionError(
                f"the cross-encoder at {self.path} gives {scores.shape[1]} scores a pair; a reranker needs one"
            )
        return scores.astype(np.float64)


RERANKERS: dict[str, Callable[..., PairReranker]] = {
    "bm25_proximity": BM25ProximityReranker,
    "bi_encoder": BiEncoderReranker,
    "cross_encoder": CrossEncoderReranker,
}
RERANKER_NAMES = ["bm25-proximity", "bi-encoder", "cross-encoder"]


def make_reranker(
    spec: str, *, cache: ScoreCache | str | os.PathLike[str] | None = None, **options: Any
) -> PairReranker:
    """A reranker from its name: ``bm25-proximity``, ``bm25-proximity(k1=0.9,b=0.4)``, ``bi-encoder``,
    ``bi-encoder(model='DIR',backend='onnx')``, ``cross-encoder(path='DIR')``. ``str`` of the result parses
    back to an equal reranker.

    >>> str(make_reranker("bm25-proximity(b=0.4)"))
    'bm25-proximity(b=0.4)'
    """
    from stagewise.spec import fold, parse_call

    examples = "bm25-proximity, bi-encoder, cross-encoder(path='DIR')"
    call = parse_call(spec, "reranker", examples)
    name = call.name
    factory = RERANKERS.get(fold(name))
    if factory is None or call.at is not None:
        raise ConventionError(f"unknown reranker {spec!r}; choose one of {', '.join(RERANKER_NAMES)}")
    unknown = sorted(set(call.params) - set(factory.defaults))  # type: ignore[attr-defined]
    if unknown:
        raise ConventionError(
            f"unknown parameter {unknown[0]!r} for {factory.kind}; it takes "  # type: ignore[attr-defined]
            + ", ".join(factory.defaults)  # type: ignore[attr-defined]
        )
    try:
        return factory(cache=cache, **call.params, **options)
    except TypeError as exc:
        raise ConventionError(
            f"bad parameters for reranker {name!r} ({exc}); expected a form like {examples}"
        ) from None
