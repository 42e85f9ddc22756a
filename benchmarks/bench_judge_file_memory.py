"""`qrelkit compare --judge DIR` on a judge's file of 5,000,000 fractional scores (issue 41): its peak
resident memory (VmHWM of the command's own process) and its wall time. Goal: under 1 GB.

The workload is the shape of the exam and nugget judge methods' released files (a fraction per
judged pair) at a scale a user's own method reaches: 500 queries × 10,000 judged passages each, the
values written with four decimals; a reference of 100 judged passages per query (grades 0-2); five runs
of depth 100. The judge's measure is `Compat(p=0.9)` (scores serve only measures that read their order).

Usage: python benchmarks/bench_judge_file_memory.py [--queries 500] [--per-query 10000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # hostile.PEAK: the command with its own peak memory
from hostile import PEAK  # noqa: E402


def workload(folder: Path, queries: int, per_query: int) -> None:
    rng = np.random.default_rng(0)
    (folder / "jd").mkdir()
    (folder / "runs").mkdir()
    with open(folder / "jd" / "exam.txt", "w") as out:
        for q in range(queries):
            values = rng.random(per_query)
            out.write("".join(f"q{q} 0 d{q}_{d} {values[d]:.4f}\n" for d in range(per_query)))
    with open(folder / "ref.qrels", "w") as out:
        out.write("".join(f"q{q} 0 d{q}_{d} {int(rng.integers(0, 3))}\n" for q in range(queries) for d in range(100)))
    for r in range(5):
        with open(folder / "runs" / f"r{r}.run", "w") as out:
            for q in range(queries):
                docs = rng.permutation(per_query)[:100]
                out.write("".join(f"q{q} Q0 d{q}_{d} {i + 1} {100 - i} r{r}\n" for i, d in enumerate(docs)))


def measure(folder: Path) -> tuple[float, float, dict]:
    args = ["compare", "--judge", "jd", "--reference-qrels", "ref.qrels", "--runs", "runs", "--judge-measure", "Compat(p=0.9)"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args, "--resamples", "0", "--permutations", "0", "--json"],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    peak = int(done.stderr.split("peak-rss-kib")[1].split()[0]) * 1024
    return seconds, peak, json.loads(done.stdout)["judges"][0]["audit"]["pairs"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--per-query", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        workload(folder, options.queries, options.per_query)
        size = (folder / "jd" / "exam.txt").stat().st_size
        print(f"judge file: {options.queries * options.per_query:,} lines, {size / 2**20:.0f} MiB; load {os.getloadavg()[0]:.1f}")
        for _ in range(options.repeat):
            seconds, peak, pairs = measure(folder)
            print(f"compare --judge: {seconds:.1f} s, peak RSS {peak / 2**20:,.0f} MiB ({peak / 1e9:.2f} GB); pairs {pairs}")


if __name__ == "__main__":
    main()
