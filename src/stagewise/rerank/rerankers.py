"""The built-in rerankers, each a registry entry (:mod:`stagewise.rerank.registry`) named in the one grammar:
``bm25-proximity``, ``bi-encoder``, ``cross-encoder(path='/models/ce')``.

- ``bm25-proximity`` needs no extra: BM25 (the ``variant`` of :mod:`stagewise.retrieval.variants`, Lucene's by
  default, with ``k1`` and ``b``) computed by the variants' own IDF and term-frequency functions with corpus
  statistics from the documents given, plus Tao and Zhai's (2007) proximity bonus ``log(alpha + exp(-MinDist))``,
  where MinDist is the smallest distance in analysed tokens between occurrences of two different query terms
  (the document's length when fewer than two query terms occur).
- ``bi-encoder`` is the cosine of the query's and the document's vectors (the packaged all-MiniLM-L6-v2, or
  ``model=PATH``), documents encoded once per rerank.
- ``cross-encoder`` scores each (query, document) pair with a sentence-transformers ``CrossEncoder`` loaded
  from a local folder (``path=``); nothing is downloaded.

Each class declares its parameters once, as :class:`~stagewise.spec.Param` in its ``@reranker`` entry; numpy and
the models' libraries are imported inside the functions, so that listing the rerankers stays light.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stagewise.dense.backends import BACKENDS
from stagewise.errors import ConventionError, InputError
from stagewise.rerank.base import PairReranker, ScoreCache
from stagewise.rerank.registry import RERANKERS, RerankerEntry, make_reranker, reranker
from stagewise.spec import Param

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "RERANKERS",
    "BM25ProximityReranker",
    "BiEncoderReranker",
    "CrossEncoderReranker",
    "RerankerEntry",
    "ScoreCache",
    "make_reranker",
]

_POSITIONS_KEPT = 50_000  # analysed texts memoised by the BM25-proximity reranker
_VECTORS_KEPT = 200_000  # unit vectors memoised by the bi-encoder reranker within one rerank


def _text(value: Any) -> Any:
    """A path given as ``os.PathLike`` read as the text its parameter takes."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


