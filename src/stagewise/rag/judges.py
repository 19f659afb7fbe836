"""Support judges: does a set of passages support a claim?

A judge is any object with ``supports(passages, claim) -> bool`` (:class:`SupportJudge`). Two work offline
and ship here:

- :class:`LexicalJudge`: the claim's content words (SQuAD normalisation, stop words dropped, a plural ``s``
  stripped) must be found in the passages' text, at least a share ``threshold`` of them. Crude and fast; its
  agreement with human support labels on ExpertQA is reported in ``docs/rag.md``.
- :class:`GoldEvidenceJudge`: the passages support the claim when their ids wholly contain one alternative of
  the sample's gold evidence. It reads ids, never text.

A user plugs an NLI model or an LLM by writing a class with a ``supports`` method (and, optionally, a ``name``
and a ``version``: :class:`Judge`), and names it on the command line as ``module:attr``, or registers it in
:data:`JUDGES` under a name in the spec grammar (``nli``, ``nli(model=...)``): then ``evaluate_rag(judge="nli")``
and ``stagewise rag --judge nli`` use it, and ``--help`` lists it. :class:`CachedJudge` wraps any judge: it counts
requests and real calls, and keeps each answer in memory and, given a path, in a JSONL file, so a slow judge is
never asked the same question twice. Every output that used a judge names it canonically (``lexical``,
``lexical(threshold=0.5)``), with its version when it has one.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from stagewise.errors import ConventionError
from stagewise.spec import Param, Registry, canonical, parse_call

__all__ = [
    "JUDGES",
    "STOPWORDS",
    "CachedJudge",
    "GoldEvidenceJudge",
    "Judge",
    "JudgeEntry",
    "JudgeSpec",
    "JudgeStats",
    "LexicalJudge",
    "Passage",
    "SupportJudge",
    "agreement",
    "judge_name",
    "judge_version",
    "parse_judge",
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


@runtime_checkable
class Judge(SupportJudge, Protocol):
    """A support judge that names itself: ``name`` (canonical, in the spec grammar when it takes parameters:
    ``lexical(threshold=0.6)``) and ``version`` (None when the stagewise version says it all). Every output
    that used the judge prints both; the cache keys its answers on them."""

    name: str
    version: str | None


def judge_name(judge: object) -> str:
    """The name printed for a judge: its ``name`` attribute, else its class name."""
    return str(getattr(judge, "name", None) or type(judge).__name__)


def judge_version(judge: object) -> str | None:
    """A judge's ``version`` (a model's revision, a prompt's hash...), or None when it states none."""
    version = getattr(judge, "version", None)
    return None if version is None else str(version)


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
    version = None  # the stagewise version says it all

    @property
    def name(self) -> str:
        return canonical("lexical", None, [("threshold", self.threshold)])

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
    version = None

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
        self.version = judge_version(judge)
        self.stats = JudgeStats()
        self._memory: dict[tuple, bool] = {}
        self._prefetched: set[tuple] = set()  # answers asked ahead in a batch (prefetch), not yet read
        self._path = Path(cache_path) if cache_path is not None else None
        self._disk: dict[str, bool] = {}
        if self._path is not None and self._path.exists():
            for line in self._path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    item = json.loads(line)
                    self._disk[item["key"]] = bool(item["supports"])

    def _disk_key(self, passages: Sequence[Passage], claim: str) -> str:
        # a judge that states a version keys its answers on it too: a new model revision asks afresh
        named = [self.name] if self.version is None else [self.name, self.version]
        payload = json.dumps([*named, [list(p) for p in passages], claim], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def batches(self) -> bool:
        """Whether the judge answers a batch at once (``support_verdicts`` or ``verdicts``), so that
        :meth:`prefetch` asks it anything."""
        return any(callable(getattr(self.judge, m, None)) for m in ("support_verdicts", "verdicts"))

    def prefetch(self, items: Sequence[tuple[Sequence[Passage], str]]) -> int:
        """Ask the judge, in one batch, every ``(passages, claim)`` of ``items`` it has not answered yet, when it
        can answer a batch (``support_verdicts`` or ``verdicts``: a model judge runs the calls concurrently, the
        calibrated one encodes once); a judge that cannot is left alone. The answers wait in the cache, and the
        first :meth:`supports` that reads one counts it as the call it was. Returns the number asked."""
        if not self.batches:
            return 0
        from stagewise.rag.verdicts import support_verdicts

        wanted: dict[tuple, tuple[list[Passage], str]] = {}
        for passages, claim in items:
            key = (tuple(passages), claim)
            if (
                key not in self._memory
                and key not in wanted
                and (self._path is None or self._disk_key(passages, claim) not in self._disk)
            ):
                wanted[key] = (list(passages), claim)
        if not wanted:
            return 0
        for key, verdict in zip(wanted, support_verdicts(self.judge, list(wanted.values())), strict=True):
            value = bool(verdict.supported)
            self._memory[key] = value
            self._prefetched.add(key)
            if self._path is not None:
                disk_key = self._disk_key(*wanted[key])
                self._disk[disk_key] = value
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"key": disk_key, "supports": value}) + "\n")
        return len(wanted)

    def supports(self, passages: Sequence[Passage], claim: str) -> bool:
        key = (tuple(passages), claim)
        self.stats.requests += 1
        value = self._memory.get(key)
        if value is not None and key in self._prefetched:  # asked in a batch for this request: a call, once
            self._prefetched.discard(key)
            self.stats.calls += 1
            return value
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


