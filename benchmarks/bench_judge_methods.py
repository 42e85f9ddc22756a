"""Time and check one `qrelkit compare` of Arabzadeh and Clarke's twelve GPT-4o judgment methods on TREC DL
2019 (SIGIR 2025, "Benchmarking LLM-based Relevance Judgment Methods"; issue 34): the judgment files as
published, NIST's nDCG@10 against each method's compatibility (p = 0.9), the reference's means as
trec_eval prints them (4 decimals), jackknife intervals over the queries (compare's default; its
--resamples, passed here, counts only for a bootstrap or subsampling --interval) and 1,000 swaps of the
randomisation test per pair of judges (66 pairs): the whole process, timed, its peak memory read from
the kernel.

Each row's τ is set beside the authors' published τ (their Compatibility/Taus/DL19_*.tau, on the full
runs) and, with --authors-repo (a checkout of github.com/Narabzad/llm-relevance-judgement-comparison),
beside what their own script gives on the same runs (Compatibility/compatibility.py -p 0.90, scipy's
τ-b against NIST's printed nDCG@10, as their plot.py computes it).

Usage: python benchmarks/bench_judge_methods.py [--repeat N] [--authors-repo PATH] [--resamples N]
Needs ../shared/data/trec-dl-2019 and ../shared/data/judge-methods-dl19 (or $QRELKIT_DATA).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from _data import shared_data

DL19, METHODS = shared_data() / "trec-dl-2019", shared_data() / "judge-methods-dl19"
KEY = "nDCG@10 vs Compat(p=0.9)"
# The authors' released τ (Compatibility/Taus/DL19_<method>.tau), on the 37 full DL19 runs.
PUBLISHED = {
    "binary": 0.869,
    "exam-binary": 0.794,
    "exam-graded-max": 0.881,
    "exam-graded-mean": 0.863,
    "nuggets-all": 0.863,
    "nuggets-all-strict": 0.857,
    "nuggets-vital": 0.839,
    "nuggets-vital-strict": 0.836,
    "nuggets-weighted": 0.860,
    "nuggets-weighted-strict": 0.824,
    "preferences": 0.911,
    "umbrela-zeroshot": 0.920,
}


def command(resamples: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "qrelkit.cli",
        "compare",
        "--judge",
        str(METHODS),
        "--reference-qrels",
        str(DL19 / "qrels.txt"),
        "--runs",
        str(DL19 / "runs"),
        "--measure",
        "nDCG@10",
        "--judge-measure",
        "Compat(p=0.9)",
        "--reference-decimals",
        "4",
        "--resamples",
        str(resamples),
        "--permutations",
        str(resamples),
        "--json",
    ]


def timed_process(args: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MB, stdout) of one whole process, its usage as the kernel
    counted it for that child alone (wait4)."""
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    stdout = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"compare failed with exit code {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout


def authors_taus(repo: Path) -> dict[str, float]:
    """τ-b as the authors' scripts give it on the shared runs: their compatibility.py per run, NIST's
    nDCG@10 as trec_eval prints it (official-nist.json, which the shared runs reproduce)."""
    from scipy.stats import kendalltau

    spec = importlib.util.spec_from_file_location("authors_compatibility", repo / "Compatibility" / "compatibility.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    official = json.loads((DL19 / "official-nist.json").read_text())
    runs = sorted((DL19 / "runs").glob("*.run"))
    out = {}
    for judge in PUBLISHED:
        means = {}
        for run in runs:
            sys.argv = ["compatibility.py", "-p", "0.90", str(METHODS / f"{judge}.txt"), str(run)]
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                script.main()
            tag, _, mean = printed.getvalue().strip().splitlines()[-1].split(",")
            means[tag] = float(mean)
        names = sorted(means)
        out[judge] = float(kendalltau([official[n]["ndcg_cut_10"] for n in names], [means[n] for n in names])[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs (the median is reported)")
    parser.add_argument("--resamples", type=int, default=1000, help="randomisation swaps (and bootstrap resamples) (default 1000)")
    parser.add_argument("--authors-repo", type=Path, default=os.environ.get("QRELKIT_JUDGE_METHODS_REPO"), help="the authors' repository")
    args = parser.parse_args()
    if not (METHODS / "binary.txt").is_file():
        raise SystemExit(f"the judge-method files were not found at {METHODS}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}")
    runs = []
    for _ in range(args.repeat):
        before = os.getloadavg()[0]
        wall, cpu, rss, stdout = timed_process(command(args.resamples))
        runs.append((wall, cpu, rss, before, os.getloadavg()[0]))
        print(f"run: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:.0f} MB, load average {before:.1f} before, {runs[-1][4]:.1f} after")
    wall, cpu, rss, _, _ = sorted(runs)[len(runs) // 2]
    print(f"median: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:.0f} MB (jackknife intervals, {args.resamples} swaps)")
    found = {j["name"]: j["audit"]["systems"][KEY]["kendall_tau"] for j in json.loads(stdout)["judges"]}
    script = authors_taus(args.authors_repo) if args.authors_repo else {}
    print("\n| method | qrelkit τ | authors' script, same runs | Δ | published (full runs) |")
    print("|---|---:|---:|---:|---:|")
    for judge, published in PUBLISHED.items():
        theirs = script.get(judge)
        delta = "–" if theirs is None else f"{found[judge] - theirs:+.6f}"
        print(f"| {judge} | {found[judge]:.6f} | {'–' if theirs is None else f'{theirs:.6f}'} | {delta} | {published:.3f} |")


if __name__ == "__main__":
    main()
