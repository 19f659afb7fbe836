"""Citations: which passages an answer cites, whether they are gold, whether the generator saw them, and
ALCE-style sentence-level citation recall and precision through a support judge.

Markers are bracketed ids in the answer: ``[p9]``, ``[p4, p5]``, ``[1][2]``. Inside a bracket, items are split
on commas and semicolons; a bracket whose items contain spaces (``[citation needed]``) is text, not a marker.
An item that is a known id (retrieved, context, passages or gold evidence) is that id; otherwise a positive
integer ``n`` no larger than the context is the n-th context passage (ALCE's numbering, 1-based); anything else
is kept as an id nobody retrieved (and is flagged as cited without being seen).

>>> sents = split_cited_sentences("Emma is by Austen [p9]. It came out in 1815 [1][p4].", {"p9", "p4"}, ["p3", "p9"])
>>> [(s.text, s.cited) for s in sents]
[('Emma is by Austen.', ('p9',)), ('It came out in 1815.', ('p3', 'p4'))]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass

from stagewise.rag.judges import Passage, SupportJudge

__all__ = [
    "CitedSentence",
    "alce_rounds",
    "alce_scores",
    "citation_precision",
    "citation_recall",
    "split_cited_sentences",
    "strip_markers",
]

_BRACKET = re.compile(r"\s*\[([^\[\]\n]{1,200})\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_ITEM_SPLIT = re.compile(r"[,;]")


def _marker_items(content: str) -> list[str] | None:
    items = (
        [item.strip() for item in _ITEM_SPLIT.split(content)]
        if ("," in content or ";" in content)
        else [content.strip()]
    )
    for item in items:
        if not item or len(item.split(None, 1)) != 1:
            return None
    return items


def _resolve(item: str, known: Collection[str], context: Sequence[str]) -> str:
    if item in known:
        return item
    if item.isdigit() and 1 <= int(item) <= len(context):
        return context[int(item) - 1]
    return item


def strip_markers(text: str, known: Collection[str] = (), context: Sequence[str] = ()) -> tuple[str, tuple[str, ...]]:
    """The text without citation markers, and the ids cited in it (in order, each once).

    >>> strip_markers("Jane Austen [p9] wrote it [p9, p1].")
    ('Jane Austen wrote it.', ('p9', 'p1'))
    >>> strip_markers("see [citation needed]")
    ('see [citation needed]', ())
    """
    if "[" not in text:
        return text, ()
    cited: dict[str, None] = {}

    def replace(match: re.Match[str]) -> str:
        items = _marker_items(match.group(1))
        if items is None:
            return match.group(0)
        for item in items:
            cited.setdefault(_resolve(item, known, context), None)
        return ""

    return _BRACKET.sub(replace, text).strip(), tuple(cited)


@dataclass(frozen=True, slots=True)
class CitedSentence:
    """One sentence of an answer without its markers, and the ids it cites."""

    text: str
    cited: tuple[str, ...]


def split_cited_sentences(answer: str, known: Collection[str] = (), context: Sequence[str] = ()) -> list[CitedSentence]:
    """Split an answer into sentences (after ``.``, ``!`` or ``?`` followed by space, and at line breaks) with
    the ids each cites. A piece that holds only markers (``"... 1815. [p4]"``) gives its ids to the sentence
    before it, as a reader would."""
    out: list[CitedSentence] = []
    for piece in _SENTENCE_END.split(answer.strip()):
        if not piece.strip():
            continue
        text, cited = strip_markers(piece, known, context)
        if not text.strip() and cited and out:
            prev = out[-1]
            out[-1] = CitedSentence(prev.text, tuple(dict.fromkeys(prev.cited + cited)))
        elif text.strip():
            out.append(CitedSentence(text, cited))
    return out


def citation_precision(cited: Sequence[str], gold_ids: Collection[str]) -> float | None:
    """Share of cited ids that belong to some gold alternative; None when nothing is cited.

    >>> citation_precision(["p9", "p3"], {"p9", "p4", "p5"})
    0.5
    """
    if not cited:
        return None
    return sum(1 for c in cited if c in gold_ids) / len(cited)


def citation_recall(cited: Collection[str], alternatives: Sequence[Sequence[str]]) -> float | None:
    """The best alternative's share of ids that are cited (an alternative is what the answer needs; citing one
    wholly is full recall); None when there is no gold evidence.

    >>> citation_recall({"p4"}, [("p9",), ("p4", "p5")])
    0.5
    """
    if not alternatives:
        return None
    cited = set(cited)
    return max(sum(1 for g in alt if g in cited) / len(alt) for alt in alternatives)


#: One judge question of ALCE's scores: the passages, and the sentence they should support.
Question = tuple[list[Passage], str]


def alce_rounds(
    sentences: Sequence[CitedSentence],
    seen: Collection[str],
    text_of: Callable[[str], str] | Mapping[str, str],
) -> Generator[list[Question], list[bool], tuple[float | None, float | None]]:
    """:func:`alce_scores` as rounds of judge questions, each round every question that the answers so far make
    necessary: a generator that yields a round (a non-empty list of ``(passages, sentence)``), is sent the
    judge's answers in the same order, and returns ``(recall, precision)``. Round 1 asks each sentence's cited
    passages together; round 2 each citation alone, for supported sentences citing several; round 3 the other
    citations without it, for each citation that did not support its sentence alone. A caller that drives many
    answers at once (:func:`stagewise.rag.evaluate_rag`) can send each round to a batch judge in one go; the
    questions, their number and the scores are those :func:`alce_scores` asks one by one.
    """
    if not sentences:
        return None, None
    lookup = text_of.get if isinstance(text_of, Mapping) else text_of

    def passages(ids: Sequence[str]) -> list[Passage]:
        return [Passage(i, lookup(i) or "") for i in ids]  # type: ignore[operator]

    # a sentence with no citation, or citing a passage outside the context, is not supported and asks nothing
    asked = [s for s in sentences if s.cited and all(r in seen for r in s.cited)]
    total = sum(len(s.cited) for s in asked)
    joint = (yield [(passages(s.cited), s.text) for s in asked]) if asked else []
    supported = [s for s, answer in zip(asked, joint, strict=True) if answer]
    entail_prec = sum(1 for s in supported if len(s.cited) == 1)  # one citation of a supported sentence: precise
    several = [s for s in supported if len(s.cited) > 1]
    if several:
        alone = iter((yield [(passages([ref]), s.text) for s in several for ref in s.cited]))
        undecided = []
        for s in several:
            for ref in s.cited:
                if next(alone):  # precise: it supports the sentence alone
                    entail_prec += 1
                else:  # precise only if the other citations without it do not
                    undecided.append((s, ref))
        if undecided:
            others = yield [(passages([r for r in s.cited if r != ref]), s.text) for s, ref in undecided]
            entail_prec += sum(1 for answer in others if not answer)
    return len(supported) / len(sentences), (entail_prec / total if total else None)


def alce_scores(
    sentences: Sequence[CitedSentence],
    seen: Collection[str],
    judge: SupportJudge,
    text_of: Callable[[str], str] | Mapping[str, str],
) -> tuple[float | None, float | None]:
    """ALCE's sentence-level citation recall and precision (Gao et al. 2023, ``eval.py``, ``compute_autoais``).

    For each sentence, its cited passages are joined and the judge asked whether they support it
    (recall: the share of sentences supported; a sentence with no citation, or citing a passage outside the
    context ``seen``, is not supported and its citations are not counted). For a supported sentence with more
    than one citation, each citation counts as precise when it supports the sentence alone, or when the others
    without it do not; a supported sentence with one citation counts it as precise. Precision is precise
    citations over counted citations.

    Returns ``(recall, precision)``; recall is None for an answer without sentences and precision None when no
    citation was counted (ALCE reports 0 there). The judge is asked one question at a time, in the rounds of
    :func:`alce_rounds`.
    """
    rounds = alce_rounds(sentences, seen, text_of)
    try:
        questions = next(rounds)
        while True:
            questions = rounds.send([bool(judge.supports(p, claim)) for p, claim in questions])
    except StopIteration as done:
        return done.value
