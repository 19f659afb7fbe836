"""A client for any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp's server, OpenAI...), for judges.

One job: send chat requests to ``{url}/chat/completions`` and bring back each answer's text and token counts,
or the reason there is none, without ever crashing on what the endpoint does. What it promises:

- **Bounded concurrency**: at most ``concurrency`` requests in flight (a thread pool over one ``httpx.Client``).
- **Timeouts and retries**: each attempt has ``timeout`` seconds; a timeout, a dropped connection, a truncated
  or malformed body, HTTP 408/409/425/429/500/502/503/504 are retried up to ``retries`` times, waiting
  ``backoff * 2**attempt`` seconds times a jitter in [0.5, 1.5) drawn from a generator seeded with ``seed`` and
  the request's key (so two runs wait the same), or the server's ``Retry-After`` (seconds or an HTTP-date)
  when it sends one. A wait longer than ``max_wait`` is not made: the request fails with the reason.
- **Failures are answers too**: a request that still fails is a :class:`ChatReply` with ``error`` set (a judge
  turns it into an ``unjudged`` verdict with that reason). Only a misconfiguration that would fail every request
  (HTTP 401, 403, 404: a wrong key, URL or model name) raises :class:`EndpointError`, after the answers already
  received are in the cache.
- **A call budget**: ``max_calls`` (0: none) is the number of requests that may be *sent* for distinct
  uncached inputs (retries do not count; a cache hit costs nothing). Past it, a reply is
  ``"call budget spent (max_calls=N)"``. Inputs take the budget in the order given, so the same inputs get it
  on every run.
- **A dry run** makes no connection: each reply says which requests would be sent, with an estimate of their
  prompt tokens (:func:`estimate_tokens`: characters / 4, OpenAI's rule of thumb for English; the server's
  tokenizer decides the real count, which the real run reports from the endpoint's ``usage``).
- **A cache** (:class:`ReplyCache`, JSONL): each answer is appended the moment it arrives, keyed by
  :func:`cache_key` (the model, the prompt version and a SHA-256 of the request: messages, temperature, seed,
  max_tokens). A rerun makes no call for what it holds; a run killed midway resumes where it stopped.
- **Counts**: :class:`EndpointStats` (requests, calls, attempts, retries, failures, cache hits, budget refusals,
  prompt and completion tokens, as the endpoint's ``usage`` reports them).
- **Keys from the environment only**: the API key is read from the environment variable ``key_env`` (default
  ``OPENAI_API_KEY``) when a request is sent, put in the ``Authorization`` header and nowhere else: never in a
  cache, a name, an error message or a log. Unset, no header is sent (local servers need none).

Every request sets ``temperature`` (default 0) and ``seed`` (default 0), so a server that honours them answers
the same twice.

Public API: :class:`EndpointOptions`, :class:`ChatRequest`, :class:`ChatReply`, :class:`ChatClient`,
:class:`ReplyCache`, :class:`EndpointStats`, :class:`EndpointError`, :func:`cache_key`, :func:`estimate_tokens`.

>>> request = ChatRequest.of("support-v1", [("user", "Is the sky blue?")])
>>> client = ChatClient(EndpointOptions(url="http://127.0.0.1:9/v1", model="m"))
>>> reply = client.chat_many([request], dry_run=True)[0]
>>> reply.error, reply.usage
('dry run: no call made', {'prompt_tokens_estimated': 8})
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from stagewise.errors import InputError, StagewiseError, parameter_error

__all__ = [
    "ChatClient",
    "ChatReply",
    "ChatRequest",
    "EndpointError",
    "EndpointOptions",
    "EndpointStats",
    "ReplyCache",
    "cache_key",
    "estimate_tokens",
]

#: Statuses worth another try: the server is busy, rate-limits, or failed this once.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses that would fail every request: stop and say how to fix it.
FATAL_STATUSES = {
    401: "the endpoint refused the API key: set the environment variable {key_env} to a valid key",
    403: "the endpoint forbids this request: check the key in {key_env} and its rights to model {model!r}",
    404: "the endpoint has no {url}/chat/completions or no model {model!r}: check url= and model=",
}


class EndpointError(StagewiseError):
    """The endpoint refuses every request (a wrong key, URL or model): stopping beats failing each one."""


@dataclass(frozen=True)
class EndpointOptions:
    """Where and how to call: ``url`` (the base, ending in ``/v1``), ``model``, ``key_env`` (the environment
    variable holding the API key), ``timeout`` (seconds per attempt), ``retries``, ``backoff`` (seconds, the
    first retry's base wait), ``max_wait`` (the longest wait made, Retry-After included), ``concurrency``,
    ``max_calls`` (0: no budget), ``temperature``, ``seed``, ``max_tokens`` (of each answer)."""

    url: str
    model: str
    key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 1.0
    max_wait: float = 120.0
    concurrency: int = 4
    max_calls: int = 0
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 256

    def __post_init__(self) -> None:
        checks = [
            ("url", self.url.startswith(("http://", "https://")), "an http:// or https:// URL"),
            ("model", bool(self.model.strip()), "a model name the endpoint serves"),
            ("timeout", self.timeout > 0, "a number of seconds > 0"),
            ("retries", self.retries >= 0, "an int >= 0"),
            ("backoff", self.backoff >= 0, "a number of seconds >= 0"),
            ("max_wait", self.max_wait >= 0, "a number of seconds >= 0"),
            ("concurrency", self.concurrency >= 1, "an int >= 1"),
            ("max_calls", self.max_calls >= 0, "an int >= 0 (0: no budget)"),
            ("temperature", 0 <= self.temperature <= 2, "a number in [0, 2]"),
            ("max_tokens", self.max_tokens >= 1, "an int >= 1"),
        ]
        for name, ok, expected in checks:
            if not ok:
                raise parameter_error(name, "the endpoint", expected, getattr(self, name))

    @property
    def chat_url(self) -> str:
        return self.url.rstrip("/") + "/chat/completions"


@dataclass
class EndpointStats:
    """What a client did: ``requests`` asked of it, ``cache_hits`` answered from the cache, ``calls`` sent for
    distinct inputs (what ``max_calls`` counts), ``attempts`` (HTTP requests, retries included), ``retries``,
    ``failures`` (calls with no answer after their retries), ``budget_refused``, ``dry_run`` (requests a dry
    run would send), and the endpoint's token counts."""

    requests: int = 0
    cache_hits: int = 0
    calls: int = 0
    attempts: int = 0
    retries: int = 0
    failures: int = 0
    budget_refused: int = 0
    dry_run: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}


