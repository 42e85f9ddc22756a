"""Fréchet distance on DL19: speed against the sqrtm formula, and the FD@k vs nDCG@10 table.

speed: one FD from the same (μ, Σ) statistics, qrelkit (eigenvalues of a symmetric PSD matrix,
       in the smallest space) vs the pytorch-fid / clean-fid formula (scipy.linalg.sqrtm of
       Σ₁Σ₂), at d = 384 (MiniLM on DL19) and d = 768 (synthetic, same n); then the query
       bootstrap (N = 1000) of FD@10 for all 37 runs, qrelkit vs the sqrtm route
       (extrapolated from a few resamples).
table: Kendall τ between FD@k (k ∈ {1, 10}, at most m ∈ {1, 5, 10, all} relevant per query)
       and NIST's nDCG@10 over the 37 runs, the URR variant, seeds, and the figures.

Usage: python benchmarks/bench_fd.py [--part speed|bootstrap|table|all] [--cache DB] [--backend onnx|torch]
                                     [--figures DIR] [--resamples N]
Needs ../shared/data/trec-dl-2019. Embeddings come from --cache (a qrelkit database, e.g. the one
`bench_judging.py --store` writes) or are computed (all 9,139 passages: minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg
from _data import DL19
from scipy import stats

from qrelkit.embed import embed_with_cache, load_text_embedder
from qrelkit.evaluate.bootstrap import resample_counts
from qrelkit.evaluate.fd import (
    frechet_distance,
    frechet_distance_from_stats,
    item_sample,
    relevant_items,
    retrieved_items,
)
from qrelkit.evaluate.fd.bootstrap import bootstrap_fd
from qrelkit.evaluate.fd.runs import FDSettings, fd_of_runs
from qrelkit.io import Qrel, Qrels, list_run_files, read_documents, read_qrels, read_runs


def sqrtm_fd(mu1, sigma1, mu2, sigma2) -> float:
    """pytorch-fid's calculate_frechet_distance, without its eps retry."""
    covmean = scipy.linalg.sqrtm(sigma1 @ sigma2)
    if np.iscomplexobj(covmean):
        covmean = covmean.real
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    samples, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), value


