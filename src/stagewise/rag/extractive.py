"""A baseline generator: answer with the context sentence that best covers the question, and cite its passage.

No model and no randomness, so it is a floor to measure a real generator against and a generator that tests can
reason about. Each sentence of the context passages scores the IDF mass of the question's content words it
holds (IDF over all sentences the answerer knows, Lucene's ``log(1 + (N - df + 0.5) / (df + 0.5))``; a question
word no sentence holds gets the IDF of df = 0, so it counts against every sentence instead of vanishing). The best
sentence is the answer, followed by ``[passage id]``; ties go to the earlier passage, then the earlier sentence.
When the best sentence holds less than ``abstain_below`` of the question's IDF mass, the answerer declines with
:data:`ABSTENTION`, which :func:`stagewise.evaluate_rag` reads as an abstention.

>>> answerer = ExtractiveAnswerer({
...     "p1": ["Emma is a novel by Jane Austen.", "It was published in 1815."],
...     "p2": ["Persuasion is her last novel."],
... })
>>> answerer.answer("who wrote the novel Emma", ["p2", "p1"])
'Emma is a novel by Jane Austen. [p1]'
>>> answerer.answer("what is the boiling point of tungsten", ["p1"])
"I don't know."
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ABSTENTION", "ExtractiveAnswerer"]

ABSTENTION = "I don't know."
_WORD = re.compile(r"[a-z0-9]+")
# Question words and function words: they say what is asked, not what about (SQuAD-style questions).
# fmt: off
_STOPWORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "from", "by", "with", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "as", "what", "which", "who",
    "whom", "whose", "when", "where", "why", "how", "do", "does", "did", "not", "no",
})
# fmt: on


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class ExtractiveAnswerer:
    """Pick the context sentence holding the most of the question's IDF mass; cite it or decline.

    Parameters
    ----------
    passages : mapping of passage id to its sentences (a list of str)
        Every passage the answerer may be given as context; the IDF is computed over all their sentences.
    abstain_below : float, default=0.3
        Decline when the best sentence holds less than this share of the question's IDF mass.
    """

    def __init__(self, passages: Mapping[str, Sequence[str]], *, abstain_below: float = 0.3) -> None:
        if not 0.0 <= abstain_below <= 1.0:
            raise ValueError(f"abstain_below must be in [0, 1], not {abstain_below!r}")
        self.sentences = {pid: [str(s).strip() for s in sentences] for pid, sentences in passages.items()}
        self.abstain_below = abstain_below
        self._terms = {pid: [set(_words(s)) for s in sentences] for pid, sentences in self.sentences.items()}
        df = Counter(t for terms in self._terms.values() for sentence in terms for t in sentence)
        n = sum(len(terms) for terms in self._terms.values())
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.unseen_idf = math.log(1 + (n + 0.5) / 0.5)

    def describe(self) -> dict[str, Any]:
        """The answerer's settings, for a pipeline's statement of how its answers were made."""
        return {
            "generator": "extractive",
            "rule": "the context sentence holding the most IDF mass of the question's content words, cited as "
            "[passage id]; declines when it holds less than abstain_below of that mass (a word no sentence holds "
            "counts at the IDF of df = 0)",
            "abstain_below": self.abstain_below,
            "abstention": ABSTENTION,
            "sentences": sum(len(s) for s in self.sentences.values()),
        }

    def answer(self, question: str, context: Iterable[str]) -> str:
        """The cited answer to ``question`` from the passages ``context`` (ids, best first), or the abstention."""
        wanted = {t for t in _words(question) if t not in _STOPWORDS}
        total = sum(self.idf.get(t, self.unseen_idf) for t in wanted)
        best, best_score, best_pid = None, 0.0, None
        for pid in context:
            if pid not in self.sentences:
                raise KeyError(f"passage {pid!r} is not one the answerer was given")
            for sentence, terms in zip(self.sentences[pid], self._terms[pid], strict=True):
                score = sum(self.idf[t] for t in wanted & terms)
                if score > best_score:
                    best, best_score, best_pid = sentence, score, pid
        if best is None or total == 0.0 or best_score / total < self.abstain_below:
            return ABSTENTION
        return f"{best} [{best_pid}]"
