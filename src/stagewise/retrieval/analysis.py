"""The analyser: text to index terms, the same way for documents and queries.

Steps, in order (the order of Lucene's ``EnglishAnalyzer`` and of bm25s):

1. **lowercase** with Python's ``str.lower`` (full Unicode case mapping), unless ``lowercase=False``;
2. **tokenise** into maximal runs of word characters, exactly Python ``re``'s ``\\w`` for ``str`` patterns
   (a letter, digit or other alphanumeric character of any script, or ``_``), keeping runs of at least
   ``min_length`` code points. With the default ``min_length=2`` this is the pattern ``(?u)\\b\\w\\w+\\b`` that
   bm25s and scikit-learn use;
3. **drop stopwords** (compared with the lowercased token, before stemming);
4. **stem** with PyStemmer (``english`` is Snowball's English stemmer, also called Porter2; ``porter`` is
   Porter's 1980 algorithm; ``none`` keeps the token). Each distinct token is stemmed once.

The settings are saved with an index (:meth:`Analyser.settings`) and applied to its queries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagewise.errors import ConventionError, StagewiseError, parameter_error

# Lucene's English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``, Apache-2.0), the same 33 words as
# bm25s's ``STOPWORDS_EN``.
ENGLISH_STOPWORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
)  # fmt: skip

STOPWORD_LISTS: dict[str, tuple[str, ...]] = {"english": ENGLISH_STOPWORDS, "none": ()}
"""Named stopword lists; a user list is given as a sequence of words instead of a name."""

STEMMERS: dict[str, str | None] = {"english": "english", "porter": "porter", "none": None}
"""Stemmer names and the PyStemmer algorithm each one uses (``None``: no stemming)."""

_WORD_RUN = re.compile(r"\w+")


def _load_stemmer(algorithm: str) -> Any:
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - PyStemmer is a dependency of the retrieval stage
        raise StagewiseError("stemming needs PyStemmer: pip install PyStemmer (or use stemmer='none')") from None
    return Stemmer.Stemmer(algorithm)


@dataclass(frozen=True)
class Analysed:
    """Many texts analysed at once.

    ``terms`` is the sorted list of distinct terms; text ``i``'s terms are
    ``term_ids[offsets[i]:offsets[i + 1]]`` (indexes into ``terms``), in text order. Stopwords are removed,
    unless the texts were analysed with ``keep_dropped=True``, which leaves them as ``-1``.
    """

    offsets: np.ndarray
    term_ids: np.ndarray
    terms: list[str]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def tokens(self, i: int) -> list[str]:
        """Text ``i``'s terms as strings."""
        return [self.terms[t] for t in self.term_ids[self.offsets[i] : self.offsets[i + 1]].tolist() if t >= 0]


