"""Run entries and qrels in the compact schema (migration 6): written as a load reads them, read
back with their names.

A load stages the columns of its files block by block in a temporary table, then writes them in
three statements however many files it holds: the qids and docids not seen before join their
lookup tables, the entries go in as integer ids, and one grouped count finds a (qid, docid) a
file gives twice. DuckDB's share of the memory is capped while it does so (`LOAD_MEMORY_LIMIT`):
past the cap it spills the stage and its hash tables to `<db>.tmp`, so a load's memory does not
grow with the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from qrelkit.io.arrays import numbers
from qrelkit.io.trec_lines import QRELS_SCHEMA, RUN_SCHEMA

# DuckDB's memory during a load: enough that a TREC run's hash tables rarely spill, fixed so that
# a 5M-line file costs what a 1M-line one does (measured in benchmarks/bench_store.py).
LOAD_MEMORY_LIMIT = "256MB"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class Entries:
    """One of the two entry tables: its owner column (whose entries), and the values an entry carries."""

    table: str
    owner: str
    values: tuple[str, ...]
    value_types: tuple[str, ...]
    schema: pa.Schema

    @property
    def stage(self) -> str:
        return f"staged_{self.table}"


# the store keeps scores as float32 (FLOAT, schema 6: the precision trec_eval ranks by, half the bytes of
# a float64); they come back as RUN_SCHEMA's float64, each the float32 value
RUN_ENTRIES = Entries("run_entries", "run_id", ("rank", "score"), ("INTEGER", "FLOAT"), RUN_SCHEMA)
QRELS = Entries("qrels", "qrels_set_id", ("grade", "iteration"), ("INTEGER", "TEXT"), QRELS_SCHEMA)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, rows: object) -> Iterator[None]:
    """``rows`` (an Arrow table or reader) readable as the view ``name`` while the block runs."""
    con.register(name, rows)
    try:
        yield
    finally:
        con.unregister(name)


@contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection, limit: str | None = LOAD_MEMORY_LIMIT, *, keep_order: bool = False) -> Iterator[None]:
    """DuckDB's memory capped at ``limit`` (None: left as it is, as for a database held in memory,
    which has nowhere to spill to), and the settings as they were afterwards (a load inside a
    judging job returns to the job's cap). ``keep_order`` False lets inserts run in parallel
    where the rows have no order (entries); a table written in order stays in order otherwise."""
    if limit is None:
        yield
        return
    before = con.execute("SELECT current_setting('memory_limit'), current_setting('preserve_insertion_order')").fetchall()[0]
    con.execute(f"SET memory_limit = '{limit}'")
    con.execute(f"SET preserve_insertion_order = {'true' if keep_order else 'false'}")
    try:
        yield
    finally:
        try:
            con.execute(f"SET memory_limit = '{before[0]}'")
            con.execute(f"SET preserve_insertion_order = {'true' if before[1] else 'false'}")
        except duckdb.TransactionException:
            # the load failed and aborted its transaction (a full disk): the settings cannot be reset
            # inside it, and the load's own error, not this one, is what the user must see
            pass


def next_id(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    (value,) = con.execute(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}").fetchall()[0]
    return int(value)


def create_stage(con: duckdb.DuckDBPyConnection, entries: Entries) -> None:
    values = ", ".join(f"{name} {kind}" for name, kind in zip(entries.values, entries.value_types))
    con.execute(f"CREATE OR REPLACE TEMP TABLE {entries.stage} (owner INTEGER NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, {values})")


def drop_stage(con: duckdb.DuckDBPyConnection, entries: Entries) -> None:
    con.execute(f"DROP TABLE IF EXISTS {entries.stage}")


def clear_stage(con: duckdb.DuckDBPyConnection, entries: Entries, owner: int) -> None:
    con.execute(f"DELETE FROM {entries.stage} WHERE owner = ?", [owner])


def integers_beyond_int32(column: pa.ChunkedArray | pa.Array) -> bool:
    if len(column) == 0:
        return False
    low, high = pc.min_max(column).values()
    return low.as_py() < INT32_MIN or high.as_py() > INT32_MAX


def stage(con: duckdb.DuckDBPyConnection, entries: Entries, owner: int, table: pa.Table) -> None:
    """Append a block of ``entries.schema`` columns for ``owner`` to the stage. It goes in through a
    record batch reader, which DuckDB copies as it reads: a registered table's strings would stay
    referenced by the open transaction, holding every block in memory until the commit."""
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    with registered(con, "incoming_block", reader):
        con.execute(f"INSERT INTO {entries.stage} SELECT {owner}, qid, docid, {', '.join(entries.values)} FROM incoming_block")


def write_stage(con: duckdb.DuckDBPyConnection, entries: Entries) -> None:
    """The staged entries into their table: new qids and docids get ids, the entries their ids."""
    for key in ("qid", "docid"):
        con.execute(
            f"INSERT INTO {key}s SELECT (SELECT coalesce(max({key}_id), 0) FROM {key}s) + row_number() OVER (), {key} "
            f"FROM (SELECT DISTINCT {key} FROM {entries.stage}) ANTI JOIN {key}s USING ({key})"
        )
    values = ", ".join(f"s.{name}" for name in entries.values)
    con.execute(
        f"INSERT INTO {entries.table} ({entries.owner}, qid_id, docid_id, {', '.join(entries.values)}) "
        f"SELECT s.owner, q.qid_id, d.docid_id, {values} FROM {entries.stage} s JOIN qids q USING (qid) JOIN docids d USING (docid)"
    )


def repeated_owners(con: duckdb.DuckDBPyConnection, entries: Entries, first_owner: int) -> list[int]:
    """Owners from ``first_owner`` on (a load's new ones) with a (qid, docid) given more than once."""
    rows = con.execute(
        f"SELECT DISTINCT {entries.owner} FROM (SELECT {entries.owner} FROM {entries.table} WHERE {entries.owner} >= ? "
        f"GROUP BY {entries.owner}, qid_id, docid_id HAVING count(*) > 1) ORDER BY 1",
        [first_owner],
    ).fetchall()
    return [int(row[0]) for row in rows]


def delete_entries(con: duckdb.DuckDBPyConnection, entries: Entries, owner: int) -> None:
    con.execute(f"DELETE FROM {entries.table} WHERE {entries.owner} = ?", [owner])


def arrow_table(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None) -> pa.Table:
    """The query's rows as Arrow columns, on this connection (so inside its transaction). DuckDB
    refuses a relation while a result of `execute` is unread (a `fetchone` leaves one); a new
    `execute` closes that result, so one runs first."""
    con.execute("SELECT 1").fetchall()
    return con.sql(query, params=params).to_arrow_table()


def _read(con: duckdb.DuckDBPyConnection, entries: Entries, owners: list[int]) -> pa.Table:
    """The entries of ``owners`` with their names, ordered by owner, qid, then rank or docid."""
    if entries is RUN_ENTRIES:
        columns, order = "q.qid, d.docid, e.rank::BIGINT AS rank, e.score", "q.qid, e.rank, d.docid"
    else:
        columns, order = "q.qid, e.iteration, d.docid, e.grade::BIGINT AS grade", "q.qid, d.docid"
    owned = f"e.{entries.owner} = {owners[0]}" if len(owners) == 1 else f"e.{entries.owner} IN ({', '.join(map(str, owners))})"
    query = (
        f"SELECT e.{entries.owner} AS owner, {columns} FROM {entries.table} e JOIN qids q USING (qid_id) "
        f"JOIN docids d USING (docid_id) WHERE {owned} ORDER BY e.{entries.owner}, {order}"
    )
    return arrow_table(con, query)


def read_entries(con: duckdb.DuckDBPyConnection, entries: Entries, owners: list[int]) -> dict[int, pa.Table]:
    """owner -> its entries as ``entries.schema`` columns (an owner with none has an empty table)."""
    found: dict[int, pa.Table] = {owner: entries.schema.empty_table() for owner in owners}
    if not owners:
        return found
    table = _read(con, entries, sorted(set(owners)))
    owner_of = numbers(table.column("owner"))
    starts = np.flatnonzero(np.concatenate(([True], owner_of[1:] != owner_of[:-1]))) if len(owner_of) else np.zeros(0, np.int64)
    bounds = [*starts.tolist(), len(owner_of)]
    body = table.drop_columns(["owner"]).cast(entries.schema)
    for start, stop in zip(bounds[:-1], bounds[1:]):
        found[int(owner_of[start])] = body.slice(start, stop - start)
    return found


class _Names:
    """A lookup table's names (qids or docids), read once: an id's row among them, so that a run is
    named by array lookups instead of a join per run."""

    def __init__(self, con: duckdb.DuckDBPyConnection, column: str):
        found = arrow_table(con, f"SELECT {column}_id AS id, {column} AS name FROM {column}s")
        ids = numbers(found.column("id")).astype(np.int64)
        self.names = found.column("name").combine_chunks()
        self.row = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, np.int32)
        self.row[ids] = np.arange(len(ids), dtype=np.int32)

    def places(self, rows: np.ndarray) -> np.ndarray:
        """The byte order (DuckDB's order of text) of the names at ``rows``, as integers."""
        unique, inverse = np.unique(rows, return_inverse=True)
        place = np.empty(len(unique), np.int64)
        place[pc.sort_indices(self.names.take(unique)).to_numpy()] = np.arange(len(unique))
        return place[inverse]


class StoredRuns:
    """Stored runs read back one at a time, in one pass over the database: the qids and docids are
    named once, then each run's entries come as integer ids (a range of the entries table, no
    join) and are named and ordered (qid, rank, docid, as a file of the run is sorted) with numpy.
    A join of each run with the docids table cost a hash table of every docid per run."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.qids = _Names(con, "qid")
        self.docids = _Names(con, "docid")
        self.qid_places = self.qids.places(np.arange(len(self.qids.names)))  # qids are few: ordered once

    def table(self, run_id: int) -> pa.Table:
        """The run's entries as `RUN_SCHEMA` columns, ordered by qid, rank, then docid."""
        found = arrow_table(
            self.con, f"SELECT qid_id, docid_id, rank::BIGINT AS rank, score::DOUBLE AS score FROM run_entries WHERE run_id = {int(run_id)}"
        )
        if not found.num_rows:
            return RUN_ENTRIES.schema.empty_table()
        qid_rows = self.qids.row[numbers(found.column("qid_id"))]
        docid_rows = self.docids.row[numbers(found.column("docid_id"))]
        ranks = numbers(found.column("rank"))
        order = self._order(self.qid_places[qid_rows], ranks, docid_rows)
        if order is None:  # stored in order already (a run loaded from a sorted file)
            columns = [self.qids.names.take(qid_rows), self.docids.names.take(docid_rows), found.column("rank"), found.column("score")]
        else:
            columns = [
                self.qids.names.take(qid_rows[order]),
                self.docids.names.take(docid_rows[order]),
                pa.array(ranks[order], pa.int64()),
                found.column("score").combine_chunks().take(order),
            ]
        return pa.Table.from_arrays(columns, schema=RUN_ENTRIES.schema)

    def _order(self, qid_places: np.ndarray, ranks: np.ndarray, docid_rows: np.ndarray) -> np.ndarray | None:
        """The order (qid, rank, docid) of a run's entries, or None when they are in it already."""
        key = qid_places * (int(ranks.max()) - int(ranks.min()) + 1) + (ranks - ranks.min())
        steps = np.diff(key)
        if (steps > 0).all():
            return None
        order = np.argsort(key, kind="stable")
        if (np.diff(key[order]) > 0).all():  # no two entries share (qid, rank): the docid never decides
            return order
        return np.lexsort((self.docids.places(docid_rows), key))
