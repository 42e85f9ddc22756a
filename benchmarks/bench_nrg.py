"""Time NRG, every run against all the others: qrelkit's vectorised code vs the seed's algorithm.

The seed's code (aminbigdeli/Normalized-Residual-Gain, code/calculate_nrg.py) cannot run here
(no download; it also fails on pandas >= 2). `reference_algorithm` below is OUR loop-based
re-implementation of its algorithm, written from reading it: for each target run and query,
each document's residual gain is rebuilt by scanning every other run's list (`in`, `.index`),
once for the run's documents and once for every judged document of the query (the ideal).
Its results are checked against qrelkit's before it is timed.

Inputs: the 37 TREC DL 2019 passage runs (43 queries, cut to depth 20) and a synthetic
collection of 60 runs × 50 queries × depth 100. The reference algorithm's cost is the same
for every target, so by default it is timed on a few targets and scaled (say --reference-targets 0
to time all of them).

Whole process (--part whole): `qrelkit nrg` as a user runs it (startup, reading the files,
NRG, JSON) on a synthetic track shaped like TREC DL 2021 passage (63 runs × 53 queries × depth
100, ~200 graded judgments per query; DL21 itself is not available here), with the same
steps timed in-process.

Usage: python benchmarks/bench_nrg.py [--part algorithm|whole|all] [--repeat N] [--reference-targets N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
from _data import DL19, HERE

import qrelkit
from qrelkit.evaluate.nrg import nrg
from qrelkit.evaluate.nrg.priors import chronological
from qrelkit.io import Run, RunEntry, read_qrels, read_runs


def reference_algorithm(grades: dict[str, dict[str, int]], lists: dict[str, dict[str, list[str]]], targets: list[str]) -> dict[str, float]:
    """Re-implementation of the seed's calculate_nrg.py loop (doc_gain_version 1: gain = grade; full depth; all others)."""
    discount = lambda rank: 0.0 if rank == 0 else 1 / math.log2(rank + 1)
    queries = sorted({q for per_query in lists.values() for q in per_query if q in grades})
    means = {}
    for target in targets:
        total = 0.0
        for qid in queries:
            others = {name: per_query[qid] for name, per_query in lists.items() if name != target}

            def value(doc: str, qid: str = qid, others: dict = others) -> float:
                exposure = 1.0
                for docs in others.values():
                    rank = docs.index(doc) + 1 if doc in docs else 0
                    exposure *= 1 - discount(rank)
                return grades[qid].get(doc, 0) * exposure

            score = sum(value(d) * discount(i + 1) for i, d in enumerate(lists[target][qid]))
            ideal_values = sorted((value(d) for d in grades[qid]), reverse=True)
            ideal = sum(v * discount(i + 1) for i, v in enumerate(ideal_values))
            total += score / ideal if ideal != 0.0 else 0.0
        means[target] = total / len(queries)
    return means


