"""Support judges: does a set of passages support a claim?

A judge is any object with ``supports(passages, claim) -> bool`` (:class:`SupportJudge`). Two work offline
and ship here:

- :class:`LexicalJudge`: the claim's content words (SQuAD normalisation, stop words dropped, a plural ``s``
  stripped) must be found in the passages' text, at least a share ``threshold`` of them. Crude and fast; its
  agreement with human support labels on ExpertQA is reported in ``docs/rag.md``.
- :class:`GoldEvidenceJudge`: the passages support the claim when their ids wholly contain one alternative of
  the sample's gold evidence. It reads ids, never text.

A user plugs an NLI model or an LLM by writing a class with a ``supports`` method (and, optionally, a ``name``).
:class:`CachedJudge` wraps any judge: it counts requests and real calls, and keeps each answer in memory and,
given a path, in a JSONL file, so a slow judge is never asked the same question twice.

>>> judge = LexicalJudge()
>>> judge.supports([Passage("p1", "Jane Austen published Emma in 1815.")], "Emma was published by Austen [p1].")
True
>>> judge.supports([Passage("p1", "Mansfield Park appeared in 1814.")], "Emma was published by Austen.")
False
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

__all__ = [
    "STOPWORDS",
    "CachedJudge",
    "GoldEvidenceJudge",
    "JudgeStats",
    "LexicalJudge",
    "Passage",
    "SupportJudge",
    "agreement",
    "judge_name",
]


class Passage(NamedTuple):
    """A passage handed to a judge: its id and its text ("" when the text is unknown)."""

    id: str
    text: str


@runtime_checkable
class SupportJudge(Protocol):
    """The judge protocol: ``supports(passages, claim)`` is True when the passages, read together, support
    (entail) the claim. Implementations must be deterministic for caching to be sound."""

    def supports(self, passages: Sequence[Passage], claim: str) -> bool: ...


def judge_name(judge: object) -> str:
    """The name printed for a judge: its ``name`` attribute, else its class name."""
    return str(getattr(judge, "name", None) or type(judge).__name__)


# A short English stop list (function words only), so that content words decide lexical support.
_STOP_TEXT = """
    a an the and or but if then than so of in on at to for from by with without about into onto over under as is
    are was were be been being am do does did done has have had having it its this that these those there here
    which who whom whose what when where why how not no nor all any both each few more most other some such only
    own same too very can could will would shall should may might must i me my we our you your he him his she
    her they them their also just up out off again further once s t via per within between through during before
    after above below while because until
