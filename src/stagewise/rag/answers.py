"""Answer metrics: SQuAD v1.1 exact match and token F1, containment on token boundaries, abstention.

Every function here works on plain strings and is deterministic. The normalisation is the official SQuAD v1.1
evaluation script's, step for step: lowercase, drop every character of :data:`string.punctuation`, replace the
whole words ``a``, ``an`` and ``the`` by a space, collapse runs of whitespace.

>>> normalize_answer("The  Cat's hat!")
'cats hat'
>>> exact_match("Jane Austen.", ["jane austen", "Austen"])
1.0
>>> round(token_f1("Austen wrote Emma", ["Jane Austen"]), 4)
0.4
>>> contains("It was written by Jane Austen in 1815.", ["jane austen"])
True
>>> contains("Austenite", ["Austen"])
False
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from stagewise.errors import ConventionError, parameter_error
from stagewise.spec import Param, Registry, canonical, format_value, parse_call

__all__ = [
    "ABSTENTION_PATTERNS",
    "CRITERIA",
    "AnswerCriterion",
    "AnswerScores",
    "Attempt",
    "Criterion",
    "contains",
    "exact_match",
    "is_abstention",
    "normalize_answer",
    "parse_criterion",
    "score_answer",
    "token_f1",
]

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lowercase, remove punctuation, remove articles, collapse whitespace.

    The order is the official script's: ``white_space_fix(remove_articles(remove_punc(lower(s))))``. Articles
    are removed as whole words (regex ``\\b(a|an|the)\\b``), after punctuation is gone, so ``"the-end"``
    becomes ``"theend"`` and keeps its letters.

    >>> normalize_answer("An  apple, the PEAR & a plum.")
    'apple pear plum'
    >>> normalize_answer("the-end")
    'theend'
    """
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT_TABLE)).split())


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def exact_match(prediction: str, gold_answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals some normalised gold answer, else 0.0 (0.0 with no gold).

    >>> exact_match("the Eiffel Tower", ["Eiffel tower!"])
    1.0
    >>> exact_match("anything", [])
    0.0
    """
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(g) for g in gold_answers) else 0.0


def _f1_tokens(pred: list[str], gold: list[str]) -> tuple[float, float]:
    """(F1, recall of the gold tokens) with SQuAD v1.1's rule: no common token gives 0."""
    if not pred or not gold:
        return 0.0, 0.0
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0, 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall), recall


def token_f1(prediction: str, gold_answers: Sequence[str]) -> float:
    """Maximum over gold answers of the SQuAD v1.1 token F1 (bag of normalised tokens); 0.0 with no gold.

    F1 = 2PR / (P + R) with P = common / len(prediction tokens) and R = common / len(gold tokens), where common
    counts tokens with multiplicity. As in v1.1 (not v2.0), two answers that normalise to nothing score 0.

    >>> token_f1("the cat sat", ["cat sat down"])
    0.8
    >>> token_f1("", ["the"])
    0.0
    """
    pred = _tokens(prediction)
    return max((_f1_tokens(pred, _tokens(g))[0] for g in gold_answers), default=0.0)


def contains(prediction: str, gold_answers: Sequence[str]) -> bool:
    """True when some normalised gold answer occurs in the normalised prediction on token boundaries.

    A gold answer that normalises to nothing (``"the"``) is never contained: it would match every answer.

    >>> contains("Paris, France", ["paris"])
    True
    >>> contains("Parisian", ["paris"])
    False
    """
    pred = f" {normalize_answer(prediction)} "
    for gold in gold_answers:
        norm = normalize_answer(gold)
        if norm and f" {norm} " in pred:
            return True
    return False


