"""Score runs under qrels through ir_measures (pytrec_eval underneath).

A mean runs over the queries of the qrels; a run that misses one of them scores 0 on it
(ir_measures' behaviour, and trec_eval's with -c). Queries a run has but the qrels lack
are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ir_measures
import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.io.trec import Qrels, Run


def parse_measures(names: Iterable[str]) -> list[tuple[str, object]]:
    """(name as written, ir_measures measure) for each name; unknown names are a clear error."""
    parsed = []
    for name in names:
        try:
            parsed.append((name, ir_measures.parse_measure(name)))
        except (ValueError, NameError, SyntaxError, TypeError) as exc:
            raise QrelkitError(f"unknown measure {name!r} ({exc}); examples: nDCG@10, 'AP(rel=2)', 'RR(rel=2)', P@10, R@100") from None
    return parsed


@dataclass(frozen=True)
class Evaluation:
    """Per-query values of every run and measure, over one fixed list of queries."""

    measures: list[str]
    queries: list[str]
    runs: list[str]
    # values[run][measure] is a vector aligned with ``queries``
    values: dict[str, dict[str, np.ndarray]]

    def mean(self, run: str, measure: str) -> float:
        return float(self.values[run][measure].mean()) if self.queries else 0.0

    def means(self) -> dict[str, dict[str, float]]:
        return {run: {m: self.mean(run, m) for m in self.measures} for run in self.runs}

    def matrix(self, measure: str) -> np.ndarray:
        """runs × queries matrix of one measure (rows in ``runs`` order)."""
        return np.vstack([self.values[run][measure] for run in self.runs])

    def to_dict(self, per_query: bool = False) -> dict:
        """`{"measures", "queries": N, "runs": {run: {measure: mean}}}`, and each query's value with ``per_query``."""
        out: dict = {"measures": list(self.measures), "queries": len(self.queries), "runs": self.means()}
        if per_query:
            out["per_query"] = {run: {m: dict(zip(self.queries, self.values[run][m].tolist())) for m in self.measures} for run in self.runs}
        return out

    def to_pandas(self):
        """One row per (run, query, measure, value); pandas is optional."""
        import pandas as pd

        rows = [(run, q, m, float(v)) for run in self.runs for m in self.measures for q, v in zip(self.queries, self.values[run][m])]
        return pd.DataFrame(rows, columns=["run", "query", "measure", "value"])


def evaluate_runs(qrels: Qrels | dict[str, dict[str, int]], runs: Sequence[Run], measures: Sequence[str]) -> Evaluation:
    grades = qrels.grades if isinstance(qrels, Qrels) else qrels
    parsed = parse_measures(measures)
    queries = sorted(grades)
    position = {qid: i for i, qid in enumerate(queries)}
    # One evaluator per measure: ir_measures 0.4 can mix up measures of one family that differ
    # only in parameters (nDCG@10 next to nDCG(gains=...)@10) when they share an evaluator.
    evaluators = [(name, ir_measures.evaluator([measure], grades)) for name, measure in parsed]
    values: dict[str, dict[str, np.ndarray]] = {}
    for run in runs:
        scores = {qid: docs for qid, docs in run.scores.items() if qid in position}
        per_measure = {}
        for name, evaluator in evaluators:
            vector = np.zeros(len(queries))
            for metric in evaluator.iter_calc(scores):
                if metric.query_id in position:
                    vector[position[metric.query_id]] = metric.value
            per_measure[name] = vector
        values[run.name] = per_measure
    return Evaluation([name for name, _ in parsed], queries, [run.name for run in runs], values)
