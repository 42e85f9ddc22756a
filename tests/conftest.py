"""Shared fixtures. Real DL19 data lives in ../shared/data (developer machines and CI only)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DL19 = ROOT.parent / "shared" / "data" / "trec-dl-2019"


@pytest.fixture(scope="session")
def dl19() -> Path:
    """Path to TREC DL 2019 passage data; the test is skipped when ../shared/data is absent."""
    if not (DL19 / "qrels.txt").is_file():
        pytest.skip(f"TREC DL 2019 data not found at {DL19} (only on developer machines and in CI)")
    return DL19
