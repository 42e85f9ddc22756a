"""The benchmark scripts stay in step with the code they measure: each one imports what it calls
and parses its options (`--help`). One of them had drifted behind an API rename unnoticed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_there_are_benchmarks_to_check():
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_a_benchmark_script_imports_and_explains_itself(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout.lower()
