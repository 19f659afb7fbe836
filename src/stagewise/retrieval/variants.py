"""BM25 variants, each exactly its formula.

A variant's score for query ``q`` and document ``d`` is

    score(q, d) = sum over distinct terms t of q and d of  qtf(t) * idf(t) * tf_part(tf(t, d), |d|)

with ``qtf`` the number of times ``t`` occurs in the query (a repeated query term counts each time, as in
bm25s, rank_bm25 and Lucene), ``tf`` its count in ``d``, ``|d|`` the document's length in terms after analysis,
``N`` the number of documents, ``df`` the number of documents containing ``t`` and ``avgdl`` the mean length.
A term absent from ``d`` contributes nothing in every variant here (for BM25L and BM25+ too: see
:func:`bm25plus_idf`).

Each variant is a small pure IDF function (its docstring gives the formula and the paper) paired with one of
three term-frequency parts, and is chosen from :data:`VARIANTS` by name. The index stores raw statistics
(tf per posting, document lengths, df, N, avgdl), so ``k1``, ``b``, ``delta``, ``epsilon`` and even the variant
can change at search time. The names follow Kamphuis, de Vries, Boytsov and Lin, "Which BM25 Do You Mean? A
Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stagewise.errors import ConventionError
from stagewise.spec import Param, Registry, canonical, parse_call

# --------------------------------------------------------------------------------------- term-frequency parts


def saturating_tf(tf, dl, avgdl, k1, b, delta=0.0):
    """The classic BM25 term-frequency part (Robertson et al. 1994):

        tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

    It saturates: it tends to ``k1 + 1`` as ``tf`` grows. A term occurring twice in an average-length document
    with ``k1 = 1.2`` (any ``b``) gives ``2 * 2.2 / (2 + 1.2) = 1.375``.

    >>> saturating_tf(2, 100, 100.0, 1.2, 0.75)
    1.375
    """
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def plus_tf(tf, dl, avgdl, k1, b, delta=1.0):
    """BM25+'s part (Lv and Zhai 2011b): the saturating part plus ``delta``, for terms that occur (tf >= 1).

        tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)) + delta

    >>> plus_tf(2, 100, 100.0, 1.2, 0.75, 1.0)
    2.375
    """
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) + delta


def bm25l_tf(tf, dl, avgdl, k1, b, delta=0.5):
    """BM25L's part (Lv and Zhai 2011a), for terms that occur (tf >= 1):

        c = tf / (1 - b + b * |d| / avgdl);   (k1 + 1) * (c + delta) / (k1 + c + delta)

    >>> round(bm25l_tf(2, 100, 100.0, 1.2, 0.75, 0.5), 6)
    1.486486
    """
    c = tf / (1 - b + b * dl / avgdl)
    return (k1 + 1) * (c + delta) / (k1 + c + delta)


TF_PARTS: dict[str, tuple[Callable, int]] = {"saturating": (saturating_tf, 0), "plus": (plus_tf, 1), "l": (bm25l_tf, 2)}
"""Term-frequency parts by name, with the code of the compiled kernel's copy of the same arithmetic."""

# --------------------------------------------------------------------------------------------------- IDFs


def lucene_idf(df, n_docs):
    """Lucene's BM25 (``BM25Similarity``, the lesson's variant and this library's default):

        idf = ln(1 + (N - df + 0.5) / (df + 0.5))           with the saturating tf part

    Always positive, so no floor is needed. Lucene 8 and later also drop the constant ``k1 + 1`` from the tf
    part; that changes no ranking, and this library keeps it (so the lesson's 1.375 holds). Reference:
    Kamphuis et al., ECIR 2020, "Lucene (accurate)".
    """
    return np.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def robertson_idf(df, n_docs):
    """Robertson et al.'s BM25 (Okapi at TREC-3, 1994), its Robertson-Sparck Jones IDF clamped at 0:

        idf = max(0, ln((N - df + 0.5) / (df + 0.5)))       with the saturating tf part

    Unclamped, a term in more than half the documents has a negative IDF, and matching it would lower a
    document's score; clamped (as bm25s does) such a term is simply ignored. Reference: S. E. Robertson,
    S. Walker, S. Jones, M. Hancock-Beaulieu, M. Gatford, "Okapi at TREC-3", TREC 1994.
    """
    return np.maximum(0.0, np.log((n_docs - df + 0.5) / (df + 0.5)))


def atire_idf(df, n_docs):
    """ATIRE's BM25 (Trotman, Jia and Crane 2012; Trotman, Puurula and Burgess 2014):

        idf = ln(N / df)                                      with the saturating tf part

    Never negative (0 for a term in every document). Reference: A. Trotman, A. Puurula, B. Burgess,
    "Improvements to BM25 and Language Models Examined", ADCS 2014.
    """
    return np.log(n_docs / df)