def estimate_tokens(messages: Sequence[tuple[str, str]]) -> int:
    """An estimate of a request's prompt tokens: characters / 4 rounded up, plus 4 per message for the chat
    template (OpenAI's rule of thumb for English text; a dry run's figure, never a real count).

    >>> estimate_tokens([("system", "x" * 40), ("user", "y" * 3)])
    19
    """
    return sum(math.ceil(len(content) / 4) + 4 for _, content in messages)


def cache_key(model: str, prompt_version: str, messages: Sequence[tuple[str, str]], options: EndpointOptions) -> str:
    """The cache key of a request: SHA-256 of the model, the prompt version and the input's own SHA-256 (its
    messages and every setting that changes the answer: temperature, seed, max_tokens). The URL and the key
    are not in it: the same model behind another address answers from the same cache."""
    payload = json.dumps(
        [list(m) for m in messages] + [options.temperature, options.seed, options.max_tokens], ensure_ascii=False
    )
    input_hash = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    return hashlib.sha256(json.dumps([model, prompt_version, input_hash]).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatRequest:
    """One request: the prompt's version (it keys the cache) and the messages as ``(role, content)`` pairs."""

    prompt_version: str
    messages: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, prompt_version: str, messages: Sequence[tuple[str, str]]) -> ChatRequest:
        return cls(prompt_version, tuple((str(r), str(c)) for r, c in messages))


@dataclass(frozen=True)
class ChatReply:
    """The answer's ``text`` (None when there is none), ``error`` (why there is none), ``usage`` (the endpoint's
    ``prompt_tokens`` and ``completion_tokens``, ``attempts``, ``cache_hits``; a dry run's estimate) and
    whether it came from the cache."""

    text: str | None
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.text is not None