def load(cache: Path | None, backend: str, part: str):
    """DL19 and the vectors of the passages the chosen part compares (relevant ones and each run's
    top 10 for the speed parts; every retrieved one for the table, which also scores URR)."""
    qrels = read_qrels(DL19 / "qrels.txt")
    runs = read_runs(list_run_files([DL19 / "runs"]))
    relevant = relevant_items(qrels)
    needed = {d for docs in relevant.values() for d in docs}
    for run in runs:
        lists = run.ranking().values() if part in ("table", "all") else retrieved_items(run, list(relevant), 10).values()
        needed.update(d for docs in lists for d in docs)
    documents = {d.docid: d.text for d in read_documents(DL19 / "passages.jsonl") if d.docid in needed}
    embedder = load_text_embedder("minilm", backend, progress=True)
    if cache is not None:
        from qrelkit.storage import Store

        with Store(cache) as store:
            vectors = embed_with_cache(store, embedder, "document", documents)
    else:
        vectors = embed_with_cache(None, embedder, "document", documents)
    nist = {run: v["ndcg_cut_10"] for run, v in json.loads((DL19 / "official-nist.json").read_text()).items()}
    return qrels, runs, vectors, nist, embedder.embedder_id


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (the bootstrap's worker processes)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def bootstrap_times(qrels, runs, vectors, resamples: int) -> None:
    """The query bootstrap of FD@10 for every run, by relevant items per query."""
    qids = list(relevant_items(qrels))
    weights = resample_counts(len(qids), resamples, seed=0)
    print(f"### Bootstrap over queries: {resamples} resamples × {len(runs)} runs, FD@10 (load {os.getloadavg()[0]:.1f})\n")
    print("| relevant per query | n_rel | drawn relevant per resample (mean) | seconds | CPU seconds (this process and its workers) |")
    print("|---|---:|---:|---:|---:|")
    for max_rel in (1, 5, 10, None):
        rel_sample = item_sample(relevant_items(qrels, max_rel=max_rel), qids, vectors)
        run_samples = [item_sample(retrieved_items(run, qids, 10), qids, vectors) for run in runs]
        drawn = np.mean([(row[rel_sample.query_index] > 0).sum() for row in weights])
        start, cpu = time.perf_counter(), cpu_seconds()
        bootstrap_fd(rel_sample, run_samples, weights)
        label = "all" if max_rel is None else str(max_rel)
        wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        print(f"| {label} | {len(rel_sample)} | {drawn:.0f} | {wall:.1f} | {cpu:.1f} |", flush=True)


def moments(x: np.ndarray):
    return x.mean(axis=0), np.cov(x, rowvar=False)


def speed(qrels, runs, vectors, resamples: int) -> None:
    print("### One FD from the same statistics (median of 3)\n")
    print("| case | n₁ | n₂ | d | qrelkit ms | sqrtm ms | speed-up | |Δ| / FD |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    relevant = relevant_items(qrels)
    qids = list(relevant)
    rel = item_sample(relevant, qids, vectors).vectors
    best = max(runs, key=lambda r: len(r))  # any run; sizes are what matter
    ret = item_sample(retrieved_items(best, qids, 10), qids, vectors).vectors
    rng = np.random.default_rng(0)
    synthetic = (
        rng.normal(size=(len(rel), 768)) @ (np.eye(768) + 0.05 * rng.normal(size=(768, 768))),
        rng.normal(0.05, 1.1, size=(len(ret), 768)),
    )
    for case, (x, y) in {"DL19 FD@10, all rel. (MiniLM)": (rel, ret), "synthetic Gaussian": synthetic}.items():
        mu1, s1 = moments(x)
        mu2, s2 = moments(y)
        statistics_ = (mu1, s1, mu2, s2)
        ours_s, ours = timed(lambda st=statistics_: frechet_distance_from_stats(*st).value)
        ref_s, ref = timed(lambda st=statistics_: sqrtm_fd(*st))
        print(
            f"| {case}, from (μ, Σ) | {len(x)} | {len(y)} | {x.shape[1]} | {ours_s * 1e3:.1f} | {ref_s * 1e3:.1f} | "
            f"{ref_s / ours_s:.1f}× | {abs(ours - ref) / ours:.1e} |"
        )
        samples_s, _ = timed(lambda x=x, y=y: frechet_distance(x, y).value)
        print(f"| {case}, from the samples (incl. μ, Σ, ranks) | {len(x)} | {len(y)} | {x.shape[1]} | {samples_s * 1e3:.1f} | | | |")
    one = relevant_items(qrels, max_rel=1)
    x = item_sample(one, qids, vectors).vectors
    y = item_sample(retrieved_items(best, qids, 1), qids, vectors).vectors
    mu1, s1 = moments(x)
    mu2, s2 = moments(y)
    ours_s, ours = timed(lambda: frechet_distance(x, y).value)
    ref_s, ref = timed(lambda: sqrtm_fd(mu1, s1, mu2, s2))
    print(
        f"| DL19 FD@1, m=1: n < d (rank 42), from the samples | {len(x)} | {len(y)} | {x.shape[1]} | {ours_s * 1e3:.1f} | "
        f"{ref_s * 1e3:.1f} | {ref_s / ours_s:.1f}× | {abs(ours - ref) / ours:.1e} |"
    )

    print(f"\n### Bootstrap over queries: {resamples} resamples × {len(runs)} runs, FD@10\n")
    print("| relevant per query | n_rel | qrelkit s | sqrtm route s (extrapolated) | speed-up |")
    print("|---|---:|---:|---:|---:|")
    weights = resample_counts(len(qids), resamples, seed=0)
    for max_rel in (1, 5, 10, None):
        chosen = relevant_items(qrels, max_rel=max_rel)
        rel_sample = item_sample(chosen, qids, vectors)
        run_samples = [item_sample(retrieved_items(run, qids, 10), qids, vectors) for run in runs]
        start = time.perf_counter()
        bootstrap_fd(rel_sample, run_samples, weights)
        ours_s = time.perf_counter() - start
        # the sqrtm route on the same sufficient statistics: weighted μ and Σ per resample, then sqrtm
        probe = 2
        start = time.perf_counter()
        for row in weights[:probe]:
            x = np.repeat(rel_sample.vectors, row[rel_sample.query_index].astype(int), axis=0)
            mu1, s1 = moments(x)
            for sample in run_samples:
                y = np.repeat(sample.vectors, row[sample.query_index].astype(int), axis=0)
                sqrtm_fd(mu1, s1, *moments(y))
        ref_s = (time.perf_counter() - start) / probe * resamples
        label = "all" if max_rel is None else str(max_rel)
        print(f"| {label} | {len(rel_sample)} | {ours_s:.1f} | {ref_s:.0f} | {ref_s / ours_s:.0f}× |")


def table(qrels, runs, vectors, nist, embedder_id: str, figures: Path | None) -> None:
    qids_run = [r.name for r in runs]
    ndcg = {r: nist[r] for r in qids_run}

    def tau(report, label):
        values = report.values(label)
        names = [r for r in values if values[r] is not None]
        return stats.kendalltau([values[r] for r in names], [ndcg[r] for r in names]).statistic

    print(f"### Kendall τ of FD@k with NIST nDCG@10 over {len(runs)} runs ({embedder_id}, relevant = grade ≥ 2, seed 0)\n")
    print("| relevant per query (m) | n_rel | FD@1 τ | FD@10 τ |")
    print("|---|---:|---:|---:|")
    panels = []
    reports = {}
    for max_rel in (1, 5, 10, None):
        report = fd_of_runs(qrels, runs, vectors, FDSettings(ks=(1, 10), max_rel=max_rel), embedder=embedder_id)
        reports[max_rel] = report
        label = "all" if max_rel is None else str(max_rel)
        print(f"| {label} | {report.n_rel} | {tau(report, 'FD@1'):.3f} | {tau(report, 'FD@10'):.3f} |")
        for k in (1, 10):
            panels.append((k, max_rel, report.values(f"FD@{k}")))

    print("\nSparsification is random within a grade; τ over seeds 0–9:\n")
    print("| m | FD@1 τ mean ± sd | FD@10 τ mean ± sd |")
    print("|---|---:|---:|")
    for max_rel in (1, 5, 10):
        taus = {1: [], 10: []}
        for seed in range(10):
            report = fd_of_runs(qrels, runs, vectors, FDSettings(ks=(1, 10), max_rel=max_rel, seed=seed))
            for k in (1, 10):
                taus[k].append(tau(report, f"FD@{k}"))
        print(f"| {max_rel} | {np.mean(taus[1]):.3f} ± {np.std(taus[1]):.3f} | {np.mean(taus[10]):.3f} ± {np.std(taus[10]):.3f} |")

    print("\n### URR (the first k unjudged retrieved items per query)\n")
    report = fd_of_runs(qrels, runs, vectors, FDSettings(ks=(1, 10), urr=True))
    with_items = [r for r, by in report.runs.items() if by["URR-FD@10"].n_ret > 0]
    print(
        f"With NIST's qrels: {len(with_items)} of {len(runs)} runs have any unjudged item in the shared runs "
        f"(they are cut to judged passages), so URR-FD is undefined there.\n"
    )
    print("Simulated sparse labels (as MS MARCO dev): keep only the m sampled relevant items per query as the")
    print("qrels; URR skips those and scores the first k other retrieved items.\n")
    print("| sparse qrels (m) | FD@1 τ | URR-FD@1 τ | FD@10 τ | URR-FD@10 τ | mean n_ret URR@10 |")
    print("|---|---:|---:|---:|---:|---:|")
    for max_rel in (1, 5, 10):
        chosen = relevant_items(qrels, max_rel=max_rel)
        grades = qrels.grades
        sparse = Qrels(f"sparse-{max_rel}", tuple(Qrel(q, d, grades[q][d]) for q, docs in chosen.items() for d in docs))
        plain = fd_of_runs(sparse, runs, vectors, FDSettings(ks=(1, 10)))
        urr = fd_of_runs(sparse, runs, vectors, FDSettings(ks=(1, 10), urr=True))
        n_ret = np.mean([by["URR-FD@10"].n_ret for by in urr.runs.values()])
        print(
            f"| {max_rel} | {tau(plain, 'FD@1'):.3f} | {tau(urr, 'URR-FD@1'):.3f} | {tau(plain, 'FD@10'):.3f} | "
            f"{tau(urr, 'URR-FD@10'):.3f} | {n_ret:.0f} |"
        )

    if figures is not None:
        from qrelkit.evaluate.fd.runs import fd_metric_tau
        from qrelkit.report.plots.fd import plot_fd_bootstrap, plot_fd_vs_metric

        figures.mkdir(parents=True, exist_ok=True)
        panels.sort(key=lambda panel: (panel[0], panel[1] is None, panel[1] or 0))  # by k, then m
        grid = [
            (f"FD@{k}, at most {m} relevant per query", values, fd_metric_tau(values, ndcg)) for k, m, values in panels if m is not None
        ]
        plot_fd_vs_metric(grid, ndcg, "NIST nDCG@10", figures / "fd-vs-ndcg-dl19.png", y_label="FD (MiniLM)")
        boot = fd_of_runs(qrels, runs, vectors, FDSettings(ks=(10,), max_rel=1, resamples=1000), embedder=embedder_id)
        plot_fd_bootstrap(boot, "FD@10", figures / "fd-bootstrap-dl19.png", order=ndcg, x_label="runs by NIST nDCG@10, best first")
        print(f"\n(figures written to {figures})", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["speed", "bootstrap", "table", "all"], default="all")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--backend", choices=["onnx", "torch"], default="onnx")
    parser.add_argument("--figures", type=Path, default=None)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").is_file():
        print(f"DL19 data not found at {DL19}", file=sys.stderr)
        return 1
    qrels, runs, vectors, nist, embedder_id = load(args.cache, args.backend, args.part)
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}.\n")
    if args.part in ("speed", "all"):
        speed(qrels, runs, vectors, args.resamples)
        print()
    if args.part == "bootstrap":
        bootstrap_times(qrels, runs, vectors, args.resamples)
    if args.part in ("table", "all"):
        table(qrels, runs, vectors, nist, embedder_id, args.figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