@dataclass(frozen=True)
class JudgeEntry:
    """An entry of :data:`JUDGES`: a judge that a name in the spec grammar builds.

    ``build(**params)`` makes the judge (anything with ``supports(passages, claim)``); with ``per_sample`` it is
    ``build(alternatives, **params)``, bound to each sample's gold evidence (``gold``). ``build`` None means no
    judge (``none``); ``choose(records) -> str`` names the judge to use instead, from the records (``auto``).
    ``help`` is the line ``--help`` shows; ``params`` are :class:`~stagewise.spec.Param` s.

    Adding a judge is one entry (and its test)::

        JUDGES.register(JudgeEntry("nli", "an NLI model's entailment", NliJudge,
                                   {"model": Param(str, "roberta-large-mnli", "the model")}))
    """

    name: str
    help: str
    build: Callable[..., Any] | None
    params: Mapping[str, Param] = field(default_factory=dict)
    per_sample: bool = False
    choose: Callable[[Sequence[Any]], str] | None = None
    aliases: tuple[str, ...] = ()
    #: the questions the built judge answers (:data:`stagewise.rag.verdicts.TASKS`): support, relevance,
    #: correctness; `stagewise judge relevance` lists only the entries that answer relevance.
    tasks: tuple[str, ...] = ("support",)


def _auto(records: Sequence[Any]) -> str:
    return "lexical" if any(rec.passages for rec in records) else "gold"


def _calibrated(**params: Any) -> Any:
    """:class:`stagewise.rag.calibrated.CalibratedJudge`, imported on use (it reads its fitted parameters)."""
    from stagewise.rag.calibrated import CalibratedJudge

    return CalibratedJudge(**params)


def _query_coverage(**params: Any) -> Any:
    """:class:`stagewise.rag.relevance.QueryCoverageJudge` (a relevance judge), imported on use."""
    from stagewise.rag.relevance import QueryCoverageJudge

    return QueryCoverageJudge(**params)


def _llm(**params: Any) -> Any:
    """:class:`stagewise.rag.llm_judges.LlmJudge`, imported on use (it needs httpx when it calls)."""
    from stagewise.rag.llm_judges import LlmJudge

    return LlmJudge(**params)


def _positive(kind: type, default: Any, help: str, least: float = 1) -> Param:
    return Param(kind, default, help, f"a number >= {least:g}", lambda v: v >= least)


# The llm judge's parameters (stagewise.rag.llm_judges documents each); "" reads the environment.
_LLM_PARAMS = {
    "model": Param(str, "", "the model the endpoint serves; '' reads STAGEWISE_LLM_MODEL"),
    "url": Param(str, "", "the endpoint's base URL, quoted ('http://127.0.0.1:8080/v1'); '' reads STAGEWISE_LLM_URL"),
    "support_prompt": Param(str, "support-v1", "the support prompt's version"),
    "relevance_prompt": Param(str, "umbrela-v1", "the 0-3 relevance prompt's version"),
    "nugget_prompt": Param(str, "nugget-v1", "the nugget assignment prompt's version"),
    "key_env": Param(str, "OPENAI_API_KEY", "the environment variable holding the API key"),
    "timeout": _positive(float, 60.0, "seconds one attempt may take", 0.001),
    "retries": _positive(int, 3, "retries of a failed call", 0),
    "concurrency": _positive(int, 4, "calls in flight at once"),
    "max_calls": _positive(int, 0, "the call budget (0: none); past it, items are unjudged", 0),
    "seed": Param(int, 0, "the seed sent with every request (temperature is always 0)"),
    "max_tokens": _positive(int, 256, "the longest answer, in tokens"),
    "nuggets_per_call": _positive(int, 10, "nuggets assessed in one call"),
    "cache": Param(str, "", "the JSONL reply cache; '' reads STAGEWISE_LLM_CACHE, else ~/.cache/stagewise; off"),
    "dry_run": Param(bool, False, "make no call; plan() says what a run would send"),
}

