"""A small track written to files for the command-line tests of issue 34: human grades, runs, and
judges as a judging method writes them (fractional scores, binary grades)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

QUERIES = [f"q{i}" for i in range(12)]
DOCS = [f"d{j}" for j in range(10)]


def write_track(folder: Path, seed: int = 3) -> dict[str, Path]:
    """Human grades 0–3, six runs of falling quality (some with negative scores), and two judges:
    `exam` (fractional scores, a noisy view of the grades) and `binary` (0/1)."""
    rng = np.random.default_rng(seed)
    truth = {q: {d: int(rng.integers(0, 4)) for d in DOCS} for q in QUERIES}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q in QUERIES for d, g in truth[q].items()))
    runs = folder / "runs"
    runs.mkdir(exist_ok=True)
    for r in range(6):
        lines = []
        for q in QUERIES:
            scores = {d: truth[q][d] + rng.normal(0, 0.5 + 0.6 * r) - (3 if r % 2 else 0) for d in DOCS}
            lines += [f"{q} Q0 {d} {i + 1} {scores[d]:.6f} run{r}\n" for i, d in enumerate(sorted(DOCS, key=lambda d: -scores[d]))]
        (runs / f"run{r}.run").write_text("".join(lines))
    judges = folder / "judges"
    judges.mkdir(exist_ok=True)
    exam = "".join(f"{q} 0 {d} {min(max(g / 3 + rng.normal(0, 0.2), 0), 1):.3f}\n" for q in QUERIES for d, g in truth[q].items())
    (judges / "exam.txt").write_text(exam)
    (judges / "binary.txt").write_text("".join(f"{q} 0 {d} {int(g >= 2)}\n" for q in QUERIES for d, g in truth[q].items()))
    (judges / "README.md").write_text("# judgments\n")
    return {"qrels": folder / "qrels.txt", "runs": runs, "judges": judges, "exam": judges / "exam.txt", "binary": judges / "binary.txt"}
