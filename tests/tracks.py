"""A synthetic TREC track shaped like TREC DL 2021 passage (63 runs × 53 queries × depth 100,
~200 graded judgments per query), written as files so that tests go through the readers."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def umbrela_vs_nist(dl19: Path) -> list[str]:
    """`qrelkit agree` on TREC DL 2019: UMBRELA's GPT-4o qrels against NIST's, over the 37 runs."""
    return [
        "agree",
        "--model-qrels",
        str(dl19 / "umbrela-gpt4o.qrels"),
        "--reference-qrels",
        str(dl19 / "qrels.txt"),
        "--runs",
        str(dl19 / "runs"),
    ]


GRADE_SHARES = [0.45, 0.27, 0.17, 0.11]  # grades 0-3, roughly DL21's


def write_track(folder: Path, *, n_runs: int = 63, n_queries: int = 53, depth: int = 100, seed: int = 0) -> tuple[Path, Path]:
    """(qrels file, runs folder). Runs rank a query's candidates by a noisy view of their grade;
    scores have 3 decimals, so ties occur. Run 0 misses the last 3 queries, run 1 has a query
    the qrels lack, run 2 retrieves fewer than 10 documents for some queries."""
    rng = np.random.default_rng(seed)
    runs_dir = folder / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    qrels_lines: list[str] = []
    run_lines: list[list[str]] = [[] for _ in range(n_runs)]
    for q in range(n_queries):
        qid = str(100_000 + 7 * q)
        candidates = [f"msp_{q:03d}_{d:05d}" for d in range(1500)]
        judged = rng.choice(1500, size=rng.integers(120, 280), replace=False)
        grade = np.zeros(1500, np.int64) - 1
        grade[judged] = rng.choice(4, size=len(judged), p=GRADE_SHARES)
        qrels_lines += [f"{qid} 0 {candidates[d]} {grade[d]}" for d in sorted(judged)]
        for r in range(n_runs):
            if r == 0 and q >= n_queries - 3:
                continue
            signal = np.where(grade >= 0, grade, rng.random(1500) * 1.5)
            score = np.round(signal * rng.uniform(0.3, 1.5) + rng.normal(0, 1.0, 1500), 3)
            k = rng.integers(3, 10) if r == 2 and q % 5 == 0 else depth
            top = np.argsort(-score, kind="stable")[:k]
            run_lines[r] += [f"{qid} Q0 {candidates[d]} {i + 1} {score[d]:.3f} run{r:02d}" for i, d in enumerate(top)]
    run_lines[1] += [f"999999 Q0 msp_x_{i} {i + 1} {10 - i} run01" for i in range(5)]
    qrels = folder / "qrels.txt"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    for r, lines in enumerate(run_lines):
        (runs_dir / f"run{r:02d}.run").write_text("\n".join(lines) + "\n")
    return qrels, runs_dir


def write_close_track(folder: Path, *, seed: int = 3, n_runs: int = 63, n_queries: int = 53, depth: int = 100) -> tuple[Path, Path, Path]:
    """(reference qrels, model qrels, runs folder) shaped like TREC DL 2021 with runs of close quality
    (each a noisy view of the grades, scaled by 0.8-1.0) and model qrels that move 40% of the grades
    by one: resampling queries swaps many close runs, so the full-sample τ lies above nearly every
    resample and BCa's bias correction is extreme (as for UMBRELA's Llama-3.2 qrels on DL21)."""
    rng = np.random.default_rng(seed)
    runs_dir = folder / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    scales = rng.uniform(0.8, 1.0, n_runs)
    reference, model, run_lines = [], [], [[] for _ in range(n_runs)]
    for q in range(n_queries):
        qid = str(100_000 + 7 * q)
        candidates = [f"msp_{q:03d}_{d:04d}" for d in range(600)]
        judged = rng.choice(600, size=200, replace=False)
        grade = np.full(600, -1)
        grade[judged] = rng.choice(4, size=200, p=GRADE_SHARES)
        for d in judged:
            moved = grade[d] + (rng.choice([-1, 1]) if rng.random() < 0.4 else 0)
            reference.append(f"{qid} 0 {candidates[d]} {grade[d]}")
            model.append(f"{qid} 0 {candidates[d]} {int(np.clip(moved, 0, 3))}")
        signal = np.where(grade >= 0, grade, rng.random(600) * 1.5)
        for r in range(n_runs):
            score = signal * scales[r] + rng.normal(0, 1, 600)
            top = np.argsort(-score)[:depth]
            run_lines[r] += [f"{qid} Q0 {candidates[d]} {i + 1} {score[d]:.6f} run{r:02d}" for i, d in enumerate(top)]
    (folder / "qrels.txt").write_text("\n".join(reference) + "\n")
    (folder / "model.qrels").write_text("\n".join(model) + "\n")
    for r, lines in enumerate(run_lines):
        (runs_dir / f"run{r:02d}.run").write_text("\n".join(lines) + "\n")
    return folder / "qrels.txt", folder / "model.qrels", runs_dir