_JUDGE_THRESHOLD = Param(
    float, 0.6, "the least share of the claim's content words found in the passages", "a number in [0, 1]",
    lambda v: 0 <= v <= 1,
)  # fmt: skip

#: The judges by name: what ``--judge`` and ``evaluate_rag(judge=...)`` accept besides a judge object.
JUDGES: Registry[JudgeEntry] = Registry(
    "judge",
    JudgeEntry("auto", "lexical when the records carry passage texts, else gold", None, choose=_auto),
    JudgeEntry(
        "gold",
        "the cited ids wholly contain a gold evidence alternative; reads ids, not text",
        GoldEvidenceJudge,
        per_sample=True,
    ),
    JudgeEntry(
        "lexical",
        "enough of the claim's content words occur in the cited passages' text",
        LexicalJudge,
        {"threshold": _JUDGE_THRESHOLD},
    ),
    JudgeEntry(
        "calibrated",
        "a logistic regression over lexical, number, entity, negation and MiniLM signals, fitted on ExpertQA's "
        "expert labels (features=lexical: without MiniLM, numpy only)",
        _calibrated,
        {
            "features": Param(
                str, "dense", "the fitted model: dense (MiniLM cosines too) or lexical", choices=("dense", "lexical")
            ),
            "precision": Param(
                str,
                "float32",
                "MiniLM on onnxruntime in float32 (as fitted) or on torch in bfloat16 (faster on CPUs with bfloat16)",
                choices=("float32", "bfloat16"),
            ),
        },
    ),
    JudgeEntry(
        "query-coverage",
        "relevance 0-3: the share of the query's content words in the passage, binned at fixed quarters",
        _query_coverage,
        {
            "thresholds": Param(
                tuple,
                (0.25, 0.5, 0.75),
                "the coverage grades 1, 2 and 3 need",
                "three increasing numbers in [0, 1]",
                lambda v: len(v) == 3 and 0 <= v[0] < v[1] < v[2] <= 1,
            )
        },
        tasks=("relevance",),
    ),
    JudgeEntry(
        "llm",
        "a model behind an OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp, OpenAI), versioned prompts",
        _llm,
        _LLM_PARAMS,
        tasks=("support", "relevance"),
    ),
    JudgeEntry("none", "no judge: sentence-level citation scores are not computed", None),
)


@dataclass(frozen=True)
class JudgeSpec:
    """A judge chosen by name: an entry of :data:`JUDGES` and its parameters, every one filled in.

    ``name`` is canonical: parameters left at their default are left out, so it reads back to an equal value.

    >>> spec = parse_judge("LEXICAL(threshold=0.50)")
    >>> spec.name, parse_judge(spec.name) == spec, parse_judge("lexical(threshold=0.6)").name
    ('lexical(threshold=0.5)', True, 'lexical')
    """

    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def entry(self) -> JudgeEntry:
        return JUDGES.lookup(self.kind)

    @property
    def name(self) -> str:
        defaults = self.entry.params
        return canonical(
            self.kind, None, [(k, v) for k, v in self.params if k not in defaults or v != defaults[k].default]
        )

    def build(self, *alternatives: Any) -> Any:
        """The judge (``build(alternatives)`` for a per-sample judge); None for ``none`` and ``auto``."""
        entry = self.entry
        return None if entry.build is None else entry.build(*alternatives, **dict(self.params))

    def __str__(self) -> str:
        return self.name


def parse_judge(spec: str | JudgeSpec) -> JudgeSpec:
    """A judge's name in the spec grammar (``lexical``, ``lexical(threshold=0.5)``, ``gold``...) as a
    :class:`JudgeSpec`; an unknown name or parameter raises :class:`~stagewise.errors.ConventionError` listing
    what there is.

    >>> parse_judge("lexical(threshold=0.5)").build()
    LexicalJudge(threshold=0.5)
    """
    if isinstance(spec, JudgeSpec):
        return spec
    call = parse_call(str(spec), "judge", "lexical, lexical(threshold=0.5), gold")
    entry = JUDGES.lookup(call.name)
    if call.at is not None:
        raise ConventionError(f"judge {entry.name!r} takes no @ value; write {entry.name}(key=value)")
    params = JUDGES.check_params(entry.name, entry.params, call.params)
    return JudgeSpec(entry.name, tuple(params.items()))


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
