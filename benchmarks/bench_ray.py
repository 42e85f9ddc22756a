"""The batch runner on Ray against the local runner, on this machine: pairs/s of a constant judge
(what the Ray path itself costs) and of the MiniLM bi-encoder judge (`embedding`, int8 ONNX), with
1 and 2 Ray workers, on TREC DL 2019 pairs of qrels.txt.

Each row is a fresh database, so every run judges all its pairs. "start s" is the time from the
job's start until the first worker had built its judge (Ray actor start + imports + model load);
"judging pairs/s" counts the rest of the run. The per-pair overhead of the Ray path is the constant
judge's judging seconds per pair on 1 worker minus the local runner's.

Usage: python benchmarks/bench_ray.py [--constant-pairs N] [--embedding-pairs N] [--batch-size N]
Needs the `ray` and `onnx` extras and ../shared/data/trec-dl-2019.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from qrelkit.embed import available_cores
from qrelkit.io import read_qrels
from qrelkit.jobs import load_job, run_job

BENCHMARKS = Path(__file__).resolve().parent
# ../shared/data beside the project, or beside any folder above it (a git worktree sits deeper)
DL19 = next((f / "shared" / "data" for f in BENCHMARKS.parents if (f / "shared" / "data").is_dir()), BENCHMARKS) / "trec-dl-2019"


def write_job(
    folder: Path, name: str, pairs: list[tuple[str, str]], judge: dict[str, Any], executor: dict[str, Any], batch_size: int
) -> Path:
    (folder / f"{name}.pairs").write_text("".join(f"{q}\t{d}\n" for q, d in pairs))
    spec = {
        "database": f"{name}.duckdb",
        "collection": {"topics": str(DL19 / "topics.tsv"), "documents": str(DL19 / "passages.jsonl")},
        "pool": {"pairs": f"{name}.pairs"},
        "judge": judge,
        "batch_size": batch_size,
        "executor": executor,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def timed_run(job: Path) -> tuple[int, float, float]:
    """(pairs judged, seconds to the first ready worker, seconds of the whole run)."""
    from qrelkit.jobs.runner import executor_for

    spec = load_job(job, allow_import=True)  # constant_judge.py, beside this script
    executor = executor_for(spec.executor)
    opened: list[float] = []
    open_executor = executor.open

    def open_and_time(factory, context):
        open_executor(factory, context)
        opened.append(time.perf_counter())

    executor.open = open_and_time  # type: ignore[method-assign]
    started: list[float] = []  # the runner reports progress once before the executor opens

    def progress(done: int, total: int) -> None:
        if not started:
            started.append(time.perf_counter())

    report = run_job(spec, progress=progress, executor=executor)
    ended = time.perf_counter()  # the database's checkpoint on close counts: it is part of every run
    return report.judged, opened[0] - started[0], ended - started[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--constant-pairs", type=int, default=9260)
    parser.add_argument("--embedding-pairs", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").is_file():
        print(f"DL19 data not found at {DL19}", file=sys.stderr)
        return 1
    import ray

    pairs = [(q.qid, q.docid) for q in read_qrels(DL19 / "qrels.txt").entries]
    started = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": str(BENCHMARKS)}},  # workers import constant_judge:ConstantJudge
    )
    ray_init_s = time.perf_counter() - started
    cases = [
        ("constant", {"name": "constant_judge:ConstantJudge"}, pairs[: args.constant_pairs]),
        ("embedding (MiniLM int8 ONNX)", {"name": "embedding", "options": {"backend": "onnx"}}, pairs[: args.embedding_pairs]),
    ]
    executors = [
        ("local", {"kind": "local"}),
        ("ray, 1 worker", {"kind": "ray", "workers": 1}),
        ("ray, 2 workers", {"kind": "ray", "workers": 2}),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for judge_label, judge, case_pairs in cases:
            for executor_label, executor in executors:
                name = f"{judge['name'].replace(':', '-')}-{executor['kind']}-{executor.get('workers', 0)}"
                judged, start_s, total_s = timed_run(write_job(Path(tmp), name, case_pairs, judge, executor, args.batch_size))
                rows.append((judge_label, executor_label, judged, start_s, total_s))
                print(f"{judge_label}, {executor_label}: {judged} pairs in {total_s:.1f} s", file=sys.stderr, flush=True)
    ray.shutdown()

    import onnxruntime

    print(
        f"Machine: {platform.machine()}, {available_cores()} cores available, load average {os.getloadavg()[0]:.1f} at the end; "
        f"Python {platform.python_version()}, ray {ray.__version__}, onnxruntime {onnxruntime.__version__}."
    )
    print(
        f"Local Ray of 2 CPUs (ray.init {ray_init_s:.1f} s, not counted), 1 CPU per worker; batch (= shard) size {args.batch_size}; "
        f"DL19 qrels.txt pairs in file order.\n"
    )
    print("| judge | executor | pairs | start s | total s | pairs/s (total) | judging pairs/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for judge_label, executor_label, judged, start_s, total_s in rows:
        rates = f"{judged / total_s:.0f} | {judged / (total_s - start_s):.0f}"
        print(f"| {judge_label} | {executor_label} | {judged} | {start_s:.1f} | {total_s:.1f} | {rates} |")
    local, one = rows[0], rows[1]
    per_pair_ms = 1000 * ((one[4] - one[3]) / one[2] - (local[4] - local[3]) / local[2])
    print(
        f"\nPer-pair overhead of the Ray path (constant judge, 1 worker vs local, judging time only): {per_pair_ms:.3f} ms "
        f"= {per_pair_ms * args.batch_size:.1f} ms per shard of {args.batch_size}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
