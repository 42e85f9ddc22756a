"""Evaluation on plain data: metrics, agreement, bias, Fréchet distance, NRG, resampling.

The names below are imported on first use, so that `qrelkit.evaluate.choices` (the defaults and
checks a request reads) loads without numpy."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Evaluation", "evaluate_runs", "parse_measures"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("qrelkit.evaluate.metrics"), name)
    raise AttributeError(f"module 'qrelkit.evaluate' has no attribute {name!r}")