def bm25l_idf(df, n_docs):
    """BM25L (Lv and Zhai, "When documents are very long, BM25 fails!", SIGIR 2011):

        idf = ln((N + 1) / (df + 0.5))                        with the BM25L tf part (default delta = 0.5)

    BM25L shifts the length-normalised frequency ``c`` by ``delta`` so that very long documents are not
    over-penalised. As in the paper the sum runs over terms present in the document. bm25s also adds
    ``idf * (k1 + 1) * delta / (k1 + delta)`` (the part at ``tf = 0``) for every query term a document lacks;
    rank_bm25's ``BM25L`` multiplies each term by an extra factor ``tf``, which the paper does not have.
    """
    return np.log((n_docs + 1) / (df + 0.5))


def bm25plus_idf(df, n_docs):
    """BM25+ (Lv and Zhai, "Lower-bounding term frequency normalization", CIKM 2011):

        idf = ln((N + 1) / df)                                with the BM25+ tf part (default delta = 1)

    The textbook form: ``delta`` is added only for query terms that occur in the document, so that an
    occurrence in a very long document still earns at least ``idf * delta``. bm25s instead adds
    ``idf * delta`` for every query term to every document (its "non-occurrence" array), and rank_bm25's
    ``BM25Plus`` does too (it scores ``idf * (delta + tf part)`` with ``tf = 0`` for absent terms). Those scores
    equal these plus ``delta * sum of idf over the query terms absent from the document``, so rankings differ.
    """
    return np.log((n_docs + 1) / df)


def rank_bm25_okapi_idf(df, n_docs, epsilon=0.25):
    """rank_bm25's ``BM25Okapi`` IDF, reproduced bit for bit:

        idf = ln(N - df + 0.5) - ln(df + 0.5);  every idf < 0 is replaced by  epsilon * mean(idf over all terms)

    with the saturating tf part and rank_bm25's defaults ``k1 = 1.5, b = 0.75, epsilon = 0.25``. The floor is
    not monotonic: a term in more than half the documents can outweigh a rarer term whose IDF is just above 0,
    and the floor depends on the whole vocabulary (adding documents moves it). Reference: D. Brown,
    rank_bm25 0.2.2 (``BM25Okapi._calc_idf``).
    """
    df = np.asarray(df, dtype=np.float64)
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    if idf.size == 0:
        return idf
    floor = epsilon * (math.fsum(idf.tolist()) / idf.size)  # rank_bm25 adds in vocabulary order; fsum is exact
    return np.where(idf < 0, floor, idf)


# ---------------------------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Variant:
    """A named BM25 variant: an IDF function and a term-frequency part, with default parameters."""

    name: str
    idf: Callable
    tf_part: str
    k1: float = 1.2
    b: float = 0.75
    delta: float | None = None
    epsilon: float | None = None
    aliases: tuple[str, ...] = ()

    @property
    def tf(self) -> Callable:
        return TF_PARTS[self.tf_part][0]

    @property
    def kernel_mode(self) -> int:
        return TF_PARTS[self.tf_part][1]

    @property
    def formula(self) -> str:
        return " ".join((self.idf.__doc__ or "").strip().split("\n\n")[1].split())


VARIANTS: dict[str, Variant] = {
    "lucene": Variant("lucene", lucene_idf, "saturating"),
    "robertson": Variant("robertson", robertson_idf, "saturating"),
    "atire": Variant("atire", atire_idf, "saturating"),
    "bm25l": Variant("bm25l", bm25l_idf, "l", delta=0.5),
    "bm25+": Variant("bm25+", bm25plus_idf, "plus", delta=1.0),
    "okapi-rank_bm25": Variant("okapi-rank_bm25", rank_bm25_okapi_idf, "saturating", k1=1.5, epsilon=0.25),
}
"""The variants by name. ``lucene`` is the default."""

DEFAULT_VARIANT = "lucene"

_REGISTRY: Registry[Variant] = Registry("BM25 variant", *VARIANTS.values())

# The parameters' checks; each variant's defaults are its own (Variant.k1 ...), so these defaults say "unset".
PARAMS: dict[str, Param] = {
    # bounded so tf * (k1 + 1) stays finite in the kernels (k1 = 1e308 gave inf scores); far past any tuned k1
    "k1": Param(float, None, "term-frequency saturation", "a number in [0, 1e9]", lambda v: 0 <= v <= 1e9),
    "b": Param(float, None, "document-length normalisation", "a number in [0, 1]", lambda v: 0 <= v <= 1),
    "delta": Param(float, None, "lower bound of the tf part (bm25l, bm25+)", "a finite number >= 0", lambda v: v >= 0),
    "epsilon": Param(float, None, "floor of negative IDFs, times the mean IDF (okapi-rank_bm25)", "a finite number"),
}