class ReplyCache:
    """Answers by :func:`cache_key`, in a JSONL file: read at start, one line appended (and flushed) per answer
    as it arrives, so a killed run loses at most the answer being written. A last line cut short by a kill is
    skipped (and cut off the file before the next append); a bad line elsewhere is an :class:`InputError` naming
    the file and line. Lines hold the key, model, prompt version, the answer's text and token counts: never an
    API key.

    ``path`` None keeps answers in memory only."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._answers: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._cut_at: int | None = None  # where a last line cut short by a kill starts, to be cut off
        if self.path is not None and self.path.exists():
            self._read(self.path)

    def _read(self, path: Path) -> None:
        raw = path.read_bytes()
        lines = raw.decode("utf-8", errors="replace").split("\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                self._answers[str(item["key"])] = item
            except (ValueError, KeyError, TypeError):
                if number == len(lines):  # the last line, with no newline: a write cut short by a kill
                    self._cut_at = raw.rfind(b"\n") + 1
                    continue
                raise InputError(
                    path, "this line of the LLM reply cache is not a JSON object with a key", line=number,
                    expected='one {"key": ..., "text": ...} object a line',
                    hint="a file stagewise did not write, or an edited one: move it aside to start afresh",
                ) from None  # fmt: skip
        if self._cut_at is None and raw and not raw.endswith(b"\n"):  # a whole last line with no newline
            self._cut_at = -1

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._answers.get(key)

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Remember ``record`` (with its ``text`` and ``usage``) under ``key``, appending it to the file."""
        item = {"key": key, **record}
        with self._lock:
            self._answers[key] = item
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._cut_at is not None and self._cut_at >= 0:
                os.truncate(self.path, self._cut_at)
            with self.path.open("a", encoding="utf-8") as fh:
                if self._cut_at == -1:
                    fh.write("\n")
                self._cut_at = None
                fh.write(json.dumps(item, ensure_ascii=False) + "\n")
                fh.flush()


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP-date; None when absent or
    unreadable.

    >>> retry_after_seconds("2"), retry_after_seconds("Wed, 21 Oct 2015 07:28:05 GMT", now=1445412480.0)
    (2.0, 5.0)
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


@dataclass
class _Attempt:
    """What one HTTP attempt gave: an answer (text, usage), or a problem and whether to retry it."""

    text: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    problem: str | None = None
    retry: bool = False
    wait: float | None = None