# Phrases that, in the first sentence of an answer, mark it as declining to answer. Matched on the lowercased
# text with typographic apostrophes unified; kept as a tuple so a caller can extend it. They are narrow on purpose:
# "There is no evidence that ..." and "There is no one day ..." are answers, not abstentions.
_SOURCE = r"(?:context|contexts|document|documents|passage|passages|text|texts|source|sources|search results)"
ABSTENTION_PATTERNS: tuple[str, ...] = (
    r"\bi (?:do not|don't|dont) know\b",
    r"\b(?:i|we) (?:cannot|can't|cant|can not|am unable to|are unable to|am not able to|are not able to) "
    r"(?:answer|determine|find|say|tell|provide|help)",
    r"\b(?:cannot|can't|can not) be (?:answered|determined)\b",
    r"^(?:i am |i'm |we are )?unable to (?:answer|determine|find)\b",
    r"\b(?:not enough|insufficient) (?:information|context|evidence|data|details)\b",
    r"\bthere (?:is|are) no (?:relevant |specific )?(?:information|mention|answer|details)\b",
    r"\bno (?:relevant )?information (?:is |was )?(?:available|provided|given|found|about|on|in|regarding)\b",
    r"\bunanswerable\b",
    rf"\b{_SOURCE} (?:does|do|did) not (?:contain|provide|mention|include|say|specify|state|answer|give|cover)\b",
    rf"\b{_SOURCE} (?:doesn't|don't|didn't) (?:contain|provide|mention|include|say|specify|state|answer|give|cover)\b",
    rf"\bnot (?:mentioned|provided|specified|stated|given|found|available|covered) in (?:the )?(?:provided )?{_SOURCE}",
)
_WHOLE_ANSWER_ABSTENTIONS = frozenset({"", "unknown", "none", "na", "no answer", "unanswerable", "n a"})
_FIRST_SENTENCE = re.compile(r"^(.*?)(?:[.!?](?:\s|$)|\n|$)", re.S)