"""
STOPWORDS: frozenset[str] = frozenset(_STOP_TEXT.split())
_MARKER = re.compile(r"\[[^\[\]\n]{1,200}\]")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


@functools.lru_cache(maxsize=65536)
def _content_tokens(text: str) -> frozenset[str]:
    """Distinct content words: SQuAD normalisation (articles are stop words here), stop words dropped, a plural
    ``s`` stripped from words of four letters or more that do not end in ``ss``."""
    if "[" in text:
        text = _MARKER.sub(" ", text)
    words = set(text.lower().translate(_PUNCT_TABLE).split())
    words -= STOPWORDS
    return frozenset(w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w for w in words)


@dataclass(frozen=True)
class LexicalJudge:
    """Lexical support: share of the claim's content words that occur in the passages >= ``threshold``.

    coverage = |content(claim) & content(passages)| / |content(claim)|, where content() is the set of
    SQuAD-normalised tokens without :data:`STOPWORDS`, a trailing plural ``s`` stripped, and citation markers
    (``[p9]``) removed. A claim with no content word is not supported.

    Parameters
    ----------
    threshold : float, default=0.6
        Fixed before looking at any evaluation data; ``docs/rag.md`` shows how agreement varies with it.

    >>> round(LexicalJudge().coverage([Passage("p", "Emma is a novel by Jane Austen")], "Austen wrote Emma"), 3)
    0.667
    """

    threshold: float = 0.6

    @property
    def name(self) -> str:
        return f"lexical(threshold={self.threshold:g})"

    def coverage(self, passages: Sequence[Passage], claim: str) -> float:
        wanted = _content_tokens(claim)
        if not wanted:
            return 0.0
        found: set[str] = set()
        for passage in passages:
            found |= wanted & _content_tokens(passage.text)
        return len(found) / len(wanted)

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        return self.coverage(passages, claim) >= self.threshold


class GoldEvidenceJudge:
    """Support read from gold evidence ids: the passages support any claim when their ids wholly contain one
    alternative (an id, or a set of ids needed together). Bound to one sample's gold evidence.

    >>> GoldEvidenceJudge([("p9",), ("p4", "p5")]).supports([Passage("p4", ""), Passage("p5", "")], "...")
    True
    >>> GoldEvidenceJudge([("p9",), ("p4", "p5")]).supports([Passage("p4", "")], "...")
    False
    """

    name = "gold"

    def __init__(self, alternatives: Iterable[Iterable[str]]) -> None:
        self.alternatives = [frozenset(alt) for alt in alternatives]

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        ids = {p.id for p in passages}
        return any(alt <= ids for alt in self.alternatives)


@dataclass
class JudgeStats:
    """Counts for one judge: ``requests`` asked, ``calls`` that reached the judge, ``cache_hits`` answered
    from the cache (``requests == calls + cache_hits``)."""

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "calls": self.calls, "cache_hits": self.cache_hits}


class CachedJudge:
    """Wraps a judge: counts every request, calls the judge once per distinct (passages, claim), remembers it.

    Parameters
    ----------
    judge : SupportJudge
        Anything with ``supports(passages, claim) -> bool``.
    cache_path : path, optional
        A JSONL file of earlier answers (one ``{"key", "supports"}`` object a line, the key a SHA-256 of the
        judge's name, the passages and the claim). It is read at start and each new answer is appended, so an
        interrupted run of an expensive judge resumes where it stopped.

    >>> class Counting:
    ...     name = "counting"
    ...     def supports(self, passages, claim):
    ...         return True
    >>> judge = CachedJudge(Counting())
    >>> judge.supports([Passage("p1", "x")], "c"), judge.supports([Passage("p1", "x")], "c")
    (True, True)
    >>> judge.stats.as_dict()
    {'requests': 2, 'calls': 1, 'cache_hits': 1}
    """

    def __init__(self, judge: SupportJudge, cache_path: str | Path | None = None) -> None:
        if not callable(getattr(judge, "supports", None)):
            from stagewise.errors import StagewiseError

            raise StagewiseError(f"a judge needs a supports(passages, claim) method; got {type(judge).__name__}")
        self.judge = judge
        self.name = judge_name(judge)
        self.stats = JudgeStats()
        self._memory: dict[tuple, bool] = {}
        self._path = Path(cache_path) if cache_path is not None else None
        self._disk: dict[str, bool] = {}
        if self._path is not None and self._path.exists():
            for line in self._path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    item = json.loads(line)
                    self._disk[item["key"]] = bool(item["supports"])

    def _disk_key(self, passages: Sequence[Passage], claim: str) -> str:
        payload = json.dumps([self.name, [list(p) for p in passages], claim], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        key = (tuple(passages), claim)
        self.stats.requests += 1
        value = self._memory.get(key)
        if value is not None:
            self.stats.cache_hits += 1
            return value
        disk_key = self._disk_key(passages, claim) if self._path is not None else None
        if disk_key is not None and disk_key in self._disk:
            value = self._disk[disk_key]
            self.stats.cache_hits += 1
        else:
            value = bool(self.judge.supports(list(passages), claim))
            self.stats.calls += 1
            if disk_key is not None and self._path is not None:
                self._disk[disk_key] = value
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"key": disk_key, "supports": value}) + "\n")
        self._memory[key] = value
        return value


def agreement(predicted: Sequence[bool], reference: Sequence[bool]) -> dict[str, float | int]:
    """Accuracy and Cohen's kappa of two binary labelings of the same items.

    kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e the agreement expected by chance
    from each side's share of True; kappa is 0 when p_e == 1 (both sides constant and equal).

    >>> out = agreement([True, True, False, False], [True, False, False, False])
    >>> out["accuracy"], round(out["kappa"], 4)
    (0.75, 0.5)
    """
    if len(predicted) != len(reference):
        raise ValueError("predicted and reference must have the same length")
    n = len(predicted)
    if n == 0:
        return {"n": 0, "accuracy": float("nan"), "kappa": float("nan"), "tp": 0, "fp": 0, "fn": 0, "tn": 0}
    tp = sum(1 for p, r in zip(predicted, reference, strict=True) if p and r)
    fp = sum(1 for p, r in zip(predicted, reference, strict=True) if p and not r)
    fn = sum(1 for p, r in zip(predicted, reference, strict=True) if not p and r)
    tn = n - tp - fp - fn
    observed = (tp + tn) / n
    p_pred, p_ref = (tp + fp) / n, (tp + fn) / n
    expected = p_pred * p_ref + (1 - p_pred) * (1 - p_ref)
    kappa = 0.0 if expected == 1 else (observed - expected) / (1 - expected)
    return {"n": n, "accuracy": observed, "kappa": kappa, "tp": tp, "fp": fp, "fn": fn, "tn": tn}
