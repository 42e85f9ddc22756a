"""Time and peak memory of ReSTrain and ReSTTest (Zhan et al., CIKM 2022) on synthetic query embeddings.

200,000 training × 500 test queries of dimension 384 (MiniLM's), float32, L2-normalised: the
queries lie around 200 topic centres (Gaussian noise, then normalised), so k-means meets
clusters as it would with real queries. Each stage runs in its own Python process, which reports
its own wall time and peak resident memory (resource.getrusage ru_maxrss), so one stage's memory
never hides another's. `data` only builds the embeddings: the baseline every stage includes.

Stages: `top-k` (1,000 most similar training queries per test query, blockwise),
`restrain` (I = 100, E = 1,000, extrapolation set sampled to the interpolation set's size),
`resttest` (k = 5, scikit-learn k-means, seed 0).

Usage: python benchmarks/bench_interex.py [--train 200000] [--test 500] [--dim 384]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

STAGES = ("data", "top-k", "restrain", "resttest")
LIMIT_MIB = 2048


def synthetic_queries(n: int, dim: int, seed: int, centres: np.ndarray) -> np.ndarray:
    """n unit rows around the centres, built in slices so no float64 copy of the whole matrix exists."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), np.float32)
    for start in range(0, n, 10_000):
        stop = min(start + 10_000, n)
        rows = centres[rng.integers(0, len(centres), stop - start)] + rng.standard_normal((stop - start, dim), dtype=np.float32) * 0.05
        out[start:stop] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


def run_stage(stage: str, n_train: int, n_test: int, dim: int) -> dict:
    from qrelkit.evaluate.interex import restrain, resttest, top_k_similar

    centres = np.random.default_rng(0).standard_normal((200, dim)).astype(np.float32) / np.sqrt(dim)
    train = synthetic_queries(n_train, dim, 1, centres)
    test = synthetic_queries(n_test, dim, 2, centres)
    train_qids = [f"t{i}" for i in range(n_train)]
    test_qids = [f"q{i}" for i in range(n_test)]
    baseline_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    detail = ""
    if stage == "top-k":
        top = top_k_similar(test, train, 1000)
        detail = f"top-1 cosine mean {top.scores[:, 0].mean():.3f}"
    elif stage == "restrain":
        split = restrain(test, train, train_qids, interpolation_per_query=100, exclusion_per_query=1000, extrapolation_size="match")
        detail = f"interpolation {len(split.interpolation)}, extrapolation {len(split.extrapolation)} of {split.extrapolation_available}"
    elif stage == "resttest":
        buckets = resttest(test, test_qids, train, train_qids, k=5, seed=0)
        detail = "test queries per bucket " + "/".join(str(len(b.test_qids)) for b in buckets.buckets)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {"stage": stage, "seconds": seconds, "peak_mib": peak_mib, "baseline_mib": baseline_mib, "detail": detail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=200_000)
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # a child process runs one stage
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(run_stage(args.stage, args.train, args.test, args.dim)))
        return
    machine = f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs"
    print(f"{machine}; {args.train:,} train × {args.test} test × d={args.dim}")
    print("| stage | seconds | peak RSS (MiB) | of which inputs + imports (MiB) | result |")
    print("|---|---:|---:|---:|---|")
    worst = 0.0
    for stage in STAGES:
        command = [sys.executable, __file__, "--stage", stage, "--train", str(args.train), "--test", str(args.test), "--dim", str(args.dim)]
        row = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        worst = max(worst, row["peak_mib"])
        seconds = "–" if stage == "data" else f"{row['seconds']:.1f}"
        print(f"| {stage} | {seconds} | {row['peak_mib']:.0f} | {row['baseline_mib']:.0f} | {row['detail']} |")
    print(f"\nhighest peak {worst:.0f} MiB: {'under' if worst < LIMIT_MIB else 'OVER'} the {LIMIT_MIB} MiB budget")


if __name__ == "__main__":
    main()