def _compile(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


_DEFAULT_ABSTENTION = _compile(ABSTENTION_PATTERNS)


def is_abstention(answer: str, patterns: re.Pattern[str] | None = None) -> bool:
    """True when the answer declines to answer.

    The rule: the answer is empty or, once normalised, one of ``unknown, none, n/a, no answer, unanswerable``;
    or its first sentence (up to the first ``.``, ``!``, ``?`` or line break) matches one of
    :data:`ABSTENTION_PATTERNS` ("I don't know", "I cannot answer", "not enough information", "the documents do
    not mention", "there is no information"). Only the first sentence is read, so an answer that gives a fact and
    then hedges ("Paris. I don't know the year.") is an answer.

    >>> is_abstention("I don't know.")
    True
    >>> is_abstention("The provided passages do not mention his birth date.")
    True
    >>> is_abstention("Paris. I don't know the year.")
    False
    >>> is_abstention("")
    True
    >>> is_abstention("There is no evidence that vaccines cause autism.")
    False
    """
    text = answer.strip()
    if len(text) <= 16 and normalize_answer(text) in _WHOLE_ANSWER_ABSTENTIONS:
        return True
    match = _FIRST_SENTENCE.match(text)
    first = (match.group(1) if match else text).lower().replace("\u2019", "'")
    return (patterns or _DEFAULT_ABSTENTION).search(first) is not None


class Attempt(NamedTuple):
    """What an answer criterion reads for one sample: the answer without its citation markers, the gold answers,
    the scores computed once for every criterion, and the answer judge (for a criterion with ``needs_judge``)."""

    answer: str
    gold_answers: Sequence[str]
    scores: AnswerScores
    judge: Any = None


@dataclass(frozen=True)
class AnswerCriterion:
    """An entry of :data:`CRITERIA`: a way to decide "answer correct", with its behaviour.

    ``passes(attempt, **params) -> bool`` decides one answer (an abstention is handled by the caller: it is never
    correct for an answerable question); ``rule`` is the sentence every output prints, formatted with the
    parameters; ``params`` are :class:`~stagewise.spec.Param` s; ``at`` names the parameter that ``name@V`` and
    ``name:V`` set (f1's threshold); ``needs_judge`` asks for the answer judge in ``attempt.judge``.

    Adding a criterion is one entry (and its test)::

        CRITERIA.register(AnswerCriterion("prefix", "the normalised answer starts with some normalised gold "
                                          "answer", lambda a: any(normalize_answer(a.answer).startswith(
                                              normalize_answer(g)) for g in a.gold_answers)))

    after which ``evaluate_rag(records, correct="prefix")`` and the ``--correct`` option of ``stagewise rag`` take it.
    """

    name: str
    rule: str
    passes: Callable[..., bool]
    params: Mapping[str, Param] = field(default_factory=dict)
    at: str | None = None
    needs_judge: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def help(self) -> str:
        """The rule with each parameter named, not filled in (what ``--help`` shows)."""
        return _PLACEHOLDER.sub(r"\1", self.rule)


_PLACEHOLDER = re.compile(r"\{(\w+)[^{}]*\}")


def _judge_passes(attempt: Attempt) -> bool:
    from stagewise.rag.judges import Passage

    if attempt.judge is None:
        raise ConventionError("the answer criterion needs an answer judge")
    answer = [Passage("answer", attempt.answer)]
    return any(attempt.judge.supports(answer, gold) for gold in attempt.gold_answers)


_THRESHOLD = Param(float, 0.5, "the least token F1 that counts as correct", "a number in [0, 1]", lambda v: 0 <= v <= 1)

#: The answer criteria by name: what ``--correct`` and ``evaluate_rag(correct=...)`` accept.
CRITERIA: Registry[AnswerCriterion] = Registry(
    "answer criterion",
    AnswerCriterion(
        "em", "exact match after SQuAD v1.1 normalisation, with some gold answer", lambda a: a.scores.em == 1.0
    ),
    AnswerCriterion(
        "f1",
        "SQuAD v1.1 token F1 >= {threshold:g} with some gold answer",
        lambda a, threshold: a.scores.f1 >= threshold,
        {"threshold": _THRESHOLD},
        at="threshold",
    ),
    AnswerCriterion(
        "contains",
        "some normalised gold answer occurs in the normalised answer on token boundaries",
        lambda a: a.scores.contains,
    ),
    AnswerCriterion(
        "judge",
        "the answer judge finds that the answer supports (entails) some gold answer",
        _judge_passes,
        needs_judge=True,
    ),
)


@dataclass(frozen=True, slots=True, init=False)
class Criterion:
    """A chosen answer criterion: an entry of :data:`CRITERIA` with its parameters (``Criterion("f1", 0.5)``).

    ``name`` round-trips through :func:`parse_criterion` and is printed in every output; :meth:`passes` decides an
    answer by the entry's behaviour.

    >>> c = Criterion("f1", 0.7)
    >>> c.name, c.threshold, c.describe()
    ('f1:0.7', 0.7, 'SQuAD v1.1 token F1 >= 0.7 with some gold answer')
    """

    kind: str
    params: tuple[tuple[str, Any], ...]
    name: str = field(init=False, compare=False, repr=False)  # computed once: every sample's row prints it

    def __init__(self, kind: str, threshold: float | None = None, *, params: Iterable[tuple[str, Any]] = ()) -> None:
        given = dict(params)
        if threshold is not None:
            given["threshold"] = threshold
        entry = CRITERIA.get(kind)
        if entry is not None:  # every parameter, defaults filled in, in the entry's order
            kind = entry.name
            given = {key: given.get(key, param.default) for key, param in entry.params.items()} | given
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "params", tuple(given.items()))
        object.__setattr__(self, "name", self._printed(entry))

    @property
    def entry(self) -> AnswerCriterion:
        """The registry entry (its behaviour)."""
        return CRITERIA.lookup(self.kind)

    @property
    def threshold(self) -> float | None:
        """The ``threshold`` parameter (f1's), or None."""
        return dict(self.params).get("threshold")

    @property
    def needs_judge(self) -> bool:
        return self.entry.needs_judge

    def _printed(self, entry: AnswerCriterion | None) -> str:
        # name:V (f1:0.5, documented before the grammar) when the one parameter is the entry's "at" parameter;
        # format_value, not :g, so that f1:0.123456789 reads back to the same threshold
        if entry is not None and entry.at is not None and [k for k, _ in self.params] == [entry.at]:
            return f"{self.kind}:{format_value(self.params[0][1])}"
        return canonical(self.kind, None, self.params)

    def describe(self) -> str:
        """The rule, as every output states it."""
        return self.entry.rule.format(**dict(self.params))

    def checker(self) -> Callable[[Attempt], bool]:
        """``passes`` bound to this criterion's parameters, looked up once (for a loop over samples)."""
        return functools.partial(self.entry.passes, **dict(self.params))

    def passes(self, attempt: Attempt) -> bool:
        """Whether the answer counts as correct by this criterion (abstentions aside)."""
        return self.checker()(attempt)

    def __str__(self) -> str:
        return self.name


def _choices() -> str:
    """The accepted spellings, for the error message: built from :data:`CRITERIA`."""
    names = [f"{e.name}:T" if e.at else e.name for e in (CRITERIA.lookup(n) for n in CRITERIA.names())]
    notes = [f"T {e.params[e.at].description}" for e in (CRITERIA.lookup(n) for n in CRITERIA.names()) if e.at]
    return f"one of {', '.join(names)}" + (f" ({'; '.join(dict.fromkeys(notes))})" if notes else "")


_NAME_COLON = re.compile(r"^\s*([^\s:@()]+)\s*:")


def parse_criterion(spec: str | Criterion) -> Criterion:
    """``"em"``, ``"f1"`` (= ``f1:0.5``), ``"f1:0.7"``, ``"contains"``, ``"judge"`` or any registered criterion,
    read by the one grammar of :mod:`stagewise.spec`, where the threshold may also be written ``f1@0.7`` or
    ``f1(threshold=0.7)``.

    >>> parse_criterion("f1:0.7").name
    'f1:0.7'
    >>> parse_criterion("f1").name, parse_criterion("F1(threshold=0.7)").name
    ('f1:0.5', 'f1:0.7')
    """
    if isinstance(spec, Criterion):
        return spec
    text = _NAME_COLON.sub(r"\1@", str(spec), count=1)  # the documented spelling, f1:T, is f1@T in the grammar
    try:
        call = parse_call(text, "answer criterion", "em, f1:0.5, contains or judge")
        entry = CRITERIA.lookup(call.name)
        given = dict(call.params)
        if call.at is not None:
            if entry.at is None:
                raise ConventionError(f"{entry.name} takes no threshold")
            if entry.at in given:
                raise ConventionError("the threshold is given twice")
            given[entry.at] = call.at
        return Criterion(entry.name, params=CRITERIA.check_params(entry.name, entry.params, given).items())
    except ConventionError:
        # One message for every wrong spelling, in the terms of the option it comes from (--correct).
        raise parameter_error("correct", "rag", _choices(), spec) from None


@dataclass(frozen=True, slots=True)
class AnswerScores:
    """One answer's scores against its gold answers (all 0 / False for an unanswerable question)."""

    em: float
    f1: float
    contains: bool
    gold_recall: float  # the best gold answer's share of tokens found in the answer (for partial answers)
    abstained: bool


def score_answer(
    answer: str,
    gold_answers: Sequence[str],
    *,
    abstained: bool | None = None,
    abstention: Callable[[str], bool] = is_abstention,
) -> AnswerScores:
    """EM, F1, containment, the best gold-token recall and abstention, normalising each string once.

    >>> s = score_answer("Jane Austen wrote it.", ["Jane Austen"])
    >>> s.em, round(s.f1, 3), s.contains, s.gold_recall, s.abstained
    (0.0, 0.667, True, 1.0, False)
    """
    norm = normalize_answer(answer)
    pred = norm.split()
    pred_set = set(pred)
    pred_counts: Counter[str] | None = None
    padded = f" {norm} "
    em = f1 = recall = 0.0
    found = False
    for gold in gold_answers:
        gnorm = normalize_answer(gold)
        if gnorm == norm:
            em = 1.0
        if not gnorm:
            continue
        if f" {gnorm} " in padded:
            found = True
        gtoks = gnorm.split()
        if pred_set.isdisjoint(gtoks):  # no common token: F1 and recall are 0 (most wrong answers)
            continue
        if pred_counts is None:
            pred_counts = Counter(pred)
        same = sum(min(n, pred_counts[t]) for t, n in Counter(gtoks).items() if t in pred_counts)
        p, r = same / len(pred), same / len(gtoks)
        f1 = max(f1, 2 * p * r / (p + r))
        recall = max(recall, r)
    declined = abstention(answer) if abstained is None else bool(abstained)
    return AnswerScores(em, f1, found, recall, declined)