@dataclass(frozen=True)
class Analyser:
    """Text to terms: lowercase, word-character runs, stopwords, stemming (see the module docstring).

    Parameters
    ----------
    stemmer : str, default="english"
        One of :data:`STEMMERS`: ``english`` (Snowball English), ``porter`` or ``none``.
    stopwords : str or sequence of str, default="english"
        A name in :data:`STOPWORD_LISTS` (``english``: Lucene's 33 words; ``none``) or the words themselves.
    lowercase : bool, default=True
        Lowercase before tokenising.
    min_length : int, default=2
        Shortest token kept, in code points (counted before stemming).

    Examples
    --------
    >>> Analyser().analyse("The wings' lift-curves, in 2 slipstreams")
    ['wing', 'lift', 'curv', 'slipstream']
    >>> Analyser(stemmer="none", stopwords="none", min_length=1).analyse("The wing's lift")
    ['the', 'wing', 's', 'lift']
    """

    stemmer: str = "english"
    stopwords: str | tuple[str, ...] = "english"
    lowercase: bool = True
    min_length: int = 2
    _stemmer: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.stemmer not in STEMMERS:
            raise ConventionError(f"unknown stemmer {self.stemmer!r}; choose one of {', '.join(STEMMERS)}")
        if isinstance(self.stopwords, str):
            if self.stopwords not in STOPWORD_LISTS:
                raise ConventionError(
                    f"unknown stopword list {self.stopwords!r}; choose one of {', '.join(STOPWORD_LISTS)} "
                    "or give the words"
                )
        else:
            words = tuple(self.stopwords)
            if not all(isinstance(w, str) for w in words):
                raise ConventionError("stopwords must be a list name or a sequence of str")
            object.__setattr__(self, "stopwords", words)
        if not isinstance(self.min_length, int) or isinstance(self.min_length, bool) or self.min_length < 1:
            raise parameter_error("min_length", "Analyser", "an int >= 1", self.min_length)

    # -- settings -----------------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The settings as JSON-ready values (stored in an index's metadata)."""
        stop = self.stopwords if isinstance(self.stopwords, str) else list(self.stopwords)
        return {
            "tokenizer": "word-runs",
            "pattern": r"\w+",
            "lowercase": self.lowercase,
            "min_length": self.min_length,
            "stopwords": stop,
            "stemmer": self.stemmer,
            "stemmer_library": "PyStemmer" if STEMMERS[self.stemmer] else None,
        }

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Analyser:
        stop = settings["stopwords"]
        return cls(
            stemmer=settings["stemmer"],
            stopwords=stop if isinstance(stop, str) else tuple(stop),
            lowercase=settings["lowercase"],
            min_length=settings["min_length"],
        )

    def describe(self) -> str:
        """One line for headers and logs: ``english stemmer, english stopwords (33), lowercase, min 2``."""
        stop = self.stopwords if isinstance(self.stopwords, str) else "user"
        n_stop = len(self.stopword_set())
        case = "lowercase" if self.lowercase else "case kept"
        return f"{self.stemmer} stemmer, {stop} stopwords ({n_stop}), {case}, tokens >= {self.min_length} chars"

    # -- pieces -------------------------------------------------------------------------------------------

    def stopword_set(self) -> frozenset[str]:
        words = STOPWORD_LISTS[self.stopwords] if isinstance(self.stopwords, str) else self.stopwords
        return frozenset(words)

    def stem_many(self, tokens: Sequence[str]) -> list[str]:
        """Stem each token (call it with distinct tokens: stemming is the slow part)."""
        algorithm = STEMMERS[self.stemmer]
        if algorithm is None:
            return list(tokens)
        if self._stemmer is None:
            object.__setattr__(self, "_stemmer", _load_stemmer(algorithm))
        return self._stemmer.stemWords(list(tokens))

    # -- analysis -----------------------------------------------------------------------------------------

    def analyse(self, text: str) -> list[str]:
        """One text's terms, in order: the plain-Python reference of :meth:`analyse_many`."""
        if self.lowercase:
            text = text.lower()
        stop = self.stopword_set()
        tokens = [t for t in _WORD_RUN.findall(text) if len(t) >= self.min_length and t not in stop]
        return self.stem_many(tokens)

    def _tokenize(
        self, texts: Sequence[str], source: str | None, progress: Callable[[int, int], None] | None, chunk_size: int
    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Lowercase and tokenise: (offsets int64 [n + 1], raw token ids int32, the distinct raw tokens)."""
        from stagewise.retrieval import _kernels

        if not isinstance(texts, list | tuple):
            texts = list(texts)
        n = len(texts)
        raw_tokens: list[str] = []
        seen: dict[str, int] = {}
        offset_parts, id_parts = [np.zeros(1, dtype=np.int64)], []
        for start in range(0, max(n, 1), chunk_size):
            part = texts[start : start + chunk_size]
            try:
                offsets, ids, tokens = _kernels.tokenize(part, self.lowercase, self.min_length)
            except TypeError as exc:
                detail = str(exc)
                match = re.match(r"document (\d+) ", detail)
                if match:  # number the text within the whole input, not within its chunk
                    detail = f"document {start + int(match.group(1))} " + detail[match.end() :]
                raise StagewiseError(f"{source or 'texts'}: {detail}; documents and queries must be strings") from None
            if not raw_tokens and start == 0:
                raw_tokens = list(tokens)
                seen = {t: i for i, t in enumerate(raw_tokens)} if n > chunk_size else {}
            elif tokens:
                before = len(raw_tokens)
                local = np.fromiter((seen.setdefault(t, len(seen)) for t in tokens), dtype=np.int32, count=len(tokens))
                raw_tokens.extend(t for t, g in zip(tokens, local.tolist(), strict=True) if g >= before)
                ids = local[ids]
            offset_parts.append(offsets[1:] + offset_parts[-1][-1])
            id_parts.append(ids)
            if progress is not None:
                progress(min(start + chunk_size, n), n)
        offsets = np.concatenate(offset_parts)
        raw_ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int32)
        return offsets, raw_ids, raw_tokens

    def analyse_to_ids(
        self, texts: Sequence[str], lookup: Callable[[list[str]], np.ndarray], *, source: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each text's terms as ids that ``lookup`` gives (a list of terms to an int32 array of ids, negative
        for a term it does not know): (offsets int64 [n + 1], ids int32), in text order, stopwords and unknown
        terms dropped. The same terms as :meth:`analyse_many` without its sorted list of distinct terms, which
        a search looking terms up in an index's vocabulary has no use for (a third of a short query's
        analysis)."""
        offsets, raw_ids, raw_tokens = self._tokenize(texts, source, None, 50_000)
        stop = self.stopword_set()
        dropped = [i for i, t in enumerate(raw_tokens) if t in stop] if stop else []
        id_of_raw = np.array(lookup(self.stem_many(raw_tokens)), dtype=np.int32)  # a copy: it is written
        if dropped:  # stemmed with the rest (each distinct token once: a few stopwords at most), then dropped
            id_of_raw[dropped] = -1
        ids = id_of_raw[raw_ids] if len(raw_ids) else np.zeros(0, dtype=np.int32)
        return drop_absent(offsets, ids)

    def analyse_many(
        self,
        texts: Sequence[str],
        *,
        source: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        chunk_size: int = 50_000,
        keep_dropped: bool = False,
    ) -> Analysed:
        """Analyse many texts at once: a compiled pass tokenises and interns them (``chunk_size`` texts at a
        time, calling ``progress(done, total)`` after each), then stopwords and stemming run once per distinct
        token. Gives exactly :meth:`analyse` for each text.

        With ``keep_dropped=True`` stopwords stay in ``term_ids`` as ``-1`` (the indexer skips them; this
        saves a pass over every token)."""
        offsets, raw_ids, raw_tokens = self._tokenize(texts, source, progress, chunk_size)
        stop = self.stopword_set()
        keep_raw = np.fromiter((t not in stop for t in raw_tokens), dtype=bool, count=len(raw_tokens))
        kept = [t for t, k in zip(raw_tokens, keep_raw.tolist(), strict=True) if k] if stop else raw_tokens
        stems = self.stem_many(kept)
        terms = sorted(set(stems))
        position = {t: i for i, t in enumerate(terms)}
        term_of_raw = np.full(len(raw_tokens), -1, dtype=np.int32)
        term_of_raw[keep_raw] = np.fromiter((position[s] for s in stems), dtype=np.int32, count=len(stems))
        ids = term_of_raw[raw_ids] if len(raw_ids) else np.zeros(0, dtype=np.int32)
        if len(ids) and not keep_dropped and not keep_raw.all():
            offsets, ids = drop_absent(offsets, ids)
        return Analysed(offsets, np.ascontiguousarray(ids, dtype=np.int32), terms)


def drop_absent(offsets: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Texts' term ids (``offsets`` int64 [n + 1], ``ids``) without the negative ones (a stopword, a term the
    index does not know): the offsets recounted, the ids kept in order, as int32."""
    keep = ids >= 0
    if not keep.all():
        n = len(offsets) - 1
        text_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(text_of[keep], minlength=n), out=offsets[1:])
        ids = ids[keep]
    return offsets, np.ascontiguousarray(ids, dtype=np.int32)


def analysed_from_tokens(token_lists: Sequence[Sequence[str]]) -> Analysed:
    """Pre-tokenised texts (each a list of terms, used as they are) in :class:`Analysed` form."""
    terms = sorted({t for tokens in token_lists for t in tokens})
    position = {t: i for i, t in enumerate(terms)}
    lengths = np.fromiter((len(tokens) for tokens in token_lists), dtype=np.int64, count=len(token_lists))
    offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter((position[t] for tokens in token_lists for t in tokens), dtype=np.int32, count=int(offsets[-1]))
    return Analysed(offsets, ids, terms)
