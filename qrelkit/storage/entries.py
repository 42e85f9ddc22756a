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


RUN_ENTRIES = Entries("run_entries", "run_id", ("rank", "score"), ("INTEGER", "FLOAT"), RUN_SCHEMA)
QRELS = Entries("qrels", "qrels_set_id", ("grade", "iteration"), ("INTEGER", "TEXT"), QRELS_SCHEMA)


@contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection, limit: str | None = LOAD_MEMORY_LIMIT) -> Iterator[None]:
    """DuckDB's memory capped at ``limit`` (None: left as it is, as for a database held in memory,
    which has nowhere to spill to)."""
    if limit is None:
        yield
        return
    con.execute(f"SET memory_limit = '{limit}'")
    con.execute("SET preserve_insertion_order = false")  # entries have no order: let inserts run in parallel
    try:
        yield
    finally:
        try:
            con.execute("RESET memory_limit")
            con.execute("RESET preserve_insertion_order")
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
    con.register("incoming_block", reader)
    try:
        con.execute(f"INSERT INTO {entries.stage} SELECT {owner}, qid, docid, {', '.join(entries.values)} FROM incoming_block")
    finally:
        con.unregister("incoming_block")


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
