"""LLM judges over any OpenAI-compatible chat endpoint: support, 0-3 relevance and nugget assignment.

:class:`LlmJudge` asks a model, through :class:`~stagewise.rag.endpoint.ChatClient` (timeouts, retries,
backoff, Retry-After, a call budget, a dry run, a JSONL cache), with a **versioned prompt** shipped in the
package (``stagewise/_bundled/prompts/<name>.txt``, :func:`load_prompt`):

- ``support-v1`` (:meth:`LlmJudge.support_verdicts`, items ``(passages, claim)``): ``supported`` / ``partial``
  / ``not`` (scores 1, 0.5, 0), TREC RAG's three levels;
- ``umbrela-v1`` (:meth:`LlmJudge.relevance_verdicts`, items ``(query, passage)``): a grade 0-3 (score
  grade / 3), UMBRELA's prompt structure in our own words;
- ``nugget-v1`` (:meth:`LlmJudge.nugget_verdicts`, items ``(query, answer, nuggets)``): per nugget
  ``support`` / ``partial_support`` / ``not_support`` (1, 0.5, 0), as TREC RAG's AutoNuggetizer assigns them,
  up to ``nuggets_per_call`` nuggets in one call.

Answers are **parsed defensively** (:func:`parse_support`, :func:`parse_relevance`, :func:`parse_nuggets`): the
first JSON object in the answer (code fences and text around it allowed) with the expected key, or an answer
that is only a label. Anything else is :meth:`Verdict.unjudged` with the reason and the answer's first 200
characters: never a crash, never a default label. A call that failed after its retries, or that the budget
refused, is unjudged with that reason. Each verdict's ``usage`` has the endpoint's ``prompt_tokens`` and
``completion_tokens``, ``attempts`` and ``cache_hits``; :attr:`LlmJudge.stats` has the totals.

The judge's ``name`` carries the model, the prompt versions and every setting that changes an answer
(``llm(model='qwen2.5:7b',support_prompt=support-v1,relevance_prompt=umbrela-v1)``); its ``version`` is the
SHA-256 of the three prompt texts, so an edited prompt file can never answer from an old cache.

In the registry (:data:`stagewise.rag.judges.JUDGES`) it is ``llm``: the URL and model may come from the
environment (``STAGEWISE_LLM_URL``, default ``http://127.0.0.1:8080/v1``; ``STAGEWISE_LLM_MODEL``), as a URL
in the spec grammar needs quotes (``llm(url='http://host:8000/v1',model='qwen2.5:7b')``). The cache file is
``cache=PATH``, else ``STAGEWISE_LLM_CACHE``, else ``~/.cache/stagewise/llm-replies.jsonl``; ``cache=off``
keeps answers in memory only. A command line's ``--max-calls N`` and ``--dry-run`` are the parameters
``max_calls=N`` and ``dry_run=True``; :meth:`LlmJudge.plan` and :func:`plan_summary` say what a run would send.

>>> parse_support('Sure. {"label": "partial", "rationale": "only the year"}').label
'partial'
>>> parse_relevance("2").label, parse_relevance('{"grade": 7}').reason
('2', 'wrong schema (grade 7 is not one of 0, 1, 2, 3); the answer began: \\'{"grade": 7}\\'')
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from stagewise.errors import ConventionError
from stagewise.rag.endpoint import ChatClient, ChatReply, ChatRequest, EndpointOptions, ReplyCache, estimate_tokens
from stagewise.rag.verdicts import RELEVANCE_LABELS, SUPPORT_LABELS, Verdict
from stagewise.spec import canonical

__all__ = [
    "DEFAULT_URL",
    "NUGGET_LABELS",
    "LlmJudge",
    "Prompt",
    "load_prompt",
    "parse_nuggets",
    "parse_relevance",
    "parse_support",
    "plan_summary",
    "prompt_names",
]

#: Where the judge calls when neither ``url=`` nor ``STAGEWISE_LLM_URL`` says: llama.cpp's server's default port.
DEFAULT_URL = "http://127.0.0.1:8080/v1"
#: Nugget assignment labels, strongest first (AutoNuggetizer's), scored 1, 0.5, 0.
NUGGET_LABELS: tuple[str, ...] = ("support", "partial_support", "not_support")
_SCORES = {"supported": 1.0, "partial": 0.5, "not": 0.0, "support": 1.0, "partial_support": 0.5, "not_support": 0.0}
# Spellings a model uses for each label (folded: lower case, spaces and hyphens as underscores).
_SUPPORT_SPELLINGS = {
    **{s: "supported" for s in ("supported", "support", "full", "full_support", "fully_supported")},
    **{s: "partial" for s in ("partial", "partially_supported", "partial_support", "partly_supported")},
    **{s: "not" for s in ("not", "not_supported", "unsupported", "no_support", "not_support", "none")},
}
_NUGGET_SPELLINGS = {
    **{s: "support" for s in ("support", "supported", "full_support")},
    **{s: "partial_support" for s in ("partial_support", "partial", "partially_supported")},
    **{s: "not_support" for s in ("not_support", "not_supported", "no_support", "unsupported", "not")},
}
_FENCE = re.compile(r"```[a-zA-Z]*")
_SHOWN = 200  # characters of an unparseable answer kept in the reason


# ------------------------------------------------------------------------------------------------ prompts


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt: its ``name`` (``support-v1``), the ``system`` and ``user`` templates
    (``string.Template``: ``$claim``, ``$passages``...) and the SHA-256 of its file."""

    name: str
    system: str
    user: str
    sha256: str

    def messages(self, **values: str) -> tuple[tuple[str, str], ...]:
        return (("system", self.system), ("user", string.Template(self.user).substitute(values)))


