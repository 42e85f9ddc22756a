"""Which (qid, docid) pairs a job judges, and which of them are judged already: queries over the
compact run entries, qrels and judgments, so that pooling 100 runs × 200 queries × 1,000 entries
is a few scans in DuckDB rather than a loop over Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from qrelkit.io import arrays
from qrelkit.storage.batches import OPEN_STATES
from qrelkit.storage.entries import arrow_table
from qrelkit.storage.store import Store


def _pairs(table: pa.Table) -> list[tuple[str, str]]:
    return list(zip(table.column("qid").to_pylist(), table.column("docid").to_pylist()))


def depth_pool(store: Store, depth: int, run_names: list[str] | None = None) -> list[tuple[str, str]]:
    """Union of every run's top-``depth`` per query in trec_eval order (score descending, ties by
    docid descending), sorted by qid then docid.

    A query's `depth`-th highest score bounds its top entries from below (ties included), so the
    exact order, which needs the docid's text, is taken among those few candidates only.
    """
    if depth < 1:
        return []
    run_ids = store.run_ids(run_names)
    if not run_ids:
        return []
    # The run filter is written out twice: a CTE of the filtered entries, used twice, would be
    # materialized (20M rows copied, four times the whole query's time).
    owned = f"run_id IN ({', '.join(map(str, run_ids))})" if run_names is not None else "run_id IS NOT NULL"
    query = f"""
        WITH lowest AS (SELECT run_id, qid_id, max(score, {depth})[-1] AS score FROM run_entries WHERE {owned} GROUP BY run_id, qid_id),
        candidates AS (
            SELECT e.run_id, e.qid_id, d.docid, e.score FROM run_entries e
            JOIN lowest l ON e.run_id = l.run_id AND e.qid_id = l.qid_id AND e.score >= l.score
            JOIN docids d ON d.docid_id = e.docid_id
            WHERE e.{owned}),
        top AS (
            SELECT DISTINCT qid_id, docid FROM candidates
            QUALIFY row_number() OVER (PARTITION BY run_id, qid_id ORDER BY score DESC, docid DESC) <= {depth})
        SELECT q.qid, t.docid FROM top t JOIN qids q USING (qid_id) ORDER BY q.qid, t.docid"""
    return _pairs(arrow_table(store.con, query))


def qrels_pool(store: Store, name: str) -> list[tuple[str, str]]:
    """The pairs a qrels set judges, sorted by qid then docid."""
    query = (
        "SELECT q.qid, d.docid FROM qrels e JOIN qids q USING (qid_id) JOIN docids d USING (docid_id) "
        "WHERE e.qrels_set_id = ? ORDER BY q.qid, d.docid"
    )
    return _pairs(arrow_table(store.con, query, [store.qrels_set_id(name)]))


@dataclass(frozen=True)
class PoolState:
    """Where a judge run stands on a pool."""

    todo: list[tuple[str, str]]  # to judge now, in pool order
    judged: dict[tuple[str, str], tuple[str, int]]  # pool pairs judged before: (status, attempts)
    ok: int  # pool pairs with an `ok` judgment
    failed: int  # pool pairs with a failed one


def pool_state(store: Store, judge_run_id: str, pairs: list[tuple[str, str]], *, retry_failed: bool = False) -> PoolState:
    """The pool's pairs against the judge run's judgments and its open Batch API batches, in SQL:
    a pair is to judge when it has no judgment (or a failed one, with ``retry_failed``) and is in
    no open batch (a pair there is paid for: it is not sent again until the batch is collected)."""
    pool = arrays.table(
        {
            "position": arrays.column(range(len(pairs)), pa.int64()),
            "qid": arrays.column([q for q, _ in pairs], pa.string()),
            "docid": arrays.column([d for _, d in pairs], pa.string()),
        }
    )
    store.con.register("pool_pairs", pool)
    try:
        rows = arrow_table(
            store.con,
            "SELECT p.qid, p.docid, j.status, j.attempts, "
            "(j.status IS NULL OR (? AND j.status <> 'ok')) AND o.qid IS NULL AS todo FROM pool_pairs p "
            "LEFT JOIN judgments j ON j.judge_run_id = ? AND j.qid = p.qid AND j.docid = p.docid "
            "LEFT JOIN (SELECT DISTINCT b.qid, b.docid FROM batch_pairs b JOIN batch_submissions s USING (submission_id) "
            f"WHERE b.judge_run_id = ? AND s.state IN {OPEN_STATES!r}) o ON o.qid = p.qid AND o.docid = p.docid "
            "ORDER BY p.position",
            [retry_failed, judge_run_id, judge_run_id],
        )
    finally:
        store.con.unregister("pool_pairs")
    judged = rows.filter(rows.column("status").is_valid())
    statuses = judged.column("status").to_pylist()
    return PoolState(
        todo=_pairs(rows.filter(rows.column("todo"))),
        judged=dict(zip(_pairs(judged), zip(statuses, judged.column("attempts").to_pylist()))),
        ok=statuses.count("ok"),
        failed=len(statuses) - statuses.count("ok"),
    )
