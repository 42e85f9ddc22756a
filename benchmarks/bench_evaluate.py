"""Time to load and evaluate the 37 DL19 runs × 43 topics: qrelkit vs pytrec_eval directly.

Usage: python benchmarks/bench_evaluate.py [--repeat N]
Needs ../shared/data/trec-dl-2019 (developer machines and CI).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytrec_eval

from qrelkit.evaluate import evaluate_runs
from qrelkit.io import list_run_files, read_qrels, read_runs
from qrelkit.storage import Store

DL19 = Path(os.environ.get("QRELKIT_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") / "trec-dl-2019"


def pytrec_direct() -> dict[str, float]:
    """The baseline a user writes by hand: parse with Python, score with pytrec_eval."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (DL19 / "qrels.txt").read_text().splitlines():
        qid, _, docid, grade = line.split()
        qrels.setdefault(qid, {})[docid] = int(grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    means = {}
    for path in sorted((DL19 / "runs").iterdir()):
        run: dict[str, dict[str, float]] = {}
        for line in path.read_text().splitlines():
            qid, _, docid, _, score, _ = line.split()
            run.setdefault(qid, {})[docid] = float(np.float32(score))
        per_query = evaluator.evaluate(run)
        means[path.stem] = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)
    return means


def qrelkit_files() -> None:
    evaluate_runs(read_qrels(DL19 / "qrels.txt"), read_runs([DL19 / "runs"]), ["nDCG@10"])


def qrelkit_load_db() -> None:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "b.duckdb") as store:
        for path in list_run_files([DL19 / "runs"]):
            store.load_run(path)
        store.load_qrels(DL19 / "qrels.txt")


def qrelkit_from_db(db: Path) -> None:
    with Store(db, read_only=True) as store:
        evaluate_runs(store.qrels("qrels"), store.runs(), ["nDCG@10"])


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").is_file():
        sys.exit(f"needs {DL19}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "dl19.duckdb"
        with Store(db) as store:
            for path in list_run_files([DL19 / "runs"]):
                store.load_run(path)
            store.load_qrels(DL19 / "qrels.txt")
        rows = [
            ("pytrec_eval directly (parse + nDCG@10)", timed(pytrec_direct, args.repeat)),
            ("qrelkit from files (validate + nDCG@10)", timed(qrelkit_files, args.repeat)),
            ("qrelkit load 37 runs + qrels into DuckDB", timed(qrelkit_load_db, args.repeat)),
            ("qrelkit evaluate from DuckDB", timed(lambda: qrelkit_from_db(db), args.repeat)),
        ]
    base = rows[0][1]
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}")
    print(f"| step (37 runs × 43 topics, nDCG@10) | median s ({args.repeat} runs) | × pytrec_eval |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {seconds / base:.2f} |")


if __name__ == "__main__":
    main()
