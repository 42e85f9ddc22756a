"""Score runs under qrels: the common measures on arrays (`measures.py`), any other through
ir_measures (pytrec_eval underneath).

A mean runs over the queries of the qrels; a run that misses one of them scores 0 on it
(ir_measures' behaviour, and trec_eval's with -c). Queries a run has but the qrels lack
are ignored. Runs are taken one at a time and only their per-query values are kept, so
`evaluate_runs` over an iterator of runs (`qrelkit.io.iter_runs`) holds one run in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.measures import Measure, compute, vectorised_measure
from qrelkit.evaluate.ranked import JudgedPairs, rank_run, rank_run_by_docid_ascending
from qrelkit.evaluate.trec_names import from_trec_eval
from qrelkit.io import arrays
from qrelkit.io.trec import Qrels, Run


def _ir_measures_measure(name: str) -> Any:
    import ir_measures  # only for measures not computed here: its import costs ~0.5 s

    try:
        return ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError) as exc:
        raise QrelkitError(f"unknown measure {name!r} ({exc}); examples: nDCG@10, 'AP(rel=2)', 'RR(rel=2)', P@10, R@100") from None


def parse_measures(names: Iterable[str]) -> list[tuple[str, Any]]:
    """(name as written, measure) for each name: a vectorised `Measure`, or an ir_measures
    measure for the rest; unknown names are a clear error."""
    parsed = []
    for name in names:
        spelled = from_trec_eval(name) or name  # trec_eval's names (ndcg_cut_10, map, recip_rank) too
        parsed.append((name, vectorised_measure(spelled) or _ir_measures_measure(spelled)))
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


def _qrels_of(grades: Mapping[str, Mapping[str, int]]) -> Qrels:
    rows = [(qid, docid, grade) for qid, judged in grades.items() for docid, grade in judged.items()]
    table = arrays.table(
        {
            "qid": arrays.column([r[0] for r in rows], pa.string()),
            "iteration": arrays.column(["0"] * len(rows), pa.string()),
            "docid": arrays.column([r[1] for r in rows], pa.string()),
            "grade": arrays.column([r[2] for r in rows], pa.int64()),
        }
    )
    return Qrels.from_table("qrels", table)


class _IrMeasuresScorer:
    """The measures not computed here, one ir_measures evaluator each: ir_measures 0.4 can mix up
    measures of one family that differ only in parameters (nDCG@10 next to nDCG(gains=...)@10)
    when they share an evaluator."""

    def __init__(self, measures: list[tuple[str, Any]], grades: dict[str, dict[str, int]], queries: list[str]):
        import ir_measures

        self.position = {qid: i for i, qid in enumerate(queries)}
        self.evaluators = [(name, ir_measures.evaluator([measure], grades)) for name, measure in measures]

    def score(self, run: Run) -> dict[str, np.ndarray]:
        scores = {qid: docs for qid, docs in run.scores.items() if qid in self.position}
        out = {}
        for name, evaluator in self.evaluators:
            vector = np.zeros(len(self.position))
            for metric in evaluator.iter_calc(scores):
                if metric.query_id in self.position:
                    vector[self.position[metric.query_id]] = metric.value
            out[name] = vector
        return out


def evaluate_runs(qrels: Qrels | dict[str, dict[str, int]], runs: Iterable[Run], measures: Iterable[str]) -> Evaluation:
    parsed = parse_measures(measures)
    if isinstance(qrels, Qrels):
        pairs = JudgedPairs.of(qrels)
    else:  # a query may be listed with no judgment: it still counts in the mean (as 0)
        pairs = JudgedPairs.of(_qrels_of(qrels), queries=sorted(qrels))
    ours = [(name, m) for name, m in parsed if isinstance(m, Measure)]
    theirs = [(name, m) for name, m in parsed if not isinstance(m, Measure)]
    fallback = None
    if theirs:
        grades = qrels.grades if isinstance(qrels, Qrels) else qrels
        fallback = _IrMeasuresScorer(theirs, grades, pairs.queries)
    needs_ascending = any(m.family == "Judged" for _, m in ours)
    names: list[str] = []
    values: dict[str, dict[str, np.ndarray]] = {}
    for run in runs:
        ranked = rank_run(run, pairs)
        ascending = rank_run_by_docid_ascending(run, pairs) if needs_ascending else None
        per_measure = {name: compute(m, ranked, pairs, ascending) for name, m in ours}
        if fallback is not None:
            per_measure.update(fallback.score(run))
        names.append(run.name)
        values[run.name] = {name: per_measure[name] for name, _ in parsed}
    return Evaluation([name for name, _ in parsed], pairs.queries, names, values)