def file_order_lists(runs: list[Run]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        per_query = out.setdefault(run.name, {})
        for entry in run.entries:
            per_query.setdefault(entry.qid, []).append(entry.docid)
    return out


def synthetic(n_runs: int = 60, n_queries: int = 50, depth: int = 100, seed: int = 0):
    """Runs are noisy views of a latent relevance, in 12 families that share noise; qrels pool every run to depth 10."""
    rng = np.random.default_rng(seed)
    n_docs = 1500
    family_of = np.arange(n_runs) % 12
    grades: dict[str, dict[str, int]] = {}
    entries: list[list[RunEntry]] = [[] for _ in range(n_runs)]
    for q in range(n_queries):
        qid = str(1000 + q)
        latent = rng.gamma(0.6, 1.0, n_docs)
        label = np.digitize(latent, np.quantile(latent, [0.85, 0.93, 0.97]))  # 15% relevant, grades 1-3
        family_noise = rng.normal(0, 1.0, (12, n_docs))
        pooled: set[int] = set()
        for r in range(n_runs):
            score = (0.6 + 0.8 * rng.random()) * latent + family_noise[family_of[r]] + rng.normal(0, 0.7, n_docs)
            top = np.argsort(-score, kind="stable")[:depth]
            pooled.update(top[:10].tolist())
            entries[r] += [RunEntry(qid, f"D{q}x{d}", k + 1, float(np.float32(score[d]))) for k, d in enumerate(top)]
        grades[qid] = {f"D{q}x{d}": int(label[d]) for d in sorted(pooled)}
    runs = [Run(f"s{r:02d}", tuple(entries[r])) for r in range(n_runs)]
    return grades, runs


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def reference_time(grades, runs, limit: int) -> tuple[float, int, float]:
    """(seconds scaled to all targets, targets timed, max |difference| from qrelkit on those)."""
    lists = file_order_lists(runs)
    names = [run.name for run in runs]
    targets = names if limit <= 0 else names[:: max(1, len(names) // limit)][:limit]
    start = time.perf_counter()
    expected = reference_algorithm(grades, lists, targets)
    elapsed = time.perf_counter() - start
    ours = nrg(grades, runs, depth="full", order="file").means()
    diff = max(abs(ours[t]["nrg"] - expected[t]) for t in targets)
    return elapsed * len(names) / len(targets), len(targets), diff


def whole_process(repeat: int) -> None:
    """`qrelkit nrg` on the DL21-shaped track as a whole process, and its steps in-process."""
    sys.path.insert(0, str(HERE))
    from synthetic_track import ensure_track

    qrels_path, run_paths = ensure_track(63, 53, 100, judged=200, candidates=1500)
    runs_dir = str(run_paths[0].parent)
    command = [sys.executable, "-m", "qrelkit.cli", "nrg", "--qrels", str(qrels_path), "--runs", runs_dir, "--depth", "full"]
    walls = []
    for _ in range(repeat):
        start = time.perf_counter()
        child = subprocess.Popen([*command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        output = child.communicate()[0]
        walls.append(time.perf_counter() - start)
        assert len(json.loads(output)["runs"]) == 63
    qrels = read_qrels(qrels_path)
    read_s = best_time(lambda: read_runs([run_paths[0].parent]), repeat)
    runs = read_runs([run_paths[0].parent])
    nrg_s = best_time(lambda: nrg(qrels, runs, depth="full"), repeat)
    startup = best_time(lambda: subprocess.run([sys.executable, "-m", "qrelkit.cli", "nrg", "--help"], capture_output=True), repeat)
    label = "DL21-shaped synthetic: 63 runs × 53 q × depth 100"
    print("\n| input | what | seconds (median) |\n|---|---|---:|")
    print(f"| {label} | `qrelkit nrg --depth full --json`, whole process ({repeat} runs) | {statistics.median(walls):.2f} |")
    print(f"| {label} | of which: startup (`qrelkit nrg --help`) | {startup:.2f} |")
    print(f"| {label} | of which: reading 63 run files + qrels (in-process) | {read_s:.2f} |")
    print(f"| {label} | of which: NRG full depth, all others (in-process) | {nrg_s:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["algorithm", "whole", "all"], default="all")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference-targets", type=int, default=6, help="targets to time the reference algorithm on (0: all)")
    args = parser.parse_args()

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, numpy {np.__version__}")
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    if args.part in ("whole", "all"):
        whole_process(args.repeat)
    if args.part == "whole":
        return
    rows = []

    if (DL19 / "qrels.txt").is_file():
        run_files = sorted((DL19 / "runs").iterdir())
        qrels = read_qrels(DL19 / "qrels.txt")
        read_s = best_time(lambda: read_runs(run_files), max(1, args.repeat // 2))
        runs = read_runs(run_files)
        label = "DL19: 37 runs × 43 q (depth ≤ 20)"
        t10 = best_time(lambda: nrg(qrels, runs, depth=10), args.repeat)
        tfull = best_time(lambda: nrg(qrels, runs, depth="full", order="file"), args.repeat)
        tbest = best_time(lambda: qrelkit.nrg(qrels, runs, prior=f"best-per-group:{DL19 / 'groups.tsv'}"), args.repeat)
        tchron = best_time(lambda: nrg(qrels, runs, chronological([r.name for r in runs])), args.repeat)
        ref_s, n_timed, diff = reference_time(qrels.grades, runs, 0)
        rows.append((label, "read 37 run files (qrelkit reader)", read_s, ""))
        rows.append((label, "NRG@10, all others", t10, ""))
        rows.append((label, "NRG@10, best run per other group (incl. nDCG@10 to pick them)", tbest, ""))
        rows.append((label, "NRG@10, chronological (each run against those before it)", tchron, ""))
        rows.append((label, "NRG full depth, file order, all others", tfull, f"{ref_s / tfull:,.0f}×"))
        rows.append(
            (
                label,
                f"reference algorithm (re-implemented), all others, full depth [{n_timed} targets timed]",
                ref_s,
                f"max abs. difference from qrelkit {diff:.1e}",
            )
        )
    else:
        print(f"(DL19 not found at {DL19}: skipped)")

    grades, runs = synthetic()
    label = "synthetic: 60 runs × 50 q × depth 100"
    t100 = best_time(lambda: nrg(grades, runs, depth=100), args.repeat)
    tfull = best_time(lambda: nrg(grades, runs, depth="full", order="file"), args.repeat)
    t10 = best_time(lambda: nrg(grades, runs, depth=10), args.repeat)
    names = [run.name for run in runs]
    pick = np.random.default_rng(1)
    random_sets = {n: [m for m in names if m != n and pick.random() < 0.5] for n in names}
    trand = best_time(lambda: nrg(grades, runs, random_sets, depth=100), args.repeat)
    tchron = best_time(lambda: nrg(grades, runs, chronological(names), depth=100), args.repeat)
    ref_s, n_timed, diff = reference_time(grades, runs, args.reference_targets)
    judged = sum(len(v) for v in grades.values()) / len(grades)
    rows.append((label, "NRG@100, all others", t100, ""))
    rows.append((label, "NRG@10, all others", t10, ""))
    rows.append((label, "NRG@100, chronological", tchron, ""))
    rows.append((label, "NRG@100, a random half of the others per run (sparse product)", trand, ""))
    rows.append((label, "NRG full depth (=100), file order, all others", tfull, f"{ref_s / tfull:,.0f}×"))
    rows.append(
        (
            label,
            f"reference algorithm (re-implemented) [{n_timed} of 60 targets timed, scaled]",
            ref_s,
            f"max abs. difference from qrelkit {diff:.1e}",
        )
    )
    print(f"synthetic qrels: {judged:.0f} judged documents per query on average")

    print("\n| input | what | seconds | speed-up / check |\n|---|---|---:|---|")
    for input_label, what, seconds, note in rows:
        print(f"| {input_label} | {what} | {seconds:.3f} | {note} |")


if __name__ == "__main__":
    main()
