"""Synthetic TREC tracks on disk for the benchmarks, cached under ~/.cache/qrelkit-bench.

A track has graded qrels like TREC DL's (grades 0-3 in shares 45/27/17/11%) and runs that rank
each query's candidate passages by a noisy view of their grade, as full TREC submissions do
(depth 1,000 by default). Scores are written with 4 decimals, so runs have some ties.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

CACHE = Path(os.environ.get("QRELKIT_BENCH_CACHE", Path.home() / ".cache" / "qrelkit-bench"))
GRADE_SHARES = [0.45, 0.27, 0.17, 0.11]


def _write_lines(path: Path, lines: list[str]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(path)  # a track interrupted while written is not mistaken for a whole one


def ensure_track(
    n_runs: int, n_queries: int, depth: int, *, judged: int = 300, candidates: int = 3000, seed: int = 0
) -> tuple[Path, list[Path]]:
    """(qrels file, run files) of the track, written on first use. Run i of a larger track is
    the same file as run i of a smaller one with the same queries, so sizes share files."""
    folder = CACHE / f"track-q{n_queries}-d{depth}-j{judged}-c{candidates}-s{seed}"
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    qids = [str(1_000_000 + 37 * q) for q in range(n_queries)]
    pool = np.stack([rng.choice(8_841_823, size=candidates, replace=False) for _ in range(n_queries)])
    grade = np.full((n_queries, candidates), -1)
    for q in range(n_queries):
        chosen = rng.choice(candidates, size=judged, replace=False)
        grade[q, chosen] = rng.choice(4, size=judged, p=GRADE_SHARES)
    qrels = folder / "qrels.txt"
    if not qrels.exists():
        lines = [f"{qids[q]} 0 {pool[q, d]} {grade[q, d]}" for q in range(n_queries) for d in np.flatnonzero(grade[q] >= 0)]
        _write_lines(qrels, lines)
    signal = np.where(grade >= 0, grade, 0.6)
    runs = []
    for r in range(n_runs):
        path = folder / "runs" / f"sys{r:03d}.run"
        runs.append(path)
        if path.exists():
            continue
        run_rng = np.random.default_rng([seed, r])
        score = signal * run_rng.uniform(0.2, 1.5) + run_rng.normal(0.0, 1.0, signal.shape)
        top = np.argsort(-score, axis=1, kind="stable")[:, :depth]
        lines = []
        for q in range(n_queries):
            docs, values = pool[q, top[q]].tolist(), score[q, top[q]].tolist()
            lines += [f"{qids[q]} Q0 {d} {i} {s:.4f} sys{r:03d}" for i, (d, s) in enumerate(zip(docs, values), start=1)]
        _write_lines(path, lines)
    return qrels, runs


if __name__ == "__main__":  # `python synthetic_track.py RUNS QUERIES DEPTH`: write the track, print its files as JSON
    import json
    import sys

    qrels_path, run_paths = ensure_track(*(int(arg) for arg in sys.argv[1:4]))
    print(json.dumps({"qrels": str(qrels_path), "runs": [str(p) for p in run_paths]}))
