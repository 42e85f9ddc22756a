"""Score runs under qrels: the common measures on arrays (`measures.py`), any other through
ir_measures (pytrec_eval underneath).

A mean runs over the queries of the qrels by default; a run that misses one of them scores 0
on it (ir_measures' behaviour, and trec_eval's with -c). With ``average="run"`` a run's mean
runs over the queries it covers instead (trec_eval without -c). Either way the evaluation
says which (`Evaluation.average`, `num_q`). Queries a run has but the qrels lack are ignored.
Runs are taken one at a time and only their per-query values are kept, so `evaluate_runs` over
an iterator of runs (`qrelkit.io.iter_runs`) holds one run in memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import AVERAGES, check_average
from qrelkit.evaluate.compatibility import Compatibility, compatibility, compatibility_measure
from qrelkit.evaluate.ir_measures_route import IrMeasuresScorer, ir_measures_measure
from qrelkit.evaluate.measures import Measure, compute, vectorised_measure
from qrelkit.evaluate.ranked import JudgedPairs, rank_run
from qrelkit.evaluate.run_cut import cut_run
from qrelkit.evaluate.trec_names import from_trec_eval, refusal, trec_only_measure
from qrelkit.io.results import Result
from qrelkit.io.trec import Qrel, Qrels, Run


def parse_measures(names: Iterable[str], level: int | None = None) -> list[tuple[str, Any]]:
    """(name as written, measure) for each name: a `Measure` computed here, compatibility (computed
    here: ir_measures' depends on the signs of run scores), or an ir_measures measure for the rest.
    trec_eval's names are read at relevance ``level`` (trec_eval's -l; default 1); a trec_eval
    measure qrelkit does not compute, and an unknown name, are clear errors."""
    parsed = []
    for name in names:
        reason = refusal(name)
        if reason is not None:
            raise QrelkitError(f"measure {name!r} is trec_eval's, and qrelkit does not compute it: {reason}")
        spelled = from_trec_eval(name, level) or name  # trec_eval's names (ndcg_cut_10, map, recip_rank) too
        measure = trec_only_measure(name, level) or vectorised_measure(spelled) or compatibility_measure(spelled)
        parsed.append((name, measure or ir_measures_measure(spelled)))
    return parsed


@dataclass(frozen=True, repr=False)
class Evaluation(Result):
    """Per-query values of every run and measure, over one fixed list of queries."""

    measures: list[str]
    queries: list[str]
    runs: list[str]
    # values[run][measure] is a vector aligned with ``queries``
    values: dict[str, dict[str, np.ndarray]]
    # covered[run]: which of ``queries`` the run retrieves anything for (None: all of them)
    covered: dict[str, np.ndarray] | None = None
    average: str = "qrels"  # what a mean runs over: "qrels" (every query) or "run" (the queries it covers)
    qrels_cut: str | None = None  # how the qrels were cut before scoring (`--max-rel`), in words
    tags: dict[str, str] | None = None  # run -> its tag column (trec_eval's runid), where it has one
    notes: tuple[str, ...] = ()  # what reading the runs left out (columns after the 6th), in the output's words
    # judgments with a grade > 0 over all the queries: trec_eval -c's num_rel `all` line, whatever -l is
    judged_positive: int | None = None

    def summary(self) -> str:
        return f"runs={len(self.runs)}, queries={len(self.queries)}, measures={self.measures}, average={self.average!r}"

    def covers(self, run: str) -> np.ndarray:
        """(Q,) bool: the queries ``run`` retrieves anything for."""
        if self.covered is None or run not in self.covered:
            return np.ones(len(self.queries), bool)
        return self.covered[run]

    def num_q(self, run: str) -> int:
        """How many queries ``run``'s means run over (trec_eval's num_q)."""
        return len(self.queries) if self.average == "qrels" else int(self.covers(run).sum())

    def mean(self, run: str, measure: str) -> float:
        values = self.values[run][measure]
        if self.average == "run":
            covered = self.covers(run)
            return float(values[covered].mean()) if covered.any() else math.nan
        return float(values.mean()) if self.queries else 0.0

    def means(self) -> dict[str, dict[str, float]]:
        return {run: {m: self.mean(run, m) for m in self.measures} for run in self.runs}

    def describe_average(self) -> str:
        """What every mean of this evaluation runs over, in words."""
        return AVERAGES[self.average].format(n=len(self.queries))

    def matrix(self, measure: str) -> np.ndarray:
        """runs × queries matrix of one measure (rows in ``runs`` order)."""
        return np.vstack([self.values[run][measure] for run in self.runs])

    def select(self, measures: Mapping[str, str] | None = None, queries: list[str] | None = None) -> Evaluation:
        """This evaluation under other measure names (new name -> a measure of it: one measure may
        stand under two names) and/or on ``queries`` only (some of its queries, in its order): a
        query's value never depends on the other queries, so a reference scored once serves every
        judge. Unchanged vectors are shared, not copied."""
        renamed = dict(measures) if measures is not None else {m: m for m in self.measures}
        columns = None
        if queries is not None and list(queries) != list(self.queries):
            position = {q: i for i, q in enumerate(self.queries)}
            columns = np.array([position[q] for q in queries], dtype=np.int64)

        def cut(vector: np.ndarray) -> np.ndarray:
            return vector if columns is None else np.ascontiguousarray(vector[columns])

        values = {run: {new: cut(self.values[run][old]) for new, old in renamed.items()} for run in self.runs}
        covered = None if self.covered is None else {run: cut(flags) for run, flags in self.covered.items()}
        kept = list(self.queries) if columns is None else list(queries or [])
        positive = self.judged_positive if columns is None else None
        return Evaluation(
            list(renamed), kept, list(self.runs), values, covered, self.average, self.qrels_cut, self.tags, self.notes, positive
        )

    def to_dict(self, per_query: bool = False) -> dict:
        """`{"measures", "queries": N, "runs": {run: {measure: mean}}}`, and each query's value with ``per_query``."""
        out: dict = {
            "measures": list(self.measures),
            "queries": len(self.queries),
            "average": self.average,
            "average_over": self.describe_average(),
            "num_q": {run: self.num_q(run) for run in self.runs},
            "qrels_cut": self.qrels_cut,
            "notes": list(self.notes),
            "runs": {run: {m: None if math.isnan(v) else v for m, v in means.items()} for run, means in self.means().items()},
        }
        if per_query:
            out["per_query"] = {run: {m: dict(zip(self.queries, self.values[run][m].tolist())) for m in self.measures} for run in self.runs}
        return out

    def to_pandas(self):
        """One row per (run, query, measure, value); pandas is optional."""
        from qrelkit.io.results import pandas

        rows = [(run, q, m, float(v)) for run in self.runs for m in self.measures for q, v in zip(self.queries, self.values[run][m])]
        return pandas().DataFrame(rows, columns=["run", "query", "measure", "value"])


