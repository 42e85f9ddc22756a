"""Which (qid, docid) pairs a job judges, and which of them are judged already: queries over the
compact run entries, qrels and judgments, so that pooling 100 runs × 200 queries × 1,000 entries
is a few scans in DuckDB rather than a loop over Python objects.

A pool is SQL (`Pool`), never a Python list: a judging job of millions of pairs asks the database
how many pairs are done and reads the pending ones back in blocks (`pending_pairs`), so the
process holds one block, whatever the pool's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from qrelkit.io import arrays
from qrelkit.storage.batch_api import OPEN_STATES
from qrelkit.storage.entries import arrow_table, registered
from qrelkit.storage.store import Store

# Pending pairs read back per block: enough that a block query's fixed cost is noise, few enough
# that a block's pairs (with their documents' text) stay a few MB.
BLOCK_PAIRS = 8192
# Pending pairs joined with their documents at a time (see PendingPairs): a multiple of BLOCK_PAIRS.
CHUNK_PAIRS = 32 * BLOCK_PAIRS
EMPTY_POOL = "SELECT NULL::TEXT AS qid, NULL::TEXT AS docid WHERE false"


@dataclass(frozen=True)
class Pool:
    """The pairs a job judges, as a query over the store: ``sql`` selects (qid, docid), each pair
    once, in no particular order. It may read a temporary table of the store's connection (a pairs
    file's), so it is run on that connection only."""

    sql: str


def _pairs(table: pa.Table) -> list[tuple[str, str]]:
    return list(zip(table.column("qid").to_pylist(), table.column("docid").to_pylist()))


def pool_pairs(store: Store, pool: Pool) -> list[tuple[str, str]]:
    """The pool's pairs as a list, sorted by qid then docid (for small pools and tests)."""
    return _pairs(arrow_table(store.con, f"SELECT qid, docid FROM ({pool.sql}) ORDER BY qid, docid"))


def pooled_qids(store: Store, pool: Pool) -> list[str]:
    """The qids the pool holds, sorted."""
    return [row[0] for row in store.con.execute(f"SELECT DISTINCT qid FROM ({pool.sql}) ORDER BY qid").fetchall()]


def depth_pool_query(store: Store, depth: int, run_names: list[str] | None = None) -> Pool:
    """Union of every run's top-``depth`` per query in trec_eval order (score descending, ties by
    docid descending).

    A query's `depth`-th highest score bounds its top entries from below (ties included), so the
    exact order, which needs the docid's text, is taken among those few candidates only.
    """
    if depth < 1:
        return Pool(EMPTY_POOL)
    run_ids = store.run_ids(run_names)
    if not run_ids:
        return Pool(EMPTY_POOL)
    # The run filter is written out twice: a CTE of the filtered entries, used twice, would be
    # materialized (20M rows copied, four times the whole query's time).
    owned = f"run_id IN ({', '.join(map(str, run_ids))})" if run_names is not None else "run_id IS NOT NULL"
    return Pool(f"""
        WITH lowest AS (SELECT run_id, qid_id, max(score, {depth})[-1] AS score FROM run_entries WHERE {owned} GROUP BY run_id, qid_id),
        candidates AS (
            SELECT e.run_id, e.qid_id, d.docid, e.score FROM run_entries e
            JOIN lowest l ON e.run_id = l.run_id AND e.qid_id = l.qid_id AND e.score >= l.score
            JOIN docids d ON d.docid_id = e.docid_id
            WHERE e.{owned}),
        top AS (
            SELECT DISTINCT qid_id, docid FROM candidates
            QUALIFY row_number() OVER (PARTITION BY run_id, qid_id ORDER BY score DESC, docid DESC) <= {depth})
        SELECT q.qid, t.docid FROM top t JOIN qids q USING (qid_id)""")


def qrels_pool_query(store: Store, name: str) -> Pool:
    """The pairs a qrels set judges."""
    qrels_set_id = int(store.qrels_set_id(name))
    return Pool(
        "SELECT q.qid, d.docid FROM qrels e JOIN qids q USING (qid_id) JOIN docids d USING (docid_id) "
        f"WHERE e.qrels_set_id = {qrels_set_id}"
    )