@reranker(
    "bm25-proximity",
    help="BM25 plus a term-proximity bonus over the candidates; no extra needed",
    params={
        "k1": Param(float, 1.2, "term-frequency saturation", "a finite number >= 0", lambda v: v >= 0),
        "b": Param(float, 0.75, "document-length normalisation", "a number in [0, 1]", lambda v: 0 <= v <= 1),
        "alpha": Param(float, 0.3, "floor of the proximity bonus", "a number > 0", lambda v: v > 0),
        "variant": Param(str, "lucene", "the BM25 variant (stagewise.retrieval.variants): its IDF and tf part"),
    },
)
class BM25ProximityReranker(PairReranker):
    """BM25 plus a term-proximity bonus over the candidates; no extra needed.

    The BM25 part is the variant's own formulas (:class:`stagewise.retrieval.variants.Scoring`): the IDF of
    each distinct query term from the corpus given, times the variant's term-frequency part; ``delta`` and
    ``epsilon`` are the variant's defaults.

    >>> r = BM25ProximityReranker(k1=0.9, variant="BM25L")
    >>> r.name, r.params["variant"]
    ('bm25-proximity(k1=0.9,variant=bm25l)', 'bm25l')
    """

    def __init__(
        self,
        *,
        k1: float | None = None,
        b: float | None = None,
        alpha: float | None = None,
        variant: str | None = None,
        **options: Any,
    ) -> None:
        from stagewise.retrieval.variants import Scoring, get_variant

        if variant is not None:
            variant = get_variant(str(variant)).name  # the variants' own error lists them
        values = self.configure({"k1": k1, "b": b, "alpha": alpha, "variant": variant})
        self.k1, self.b, self.alpha = values["k1"], values["b"], values["alpha"]
        self.scoring = Scoring.of(values["variant"], k1=self.k1, b=self.b)
        super().__init__(**options)
        self._checksum = ""
        self._positions: dict[str, tuple[dict[str, list[int]], int]] = {}

    def prepare(self, docs: Mapping[str, str]) -> None:
        import numpy as np

        from stagewise.dense.index import corpus_checksum
        from stagewise.retrieval.analysis import Analyser

        checksum = corpus_checksum(list(docs), list(docs.values()))[7:23]
        if checksum == self._checksum:  # the same corpus (an object's id would be reused by another)
            return
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
        # the variant's IDF of every term at once (okapi-rank_bm25's floor needs the whole vocabulary)
        idf = self.scoring.idf(df, self.n_docs) if len(df) else np.zeros(0)
        self.idf = dict(zip(analysed.terms, idf.tolist(), strict=True))
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

    def bm25(self, q_terms: list[str], positions: Mapping[str, list[int]], length: int) -> float:
        """The BM25 part: the sum over the distinct query terms in the document of the variant's
        ``idf * tf_part`` (:meth:`stagewise.retrieval.variants.Scoring.tf`), in query order."""
        tf_part, scoring, avgdl = self.scoring.spec.tf, self.scoring, self.avgdl
        score = 0.0
        for term in q_terms:
            tf = len(positions.get(term, ()))
            if tf:
                score += self.idf[term] * tf_part(tf, length, avgdl, scoring.k1, scoring.b, scoring.delta or 0.0)
        return score

    def score_pairs(self, query_texts: list[str], doc_texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.zeros(len(query_texts))
        for i, (query, doc) in enumerate(zip(query_texts, doc_texts, strict=True)):
            q_terms = list(self._term_positions(query)[0])  # distinct terms, in order of first use
            positions, length = self._term_positions(doc)
            present = [positions[t] for t in q_terms if t in positions]
            min_dist = float(length)
            for a in range(len(present)):
                for b in range(a + 1, len(present)):
                    min_dist = min(min_dist, _min_gap(present[a], present[b]))
            out[i] = self.bm25(q_terms, positions, length) + math.log(self.alpha + math.exp(-min_dist))
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


def _positive(value: int) -> bool:
    return value >= 1


@reranker(
    "bi-encoder",
    help="the cosine of the query's and the document's vectors (the packaged MiniLM; model='DIR' for another)",
    params={
        "model": Param(str, None, "a local sentence-transformers (or ONNX) folder; default the packaged MiniLM"),
        "backend": Param(
            str, "torch", "the encoder's backend (stagewise.dense.backends)", choices=tuple(BACKENDS.names())
        ),
    },
)
class BiEncoderReranker(PairReranker):
    """Cosine of query and document vectors from a dense encoder (default: the packaged MiniLM)."""

    batch_size = 4096  # pairs per batch; the encoder batches texts itself

    def __init__(
        self, *, model: str | os.PathLike[str] | None = None, backend: str | None = None, encoder: Any = None,
        **options: Any,
    ) -> None:  # fmt: skip
        values = self.configure({"model": _text(model), "backend": backend})
        self.model, self.backend = values["model"], values["backend"]
        self._encoder = encoder
        if encoder is not None:  # named after the encoder given
            self.name = self.entry.canonical({"model": encoder.name, "backend": self.entry.params["backend"].default})
        super().__init__(**options)

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from stagewise.dense.encoders import load_encoder

            self._encoder = load_encoder(self.model, backend=self.backend)
        return self._encoder

    def cache_name(self) -> str:
        # Named without loading the model, so a rerun served from the cache never imports torch.
        if self._encoder is not None:
            return f"{self.entry.name}:{self._encoder.name}"
        from stagewise.dense._deps import PACKAGED_MODEL, resolve_model
        from stagewise.dense.encoders import folder_stamp

        name, folder = resolve_model(self.model)
        # the weights' stamp: another model at the same path, or one saved again, never reads these scores
        return f"{self.entry.name}:{name if name == PACKAGED_MODEL else folder}@{folder_stamp(folder)}"

    def prepare(self, docs: Mapping[str, str]) -> None:
        self._vectors: dict[str, np.ndarray] = {}  # text -> unit vector, for this rerank's batches

    def _unit_vectors(self, texts: list[str]) -> np.ndarray:
        """Each text's unit vector, encoding only those no earlier batch of this rerank encoded (bounded)."""
        import numpy as np

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
        import numpy as np

        qv, dv = self._unit_vectors(query_texts), self._unit_vectors(doc_texts)
        return (qv * dv).sum(axis=1, dtype=np.float32).astype(np.float64)


@reranker(
    "cross-encoder",
    help="a local sentence-transformers CrossEncoder folder (path='DIR') scores each pair; nothing is downloaded",
    params={
        "path": Param(str, None, "the local CrossEncoder folder (required)"),
        "max_length": Param(int, None, "tokens a pair is cut to (default the model's)", "an int >= 1", _positive),
    },
)
class CrossEncoderReranker(PairReranker):
    """A sentence-transformers ``CrossEncoder`` from a local folder scores each pair (one score a pair)."""

    def __init__(
        self, *, path: str | os.PathLike[str] | None = None, max_length: int | None = None, **options: Any
    ) -> None:
        values = self.configure({"path": _text(path), "max_length": max_length})
        if values["path"] is None:
            raise ConventionError(
                "cross-encoder needs a local model folder: --reranker \"cross-encoder(path='DIR')\" (no cross-encoder "
                "is packaged, and nothing is downloaded)"
            )
        self.path, self.max_length = values["path"], values["max_length"]
        if not os.path.isdir(self.path):
            raise InputError(
                self.path,
                "is not a local cross-encoder folder",
                hint="models are never downloaded; give a folder saved with CrossEncoder.save",
            )
        super().__init__(**options)
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
        import numpy as np

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
