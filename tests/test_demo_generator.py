"""The demo's generation stage by a model behind an OpenAI-compatible endpoint (a real loopback server here)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from stagewise.demo.pipeline import run_demo
from stagewise.errors import StagewiseError
from stagewise.rag.generator import EndpointGenerator

_PASSAGE = re.compile(r"^\[([^\]]+)\] (.+?)(?:\.|$)", re.M)


@contextmanager
def answering_server(fail_every: int = 0) -> Iterator[dict]:
    """A chat endpoint that answers with the first sentence of the first passage, cited; every ``fail_every``-th
    question (by its text's hash, so retries fail too) gets HTTP 500."""
    state = {"requests": 0, "bodies": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"] += 1
            state["bodies"].append(body)
            user = body["messages"][-1]["content"]
            if fail_every and sum(map(ord, user)) % fail_every == 0:
                payload, code = b'{"error": {"message": "overloaded"}}', 500
            else:
                found = _PASSAGE.search(user)
                answer = f"{found.group(2)}. [{found.group(1)}]" if found else "I don't know."
                message = {"role": "assistant", "content": json.dumps({"answer": answer})}
                payload = json.dumps({"choices": [{"message": message}],
                                      "usage": {"prompt_tokens": 50, "completion_tokens": 9}}).encode()  # fmt: skip
                code = 200
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_the_demo_answers_through_the_endpoint_and_says_so(tmp_path: Path) -> None:
    with answering_server(fail_every=41) as server:
        demo = run_demo(tmp_path / "demo", dense="off", report=False, generator=server["url"],
                        generator_model="tiny")  # fmt: skip
    records = [json.loads(line) for line in (tmp_path / "demo" / "rag.jsonl").read_text().splitlines()]
    pipeline = json.loads((tmp_path / "demo" / "pipeline.json").read_text())
    failed = [r for r in records if "generation_error" in r]
    said = pipeline["generator"]
    assert said["generator"] == "endpoint" and said["model"] == "tiny" and said["prompt"] == "answer-v1"
    assert 0 < len(failed) < len(records) and all(r["answer"] == "" for r in failed)
    assert said["stats"]["failures"] == len(failed) and said["stats"]["completion_tokens"] > 0
    answered = [r for r in records if "generation_error" not in r and r["context"]]
    assert all(r["answer"].endswith(f"[{r['context'][0]}]") for r in answered)  # cites the passage it read
    assert all(b["temperature"] == 0 and b["model"] == "tiny" for b in server["bodies"])
    assert sum(demo.rag.counts().values()) == len(records)


def test_an_endpoint_that_is_not_there_is_one_error_naming_it(tmp_path: Path) -> None:
    with answering_server() as server:
        url = server["url"]
    generator = EndpointGenerator(url, "m", retries=0, timeout=2)
    with pytest.raises(StagewiseError, match=f"no answer from the generator at {re.escape(url)}"):
        generator.answer_many([("q?", [("p1", "text")])])
