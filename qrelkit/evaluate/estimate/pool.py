"""The pool a human sample is drawn from, and the runs' ranked lists over it, as integer arrays.

A pool is a fixed list of (query, document) pairs, sorted by query then docid: every estimate is
about the measures the runs would score if every pair of it had a human grade. Pairs a run
retrieves outside the pool are unjudged on both sides and, as in trec_eval, not relevant; they
still hold their rank. Each run is joined to the pool by `qrelkit.evaluate.ranked` (the join
`evaluate` uses: trec_eval's order, scores as float32), with the pool index in place of a grade,
so a ranked list here is exactly what `evaluate` scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from qrelkit.evaluate.ranked import NOT_JUDGED, JudgedPairs, rank_run, within_query_ranks
from qrelkit.io import arrays
from qrelkit.io.trec import Qrels, Run

NO_PAIR = -1  # a padded place of a ranked list


@dataclass(frozen=True)
class Pool:
    """The pooled pairs: ``qids``/``docids`` (P,) sorted by (qid, docid); ``query`` (P,) index into
    ``queries`` (sorted); ``judge`` (P,) the judge's label of each pair, NaN where it gave none."""

    queries: list[str]
    qids: list[str]
    docids: list[str]
    query: np.ndarray
    judge: np.ndarray

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]], judge: dict[tuple[str, str], float]) -> Pool:
        ordered = sorted(set(pairs))
        queries = sorted({qid for qid, _ in ordered})
        position = {qid: i for i, qid in enumerate(queries)}
        query = np.array([position[qid] for qid, _ in ordered], dtype=np.int64)
        labels = np.array([judge.get(pair, np.nan) for pair in ordered], dtype=np.float64)
        return cls(queries, [q for q, _ in ordered], [d for _, d in ordered], query, labels)

    def __len__(self) -> int:
        return len(self.qids)

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    def sizes(self) -> np.ndarray:
        """(Q,) pairs per query."""
        return np.bincount(self.query, minlength=self.n_queries)

    def index(self) -> dict[tuple[str, str], int]:
        """(qid, docid) -> position in the pool."""
        return {pair: i for i, pair in enumerate(zip(self.qids, self.docids))}

    def unjudged(self) -> np.ndarray:
        """Positions of the pairs without a judge label."""
        return np.flatnonzero(np.isnan(self.judge))

    def labels_of(self, grades: dict[tuple[str, str], float]) -> np.ndarray:
        """(P,) ``grades`` in pool order, NaN where a pair has none."""
        return np.array([grades.get(pair, np.nan) for pair in zip(self.qids, self.docids)], dtype=np.float64)


@dataclass(frozen=True)
class RankedLists:
    """Each run's pool pairs per query in rank order: ``pair`` (R, Q, depth) pool index or NO_PAIR;
    ``rank`` (R, Q, depth) the run's own rank of each (inf where padded), down to ``cutoff``."""

    runs: list[str]
    pair: np.ndarray
    rank: np.ndarray
    cutoff: int | None

    def place(self, n_pairs: int) -> np.ndarray:
        """(R, P) where each pool pair stands in each run's lists, as a flat index into (Q, depth);
        NO_PAIR where the run does not list it (a run lists a pair once)."""
        n_runs, n_queries, depth = self.pair.shape
        where = np.full((n_runs, n_pairs + 1), NO_PAIR, dtype=np.int64)
        flat = np.arange(n_queries * depth).reshape(n_queries, depth)
        for r in range(n_runs):
            listed = self.pair[r] >= 0
            where[r, self.pair[r][listed]] = flat[listed]
        return where[:, :n_pairs]


@dataclass(frozen=True)
class JoinedRuns:
    """Every run joined to the pool once (trec_eval's order, float32 scores): per run, its pool
    pairs' query, rank and pool index, which `ranked_lists` cuts to each measure's depth."""

    runs: list[str]
    entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, pool: Pool, runs: Sequence[Run]) -> JoinedRuns:
        # the pool as qrels whose "grade" is each pair's pool index: a run joined to them by `rank_run` carries its pairs' indices
        columns = {
            "qid": arrays.strings(pool.qids),
            "iteration": arrays.column(["0"] * len(pool), pa.string()),
            "docid": arrays.strings(pool.docids),
            "grade": np.arange(len(pool), dtype=np.int64),
        }
        judged = JudgedPairs.of(Qrels.from_table("pool", arrays.table(columns)), queries=pool.queries)
        entries = []
        for run in runs:
            ranked = rank_run(run, judged)
            keep = ranked.grade != NOT_JUDGED
            entries.append((ranked.query[keep], ranked.rank[keep], ranked.grade[keep]))
        return cls([run.name for run in runs], entries)


def ranked_lists(pool: Pool, runs: Sequence[Run] | JoinedRuns, cutoff: int | None) -> RankedLists:
    """The runs' pool pairs in trec_eval's order, down to rank ``cutoff`` (None: all of them)."""
    joined = runs if isinstance(runs, JoinedRuns) else JoinedRuns.of(pool, runs)
    rows = []
    for query, rank, index in joined.entries:
        keep = rank <= cutoff if cutoff is not None else np.ones(len(rank), bool)
        rows.append((query[keep], rank[keep], index[keep]))
    depth = max((int(np.bincount(query, minlength=1).max()) for query, _, _ in rows if len(query)), default=1)
    pair = np.full((len(rows), pool.n_queries, depth), NO_PAIR, dtype=np.int64)
    rank_of = np.full((len(rows), pool.n_queries, depth), np.inf)
    for r, (query, ranks, index) in enumerate(rows):
        if not len(query):
            continue
        slot = within_query_ranks(query) - 1  # entries come grouped by query in rank order
        pair[r, query, slot] = index
        rank_of[r, query, slot] = ranks
    return RankedLists(list(joined.runs), pair, rank_of, cutoff)


def top_pairs(runs: Sequence[Run], queries: Iterable[str], depth: int) -> set[tuple[str, str]]:
    """The (qid, docid) pairs each run ranks in its top ``depth`` (trec_eval's order) for ``queries``."""
    wanted = set(queries)
    return {(qid, docid) for run in runs for qid, docids in run.ranking(depth=depth).items() if qid in wanted for docid in docids}


def pool_hash(pool: Pool) -> str:
    """A fingerprint of the pool's pairs (not of any label)."""
    import hashlib

    digest = hashlib.sha256()
    for qid, docid in zip(pool.qids, pool.docids):
        digest.update(f"{qid}\t{docid}\n".encode())
    return digest.hexdigest()
