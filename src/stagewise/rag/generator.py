"""Answers by a real model: a question and its retrieved passages sent to any OpenAI-compatible chat endpoint
(vLLM, Ollama, llama.cpp's server, OpenAI), the answer citing ``[passage id]`` as the diagnosis reads it.

It uses the judges' client (:mod:`stagewise.rag.endpoint`): bounded concurrency, timeouts, seeded retries that
honour Retry-After, a reply cache, temperature 0 and a seed in every request, token counts. The prompt is versioned
package data (``answer-v1``). An answer the endpoint could not give is an empty answer with the reason kept
(:attr:`Generated.error`): the sample is still diagnosed (an empty answer is a generation failure) and the count
of such answers is stated, never hidden. :meth:`EndpointGenerator.describe` is what a pipeline records of how its
answers were made.

>>> generator = EndpointGenerator("http://127.0.0.1:9/v1", "m")
>>> generator.describe()["prompt"]
'answer-v1'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stagewise.errors import StagewiseError
from stagewise.rag.endpoint import ChatClient, ChatRequest, EndpointOptions, ReplyCache
from stagewise.rag.llm_judges import load_prompt

__all__ = ["EndpointGenerator", "Generated"]

_FENCE = re.compile(r"```(?:json)?")


@dataclass(frozen=True)
class Generated:
    """One answer: its ``text`` ("" when there is none), ``error`` (why there is none) and token ``usage``."""

    text: str
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


def _answer_text(reply: str) -> str:
    """The answer in a reply: the ``answer`` of its JSON object, else the reply itself (stripped)."""
    cleaned = _FENCE.sub("", reply).strip()
    start = cleaned.find("{")
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(cleaned, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            return value["answer"].strip()
    return cleaned


class EndpointGenerator:
    """Answer questions from passages through an OpenAI-compatible endpoint.

    Parameters
    ----------
    url, model
        The endpoint's base URL (ending in ``/v1``) and the model it serves (llama.cpp's server takes any name).
    prompt
        The shipped prompt's name (``answer-v1``).
    cache
        A JSONL file of earlier answers: a rerun asks nothing it has.
    **options
        Fields of :class:`~stagewise.rag.endpoint.EndpointOptions` (``timeout``, ``retries``, ``concurrency``,
        ``max_tokens``, ``key_env``...).
    """

    def __init__(self, url: str, model: str = "default", *, prompt: str = "answer-v1", cache: Any = None,
                 **options: Any) -> None:  # fmt: skip
        self.options = EndpointOptions(url=url, model=model, **{"max_tokens": 200, "timeout": 60.0, **options})
        self.prompt = load_prompt(prompt)
        self.client = ChatClient(self.options, cache=ReplyCache(cache) if cache is not None else None)

    def describe(self) -> dict[str, Any]:
        """How the answers were made: the endpoint, the model, the prompt (name and hash), the sampling, the
        counts of calls, failures and tokens."""
        o = self.options
        return {
            "generator": "endpoint",
            "url": o.url,
            "model": o.model,
            "prompt": self.prompt.name,
            "prompt_sha256": self.prompt.sha256,
            "temperature": o.temperature,
            "seed": o.seed,
            "max_tokens": o.max_tokens,
            "stats": self.client.stats.as_dict(),
        }

    def _request(self, question: str, passages: Sequence[tuple[str, str]]) -> ChatRequest:
        shown = "\n\n".join(f"[{pid}] {text}" for pid, text in passages) or "(no passages)"
        return ChatRequest.of(self.prompt.name, self.prompt.messages(query=question, passages=shown))

    def answer_many(self, items: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> list[Generated]:
        """One :class:`Generated` per ``(question, [(passage id, text), ...])``, in order. The first is asked
        alone: when the endpoint cannot be reached at all, that is one error naming the URL, not a failure per
        question after every retry."""
        requests = [self._request(question, passages) for question, passages in items]
        if not requests:
            return []
        first = self.client.chat_many(requests[:1])[0]
        if not first.ok and (first.error or "").startswith("endpoint failed: connection failed"):
            raise StagewiseError(
                f"no answer from the generator at {self.options.url}: {first.error}; start the server (for example "
                "python -m llama_cpp.server --model MODEL.gguf) or check the URL"
            )
        replies = [first, *self.client.chat_many(requests[1:])]
        return [
            Generated(_answer_text(r.text), usage=dict(r.usage)) if r.ok else Generated("", r.error, dict(r.usage))
            for r in replies
        ]
