"""NRG's layout: one (run × relevant item) matrix of ranks, built in one pass over each run.

Only items with positive gain can score, so everything NRG computes is a function of where
each run puts each relevant item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.evaluate.nrg.options import Gain, Grades, NRGConfig, NRGError
from qrelkit.evaluate.ranked import within_query_ranks
from qrelkit.io import arrays
from qrelkit.io.trec import Qrels, Run


@dataclass(frozen=True)
class Items:
    """The items with positive gain, query after query (queries in sorted order)."""

    queries: list[str]
    gains: np.ndarray  # (U,)
    query_of_item: np.ndarray  # (U,) index into queries, non-decreasing
    starts: np.ndarray  # (Q+1,) items of query q are starts[q]:starts[q+1]
    docids: pa.Array  # distinct docids of the items
    keys: np.ndarray  # (U,) query × len(docids) + docid, sorted: an item's key is its index's
    # (items are numbered in key order, so a run entry's item is a binary search away)

    @property
    def size(self) -> int:
        return len(self.gains)


def _index_in(values: pa.Array | pa.ChunkedArray, vocabulary: pa.Array) -> np.ndarray:
    return arrays.numbers(pc.index_in(values, value_set=vocabulary), missing=-1).astype(np.int64)


def relevant_items(grades: Grades, gain: Gain) -> Items:
    queries = sorted(grades)
    kept: list[tuple[int, str]] = []
    gains: list[np.ndarray] = []
    starts = [0]
    for q, qid in enumerate(queries):
        judged = grades[qid]
        docids = sorted(judged)
        values = gain.values(np.fromiter((judged[d] for d in docids), np.float64, len(docids)))
        keep = np.flatnonzero(values > 0)
        kept += [(q, docids[i]) for i in keep]
        gains.append(values[keep])
        starts.append(starts[-1] + len(keep))
    vocabulary = arrays.strings(sorted({docid for _, docid in kept}))
    doc_index = {docid: i for i, docid in enumerate(vocabulary.to_pylist())}
    keys = np.array([q * max(len(vocabulary), 1) + doc_index[docid] for q, docid in kept], np.int64)
    # within a query items are sorted by docid and the vocabulary is sorted, so keys ascend
    flat = np.concatenate(gains) if gains else np.zeros(0)
    return Items(queries, flat, np.repeat(np.arange(len(queries)), np.diff(starts)), np.asarray(starts), vocabulary, keys)


def positions_of(runs: Sequence[Run], items: Items, depth: int | None, order: str) -> np.ndarray:
    """(runs × items) rank of each relevant item in each run, 0 where absent or below depth.

    Ranks are in trec_eval order (score as float32 descending, docid descending) or in file
    order; entries are joined to items as integers, never one Python object per entry.
    """
    queries = arrays.strings(items.queries)
    positions = np.zeros((len(runs), items.size), np.int32)
    for r, run in enumerate(runs):
        codes, names = run.query_codes()
        query_of_entry = _index_in(arrays.strings(names), queries)[codes]  # -1: a query the qrels lack
        entries = np.argsort(query_of_entry, kind="stable") if order == "file" else run.trec_order()  # grouped by query
        entries = entries[query_of_entry[entries] >= 0]
        query = query_of_entry[entries]
        ranks = within_query_ranks(query)
        if depth:
            entries, query, ranks = entries[ranks <= depth], query[ranks <= depth], ranks[ranks <= depth]
        doc = _index_in(run.table.column("docid").take(arrays.from_numpy(entries)), items.docids)
        key = query * max(len(items.docids), 1) + doc
        item = np.minimum(np.searchsorted(items.keys, key), max(items.size - 1, 0))
        hit = (doc >= 0) & (items.keys[item] == key) if items.size else np.zeros(len(key), bool)
        positions[r, item[hit]] = ranks[hit]
    return positions


@dataclass(frozen=True)
class Prepared:
    config: NRGConfig
    runs: list[str]
    items: Items
    positions: np.ndarray  # (R, U) ranks
    seen: np.ndarray  # (R, U) seen(rank) of each item in each run


def prepare(qrels: Qrels | Grades, runs: Sequence[Run], config: NRGConfig) -> Prepared:
    names = [run.name for run in runs]
    if len(set(names)) != len(names):
        raise NRGError(f"run names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    grades = qrels.grades if isinstance(qrels, Qrels) else qrels
    items = relevant_items(grades, config.gain)
    positions = positions_of(runs, items, config.depth, config.order)
    return Prepared(config, names, items, positions, config.model.seen(positions))


def segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(T × U) -> (T × Q): sum of each query's items (0 for a query without items)."""
    out = np.zeros((values.shape[0], len(starts) - 1))
    nonempty = starts[:-1] < starts[1:]
    if nonempty.any():
        out[:, nonempty] = np.add.reduceat(values, starts[:-1][nonempty], axis=1)
    return out
