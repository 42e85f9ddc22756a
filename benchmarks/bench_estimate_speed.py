"""How long `qrelkit assess plan` and `qrelkit estimate` take as whole processes on a DL-sized track
(issue 43's goal: under 5 s each): 60 runs x 50 queries at depth 1,000 (benchmarks/synthetic_track.py),
a pool of the 200 judged pairs of each query and the runs' top 10 (about 10,000 pairs), a judge that
errs by a grade now and then, 1,000 human labels.

Usage: python benchmarks/bench_estimate_speed.py [--repeats 3] [--budget 1000]
Prints each command's wall time (median of the repeats) with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_track import ensure_track  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def judge_file(qrels: Path, out: Path) -> Path:
    rng = np.random.default_rng(1)
    lines = []
    for line in qrels.read_text().splitlines():
        qid, _, docid, grade = line.split()
        lines.append(f"{qid} 0 {docid} {int(np.clip(int(grade) + rng.choice([-1, 0, 0, 0, 1]), 0, 3))}")
    out.write_text("\n".join(lines) + "\n")
    return out


def timed(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "qrelkit.cli", *args], capture_output=True, text=True, env=environ)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(done.stderr)
    return seconds, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args()
    qrels, runs = ensure_track(60, 50, 1000, judged=200)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        judge = judge_file(qrels, work / "judge.qrels")
        run_dir = work / "runs"
        run_dir.mkdir()
        for path in runs:
            (run_dir / path.name).symlink_to(path)
        plans, estimates = [], []
        load = os.getloadavg()[0]
        for repeat in range(args.repeats):
            db = work / f"db{repeat}.duckdb"
            seconds, _ = timed("assess", "plan", "--judge-qrels", str(judge), "--runs", str(run_dir), "--budget", str(args.budget),
                               "--db", str(db), "--out", str(work / f"pairs{repeat}.tsv"), "--json")  # fmt: skip
            plans.append(seconds)
            truth = {(line.split()[0], line.split()[2]): line.split()[3] for line in qrels.read_text().splitlines()}
            rows = [line.split("\t")[:2] for line in (work / f"pairs{repeat}.tsv").read_text().splitlines()[1:]]
            human = work / f"human{repeat}.qrels"
            human.write_text("".join(f"{q} 0 {d} {truth.get((q, d), '0')}\n" for q, d in rows))
            common = ["--db", str(db), "--judge-qrels", str(judge), "--human-qrels", str(human), "--runs", str(run_dir)]
            seconds, done = timed("estimate", *common, "--measure", "nDCG@10", "--json")
            estimates.append(seconds)
        every, _ = timed("estimate", *common, "--json")
        print(f"track: 60 runs x 50 queries, depth 1,000; judged pairs {len(truth):,}; budget {args.budget}")
        print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
        print(f"assess plan: median {statistics.median(plans):.2f} s ({', '.join(f'{s:.2f}' for s in plans)})")
        print(f"estimate --measure nDCG@10: median {statistics.median(estimates):.2f} s ({', '.join(f'{s:.2f}' for s in estimates)})")
        print(f"estimate, its four default measures (nDCG@10, P@10, AP, RR): {every:.2f} s")


if __name__ == "__main__":
    main()
