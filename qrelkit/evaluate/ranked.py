"""Qrels and runs as integer arrays, the input of the vectorised measures (`measures.py`).

The qrels are encoded once: queries and judged documents become integers, and each judged
(query, document) pair one sorted int64 key. A run is then joined to them in a few array
operations: its entries in trec_eval order (score as float32 descending, docid descending),
each with its query, its rank within the query and its grade.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.io import arrays
from qrelkit.io.trec import Qrels, Run

NOT_JUDGED = np.iinfo(np.int64).min  # the grade of a retrieved document the qrels do not judge
Gains = tuple[tuple[int, float], ...]  # nDCG's (level, gain) pairs; a level not listed gains its own value


def gain_of(grades: np.ndarray, gains: Gains | None) -> np.ndarray:
    """The gain of each grade, as trec_eval's ndcg reads it: the grade itself where > 0 (0 below),
    or with ``gains`` the listed gain of a judged level (≥ 0) and the level's own value otherwise;
    a negative grade or an unjudged document gains 0."""
    if gains is None:
        return np.where(grades > 0, grades, 0).astype(np.float64)
    gain = np.where(grades >= 0, grades, 0).astype(np.float64)
    for level, value in gains:
        gain[grades == level] = value
    return gain


def divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval leaves such a value at 0)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, 0.0)


def _positions(values: pa.Array | pa.ChunkedArray, vocabulary: pa.Array) -> np.ndarray:
    """Index of each value in ``vocabulary`` (distinct values; -1 where absent), by Arrow's hash join
    over the smaller side: a run's few thousand documents against millions judged hash the run's,
    not the millions (a hash table of strings costs several times their memory)."""
    if len(vocabulary) <= 4 * len(values):
        return arrays.numbers(pc.index_in(values, value_set=vocabulary), missing=-1).astype(np.int64)
    distinct = pc.unique(values)
    in_distinct = arrays.numbers(pc.index_in(vocabulary, value_set=distinct), missing=-1)
    at = np.full(len(distinct), -1, np.int64)
    found = np.nonzero(in_distinct >= 0)[0]
    at[in_distinct[found]] = found
    return at[arrays.numbers(pc.index_in(values, value_set=distinct)).astype(np.int64)]


@dataclass
class JudgedPairs:
    """The qrels as sorted integer keys ``query × len(docids) + document``, with their grades."""

    queries: list[str]  # sorted: the queries every mean runs over
    query_names: pa.Array
    docids: pa.Array  # distinct judged documents
    keys: np.ndarray  # (J,) sorted
    grades: np.ndarray  # (J,) aligned with keys
    query_of_key: np.ndarray  # (J,)
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, qrels: Qrels, queries: list[str] | None = None) -> JudgedPairs:
        """``queries`` (default: the qrels' own) must include every query the qrels judge."""
        table = qrels.table
        if queries is None:
            queries = sorted(set(pc.unique(table.column("qid")).to_pylist()))
        query_names = arrays.strings(queries)
        docids, keys = arrays.factorized(table.column("docid"))  # by sorting: millions of judged documents hash dearly
        query = _positions(table.column("qid"), query_names)
        keys += query * max(len(docids), 1)  # in place: a judge's file may hold millions of pairs
        order = np.argsort(keys, kind="stable")
        keys, query = keys[order], query[order]
        grades = np.asarray(arrays.numbers(table.column("grade")), np.int64)[order]
        return cls(queries, query_names, docids, keys, grades, query)

    def relevant_counts(self, level: int) -> np.ndarray:
        """(Q,) judged documents with grade ≥ level per query (trec_eval's num_rel; a negative
        grade is never counted: trec_eval reads it as "in the pool, not judged")."""
        key = ("relevant", level)
        if key not in self._cache:
            counted = (self.grades >= level) & (self.grades >= 0)
            self._cache[key] = np.bincount(self.query_of_key, weights=counted, minlength=len(self.queries))
        return self._cache[key]

    def nonrelevant_counts(self, level: int) -> np.ndarray:
        """(Q,) judged documents with 0 ≤ grade < level per query (bpref's judged nonrelevant)."""
        return self.relevant_counts(0) - self.relevant_counts(max(level, 0))

    def ideal_dcg(self, cutoff: int | None, gains: Gains | None = None) -> np.ndarray:
        """(Q,) DCG of each query's judged documents by gain descending (only positive gains), to ``cutoff``."""
        key = ("ideal", cutoff, gains)
        if key not in self._cache:
            all_gains = gain_of(self.grades, gains)
            positive = all_gains > 0
            query, gain = self.query_of_key[positive], all_gains[positive]
            order = np.lexsort((-gain, query))
            query, gain = query[order], gain[order]
            starts = np.searchsorted(query, np.arange(len(self.queries)))
            rank = np.arange(len(query)) - starts[query] + 1
            keep = rank <= cutoff if cutoff is not None else np.ones(len(rank), bool)
            self._cache[key] = np.bincount(query[keep], weights=gain[keep] / np.log2(rank[keep] + 1.0), minlength=len(self.queries))
        return self._cache[key]


@dataclass(frozen=True)
class RankedRun:
    """A run's entries for the qrels' queries, in trec_eval order, grouped by query."""

    query: np.ndarray  # (N,) index into JudgedPairs.queries; each query's entries contiguous
    rank: np.ndarray  # (N,) 1-based rank within the query
    grade: np.ndarray  # (N,) the judged grade, or NOT_JUDGED
    n_queries: int

    @property
    def judged(self) -> np.ndarray:
        return self.grade != NOT_JUDGED

    def judged_only(self) -> RankedRun:
        """The run with only its judged documents (grade ≥ 0), re-ranked in the same order:
        trec_eval's -J, and ir_measures' judged_only."""
        keep = self.grade >= 0
        query = self.query[keep]
        return RankedRun(query, within_query_ranks(query), self.grade[keep], self.n_queries)

    def per_query(self, weights: np.ndarray) -> np.ndarray:
        """(Q,) sum of ``weights`` (one per entry) over each query's entries."""
        return np.bincount(self.query, weights=weights, minlength=self.n_queries)

    def count_so_far(self, mask: np.ndarray) -> np.ndarray:
        """(N,) entries of ``mask`` at or above each entry within its query."""
        running = np.cumsum(mask)
        first = self.rank == 1
        before_query: np.ndarray = (running - mask)[first]  # the count of the queries before
        return running - before_query[np.cumsum(first) - 1]

    def relevant_so_far(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """(relevant mask, relevant documents at or above each entry within its query)."""
        relevant = self.grade >= level
        return relevant, self.count_so_far(relevant)

    def relevant_in_top(self, level: int, cutoff: int | float) -> np.ndarray:
        """(Q,) relevant documents (grade ≥ level) at ranks ≤ ``cutoff``."""
        return self.per_query(((self.grade >= level) & (self.rank <= cutoff)).astype(np.float64))


def within_query_ranks(query: np.ndarray) -> np.ndarray:
    """1-based position of each entry within its (contiguous) query segment."""
    n = len(query)
    if n == 0:
        return np.zeros(0, np.int64)
    first = np.concatenate(([True], query[1:] != query[:-1]))
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return np.arange(n) - start + 1


def _grades_of(query: np.ndarray, docids: pa.Array | pa.ChunkedArray, pairs: JudgedPairs) -> np.ndarray:
    doc = _positions(docids, pairs.docids)
    key = query * max(len(pairs.docids), 1) + doc
    at = np.minimum(np.searchsorted(pairs.keys, key), max(len(pairs.keys) - 1, 0))
    found = (doc >= 0) & (pairs.keys[at] == key) if len(pairs.keys) else np.zeros(len(key), bool)
    return np.where(found, pairs.grades[at] if len(pairs.keys) else 0, NOT_JUDGED)


def _query_map(run: Run, pairs: JudgedPairs) -> np.ndarray:
    """(N,) each entry's qrels query index, or -1, in file order (via the run's query codes)."""
    codes, names = run.query_codes()
    return _positions(arrays.strings(names), pairs.query_names)[codes]


def grades_in_file_order(run: Run, pairs: JudgedPairs) -> np.ndarray:
    """(N,) the grade of each of ``run``'s entries, in file order (NOT_JUDGED where the qrels have none)."""
    query_of_entry = _query_map(run, pairs)
    grade = np.full(len(run), NOT_JUDGED, dtype=np.int64)
    known = np.flatnonzero(query_of_entry >= 0)
    grade[known] = _grades_of(query_of_entry[known], run.table.column("docid").take(arrays.from_numpy(known)), pairs)
    return grade


def rank_run(run: Run, pairs: JudgedPairs, *, docid_ascending: bool = False) -> RankedRun:
    """Join ``run`` to the qrels: queries the qrels lack are dropped (they count nowhere). Entries in
    trec_eval's order, or with ``docid_ascending`` in ir_measures' own (score as given descending, ties
    by docid ascending), which its Judged@k uses."""
    query_of_entry = _query_map(run, pairs)
    if docid_ascending:
        keys = arrays.table({"q": query_of_entry, "s": run.table.column("score"), "d": run.table.column("docid")})
        sort_keys = [("q", "ascending"), ("s", "descending"), ("d", "ascending")]
        order = arrays.numbers(pc.sort_indices(keys, sort_keys=sort_keys)).astype(np.int64)
    else:
        order = run.trec_order()
    order = order[query_of_entry[order] >= 0]
    query = query_of_entry[order]
    grade = _grades_of(query, run.table.column("docid").take(arrays.from_numpy(order)), pairs)
    return RankedRun(query, within_query_ranks(query), grade, len(pairs.queries))