def _prompt_dir() -> Path:
    return Path(str(files("stagewise._bundled").joinpath("prompts")))


def prompt_names() -> list[str]:
    """The prompts that ship, by name."""
    return sorted(p.stem for p in _prompt_dir().glob("*.txt"))


@cache
def load_prompt(name: str) -> Prompt:
    """The shipped prompt ``name``: notes (``#`` lines) first, then a ``[system]`` and a ``[user]`` section.

    >>> load_prompt("support-v1").messages(passages="[1] The sky is blue.", claim="The sky is blue.")[1][1][:9]
    'Passages:'
    """
    path = _prompt_dir() / f"{name}.txt"
    if not path.is_file():
        raise ConventionError(f"no prompt {name!r}; the prompts that ship are {', '.join(prompt_names())}")
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    _, _, rest = text.partition("[system]\n")
    system, _, user = rest.partition("[user]\n")
    if not system.strip() or not user.strip():
        raise ConventionError(f"{path}: a prompt needs a [system] and a [user] section")
    return Prompt(name, system.strip(), user.strip(), hashlib.sha256(raw).hexdigest())


# ------------------------------------------------------------------------------------------------ parsing


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (code fences and words around it allowed), or None."""
    cleaned = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    start = cleaned.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(cleaned, start)
        except ValueError:
            start = cleaned.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = cleaned.find("{", start + 1)
    return None


def _fold(word: Any) -> str:
    return str(word).strip().strip(string.punctuation + " \n\t").lower().replace(" ", "_").replace("-", "_")


def _unjudged(why: str, text: str) -> Verdict:
    return Verdict.unjudged(f"{why}; the answer began: {text.strip()[:_SHOWN]!r}")


def parse_support(text: str) -> Verdict:
    """A support verdict from a model's answer: ``{"label": ..., "rationale": ...}`` anywhere in it, or an
    answer that is only a label (``Supported.``); otherwise unjudged, saying why.

    >>> parse_support("NOT SUPPORTED").label, parse_support("maybe?").label
    ('not', 'unjudged')
    """
    obj = _json_object(text)
    if obj is not None:
        if "label" not in obj:
            return _unjudged(f"wrong schema (no 'label' key; keys {sorted(obj)})", text)
        label = _SUPPORT_SPELLINGS.get(_fold(obj["label"]))
        if label is None:
            return _unjudged(f"wrong schema (label {obj['label']!r} is not one of {', '.join(SUPPORT_LABELS)})", text)
        rationale = obj.get("rationale")
        return Verdict(label, _SCORES[label], rationale=str(rationale) if rationale else None)
    label = _SUPPORT_SPELLINGS.get(_fold(text))
    if label is not None:
        return Verdict(label, _SCORES[label])
    return _unjudged("unparseable answer (no JSON object with a label, and not a bare label)", text)


def _grade(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and float(value).is_integer():
        return int(value)
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit():  # str.isdigit takes '¹' and '３' too, which int() refuses
        return int(text)
    return None


def parse_relevance(text: str) -> Verdict:
    """A 0-3 relevance verdict: ``{"grade": N}`` (or ``"score"``, ``"final_score"``, ``"relevance"``) anywhere
    in the answer, or an answer that is only the digit; otherwise unjudged, saying why.

    >>> parse_relevance('```json\\n{"grade": 3}\\n```').score, parse_relevance("3 because").label
    (1.0, 'unjudged')
    """
    obj = _json_object(text)
    if obj is not None:
        found = [k for k in ("grade", "score", "final_score", "relevance") if k in obj]
        if not found:
            return _unjudged(f"wrong schema (no 'grade' key; keys {sorted(obj)})", text)
        grade = _grade(obj[found[0]])
        if grade is None or str(grade) not in RELEVANCE_LABELS:
            return _unjudged(
                f"wrong schema (grade {obj[found[0]]!r} is not one of {', '.join(RELEVANCE_LABELS)})", text
            )
    else:
        grade = _grade(_fold(text))
        if grade is None or str(grade) not in RELEVANCE_LABELS:
            return _unjudged("unparseable answer (no JSON object with a grade, and not a bare grade 0-3)", text)
    return Verdict(str(grade), grade / 3)


def parse_nuggets(text: str, count: int) -> list[Verdict]:
    """``count`` nugget verdicts from ``{"labels": [...]}`` (or a bare JSON list) in the answer. A list of
    another length, or a label not in :data:`NUGGET_LABELS`, makes every nugget of the call unjudged (a
    shifted list would credit the wrong nuggets).

    >>> [v.label for v in parse_nuggets('{"labels": ["support", "not_support"]}', 2)]
    ['support', 'not_support']
    """
    obj = _json_object(text)
    labels: Any = obj.get("labels") if obj is not None else None
    if labels is None:
        start = text.find("[")
        try:
            labels = json.JSONDecoder().raw_decode(text, start)[0] if start >= 0 else None
        except ValueError:
            labels = None
    if not isinstance(labels, list):
        return [_unjudged("unparseable answer (no JSON list of labels)", text)] * count
    if len(labels) != count:
        return [_unjudged(f"wrong schema ({len(labels)} labels for {count} nuggets)", text)] * count
    folded = [_NUGGET_SPELLINGS.get(_fold(label)) for label in labels]
    if any(label is None for label in folded):
        bad = next(lab for lab, f in zip(labels, folded, strict=True) if f is None)
        return [_unjudged(f"wrong schema (label {bad!r} is not one of {', '.join(NUGGET_LABELS)})", text)] * count
    return [Verdict(label, _SCORES[label]) for label in folded if label is not None]


# ------------------------------------------------------------------------------------------------ the judge


def _passage_text(passage: Any) -> tuple[str, str]:
    """(id, text) of a passage given as a :class:`~stagewise.rag.judges.Passage`, a dict or a string."""
    if isinstance(passage, str):
        return "", passage
    if isinstance(passage, dict):
        return str(passage.get("id", "")), str(passage.get("text", ""))
    return str(getattr(passage, "id", "")), str(getattr(passage, "text", passage))


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stagewise" / "llm-replies.jsonl"


class LlmJudge:
    """A judge that asks a model behind an OpenAI-compatible endpoint: see the module docstring.

    Parameters
    ----------
    model : str
        The model name the endpoint serves ("" reads ``STAGEWISE_LLM_MODEL``).
    url : str
        The endpoint's base URL, ending in ``/v1`` ("" reads ``STAGEWISE_LLM_URL``, else :data:`DEFAULT_URL`).
    support_prompt, relevance_prompt, nugget_prompt : str
        Prompt versions (:func:`prompt_names`).
    key_env : str, default="OPENAI_API_KEY"
        The environment variable holding the API key (read when a call is made; unset: no key is sent).
    timeout, retries, concurrency, max_calls, seed, max_tokens
        As :class:`~stagewise.rag.endpoint.EndpointOptions` (temperature is always 0).
    nuggets_per_call : int, default=10
        Nuggets assessed in one call (AutoNuggetizer's 10).
    cache : str
        The JSONL reply cache ("" reads ``STAGEWISE_LLM_CACHE``, else ``~/.cache/stagewise/llm-replies.jsonl``;
        ``off``: in memory only).
    dry_run : bool
        Make no call: every verdict is unjudged "dry run: no call made", and :meth:`plan` says what a real run
        would send.
    """

    def __init__(
        self,
        *,
        model: str = "",
        url: str = "",
        support_prompt: str = "support-v1",
        relevance_prompt: str = "umbrela-v1",
        nugget_prompt: str = "nugget-v1",
        key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retries: int = 3,
        concurrency: int = 4,
        max_calls: int = 0,
        seed: int = 0,
        max_tokens: int = 256,
        nuggets_per_call: int = 10,
        cache: str = "",
        dry_run: bool = False,
        transport: Any = None,
    ) -> None:
        model = model or os.environ.get("STAGEWISE_LLM_MODEL", "")
        if not model.strip():
            raise ConventionError(
                "the llm judge needs a model: llm(model='qwen2.5:7b'), or set STAGEWISE_LLM_MODEL"
            )  # fmt: skip
        self._given_url = url
        url = url or os.environ.get("STAGEWISE_LLM_URL", "") or DEFAULT_URL
        self.options = EndpointOptions(
            url=url, model=model, key_env=key_env, timeout=timeout, retries=retries, concurrency=concurrency,
            max_calls=max_calls, temperature=0.0, seed=seed, max_tokens=max_tokens,
        )  # fmt: skip
        self.prompts = {
            "support": load_prompt(support_prompt),
            "relevance": load_prompt(relevance_prompt),
            "nugget": load_prompt(nugget_prompt),
        }
        if nuggets_per_call < 1:
            raise ConventionError(f"nuggets_per_call must be an int >= 1; got {nuggets_per_call}")
        self.nuggets_per_call = nuggets_per_call
        self.dry_run = bool(dry_run)
        cache = cache or os.environ.get("STAGEWISE_LLM_CACHE", "")
        self.cache_path = None if cache.lower() == "off" else Path(cache) if cache else _default_cache()
        self.client = ChatClient(self.options, cache=ReplyCache(self.cache_path), transport=transport)

    @property
    def name(self) -> str:
        o = self.options
        params: list[tuple[str, Any]] = [("model", o.model)]
        if self._given_url:
            params.append(("url", self._given_url))
        params += [(f"{task}_prompt", p.name) for task, p in self.prompts.items() if task != "nugget"]
        params += [
            ("seed", o.seed if o.seed != 0 else None),
            ("max_tokens", o.max_tokens if o.max_tokens != 256 else None),
        ]
        return canonical("llm", None, params)

    @property
    def version(self) -> str:
        joined = "".join(p.sha256 for p in self.prompts.values())
        return "prompts-" + hashlib.sha256(joined.encode()).hexdigest()[:12]

    @property
    def stats(self) -> Any:
        """The client's :class:`~stagewise.rag.endpoint.EndpointStats`."""
        return self.client.stats

    def __repr__(self) -> str:
        return f"LlmJudge({self.name})"

    def close(self) -> None:
        self.client.close()

    # -- requests -----------------------------------------------------------------------------------------

    def _support_request(self, passages: Sequence[Any], claim: str) -> ChatRequest:
        shown = []
        for n, passage in enumerate(passages, start=1):
            pid, text = _passage_text(passage)
            shown.append(f"[{n}]{f' ({pid})' if pid else ''} {text}")
        prompt = self.prompts["support"]
        return ChatRequest(prompt.name, prompt.messages(passages="\n\n".join(shown) or "(none)", claim=str(claim)))

    def _relevance_request(self, query: str, passage: Any) -> ChatRequest:
        prompt = self.prompts["relevance"]
        return ChatRequest(prompt.name, prompt.messages(query=str(query), passage=_passage_text(passage)[1]))

    def _nugget_request(self, query: str, answer: str, nuggets: Sequence[str]) -> ChatRequest:
        prompt = self.prompts["nugget"]
        listed = "\n".join(f"{n}. {nugget}" for n, nugget in enumerate(nuggets, start=1))
        return ChatRequest(
            prompt.name, prompt.messages(query=str(query), answer=str(answer), nuggets=listed, count=str(len(nuggets)))
        )

    def _requests(self, task: str, items: Sequence[Any]) -> list[ChatRequest]:
        if task == "support":
            return [self._support_request(passages, claim) for passages, claim in items]
        if task == "relevance":
            return [self._relevance_request(query, passage) for query, passage in items]
        if task == "nugget":
            return [self._nugget_request(q, a, chunk) for q, a, nuggets in items for chunk in self._chunks(nuggets)]
        raise ConventionError(f"the llm judge has no task {task!r}; it answers support, relevance and nugget")

    def _chunks(self, nuggets: Sequence[str]) -> list[list[str]]:
        step = self.nuggets_per_call
        return [list(nuggets[i : i + step]) for i in range(0, len(nuggets), step)]

    # -- verdicts -----------------------------------------------------------------------------------------

    @staticmethod
    def _parsed(reply: ChatReply, parse: Any) -> list[Verdict]:
        """The verdicts in one reply (``parse`` gives one or a list), each with the reply's usage; a reply with
        no answer is unjudged with its error."""
        usage = {k: v for k, v in reply.usage.items() if isinstance(v, int)}
        if reply.text is None:
            return [Verdict.unjudged(reply.error or "no answer", usage)]
        parsed = parse(reply.text)
        return [
            Verdict(v.label, v.score, v.rationale, v.reason, usage)
            for v in (parsed if isinstance(parsed, list) else [parsed])
        ]

    def _verdicts(self, replies: Sequence[ChatReply], parse: Any) -> list[Verdict]:
        return [self._parsed(reply, parse)[0] for reply in replies]

    def support_verdicts(self, items: Sequence[tuple[Sequence[Any], str]]) -> list[Verdict]:
        """One support verdict per ``(passages, claim)``: supported / partial / not, or unjudged with the reason."""
        replies = self.client.chat_many(self._requests("support", items), dry_run=self.dry_run)
        return self._verdicts(replies, parse_support)

    def relevance_verdicts(self, items: Sequence[tuple[str, Any]]) -> list[Verdict]:
        """One 0-3 verdict per ``(query, passage)``, UMBRELA's scale, or unjudged with the reason."""
        replies = self.client.chat_many(self._requests("relevance", items), dry_run=self.dry_run)
        return self._verdicts(replies, parse_relevance)

    def nugget_verdicts(self, items: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[Verdict]]:
        """Per ``(query, answer, nuggets)``, one verdict per nugget (support / partial_support / not_support)."""
        requests = self._requests("nugget", items)
        replies = self.client.chat_many(requests, dry_run=self.dry_run)
        out: list[list[Verdict]] = []
        at = 0
        for _, _, nuggets in items:
            verdicts: list[Verdict] = []
            for chunk in self._chunks(nuggets):
                size = len(chunk)
                got = self._parsed(replies[at], lambda text, size=size: parse_nuggets(text, size))
                verdicts += got if len(got) == len(chunk) else got * len(chunk)  # a failed call: each unjudged
                at += 1
            out.append(verdicts)
        return out

    def supports(self, passages: Sequence[Any], claim: str) -> bool:
        """Binary support for the older callers: only ``supported`` counts (``partial`` and unjudged do not)."""
        return self.support_verdicts([(passages, claim)])[0].supported

    def plan(self, task: str, items: Sequence[Any]) -> list[dict[str, Any]]:
        """What judging ``items`` would send, with no call made: per request its ``task``, the prompt version,
        whether the cache answers it, its estimated prompt tokens (characters / 4) and ``max_tokens``."""
        out = []
        for request in self._requests(task, items):
            cached = self.client.cache.get(self.client.key(request)) is not None
            out.append({
                "task": task, "prompt": request.prompt_version, "cached": cached,
                "prompt_tokens_estimated": estimate_tokens(request.messages),
                "max_completion_tokens": self.options.max_tokens,
            })  # fmt: skip
        return out


def plan_summary(plan: Sequence[dict[str, Any]]) -> str:
    """One line a dry run prints: the calls a run would make, those the cache answers, and their tokens (the
    prompt's estimated as characters / 4, the answer's bounded by ``max_tokens``).

    >>> plan_summary([{"cached": False, "prompt_tokens_estimated": 120, "max_completion_tokens": 256},
    ...               {"cached": True, "prompt_tokens_estimated": 90, "max_completion_tokens": 256}])
    '1 call to make (1 answered by the cache): about 120 prompt tokens, at most 256 completion tokens'
    """
    todo = [p for p in plan if not p["cached"]]
    prompt = sum(p["prompt_tokens_estimated"] for p in todo)
    completion = sum(p["max_completion_tokens"] for p in todo)
    return (
        f"{len(todo)} call{'' if len(todo) == 1 else 's'} to make ({len(plan) - len(todo)} answered by the cache): "
        f"about {prompt} prompt tokens, at most {completion} completion tokens"
    )