def listed_pool(store: Store, blocks: Iterable[list[tuple[str, str]]]) -> Pool:
    """A pool of pairs given one by one (a pairs file), staged block by block in a temporary table
    of the store's connection; a pair given twice is one pair."""
    store.con.execute("CREATE OR REPLACE TEMP TABLE listed_pool_pairs (qid TEXT NOT NULL, docid TEXT NOT NULL)")
    for block in blocks:
        if not block:
            continue
        rows = arrays.table({"qid": arrays.strings([q for q, _ in block]), "docid": arrays.strings([d for _, d in block])})
        with registered(store.con, "incoming_pool_pairs", rows):
            store.con.execute("INSERT INTO listed_pool_pairs SELECT qid, docid FROM incoming_pool_pairs")
    return Pool("SELECT DISTINCT qid, docid FROM listed_pool_pairs")


def depth_pool(store: Store, depth: int, run_names: list[str] | None = None) -> list[tuple[str, str]]:
    """The depth pool (`depth_pool_query`) as a list sorted by qid then docid."""
    return pool_pairs(store, depth_pool_query(store, depth, run_names))


def qrels_pool(store: Store, name: str) -> list[tuple[str, str]]:
    """The pairs a qrels set judges, sorted by qid then docid."""
    return pool_pairs(store, qrels_pool_query(store, name))


# -- where a judge run stands on a pool ---------------------------------------------------------------

# The one definition of a pending pair, over the pool `p` and the judge run's judgment `j` of it (a
# LEFT JOIN: NULL when there is none): no judgment yet, or a failed one when failures are retried;
# and in no open Batch API batch (a pair there is paid for: it is not sent again until the batch
# is collected). $judge_run and $retry_failed are the query's parameters.
PENDING = (
    "(j.status IS NULL OR ($retry_failed AND j.status <> 'ok')) AND NOT EXISTS ("
    "SELECT 1 FROM batch_pairs b JOIN batch_submissions s USING (submission_id) "
    f"WHERE b.judge_run_id = $judge_run AND s.state IN {OPEN_STATES!r} AND b.qid = p.qid AND b.docid = p.docid)"
)


def _judged(pool: Pool) -> str:
    """The pool's pairs with the judge run's judgment of each, where there is one."""
    return f"({pool.sql}) p LEFT JOIN judgments j ON j.judge_run_id = $judge_run AND j.qid = p.qid AND j.docid = p.docid"


@dataclass(frozen=True)
class PoolCounts:
    """Where a judge run stands on a pool, counted in the database."""

    pairs: int  # in the pool
    ok: int  # pool pairs with an `ok` judgment
    failed: int  # pool pairs with a failed one
    pending: int  # to judge now (see PENDING)


def pool_counts(store: Store, pool: Pool, judge_run_id: str, *, retry_failed: bool = False) -> PoolCounts:
    row = store.con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE j.status = 'ok'), count(*) FILTER (WHERE j.status <> 'ok'), "
        f"count(*) FILTER (WHERE {PENDING}) FROM {_judged(pool)}",
        {"judge_run": judge_run_id, "retry_failed": retry_failed},
    ).fetchone()
    assert row is not None  # an aggregate always answers one row
    return PoolCounts(*(int(value) for value in row))


