# Two entry points: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PIP := $(VENV)/bin/pip
PY := $(VENV)/bin/python

.PHONY: demo test lint bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Stamps record what is installed, so a second `make` does not reinstall.
$(VENV)/.demo: $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e ".[onnx]"
	touch $@

$(VENV)/.test: $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e ".[onnx,dev]"
	touch $@

demo: $(VENV)/.demo
	$(VENV)/bin/qrelkit demo

test: $(VENV)/.test
	$(PY) -m pytest -q

lint: $(VENV)/.test
	$(VENV)/bin/ruff check qrelkit tests benchmarks

bench: $(VENV)/.test
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache
