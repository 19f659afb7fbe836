"""The OpenAI-compatible chat client (stagewise.rag.endpoint) against a real loopback HTTP server that misbehaves
on cue: slow, 500, 429 with Retry-After (seconds and HTTP-date), malformed JSON, a truncated body, a connection
reset, a reply of the wrong shape, 401. Each test asserts what came back, the counts, and what the server saw."""

from __future__ import annotations

import email.utils
import json
import time
from pathlib import Path

import pytest

from stagewise.errors import ConventionError, InputError
from stagewise.rag.endpoint import (
    ChatClient,
    ChatRequest,
    EndpointError,
    EndpointOptions,
    ReplyCache,
    cache_key,
    estimate_tokens,
    retry_after_seconds,
)
from tests.llm_helpers import loopback, malformed, noschema, ok, reset, status, truncated

pytest.importorskip("httpx", reason="the endpoint client needs httpx (the llm extra)")


def request(case: str, text: str = "") -> ChatRequest:
    return ChatRequest.of("test-v1", [("system", "judge"), ("user", f"case:{case} {text}")])


class Waits(list):
    """Records the waits the client asks for instead of sleeping them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(url: str, *, cache: ReplyCache | None = None, **options) -> tuple[ChatClient, Waits]:
    waits = Waits()
    options = {"timeout": 5.0, "retries": 2, "backoff": 0.01, **options}
    return ChatClient(EndpointOptions(url=url, model="loopback-model", **options), cache=cache, sleep=waits), waits


def test_an_answer_comes_back_with_its_tokens_and_the_request_is_deterministic() -> None:
    with loopback({"a": [ok("hello there")]}) as server:
        chat, waits = client(server.url, max_tokens=64, seed=7)
        reply = chat.chat_many([request("a")])[0]
    assert reply.ok and reply.text == "hello there" and not reply.cached and waits == []
    case, body, _ = server.requests[0]
    assert case == "a" and body["model"] == "loopback-model"
    assert body["temperature"] == 0 and body["seed"] == 7 and body["max_tokens"] == 64 and body["stream"] is False
    assert body["messages"] == [{"role": "system", "content": "judge"}, {"role": "user", "content": "case:a "}]
    assert reply.usage["completion_tokens"] == 2 and reply.usage["prompt_tokens"] > 0 and reply.usage["attempts"] == 1
    stats = chat.stats.as_dict()
    assert stats["calls"] == stats["attempts"] == 1 and stats["retries"] == stats["failures"] == 0
    assert stats["completion_tokens"] == 2 and stats["prompt_tokens"] == reply.usage["prompt_tokens"]


@pytest.mark.parametrize(
    ("first", "problem"),
    [
        (ok(delay=1.5), None),  # slower than the 0.5 s timeout
        (status(500, body='{"error": {"message": "boom"}}'), None),
        (status(503), None),
        (malformed(), None),
        (truncated(), None),
        (reset(), None),
    ],
    ids=["slow", "500", "503", "malformed-json", "truncated-body", "connection-reset"],
)
def test_a_failure_that_may_pass_is_retried_then_answered(first, problem) -> None:
    with loopback({"x": [first, ok('{"label": "not"}')]}) as server:
        chat, waits = client(server.url, timeout=0.5)
        reply = chat.chat_many([request("x")])[0]
    assert reply.text == '{"label": "not"}', reply.error
    assert server.counts["x"] == 2 and reply.usage["attempts"] == 2
    assert chat.stats.retries == 1 and chat.stats.failures == 0 and len(waits) == 1


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ([status(500, body='{"error": {"message": "model crashed"}}')], "HTTP 500: model crashed"),
        ([malformed()], "not JSON"),
        ([truncated()], "connection failed (RemoteProtocolError"),
        ([reset()], "connection failed"),
        ([ok(delay=1.0)], "no answer within timeout=0.3 s"),
    ],
    ids=["500", "malformed", "truncated", "reset", "slow"],
)
def test_a_failure_that_lasts_is_an_error_reply_after_every_retry(script, reason) -> None:
    with loopback({"x": script}) as server:
        chat, waits = client(server.url, timeout=0.3, retries=2)
        reply = chat.chat_many([request("x")])[0]
    assert reply.text is None and reason in reply.error and "(3 attempts)" in reply.error
    assert server.counts["x"] == 3 and chat.stats.failures == 1 and chat.stats.retries == 2
    assert len(waits) == 2 and waits[1] > waits[0]  # exponential backoff


def test_429_waits_what_retry_after_says_in_seconds_and_as_an_http_date() -> None:
    soon = email.utils.formatdate(time.time() + 3, usegmt=True)
    scripts = {
        "s": [status(429, {"Retry-After": "2"}), ok()],
        "d": [status(503, {"Retry-After": soon}), ok()],
    }
    with loopback(scripts) as server:
        chat, waits = client(server.url, concurrency=1)
        replies = chat.chat_many([request("s"), request("d")])
    assert all(r.ok for r in replies)
    assert waits[0] == 2.0 and 1.0 <= waits[1] <= 3.0  # an HTTP-date has one-second resolution
    assert server.counts == {"s": 2, "d": 2}


def test_a_retry_after_longer_than_max_wait_is_not_waited() -> None:
    with loopback({"x": [status(429, {"Retry-After": "3600"}), ok()]}) as server:
        chat, waits = client(server.url, max_wait=30)
        reply = chat.chat_many([request("x")])[0]
    assert waits == [] and server.counts["x"] == 1
    assert "HTTP 429" in reply.error and "asked to wait 3600 s, more than max_wait=30" in reply.error


def test_a_reply_of_the_wrong_shape_or_a_client_error_is_not_retried() -> None:
    with loopback({"n": [noschema()], "b": [status(400, body='{"error": {"message": "context too long"}}')]}) as srv:
        chat, waits = client(srv.url)
        shape, bad = chat.chat_many([request("n"), request("b")])
    assert "no choices[0].message.content" in shape.error and "(1 attempt)" in shape.error
    assert bad.error == "endpoint failed: HTTP 400: context too long (1 attempt)"
    assert srv.counts == {"n": 1, "b": 1} and waits == []


def test_the_key_comes_from_the_environment_and_goes_only_in_the_header(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-secret-123")
    cache = ReplyCache(tmp_path / "cache.jsonl")
    with loopback({"a": [ok()], "u": [status(401, body='{"error": {"message": "bad key"}}')]}) as server:
        chat, _ = client(server.url, cache=cache, key_env="MY_LLM_KEY")
        chat.chat_many([request("a")])
        with pytest.raises(EndpointError, match=r"HTTP 401.*bad key.*set the environment variable MY_LLM_KEY") as err:
            chat.chat_many([request("u")])
    assert server.requests[0][2]["Authorization"] == "Bearer sk-test-secret-123"
    assert "sk-test" not in str(err.value) and "sk-test" not in (tmp_path / "cache.jsonl").read_text()
    monkeypatch.delenv("MY_LLM_KEY")
    with loopback() as server:
        client(server.url, key_env="MY_LLM_KEY")[0].chat_many([request("a")])
    assert "Authorization" not in server.requests[0][2]


def test_the_budget_counts_distinct_sent_inputs_in_order() -> None:
    with loopback() as server:
        chat, _ = client(server.url, max_calls=2, concurrency=1)
        first = chat.chat_many([request("a"), request("b"), request("a"), request("c"), request("d")])
        again = chat.chat_many([request("b"), request("e")])
    assert [r.ok for r in first] == [True, True, True, False, False]  # the repeated "a" is one call
    assert first[3].error == "call budget spent (max_calls=2)"
    assert [r.ok for r in again] == [True, False] and again[0].cached  # a cache hit costs nothing
    assert sorted(server.counts) == ["a", "b"] and chat.stats.budget_refused == 3 and chat.stats.calls == 2


def test_a_dry_run_connects_to_nothing_and_estimates_tokens() -> None:
    messages = [("system", "judge"), ("user", "case:a " + "word " * 100)]
    chat, _ = client("http://127.0.0.1:9/v1")  # nothing listens on port 9: a connection would fail
    reply = chat.chat_many([ChatRequest.of("test-v1", messages)], dry_run=True)[0]
    assert reply.error == "dry run: no call made"
    # by hand: "judge" 5 chars -> 2 + 4; the user text 507 chars -> 127 + 4
    assert reply.usage == {"prompt_tokens_estimated": 137} == {"prompt_tokens_estimated": estimate_tokens(messages)}
    assert chat.stats.dry_run == 1 and chat.stats.attempts == 0


def test_a_rerun_answers_from_the_cache_with_no_call(tmp_path: Path) -> None:
    path = tmp_path / "replies.jsonl"
    batch = [request(c) for c in "abc"]
    with loopback({"b": [ok("B")]}) as server:
        first = ChatClient(EndpointOptions(url=server.url, model="m"), cache=ReplyCache(path)).chat_many(batch)
        rerun = ChatClient(EndpointOptions(url=server.url, model="m"), cache=ReplyCache(path))
        second = rerun.chat_many(batch)
        other = ChatClient(EndpointOptions(url=server.url, model="m", seed=1), cache=ReplyCache(path))
        other.chat_many(batch[:1])
    assert [r.text for r in second] == [r.text for r in first] and all(r.cached for r in second)
    assert rerun.stats.calls == 0 and rerun.stats.cache_hits == 3 and second[1].usage["completion_tokens"] == 1
    assert server.counts == {"a": 2, "b": 1, "c": 1}  # another seed is another input: asked afresh
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 4 and {line["prompt"] for line in lines} == {"test-v1"} and lines[0]["model"] == "m"


def test_the_cache_key_is_model_prompt_version_and_input() -> None:
    o = EndpointOptions(url="http://x/v1", model="m")
    msgs = [("user", "q")]
    elsewhere = EndpointOptions(url="http://y/v1", model="m")  # another address, the same model
    assert cache_key("m", "p-v1", msgs, o) == cache_key("m", "p-v1", msgs, elsewhere)
    assert len({cache_key("m", "p-v1", msgs, o), cache_key("m2", "p-v1", msgs, o), cache_key("m", "p-v2", msgs, o),
                cache_key("m", "p-v1", [("user", "r")], o)}) == 4  # fmt: skip


def test_a_cache_cut_short_by_a_kill_is_read_and_a_damaged_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"key": "k1", "text": "A", "usage": {}}\n{"key": "k2", "te')
    cache = ReplyCache(path)
    assert len(cache) == 1 and cache.get("k1")["text"] == "A"
    cache.put("k3", {"text": "C"})
    assert len(ReplyCache(path)) == 2 and "k2" not in path.read_text()  # the cut line is cut off
    path.write_text('{"key": "k1", "text": "A"}\nnot json\n{"key": "k2", "text": "B"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl:2: this line of the LLM reply cache is not a JSON object"):
        ReplyCache(path)


def test_concurrency_is_bounded() -> None:
    with loopback({c: [ok(delay=0.3)] for c in "abcdefgh"}) as server:
        chat, _ = client(server.url, concurrency=3)
        replies = chat.chat_many([request(c) for c in "abcdefgh"])
    assert all(r.ok for r in replies) and 2 <= server.max_in_flight <= 3


def test_backoff_jitter_is_seeded() -> None:
    def waits_with(seed: int) -> list[float]:
        with loopback({"x": [status(500)]}) as server:
            chat, waits = client(server.url, retries=3, backoff=1.0, seed=seed)
            chat.chat_many([request("x")])
        return list(waits)

    first, again, other = waits_with(0), waits_with(0), waits_with(1)
    assert first == again != other
    assert all(0.5 * 2**n <= w < 1.5 * 2**n for n, w in enumerate(first))  # base * 2**attempt * [0.5, 1.5)


def test_retry_after_reads_seconds_and_dates() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("7") == 7.0 and retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30.0
    assert retry_after_seconds(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_bad_options_are_refused_in_the_one_template() -> None:
    with pytest.raises(ConventionError, match="The 'url' parameter of the endpoint must be an http"):
        EndpointOptions(url="127.0.0.1:8080", model="m")
    with pytest.raises(ConventionError, match=r"The 'concurrency' parameter .* must be an int >= 1\. Got 0"):
        EndpointOptions(url="http://x/v1", model="m", concurrency=0)
