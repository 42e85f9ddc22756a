"""Time the topic bootstrap of `qrelkit agree` on DL19: 37 runs × 43 topics, 1000 resamples.

Compares qrelkit's vectorised bootstrap (one matrix product per measure, all resamples scored at
once) with the loop people write by hand (scipy per resample), and with re-running ir_measures
per resample (extrapolated from a few resamples: it is the approach this design avoids).

Usage: python benchmarks/bench_agreement.py [--repeat N] [--samples N]
Needs ../shared/data/trec-dl-2019 (developer machines and CI).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from qrelkit import agree
from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.agreement import correlate_systems
from qrelkit.evaluate.bias import group_bias, groups_from_file
from qrelkit.evaluate.bootstrap import resample_weights
from qrelkit.io import Run, RunEntry, read_qrels, read_runs

DL19 = Path(os.environ.get("QRELKIT_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") / "trec-dl-2019"
MEASURES = ["nDCG@10", "AP(rel=2)"]


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def tau_ap_loop(reference: np.ndarray, estimate: np.ndarray) -> float:
    order = np.argsort(-estimate, kind="stable")
    total = sum(np.sum(reference[order[:i]] > reference[order[i]]) / i for i in range(1, len(order)))
    return 2.0 / (len(order) - 1) * total - 1.0


def scipy_loop(model, reference, weights) -> None:
    """The hand-written baseline: per resample, index the topics and call scipy."""
    n_topics = len(model.queries)
    for measure in MEASURES:
        model_matrix, reference_matrix = model.matrix(measure), reference.matrix(measure)
        for row in np.rint(weights * n_topics).astype(int):
            topics = np.repeat(np.arange(n_topics), row)
            x, y = reference_matrix[:, topics].mean(axis=1), model_matrix[:, topics].mean(axis=1)
            stats.kendalltau(x, y), stats.spearmanr(x, y), stats.pearsonr(x, y), tau_ap_loop(x, y)


def rerun_ir_measures(model_qrels, reference_qrels, runs, weights, resamples: int) -> None:
    """What the design forbids: evaluate both qrels again on each resample's topics."""
    queries = sorted(reference_qrels.grades)
    by_query = [{q: run.scores.get(q, {}) for q in queries} for run in runs]
    for row in np.rint(weights[:resamples] * len(queries)).astype(int):
        # A topic drawn k times becomes k distinct query ids, so its values count k times.
        drawn = [(q, k) for q, count in zip(queries, row) for k in range(count)]
        resampled_runs = [
            Run(run.name, tuple(RunEntry(f"{q}#{k}", d, 0, s) for q, k in drawn for d, s in scores[q].items()))
            for run, scores in zip(runs, by_query)
        ]
        for qrels in (model_qrels, reference_qrels):
            evaluate_runs({f"{q}#{k}": qrels.grades[q] for q, k in drawn}, resampled_runs, MEASURES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").is_file():
        sys.exit(f"needs {DL19}")
    reference_qrels, model_qrels = read_qrels(DL19 / "qrels.txt"), read_qrels(DL19 / "umbrela-gpt4o.qrels")
    runs = read_runs([DL19 / "runs"])
    reference, model = evaluate_runs(reference_qrels, runs, MEASURES), evaluate_runs(model_qrels, runs, MEASURES)
    weights = resample_weights(len(reference.queries), args.samples, seed=0)
    groups = groups_from_file(DL19 / "groups.tsv", "family", reference.runs)

    rows = [
        (
            "evaluate 37 runs under both qrels, 2 measures (once)",
            timed(lambda: (evaluate_runs(reference_qrels, runs, MEASURES), evaluate_runs(model_qrels, runs, MEASURES)), args.repeat),
        ),
        (
            f"qrelkit bootstrap: τ-b, ρ, r, τ_AP × 2 measures, {args.samples} resamples",
            timed(lambda: correlate_systems(model, reference, weights=weights), args.repeat),
        ),
        (
            f"qrelkit bootstrap: Relative Δ, 2 groups × 2 measures, {args.samples} resamples",
            timed(lambda: group_bias(model, reference, groups, weights=weights), args.repeat),
        ),
        (
            f"`qrelkit agree` end to end (read files, evaluate, κ/α, {args.samples} resamples, bias)",
            timed(
                lambda: agree(
                    model_qrels=str(DL19 / "umbrela-gpt4o.qrels"),
                    reference_qrels=str(DL19 / "qrels.txt"),
                    runs=[str(DL19 / "runs")],
                    groups=f"{DL19 / 'groups.tsv'}:family",
                    resamples=args.samples,
                ),
                args.repeat,
            ),
        ),
        (f"baseline: scipy + Python τ_AP per resample, {args.samples} resamples", timed(lambda: scipy_loop(model, reference, weights), 1)),
    ]
    few = 10
    per_resample = timed(lambda: rerun_ir_measures(model_qrels, reference_qrels, runs, weights, few), 1) / few
    rows.append((f"baseline: re-run ir_measures per resample (extrapolated from {few})", per_resample * args.samples))

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, numpy {np.__version__}")
    print(f"| step (DL19: 37 runs × 43 topics) | median s ({args.repeat} runs; baselines once) |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
