"""The example jobs in configs/ are valid: each loads, and its judge accepts its options."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.jobs import load_job
from qrelkit.judges import make_config

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_shipped_job_loads_and_its_judge_accepts_its_options(path):
    spec = load_job(path)
    config = make_config(spec.judge.name, spec.judge.options, source=str(path))
    assert config.model_dump()  # unknown options would have raised
