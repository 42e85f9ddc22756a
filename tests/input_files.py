"""Helpers for the tests of malformed input files: write a file's bytes, and read the one error
a reader raises for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qrelkit.errors import InputFormatError

RUN_OK = "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\n"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(InputFormatError) as info:
        call()
    return str(info.value)
