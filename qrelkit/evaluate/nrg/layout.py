"""NRG's layout: one (run × relevant item) matrix of ranks, built in one pass over each run.

Only items with positive gain can score, so everything NRG computes is a function of where
each run puts each relevant item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

import numpy as np

from qrelkit.evaluate.nrg.options import Gain, Grades, NRGConfig, NRGError
from qrelkit.io.trec import Qrels, Run

_QID, _DOCID, _SCORE = attrgetter("qid"), attrgetter("docid"), attrgetter("score")


@dataclass(frozen=True)
class Items:
    """The items with positive gain, query after query (queries in sorted order)."""

    queries: list[str]
    gains: np.ndarray  # (U,)
    query_of_item: np.ndarray  # (U,) index into queries, non-decreasing
    starts: np.ndarray  # (Q+1,) items of query q are starts[q]:starts[q+1]
    index: dict[tuple[str, str], int]  # (qid, docid) -> item

    @property
    def size(self) -> int:
        return len(self.gains)


def relevant_items(grades: Grades, gain: Gain) -> Items:
    queries = sorted(grades)
    index: dict[tuple[str, str], int] = {}
    gains: list[np.ndarray] = []
    starts = [0]
    for qid in queries:
        judged = grades[qid]
        docids = sorted(judged)
        values = gain.values(np.fromiter((judged[d] for d in docids), np.float64, len(docids)))
        keep = np.flatnonzero(values > 0)
        index.update({(qid, docids[i]): starts[-1] + n for n, i in enumerate(keep)})
        gains.append(values[keep])
        starts.append(starts[-1] + len(keep))
    flat = np.concatenate(gains) if gains else np.zeros(0)
    counts = np.diff(starts)
    return Items(queries, flat, np.repeat(np.arange(len(queries)), counts), np.asarray(starts), index)


def _ranks_within_query(qidx: np.ndarray, scores: np.ndarray, docids: list[str], order: str) -> np.ndarray:
    """1-based rank of each entry within its query, in trec_eval order or file order."""
    n = len(qidx)
    if order == "file":
        perm = np.argsort(qidx, kind="stable")
    else:
        perm = np.lexsort((-scores, qidx))
        q_sorted, s_sorted = qidx[perm], scores[perm]
        tied = (q_sorted[1:] == q_sorted[:-1]) & (s_sorted[1:] == s_sorted[:-1])
        if tied.any():  # equal scores: docid descending, as trec_eval; few blocks, sorted in Python
            edges = np.flatnonzero(np.diff(np.concatenate(([0], tied.astype(np.int8), [0]))))
            for start, last in zip(edges[::2], edges[1::2]):
                block = perm[start : last + 1]
                perm[start : last + 1] = sorted(block.tolist(), key=docids.__getitem__, reverse=True)
    q_sorted = qidx[perm]
    first = np.concatenate(([True], q_sorted[1:] != q_sorted[:-1]))
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    ranks = np.empty(n, np.int64)
    ranks[perm] = np.arange(n) - group_start + 1
    return ranks


def positions_of(runs: Sequence[Run], items: Items, depth: int | None, order: str) -> np.ndarray:
    """(runs × items) rank of each relevant item in each run, 0 where absent or below depth."""
    query_index = {qid: i for i, qid in enumerate(items.queries)}
    positions = np.zeros((len(runs), items.size), np.int32)
    for r, run in enumerate(runs):
        # one C-speed pass per column; the entries are Python objects, so this is the floor
        entries = run.entries
        qids = list(map(_QID, entries))
        qidx = np.fromiter(map(query_index.get, qids, repeat(-1)), np.int64, len(qids))
        docids = list(map(_DOCID, entries))
        scores = np.fromiter(map(_SCORE, entries), np.float64, len(entries))
        if (qidx < 0).any():  # queries the qrels lack play no part
            known = np.flatnonzero(qidx >= 0).tolist()
            qids, docids = [qids[i] for i in known], [docids[i] for i in known]
            qidx, scores = qidx[known], scores[known]
        if not qids:
            continue
        ranks = _ranks_within_query(qidx, scores, docids, order)
        chosen = np.flatnonzero(ranks <= depth).tolist() if depth else range(len(ranks))
        keys = zip([qids[i] for i in chosen], [docids[i] for i in chosen])
        found = np.fromiter(map(items.index.get, keys, repeat(-1)), np.int64, len(chosen))
        hit = found >= 0
        positions[r, found[hit]] = ranks[np.asarray(chosen, np.int64)[hit]]
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
