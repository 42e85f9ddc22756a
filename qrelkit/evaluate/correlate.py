"""Rank correlations between orderings of the same runs (seed 000, Table 3: Kendall τ between
evaluation measures over the retrieval methods; seed 001, Table 2: τ between nDCG@10 under full
qrels and under qrels cut to at most M relevant per query).

An ordering is the runs' mean scores under one (measure, qrels) pair. Every pair of orderings gets
Kendall τ-b, Spearman ρ and τ_AP. τ-b and ρ are symmetric; τ_AP is not: entry [i][j] takes
ordering i (the row) as the truth and j as the estimate, so it weighs swaps at the top of i.
A measure where lower is better (none of trec_eval's) would correlate negatively, as FD does in
seed 000's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import kendall_tau_b, spearman_rho, tau_ap
from qrelkit.evaluate.labels import finite_or_none
from qrelkit.io.results import Result

CORRELATIONS = {"kendall_tau": kendall_tau_b, "spearman_rho": spearman_rho, "tau_ap": tau_ap}
CORRELATION_NAMES = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "tau_ap": "τ_AP (row = truth)"}


@dataclass(frozen=True, repr=False)
class RankCorrelations(Result):
    """Each statistic as a matrix over ``orderings`` (rows and columns in that order)."""

    orderings: list[str]  # labels, e.g. "nDCG@10" or "qrels (max-rel 1, top-grade, seed 0)"
    runs: list[str]
    scores: dict[str, dict[str, float]]  # ordering -> run -> mean score
    matrices: dict[str, np.ndarray]  # statistic -> (orderings × orderings)
    queries: int = 0  # the queries every mean runs over
    notes: list[str] = field(default_factory=list)  # how each ordering was made, where it needs saying

    def summary(self) -> str:
        return f"orderings={self.orderings}, runs={len(self.runs)}, queries={self.queries}"

    def value(self, statistic: str, row: str, column: str) -> float:
        return float(self.matrices[statistic][self.orderings.index(row), self.orderings.index(column)])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`qrelkit correlate --json`); an undefined correlation is null."""
        return {
            "orderings": list(self.orderings),
            "runs": len(self.runs),
            "queries": self.queries,
            "correlations": {
                name: {
                    row: {col: finite_or_none(matrix[i, j]) for j, col in enumerate(self.orderings)} for i, row in enumerate(self.orderings)
                }
                for name, matrix in self.matrices.items()
            },
            "tau_ap_rows_are_the_truth": True,
            "scores": self.scores,
            "notes": list(self.notes),
        }

    def to_pandas(self):
        """One row per (statistic, row ordering, column ordering, value); pandas is optional."""
        from qrelkit.io.results import pandas

        rows = [
            (name, row, col, float(matrix[i, j]))
            for name, matrix in self.matrices.items()
            for i, row in enumerate(self.orderings)
            for j, col in enumerate(self.orderings)
        ]
        return pandas().DataFrame(rows, columns=["statistic", "ordering", "against", "value"])


def rank_correlations(scores: dict[str, dict[str, float]], *, queries: int = 0, notes: list[str] | None = None) -> RankCorrelations:
    """Kendall τ-b, Spearman ρ and τ_AP between every two orderings of ``scores`` (ordering -> run
    -> score), over the runs every ordering scores."""
    orderings = list(scores)
    if len(orderings) < 2:
        raise QrelkitError(f"a correlation needs two orderings of the runs (two measures, or two qrels sets); got {orderings}")
    runs = sorted(set.intersection(*(set(by_run) for by_run in scores.values())))
    if len(runs) < 3:
        raise QrelkitError(f"rank correlations need at least 3 runs scored by every ordering, got {len(runs)}")
    vectors = {label: np.array([scores[label][run] for run in runs], np.float64) for label in orderings}
    matrices = {
        name: np.array([[function(vectors[row], vectors[column]) for column in orderings] for row in orderings])
        for name, function in CORRELATIONS.items()
    }
    notes = list(notes or []) + tie_notes(orderings, vectors, matrices["tau_ap"])
    return RankCorrelations(
        orderings, runs, {label: {run: scores[label][run] for run in runs} for label in orderings}, matrices, queries, notes
    )


def tie_notes(orderings: list[str], vectors: dict[str, np.ndarray], tau_ap_matrix: np.ndarray) -> list[str]:
    """A sentence for each ordering in which runs tie: τ_AP (defined without ties) counts a pair tied
    under the truth as half correct, so it falls short of 1 even against the ordering itself."""
    notes = []
    for i, label in enumerate(orderings):
        values = vectors[label]
        tied = int(sum(n * (n - 1) // 2 for n in np.unique(values, return_counts=True)[1]))
        if tied:
            notes.append(
                f"{label}: {tied} pair{'s' if tied != 1 else ''} of runs tie; τ_AP counts a pair tied under the truth as half "
                f"correct, so τ_AP of {label} with itself is {tau_ap_matrix[i, i]:.4f}, not 1 (τ-b and ρ correct for ties: 1)"
            )
    return notes