def _compute(measure: Measure | Compatibility, ranked: Any, pairs: JudgedPairs, ascending: Any) -> np.ndarray:
    if isinstance(measure, Compatibility):
        return compatibility(ascending, pairs, measure)  # the authors' order: score descending, docid ascending
    return compute(measure, ranked, pairs, ascending)


def _missed_score_zero(vector: np.ndarray, measure: Any, covered: np.ndarray) -> np.ndarray:
    """A query the run misses scores 0 (trec_eval -c adds 0 for it), whatever a measure would make of
    an empty ranking (utility's cost of unretrieved relevant documents, NumQ's 1); NumRel counts the
    qrels, not the run, so a missed query keeps its count."""
    if covered.all() or getattr(measure, "family", None) == "NumRel":
        return vector
    return np.where(covered, vector, 0.0)


SCORES_ROUTE = (
    "use a measure that reads only their order (compatibility, e.g. --judge-measure 'Compat(p=0.9)'), or grade them into "
    "qrels first (qrelkit import scores FILE --name NAME, then qrelkit grade --judge-run NAME)"
)


def check_order_only(parsed: list[tuple[str, Any]], qrels_name: str) -> None:
    """A judge's scores (fractional values) serve only measures that read their order: any other
    measure would read an order code as a gain."""
    for name, measure in parsed:
        if not getattr(measure, "order_only", False):
            raise QrelkitError(
                f"measure {name!r} reads grades as gains, and {qrels_name!r} holds a judge's scores (fractional values), "
                f"not grades: {SCORES_ROUTE}"
            )


def evaluate_runs(
    qrels: Qrels | dict[str, dict[str, int]],
    runs: Iterable[Run],
    measures: Iterable[str],
    *,
    average: str = "qrels",
    rel_level: int | None = None,
    judged_only: bool = False,
    max_per_query: int | None = None,
) -> Evaluation:
    """Per-query values of each run and measure over the qrels' queries; ``average`` says what
    a mean runs over ("qrels": every query, a missed one scoring 0; "run": the queries it covers).
    trec_eval's options: ``rel_level`` (-l) is the level trec_eval's measure names are read at,
    ``max_per_query`` (-M) and ``judged_only`` (-J) cut each run before any measure (`run_cut`);
    a query a run retrieves for counts as covered whatever the cut leaves of it, as in trec_eval."""
    check_average(average)
    parsed = parse_measures(measures, rel_level)
    if isinstance(qrels, Qrels):
        pairs = JudgedPairs.of(qrels)
    else:  # a query may be listed with no judgment: it still counts in the mean (as 0)
        judged = Qrels("qrels", [Qrel(qid, docid, grade) for qid, docs in qrels.items() for docid, grade in docs.items()])
        pairs = JudgedPairs.of(judged, queries=sorted(qrels))
    if isinstance(qrels, Qrels) and qrels.scored:
        check_order_only(parsed, qrels.name)
    ours = [(name, m) for name, m in parsed if isinstance(m, Measure | Compatibility)]
    theirs = [(name, m) for name, m in parsed if not isinstance(m, Measure | Compatibility)]
    fallback = None
    if theirs:
        grades = qrels.grades if isinstance(qrels, Qrels) else qrels
        fallback = IrMeasuresScorer(theirs, grades, pairs.queries)
    needs_ascending = any(m.family in ("Judged", "Compat") for _, m in ours)
    names: list[str] = []
    values: dict[str, dict[str, np.ndarray]] = {}
    covered: dict[str, np.ndarray] = {}
    tags: dict[str, str] = {}
    notes: list[str] = []
    for whole in runs:
        tags[whole.name] = whole.tag
        notes += whole.notes
        run = cut_run(whole, pairs, judged_only=judged_only, max_per_query=max_per_query)
        ranked = rank_run(run, pairs)
        covered[whole.name] = np.zeros(len(pairs.queries), bool)
        covered[whole.name][(ranked if run is whole else rank_run(whole, pairs)).query] = True
        ascending = rank_run(run, pairs, docid_ascending=True) if needs_ascending else None
        per_measure = {name: _compute(m, ranked, pairs, ascending) for name, m in ours}
        if fallback is not None:
            per_measure.update(fallback.score(run))
        names.append(run.name)
        values[run.name] = {name: _missed_score_zero(per_measure[name], m, covered[run.name]) for name, m in parsed}
    positive = int((pairs.grades > 0).sum())
    measure_names = [name for name, _ in parsed]
    return Evaluation(
        measure_names, pairs.queries, names, values, covered, average, tags=tags, notes=tuple(notes), judged_positive=positive
    )