def _answer_of(response: Any) -> _Attempt:
    """The answer in a 200 response: ``choices[0].message.content`` and ``usage``. A body that is not JSON (a
    proxy's page, a cut body) is retried; JSON of another shape is not (asking again gets the same)."""
    try:
        body = response.json()
    except ValueError:
        return _Attempt(problem=f"the endpoint's reply is not JSON (began {response.text[:80]!r})", retry=True)
    try:
        text = body["choices"][0]["message"]["content"]
        if not isinstance(text, str):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        return _Attempt(problem=f"the endpoint's reply has no choices[0].message.content: {json.dumps(body)[:200]}")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    counts = {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens") if isinstance(usage.get(k), int)}
    return _Attempt(text=text, usage=counts)


def _error_message(response: Any) -> str:
    """The server's own words about an error, short (OpenAI's ``{"error": {"message": ...}}`` or the text)."""
    try:
        body = response.json()
        message = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(message, dict):
            message = message.get("message", message)
        return str(message)[:200]
    except ValueError:
        return response.text[:200]


class ChatClient:
    """Sends :class:`ChatRequest` s to an OpenAI-compatible endpoint: see the module's docstring for what it
    promises. ``transport`` (an ``httpx`` transport) and ``sleep`` are for tests; ``cache`` defaults to one in
    memory. The ``httpx`` client is made on the first real call (``pip install 'stagewise[llm]'``)."""

    def __init__(
        self,
        options: EndpointOptions,
        *,
        cache: ReplyCache | None = None,
        transport: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.cache = cache if cache is not None else ReplyCache()
        self.stats = EndpointStats()
        self._transport = transport
        self._sleep = sleep
        self._http: Any = None
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _client(self) -> Any:
        with self._lock:
            if self._http is None:
                try:
                    import httpx
                except ImportError:
                    raise StagewiseError(
                        "LLM judges need httpx: pip install 'stagewise[llm]'"
                    ) from None  # fmt: skip
                limits = httpx.Limits(max_connections=self.options.concurrency)
                self._http = httpx.Client(timeout=self.options.timeout, limits=limits, transport=self._transport)
            return self._http

    def key(self, request: ChatRequest) -> str:
        return cache_key(self.options.model, request.prompt_version, request.messages, self.options)

    def chat_many(self, requests: Sequence[ChatRequest], *, dry_run: bool = False) -> list[ChatReply]:
        """One :class:`ChatReply` per request, in order: from the cache, or sent (identical requests once), or
        refused by the budget, or (``dry_run``) planned and not sent."""
        keys = [self.key(r) for r in requests]
        replies: list[ChatReply | None] = [None] * len(requests)
        to_send: dict[str, list[int]] = {}
        self.stats.add(requests=len(requests))
        for i, key in enumerate(keys):
            hit = self.cache.get(key)
            if hit is not None:
                usage = {**hit.get("usage", {}), "cache_hits": 1}
                replies[i] = ChatReply(str(hit.get("text", "")), usage=usage, cached=True)
                self.stats.add(cache_hits=1)
            elif key in to_send:
                to_send[key].append(i)
            elif dry_run:
                replies[i] = ChatReply(
                    None, "dry run: no call made", {"prompt_tokens_estimated": estimate_tokens(requests[i].messages)}
                )
                self.stats.add(dry_run=1)
            elif self.options.max_calls and self.stats.calls >= self.options.max_calls:
                replies[i] = ChatReply(None, f"call budget spent (max_calls={self.options.max_calls})")
                self.stats.add(budget_refused=1)
            else:
                to_send[key] = [i]
                self.stats.add(calls=1)
        for key, reply in self._send_all({k: requests[v[0]] for k, v in to_send.items()}).items():
            for i in to_send[key]:
                replies[i] = reply
        answered = [r for r in replies if r is not None]
        if len(answered) != len(replies):  # every branch above fills its slot: a gap is a bug here
            raise RuntimeError("ChatClient.chat_many left a request without a reply")
        return answered

    def _send_all(self, requests: dict[str, ChatRequest]) -> dict[str, ChatReply]:
        if not requests:
            return {}
        if len(requests) == 1 or self.options.concurrency == 1:
            return {key: self._send(key, request) for key, request in requests.items()}
        pool = ThreadPoolExecutor(max_workers=min(self.options.concurrency, len(requests)))
        try:
            futures = {key: pool.submit(self._send, key, request) for key, request in requests.items()}
            return {key: future.result() for key, future in futures.items()}
        finally:  # an EndpointError stops what has not started; what has arrived is in the cache
            pool.shutdown(wait=True, cancel_futures=True)

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        o = self.options
        messages = [{"role": role, "content": content} for role, content in request.messages]
        return {
            "model": o.model, "messages": messages, "temperature": o.temperature, "seed": o.seed,
            "max_tokens": o.max_tokens, "stream": False,
        }  # fmt: skip

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.options.key_env, "").strip()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _send(self, key: str, request: ChatRequest) -> ChatReply:
        """One request with its retries; the answer goes to the cache the moment it arrives."""
        o = self.options
        jitter = random.Random(f"{o.seed}:{key}")  # seeded: two runs of the same inputs wait the same
        attempts = 0
        attempt = _Attempt(problem="no attempt made")
        for number in range(o.retries + 1):
            attempts += 1
            self.stats.add(attempts=1)
            attempt = self._attempt(request)
            if attempt.text is not None:
                usage = dict(attempt.usage)
                self.stats.add(
                    prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0)
                )
                self.cache.put(key, {"model": o.model, "prompt": request.prompt_version, "text": attempt.text,
                                     "usage": usage})  # fmt: skip
                return ChatReply(attempt.text, usage={**usage, "attempts": attempts})
            if not attempt.retry or number == o.retries:
                break
            wait = attempt.wait if attempt.wait is not None else o.backoff * 2**number * (0.5 + jitter.random())
            if wait > o.max_wait:
                attempt.problem = (
                    f"{attempt.problem}; the endpoint asked to wait {wait:g} s, more than max_wait={o.max_wait:g}"
                )
                break
            self.stats.add(retries=1)
            self._sleep(wait)
        self.stats.add(failures=1)
        tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
        return ChatReply(None, f"endpoint failed: {attempt.problem} ({tries})", usage={"attempts": attempts})

    def _attempt(self, request: ChatRequest) -> _Attempt:
        import httpx

        o = self.options
        try:
            response = self._client().post(o.chat_url, json=self._body(request), headers=self._headers())
        except httpx.TimeoutException:
            return _Attempt(problem=f"no answer within timeout={o.timeout:g} s", retry=True)
        except httpx.TransportError as exc:  # refused, reset, or a body cut short (RemoteProtocolError)
            return _Attempt(problem=f"connection failed ({type(exc).__name__}: {str(exc)[:120]})", retry=True)
        status = response.status_code
        if status == 200:
            return _answer_of(response)
        if status in FATAL_STATUSES:
            hint = FATAL_STATUSES[status].format(key_env=o.key_env, model=o.model, url=o.url.rstrip("/"))
            raise EndpointError(f"HTTP {status} from {o.chat_url}: {_error_message(response)} ({hint})")
        problem = f"HTTP {status}: {_error_message(response)}"
        if status in RETRY_STATUSES:
            return _Attempt(problem=problem, retry=True, wait=retry_after_seconds(response.headers.get("retry-after")))
        return _Attempt(problem=problem)