class PendingPairs:
    """The pairs a judge run still has to judge on a pool, in pool order (qid, then docid), with
    what judging them needs: the judgment they had (status, attempts), and their document (NULL
    columns and ``has_document`` false when the collection lacks it).

    Taken once, when made (so judgments written meanwhile do not move it): the pending keys go
    into a temporary table of the store's connection, in order. They are read back ``BLOCK_PAIRS``
    at a time, their documents joined a chunk of ``CHUNK_PAIRS`` at a time (a join and a sort that
    fit the job's memory cap whatever the pool's size; one join of all of them did not). The
    process holds a block, DuckDB a chunk and its spill.

    ``perturbed``: the judge run is a probe's (docs/probes.md), so each pair's document is its
    perturbed copy (`perturbations`: text or image, and its hash, the document's fields kept); a
    pair whose copy could not be made has no document, and ``missing_error`` says why."""

    COLUMNS = (
        "position, qid, docid, earlier_status, earlier_attempts, has_document, text, image_path, image_root, fields, content_hash, "
        "image_sha256, missing_error"
    )
    DOCUMENTS = (
        "d.docid IS NOT NULL AS has_document, d.text, d.image_path, d.image_root, d.fields, d.content_hash, d.image_sha256, "
        "NULL::TEXT AS missing_error FROM pending_keys k LEFT JOIN documents d ON d.docid = k.docid"
    )
    COPIES = (
        "c.error IS NULL AND c.docid IS NOT NULL AND d.docid IS NOT NULL AS has_document, c.text, c.image_path, c.image_root, d.fields, "
        "c.content_hash, c.image_sha256, c.error AS missing_error FROM pending_keys k "
        "LEFT JOIN perturbations c ON c.judge_run_id = $judge_run AND c.qid = k.qid AND c.docid = k.docid "
        "LEFT JOIN documents d ON d.docid = k.docid"
    )

    def __init__(
        self,
        store: Store,
        pool: Pool,
        judge_run_id: str,
        *,
        retry_failed: bool = False,
        limit: int | None = None,
        perturbed: bool = False,
    ):
        self.store = store
        self.judge_run_id = judge_run_id
        self.documents = self.COPIES if perturbed else self.DOCUMENTS
        cut = "" if limit is None else f" LIMIT {int(limit)}"
        store.con.execute(
            "CREATE OR REPLACE TEMP TABLE pending_keys AS "
            "SELECT row_number() OVER (ORDER BY p.qid, p.docid) AS position, p.qid, p.docid, "
            f"j.status AS earlier_status, j.attempts AS earlier_attempts FROM {_judged(pool)} WHERE {PENDING} ORDER BY position{cut}",
            {"judge_run": judge_run_id, "retry_failed": retry_failed},
        )
        self.count = int(store._scalar("SELECT count(*) FROM pending_keys"))

    def __len__(self) -> int:
        return self.count

    def blocks(self, rows: int | None = None) -> Iterator[pa.Table]:
        """The pending pairs in order, ``rows`` (BLOCK_PAIRS) at a time. Each table is written in
        position order, so a range of positions reads only the row groups that hold it."""
        rows = rows or BLOCK_PAIRS
        for chunk in range(0, self.count, CHUNK_PAIRS):
            self.store.con.execute(
                f"CREATE OR REPLACE TEMP TABLE pending_pairs AS SELECT k.*, {self.documents} "
                f"WHERE k.position > {chunk} AND k.position <= {chunk + CHUNK_PAIRS} ORDER BY k.position",
                {"judge_run": self.judge_run_id} if "$judge_run" in self.documents else None,
            )
            for start in range(chunk, min(chunk + CHUNK_PAIRS, self.count), rows):
                end = min(start + rows, chunk + CHUNK_PAIRS)
                query = f"SELECT {self.COLUMNS} FROM pending_pairs WHERE position > {start} AND position <= {end} ORDER BY position"
                yield arrow_table(self.store.con, query)

    def close(self) -> None:
        self.store.con.execute("DROP TABLE IF EXISTS pending_pairs")
        self.store.con.execute("DROP TABLE IF EXISTS pending_keys")


@dataclass(frozen=True)
class PoolState:
    """Where a judge run stands on a pool given as a list (a probe's sample: `qrelkit probe --dry-run`)."""

    todo: list[tuple[str, str]]  # to judge now, in pool order
    judged: dict[tuple[str, str], tuple[str, int]]  # pool pairs judged before: (status, attempts)
    ok: int  # pool pairs with an `ok` judgment
    failed: int  # pool pairs with a failed one


def pool_state(store: Store, judge_run_id: str, pairs: list[tuple[str, str]], *, retry_failed: bool = False) -> PoolState:
    """`pool_counts` and `PendingPairs` for a pool given as a list, as lists: the same query."""
    pool = listed_pool(store, [pairs])
    params = {"judge_run": judge_run_id, "retry_failed": retry_failed}
    rows = arrow_table(
        store.con,
        f"SELECT p.qid, p.docid, j.status, j.attempts, {PENDING} AS todo FROM {_judged(pool)} ORDER BY p.qid, p.docid",
        params,  # type: ignore[arg-type]
    )
    judged = rows.filter(rows.column("status").is_valid())
    statuses = judged.column("status").to_pylist()
    return PoolState(
        todo=_pairs(rows.filter(rows.column("todo"))),
        judged=dict(zip(_pairs(judged), zip(statuses, judged.column("attempts").to_pylist()))),
        ok=statuses.count("ok"),
        failed=len(statuses) - statuses.count("ok"),
    )