def get_variant(name: str) -> Variant:
    """The variant named ``name`` (case-insensitive), or an error listing the variants."""
    return _REGISTRY.lookup(name)


@dataclass(frozen=True)
class Scoring:
    """A variant with its parameters: a value with a name that round-trips.

    >>> s = Scoring.of("lucene", k1=0.9, b=0.4)
    >>> str(s)
    'lucene(k1=0.9,b=0.4)'
    >>> Scoring.parse(str(s)) == s
    True
    >>> round(s.weight(tf=2, dl=100, avgdl=100.0, df=10, n_docs=1000), 6)
    5.971739
    """

    variant: str
    k1: float
    b: float
    delta: float | None = None
    epsilon: float | None = None

    @classmethod
    def of(
        cls,
        variant: str = DEFAULT_VARIANT,
        *,
        k1: float | None = None,
        b: float | None = None,
        delta: float | None = None,
        epsilon: float | None = None,
    ) -> Scoring:
        """The variant with its defaults, overridden by any parameter given (validated)."""
        v = get_variant(variant)
        owner = f"BM25 variant {v.name!r}"
        k1 = PARAMS["k1"].coerce(owner, "k1", v.k1 if k1 is None else k1)
        b = PARAMS["b"].coerce(owner, "b", v.b if b is None else b)
        if v.delta is None:
            if delta is not None:
                raise ConventionError(f"BM25 variant {v.name!r} has no 'delta' parameter (bm25l and bm25+ do)")
        else:
            delta = PARAMS["delta"].coerce(owner, "delta", v.delta if delta is None else delta)
        if v.epsilon is None:
            if epsilon is not None:
                raise ConventionError(f"BM25 variant {v.name!r} has no 'epsilon' parameter (okapi-rank_bm25 does)")
        else:
            epsilon = PARAMS["epsilon"].coerce(owner, "epsilon", v.epsilon if epsilon is None else epsilon)
        return cls(v.name, k1, b, delta, epsilon)

    def with_params(self, **params: float | None) -> Scoring:
        """This scoring with some parameters (or the variant) changed; ``None`` keeps the current value."""
        variant = get_variant(params.pop("variant", None) or self.variant).name
        current = {} if variant != self.variant else self.params()
        current.update({k: v for k, v in params.items() if v is not None})
        return Scoring.of(variant, **current)

    def params(self) -> dict[str, float]:
        out = {"k1": self.k1, "b": self.b}
        if self.delta is not None:
            out["delta"] = self.delta
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
        return out

    def __str__(self) -> str:
        return canonical(self.variant, None, self.params().items())

    @classmethod
    def parse(cls, text: str) -> Scoring:
        """Read ``lucene(k1=0.9,b=0.4)`` (or a bare variant name) back, through :mod:`stagewise.spec`."""
        call = parse_call(text, "BM25 scoring", "lucene or lucene(k1=0.9,b=0.4)")
        if call.at is not None:
            raise ConventionError(f"cannot read BM25 scoring {call.text!r}; expected a form like lucene(k1=0.9,b=0.4)")
        for key in call.params:
            if key not in PARAMS:
                known = ", ".join(PARAMS)
                raise ConventionError(f"unknown BM25 parameter {key!r} in {call.text!r}; choose from {known}")
        return cls.of(call.name, **call.params)

    # -- the formula --------------------------------------------------------------------------------------

    @property
    def spec(self) -> Variant:
        return VARIANTS[self.variant]

    def idf(self, df, n_docs):
        """IDF of each term from its document frequency (a whole vocabulary at once for okapi-rank_bm25)."""
        if self.epsilon is not None:
            return self.spec.idf(df, n_docs, self.epsilon)
        with np.errstate(divide="ignore"):
            return self.spec.idf(np.asarray(df, dtype=np.float64), n_docs)

    def tf(self, tf, dl, avgdl):
        """The term-frequency part for a term that occurs ``tf >= 1`` times in a document of length ``dl``."""
        return self.spec.tf(tf, dl, avgdl, self.k1, self.b, self.delta or 0.0)

    def weight(self, *, tf, dl, avgdl, df, n_docs) -> float:
        """One term's contribution ``idf * tf_part``, from the closed form (not for okapi-rank_bm25, whose IDF
        needs the whole vocabulary)."""
        return float(self.idf(np.asarray([df]), n_docs)[0]) * float(self.tf(tf, dl, avgdl))
