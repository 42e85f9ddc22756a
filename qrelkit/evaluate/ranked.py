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
        """(Q,) judged documents with grade ≥ level per query (trec_eval's num_rel)."""
        key = ("relevant", level)
        if key not in self._cache:
            self._cache[key] = np.bincount(self.query_of_key, weights=self.grades >= level, minlength=len(self.queries))
        return self._cache[key]

    def ideal_dcg(self, cutoff: int | None) -> np.ndarray:
        """(Q,) DCG of each query's judged documents by grade descending (gain = grade > 0), to ``cutoff``."""
        key = ("ideal", cutoff)
        if key not in self._cache:
            positive = self.grades > 0
            query, gain = self.query_of_key[positive], self.grades[positive].astype(np.float64)
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


def _within_query_ranks(query: np.ndarray) -> np.ndarray:
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


def _query_map(run: Run, pairs: JudgedPairs) -> tuple[np.ndarray, np.ndarray]:
    """(entry -> qrels query index or -1, in file order), via the run's query codes."""
    codes, names = run.query_codes()
    to_qrels = _positions(arrays.strings(names), pairs.query_names)
    return to_qrels[codes], codes


def rank_run(run: Run, pairs: JudgedPairs) -> RankedRun:
    """Join ``run`` to the qrels: queries the qrels lack are dropped (they count nowhere)."""
    query_of_entry, _ = _query_map(run, pairs)
    order = run.trec_order()
    order = order[query_of_entry[order] >= 0]
    query = query_of_entry[order]
    grade = _grades_of(query, run.table.column("docid").take(arrays.from_numpy(order)), pairs)
    return RankedRun(query, _within_query_ranks(query), grade, len(pairs.queries))


def rank_run_by_docid_ascending(run: Run, pairs: JudgedPairs) -> RankedRun:
    """The same join in ir_measures' own order (score as given descending, ties by docid
    ascending), which its Judged@k uses."""
    query_of_entry, _ = _query_map(run, pairs)
    keys = arrays.table({"q": query_of_entry, "s": run.table.column("score"), "d": run.table.column("docid")})
    order = arrays.numbers(pc.sort_indices(keys, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "ascending")])).astype(np.int64)
    order = order[query_of_entry[order] >= 0]
    query = query_of_entry[order]
    grade = _grades_of(query, run.table.column("docid").take(arrays.from_numpy(order)), pairs)
    return RankedRun(query, _within_query_ranks(query), grade, len(pairs.queries))
