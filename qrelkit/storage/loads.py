"""Run and qrels files into the compact entry tables, streamed: each file's blocks are staged as
the columnar reader validates them, then all of a load's files are written at once
(`qrelkit.storage.entries`). Memory holds a block and DuckDB's capped share, not a file.

A (qid, docid) given twice can lie in different blocks, so it is looked for after the write, in
SQL. Under `--on-duplicate error` the line reader then names the lines; under a policy the file
is read again whole and resolved (the policy needs the file's order): the one case that holds a
file in memory, and only a file that repeats itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import duckdb
import pyarrow as pa

from qrelkit.errors import StoreError
from qrelkit.io.columnar import Block, iter_run_blocks, read_qrels_table, read_run_table
from qrelkit.io.duplicates import OnDuplicate
from qrelkit.io.trec_lines import raise_beyond, read_qrels_lines, read_run_lines
from qrelkit.storage.entries import (
    INT32_MAX,
    INT32_MIN,
    QRELS,
    RUN_ENTRIES,
    Entries,
    clear_stage,
    create_stage,
    delete_entries,
    drop_stage,
    integers_beyond_int32,
    repeated_owners,
    stage,
    write_stage,
)

WHY_32_BITS = "the 32-bit integer range the database keeps"


class Staged(NamedTuple):
    rows: int
    tags: list[str]
    notes: tuple[str, ...] = ()  # what reading the file left out (columns after a run's 6th)


def stage_blocks(con: duckdb.DuckDBPyConnection, entries: Entries, owner: int, blocks: Iterable[Block], source: Path | None) -> Staged:
    """Stage a file's blocks for ``owner``; the rows staged, the tags they carry and the reading's notes."""
    rows, tags = 0, frozenset[str]()
    notes: tuple[str, ...] = ()
    integer = entries.values[0]  # rank or grade: an INTEGER column
    for block in blocks:
        if block.whole_file:  # the line reader read the file again, whole: it replaces what came before
            clear_stage(con, entries, owner)
            rows, tags, notes = 0, frozenset(), block.notes
        if integers_beyond_int32(block.table.column(integer)):
            if source is None:
                raise StoreError(f"a {integer} beyond {WHY_32_BITS}")
            raise_beyond(source, 4, integer, INT32_MIN, INT32_MAX, WHY_32_BITS, comments=entries is QRELS)
        stage(con, entries, owner, block.table)
        rows += len(block.table)
        tags |= block.tags
    return Staged(rows, sorted(tags), notes)


def _resolve_repeats(
    con: duckdb.DuckDBPyConnection,
    entries: Entries,
    owner: int,
    source: Path | None,
    policy: OnDuplicate,
    raise_lines: Callable[[Path, OnDuplicate], object],
    resolved: Callable[[Path, OnDuplicate], pa.Table],
) -> int:
    """Entries of ``owner`` given twice: named (error policy) or resolved by reading the file whole."""
    if source is None:
        raise StoreError(f"{entries.table}: a (qid, docid) is given twice")
    if policy is OnDuplicate.error:
        raise_lines(source, policy)  # names every repeated line
        raise StoreError(f"{source}: a (qid, docid) is given twice")
    table = resolved(source, policy)
    delete_entries(con, entries, owner)
    create_stage(con, entries)
    stage(con, entries, owner, table)
    write_stage(con, entries)
    return len(table)


def write_run_files(con: duckdb.DuckDBPyConnection, files: list[tuple[Path, int]], on_duplicate: OnDuplicate | str) -> dict[int, Staged]:
    """Stream every (file, run id) into `run_entries` (the caller holds the transaction); run id ->
    (entries stored, the file's distinct tags)."""
    policy = OnDuplicate(on_duplicate)
    create_stage(con, RUN_ENTRIES)
    counts = {run_id: stage_blocks(con, RUN_ENTRIES, run_id, iter_run_blocks(path, policy), path) for path, run_id in files}
    write_stage(con, RUN_ENTRIES)
    path_of = {run_id: path for path, run_id in files}
    for run_id in repeated_owners(con, RUN_ENTRIES, min(path_of)):
        rows = _resolve_repeats(con, RUN_ENTRIES, run_id, path_of[run_id], policy, read_run_lines, lambda p, d: read_run_table(p, d)[0])
        counts[run_id] = counts[run_id]._replace(rows=rows)
    drop_stage(con, RUN_ENTRIES)
    return counts


def write_qrels_blocks(
    con: duckdb.DuckDBPyConnection, qrels_set_id: int, blocks: Iterable[Block], source: Path | None, on_duplicate: OnDuplicate | str
) -> int:
    """Stream a qrels set's blocks into `qrels` (the caller holds the transaction); the judgments stored."""
    policy = OnDuplicate(on_duplicate)
    create_stage(con, QRELS)
    rows = stage_blocks(con, QRELS, qrels_set_id, blocks, source).rows
    write_stage(con, QRELS)
    if repeated_owners(con, QRELS, qrels_set_id):
        rows = _resolve_repeats(con, QRELS, qrels_set_id, source, policy, read_qrels_lines, read_qrels_table)
    drop_stage(con, QRELS)
    return rows
