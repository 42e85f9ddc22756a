"""The server route for real: vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`,
what `vllm serve` runs) on 127.0.0.1 with the tiny LLaVA, judged through the `openai` judge. vLLM's chat
API continues an assistant message (`answer_prefix`), so the expected grade is one forward pass through
the server too, and equals the `transformers` judge's on the same weights; greedy parsed answers equal
its answers. `make test` runs this file in .venv-vllm; without vLLM it is skipped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner
from vllm_jobs import ENGINE, IMAGE_TOPICS, IMAGES, MISSING, judgments

from qrelkit.cli import app

pytestmark = pytest.mark.vllm
SERVED = "tiny-llava"
ON_CPU = {"device": "cpu", "dtype": "float32"}
START_SECONDS = 600  # an engine starts in about a minute on two idle cores; CI's machine may be busy


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(vllm_collection, tmp_path_factory):
    """The server on a free loopback port; its log in a file, shown when it fails to come up."""
    c = vllm_collection
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", c.llava, "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
        "--dtype", ENGINE["dtype"], "--max-model-len", str(ENGINE["max_model_len"]),
        "--kv-cache-memory-bytes", str(int(ENGINE["kv_cache_gib"] * 2**30)), "--max-logprobs", str(c.vocabulary),
        "--seed", "0", "--enable-prefix-caching",
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "VLLM_LOGGING_LEVEL": "WARNING"})
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_SECONDS
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"vLLM's server exited ({process.returncode}):\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
                    if SERVED in response.read().decode():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM's server did not answer in {START_SECONDS} s:\n{log.read_text()[-4000:]}")
            time.sleep(2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def judge(job: Path) -> dict:
    result = CliRunner().invoke(app, ["judge", str(job), "--quiet", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def openai_options(c, base_url: str, **options) -> dict:
    return {"model": SERVED, "base_url": base_url, "answer_prefix": "Relevance: ", "concurrency": 8, "max_tries": 2, **options}


@pytest.fixture(scope="module")
def transformers_expected(vllm_collection):
    c = vllm_collection
    judge(c.job("srv-hf-expected", "transformers", {"model": c.llava, "score": "expected", "batch_size": 8, **ON_CPU}))
    return judgments(c.folder / "srv-hf-expected.duckdb")


def test_expected_grades_through_the_server_are_one_forward_pass_and_equal_the_transformers_judges(
    vllm_collection, server, transformers_expected
):
    c = vllm_collection
    options = openai_options(c, server, score="expected", logprobs=True, top_logprobs=c.vocabulary, max_tokens=1)
    report = judge(c.job("srv-expected", "openai", options))
    assert report["statuses"] == {"ok": len(IMAGE_TOPICS) * IMAGES, "input_error": len(IMAGE_TOPICS)}
    through_server = judgments(c.folder / "srv-expected.duckdb")
    for pair, row in through_server.items():
        reference = transformers_expected[pair]
        assert row["status"] == reference["status"]
        if pair[1] == MISSING:
            assert "gone.jpg" in row["error"]
            continue
        assert row["tokens_out"] == 1 and row["raw_output"] == reference["raw_output"]  # one generated token after the prefix
        assert row["score"] == row["expected"] == pytest.approx(reference["score"], abs=1e-3), pair


def test_greedy_parsed_answers_through_the_server_equal_the_transformers_judges(vllm_collection, server):
    c = vllm_collection
    judge(c.job("srv-parsed", "openai", openai_options(c, server, score="parsed", max_tokens=1)))
    hf = {"model": c.llava, "score": "parsed", "max_new_tokens": 1, "batch_size": 8, **ON_CPU}
    judge(c.job("srv-hf-parsed", "transformers", hf))
    through_server, reference = judgments(c.folder / "srv-parsed.duckdb"), judgments(c.folder / "srv-hf-parsed.duckdb")
    for pair, row in through_server.items():
        assert row["status"] == reference[pair]["status"], (pair, row, reference[pair])
        if row["status"] != "input_error":
            assert row["raw_output"] == reference[pair]["raw_output"], pair
            assert row["raw_output"].startswith("Relevance: ")
