"""An `irds:` source whose files cannot be downloaded (offline, a dead proxy) is one line naming
what could not be reached and what to do, exit 3, never ir_datasets' log of every retry."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("ir_datasets", reason="the irds extra is not installed (pip install '.[irds]')")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_irds_download_is_one_line_naming_the_urls_exit_3(tmp_path):
    proxy = f"http://127.0.0.1:{closed_port()}"  # every download fails to connect, as offline
    env = {**os.environ, "IR_DATASETS_HOME": str(tmp_path / "irds"), "HTTPS_PROXY": proxy, "https_proxy": proxy}
    done = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "load", "qrels", "irds:msmarco-passage/trec-dl-2019", "--db", str(tmp_path / "x.duckdb")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # no "[INFO] download error ... Retrying" lines before it
    assert done.stderr.startswith(
        "error: irds:msmarco-passage/trec-dl-2019: cannot download its qrels: https://trec.nist.gov/data/deep/2019qrels-pass.txt"
    )
    assert "could not be reached (offline?)" in done.stderr and "--mirror" in done.stderr
