"""One DuckDB file holds a collection, its runs and qrels, judge runs and judgments.

Every load is one transaction: it either lands whole or leaves the database as it was.
Loads are idempotent by (kind, name, file hash). Run entries and qrels are stored compact and
written as they are read (`qrelkit.storage.entries`, `qrelkit.storage.loads`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from qrelkit.errors import DatabaseInUseError, StorageFailure, StoreError
from qrelkit.io import Document, OnDuplicate, Qrels, Run, Topic, file_sha256, run_name_from_path, sha256_text
from qrelkit.io.collection import fields_json, with_fields
from qrelkit.io.columnar import Block, iter_qrels_blocks
from qrelkit.io.paths import checked_name, irds_id
from qrelkit.io.sources import documents_from, qrels_from, source_name, source_sha256, topics_from
from qrelkit.machine import crash_point
from qrelkit.storage.catalog import SAFE_CONFIG, check_tables, refuse_code
from qrelkit.storage.coerce import JUDGMENT_COLUMNS
from qrelkit.storage.embeddings import EmbeddingCache
from qrelkit.storage.entries import (
    LOAD_MEMORY_LIMIT,
    QRELS,
    RUN_ENTRIES,
    StoredRuns,
    bounded_memory,
    delete_entries,
    next_id,
    read_entries,
    registered,
)
from qrelkit.storage.loads import write_qrels_blocks, write_run_files
from qrelkit.storage.schema import MIGRATIONS, SCHEMA_VERSION

HISTORY_COLUMNS = [*JUDGMENT_COLUMNS, "judged_at"]

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")


LOCK_WAIT_SECONDS = 5.0


def lock_wait() -> float:
    """How long opening a file another process holds is retried: `QRELKIT_LOCK_WAIT` seconds (default 5)."""
    raw = os.environ.get("QRELKIT_LOCK_WAIT", "").strip()
    try:
        return max(float(raw), 0.0) if raw else LOCK_WAIT_SECONDS
    except ValueError:
        raise StoreError(f"QRELKIT_LOCK_WAIT={raw!r}: expected a number of seconds") from None


# DuckDB during a judging job: the pending pairs, the judgments' key index and the writes past it
# spill to `<db>.tmp` beyond this much memory, so a job's memory does not grow with its pool; one
# thread, because DuckDB needs a working share of memory per thread under a cap, and the judge
# and the writer keep the process's cores busy anyway (benchmarks/bench_judging.py, `--parts scale`:
# peak RSS 457 MB at 1M pairs, 491 MB at 5M). 64 MB ran out of memory at 1M pairs: what DuckDB
# cannot spill (the key index being written) outgrew it.
JOB_MEMORY_LIMIT = "256MB"
JOB_THREADS = 1
_MEMORY_SIZE = re.compile(r"^(\d+(\.\d+)?) ?([KMGT]i?B|B)$", re.IGNORECASE)


def job_settings(environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(threads, memory limit) of DuckDB during a judging job: `QRELKIT_JOB_THREADS` (a whole number,
    1 or more; default 1) and `QRELKIT_JOB_MEMORY` (a size such as 256MB or 1GiB; default 256MB),
    read when a job starts and checked: a bad value is one line naming the variable."""
    environ = os.environ if environ is None else environ
    raw_threads = environ.get("QRELKIT_JOB_THREADS", "").strip()
    raw_memory = environ.get("QRELKIT_JOB_MEMORY", "").strip()
    threads = JOB_THREADS
    if raw_threads:
        if not raw_threads.isascii() or not raw_threads.isdigit() or int(raw_threads) < 1 or int(raw_threads) > 4096:
            raise StoreError(f"QRELKIT_JOB_THREADS={raw_threads!r}: expected a whole number of threads from 1 to 4096")
        threads = int(raw_threads)
    if raw_memory and not _MEMORY_SIZE.match(raw_memory):
        raise StoreError(
            f"QRELKIT_JOB_MEMORY={raw_memory!r}: expected a size such as 256MB or 1GiB (a number and B, KB, MB, GB, TB, KiB...)"
        )
    return threads, raw_memory or JOB_MEMORY_LIMIT


@contextmanager
def job_memory(store: Store) -> Iterator[None]:
    """DuckDB's memory and threads capped for a judging job (a database held in memory, which has
    nowhere to spill to, is left as it is)."""
    job_threads, memory_limit = job_settings()
    if store.in_memory:
        yield
        return
    (threads,) = store.con.execute("SELECT current_setting('threads')").fetchall()[0]
    store.con.execute(f"SET threads = {job_threads}")
    try:
        with bounded_memory(store.con, memory_limit, keep_order=True):
            yield
    finally:
        store.con.execute(f"SET threads = {int(threads)}")


_DAMAGED = ("could not read enough bytes", "corrupt database file", "not a valid duckdb database file")
SQLITE_MAGIC = b"SQLite format 3\x00"


def damaged_file(exc: BaseException) -> bool:
    """A database error that says the file itself is damaged (cut short, a block's checksum wrong)."""
    text = str(exc).lower()
    return any(marker in text for marker in _DAMAGED)


def machine_failure(exc: BaseException) -> bool:
    """A database error that says the machine failed (disk, I/O, memory), not the data or the query."""
    text = str(exc).lower()
    if damaged_file(exc):
        return False
    return isinstance(exc, (duckdb.IOException, duckdb.OutOfMemoryException, duckdb.FatalException)) or any(
        marker in text for marker in ("no space left", "disk full", "input/output error", "database has been invalidated")
    )


def refuse_foreign_file(path: Path) -> None:
    """StoreError, before DuckDB opens it, for a file that is not a DuckDB database (DuckDB itself
    would try to fetch an extension for an SQLite file); nothing for a missing file (created)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot open database {path}: {exc.strerror or exc}") from None
    if head.startswith(SQLITE_MAGIC):
        raise StoreError(f"cannot open database {path}: it is an SQLite database, not a DuckDB one (qrelkit's are); name another --db")
    if head[8:12] != b"DUCK":
        what = "it is empty" if not head else "it is not a DuckDB database file (no DuckDB header)"
        raise StoreError(f"cannot open database {path}: {what}; name a qrelkit database, or a new file, as --db")


def first_line(exc: BaseException) -> str:
    """An error's first line, or its type's name when it says nothing."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class LoadResult:
    kind: str
    name: str
    rows: int
    status: str  # "loaded", "replaced", "unchanged", or "skipped" (a file of a folder that is not one)
    reason: str = ""  # why a file was skipped
    notes: tuple[str, ...] = ()  # what reading the file left out (columns after a run's 6th)


class Store(EmbeddingCache):
    """A qrelkit database. Use as a context manager; one writer process at a time."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self.in_memory = False
        self._depth = 0  # open transactions: an inner one joins the outer (see `transaction`)
        if str(path).strip() in ("", ":memory:") or str(path).startswith(":memory:"):
            raise StoreError(f"--db {str(path)!r}: an in-memory database keeps nothing; name a database file")
        if self.path.is_dir():
            raise StoreError(f"database {self.path} is a directory; name a database file")
        if read_only and not self.path.exists():
            raise StoreError(f"database {self.path} does not exist; load data into it first (qrelkit load ...)")
        self.con = self._connect(read_only)
        try:
            if not read_only:
                self._migrate()
                return
            version = self._check_version()
            if version == 0:
                raise StoreError(f"database {self.path} holds no qrelkit data yet; load data into it first (qrelkit load ...)")
        except BaseException:
            self.con.close()
            raise
        if version < SCHEMA_VERSION:
            self._upgrade_then_reopen(version)

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A connection; a file another process holds is tried again, with backoff, for up to
        `lock_wait()` seconds (a reader's or a flush's brief hold passes), then its holder is named."""
        refuse_foreign_file(self.path)
        deadline, delay = time.monotonic() + lock_wait(), 0.05
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=read_only, config=SAFE_CONFIG)
            except duckdb.Error as exc:
                if _LOCK_HOLDER.search(str(exc)) is None or time.monotonic() + delay > deadline:
                    raise self._open_error(exc) from None
            time.sleep(delay)
            delay = min(2 * delay, 1.0)

    def _upgrade_then_reopen(self, version: int) -> None:
        """A database written by an earlier qrelkit, opened to be read: its migrations run once (for
        which it is opened for writing, briefly), then it is read as usual."""
        self.con.close()
        try:
            with Store(self.path):
                pass
        except StoreError as exc:
            raise StoreError(
                f"database {self.path} has schema version {version}, from an earlier qrelkit, and must be upgraded: {exc}"
            ) from None
        self.con = self._connect(read_only=True)

    @classmethod
    def in_memory_copy(cls, path: str | Path) -> Store:
        """A database in memory holding what the file ``path`` holds (an empty, current-schema one when
        there is no file yet). The file is attached read-only and never written: a dry run loads and
        plans on the copy, so it can tell what a real run would load without changing anything."""
        store = cls.__new__(cls)
        store.path = Path(path)
        store.in_memory = True
        store._depth = 0
        store.con = duckdb.connect(":memory:", config=SAFE_CONFIG)
        try:
            if store.path.exists():
                refuse_foreign_file(store.path)
                quoted = str(store.path).replace("'", "''")
                try:
                    store.con.execute(f"ATTACH '{quoted}' AS planned_source (READ_ONLY)")
                except duckdb.Error as exc:
                    raise store._open_error(exc) from None
                store._check_version("planned_source")  # before COPY reads a row of it
                store.con.execute("COPY FROM DATABASE planned_source TO memory")
                store.con.execute("DETACH planned_source")
            store._migrate()
        except BaseException:
            store.con.close()
            raise
        return store

    def another_connection(self) -> Store:
        """The same database through a connection of its own, for another thread (a DuckDB
        connection serves one thread at a time); temporary tables of this one are not seen there.
        Close it before this one."""
        store = Store.__new__(Store)
        store.path, store.in_memory, store._depth = self.path, self.in_memory, 0
        store.con = self.con.cursor()
        return store

    def _open_error(self, exc: duckdb.Error) -> StoreError:
        holder = _LOCK_HOLDER.search(str(exc))
        if holder:
            return DatabaseInUseError(
                f"database {self.path} is in use by process {holder['pid']} ({Path(holder['program']).name}); "
                "wait for it to finish or stop it, then try again"
            )
        if damaged_file(exc):
            return StoreError(f"database {self.path} is damaged ({first_line(exc)}); restore it from a copy")
        return StoreError(f"cannot open database {self.path}: {first_line(exc)}")

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction: all of it lands, or none. A transaction opened inside another joins it
        (several loads land together). A failure of the machine (disk full, I/O error, out of
        memory, an invalidated database) becomes a StorageFailure naming the file."""
        if self._depth:
            self._depth += 1
            try:
                yield self.con
            finally:
                self._depth -= 1
            return
        try:
            self.con.execute("BEGIN TRANSACTION")
            self._depth = 1
            try:
                yield self.con
            except BaseException:
                self._rollback()
                raise
            finally:
                self._depth = 0
            crash_point("before-commit")
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            if machine_failure(exc):
                self._rollback()
                raise StorageFailure(f"cannot write to the database {self.path}: {first_line(exc)}") from None
            raise

    def _load_memory(self, con: duckdb.DuckDBPyConnection):
        """DuckDB's memory capped for a load (a database in memory has nowhere to spill: left as it is)."""
        return bounded_memory(con, None if self.in_memory else LOAD_MEMORY_LIMIT)

    def _rollback(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # the transaction is already gone (a failed commit, an invalidated database)

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The one value a query such as ``SELECT count(*)`` answers."""
        row = self.con.execute(sql, list(params)).fetchone()
        assert row is not None, sql  # an aggregate always answers one row
        return row[0]

    def schema_version(self, database: str | None = None) -> int:
        """The schema version the file records (0 for an empty one); ``database``: an attached one."""
        catalog = database or self._scalar("SELECT current_database()")
        exists = self._scalar("SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = 'meta'", [catalog])
        if not exists:
            return 0
        columns = {
            r[0]
            for r in self.con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND table_name = 'meta'", [catalog]
            ).fetchall()
        }
        if not {"key", "value"} <= columns:
            raise StoreError(
                f"{self.path} is a DuckDB database, but not a qrelkit one (its table 'meta' has columns {', '.join(sorted(columns))}, "
                "not key and value); name another --db"
            )
        # compared as text: a foreign `meta` may key its rows by number, and hold anything as a value
        query = f"SELECT CAST(value AS VARCHAR) FROM \"{catalog}\".meta WHERE CAST(key AS VARCHAR) = 'schema_version'"
        row = self.con.execute(query).fetchone()
        if row is None:
            return 0
        text = str(row[0])
        if not text.isdigit() or len(text) > 9:  # NULL, a word, a sign, a number no schema will reach
            raise StoreError(f"database {self.path} records no schema version qrelkit wrote ({text[:40]!r}); name another --db")
        return int(text)

    def _check_version(self, database: str | None = None) -> int:
        """The file's schema version, after checking that the file holds nothing but qrelkit's own
        tables (`qrelkit.storage.catalog`): no view, macro or other object is read before that."""
        catalog = database or self._scalar("SELECT current_database()")
        refuse_code(self.con, catalog, str(self.path))
        version = self.schema_version(catalog)
        if version == 0:
            tables = [
                r[0]
                for r in self.con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1", [catalog]).fetchall()
            ]
            if tables:
                shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
                raise StoreError(f"{self.path} is a DuckDB database, but not a qrelkit one (it holds {shown}); name another --db")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"database {self.path} has schema version {version}, newer than this qrelkit "
                f"understands ({SCHEMA_VERSION}); upgrade qrelkit"
            )
        check_tables(self.con, catalog, version, str(self.path))
        return version

    def _migrate(self) -> None:
        version = self._check_version()
        for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
            with self.transaction() as con:
                con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                for statement in statements:
                    con.execute(statement)
                con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(number)])

    # -- loading ---------------------------------------------------------------------------

    def _plan_load(self, kind: str, name: str, file_hash: str, path: Path, replace: bool) -> str:
        """'unchanged' if this exact file is loaded under this name; 'replaced' or 'loaded' otherwise."""
        previous = self.con.execute("SELECT file_hash, path FROM loads WHERE kind = ? AND name = ?", [kind, name]).fetchone()
        if previous is None:
            return "loaded"
        if replace:
            return "replaced"  # asked for: reload whatever the hash says
        if previous[0] == file_hash:
            return "unchanged"
        raise StoreError(
            f"{kind} {name!r} is already loaded from {previous[1]} with different content; "
            f"{path} changed it. Pass --replace to load the new version, or choose another --name"
        )

    def load_status(self, kind: str, path: str | Path, name: str | None = None) -> str:
        """What loading ``path`` as ``kind`` would do, read-only: 'unchanged' or 'loaded' (raises as the
        load would when the file changed under a name already loaded)."""
        path = Path(path)
        return self._plan_load(kind, name or source_name(path), source_sha256(path), path, replace=False)

    def _record_load(self, con: duckdb.DuckDBPyConnection, kind: str, name: str, path: Path, file_hash: str, rows: int) -> None:
        con.execute("DELETE FROM loads WHERE kind = ? AND name = ?", [kind, name])
        con.execute(
            "INSERT INTO loads (kind, name, path, file_hash, n_rows) VALUES (?, ?, ?, ?, ?)",
            [kind, name, str(path), file_hash, rows],
        )

    def _insert(self, con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
        columns = ", ".join(rows.column_names)
        with registered(con, "staging_rows", rows):
            con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staging_rows")

    def _source_writer(self, table: str, key: str, rows: pa.Table, source: str) -> Callable[[duckdb.DuckDBPyConnection], int]:
        """The writer of a topics or documents file: its earlier rows replaced by ``rows``, refusing a
        key another file loaded, and the judgments whose input changed retired."""

        def write(con: duckdb.DuckDBPyConnection) -> int:
            con.execute(f"DELETE FROM {table} WHERE source = ?", [source])
            with registered(con, "incoming_keys", rows.select([key])):
                clash = con.execute(
                    f"SELECT t.{key}, t.source FROM {table} t JOIN incoming_keys i ON t.{key} = i.{key} WHERE t.source <> ? LIMIT 5",
                    [source],
                ).fetchall()
            if clash:
                listed = ", ".join(f"{k!r} (from {s!r})" for k, s in clash)
                raise StoreError(f"{table} already loaded from another file: {listed}")
            self._insert(con, table, rows)
            self.retire_stale_judgments()  # joins this load's transaction
            return rows.num_rows

        return write

    def _load(
        self,
        kind: str,
        path: str | Path,
        name: str | None,
        replace: bool,
        prepare: Callable[[Path, str], Callable[[duckdb.DuckDBPyConnection], int]],
    ) -> LoadResult:
        """The one load path: skip an unchanged file, prepare (``prepare`` checks, and parses what is
        read whole, and returns the writer), then write (the writer returns the rows it wrote, having
        read a streamed file as it went) and record the load in one transaction."""
        path = Path(path)
        name = checked_name(name, f"the {kind} set's name", path) if name is not None else source_name(path)
        file_hash = source_sha256(path)
        status = self._plan_load(kind, name, file_hash, path, replace)
        if status == "unchanged":
            return LoadResult(kind, name, 0, status)
        write = prepare(path, name)
        with self.transaction() as con:
            rows = write(con)
            self._record_load(con, kind, name, path, file_hash, rows)
        return LoadResult(kind, name, rows, status)

    def load_topics(self, path: str | Path, *, name: str | None = None, replace: bool = False) -> LoadResult:
        def prepare(path: Path, name: str):
            topics = topics_from(path)
            fields = [fields_json(t.fields) for t in topics]
            rows = pa.table(
                {
                    "qid": [t.qid for t in topics],
                    "text": [t.text for t in topics],
                    "fields": fields,
                    "source": [name] * len(topics),
                    "content_hash": [with_fields(sha256_text(t.text), f) for t, f in zip(topics, fields)],
                }
            )

            return self._source_writer("topics", "qid", rows, name)

        return self._load("topics", path, name, replace, prepare)

    def load_documents(
        self, path: str | Path, *, name: str | None = None, image_root: str | Path | None = None, replace: bool = False
    ) -> LoadResult:
        def prepare(path: Path, name: str):
            documents = documents_from(path, image_root=image_root)
            bodies = [d.content_hash() for d in documents]  # an image's bytes are read (and hashed) here
            fields = [fields_json(d.fields) for d in documents]
            rows = pa.table(
                {
                    "docid": [d.docid for d in documents],
                    "text": pa.array([d.text for d in documents], pa.string()),
                    "image_path": pa.array([d.image for d in documents], pa.string()),
                    "image_root": pa.array([str(Path(d.image_root).resolve()) if d.image_root else None for d in documents], pa.string()),
                    "content_hash": [with_fields(body, f) for body, f in zip(bodies, fields)],
                    "fields": fields,
                    "source": [name] * len(documents),
                    "image_sha256": pa.array([body if d.image is not None else None for d, body in zip(documents, bodies)], pa.string()),
                }
            )

            return self._source_writer("documents", "docid", rows, name)

        return self._load("documents", path, name, replace, prepare)

    def load_runs(
        self,
        paths: Sequence[str | Path],
        *,
        names: Sequence[str | None] | None = None,
        replace: bool = False,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> list[LoadResult]:
        """Load several run files as one transaction: all of them land, or none (a bad fourth file
        leaves the first three unloaded too). Every name is checked before anything is read; each
        file is then streamed into the database as it is read."""
        names = list(names) if names is not None else [None] * len(paths)
        plans: list[tuple[Path, str, str, int]] = []  # (file, name, hash, index of its result)
        results: list[LoadResult] = []
        for path, name in zip(paths, names):
            path = Path(path)
            name = checked_name(name, "the run's name", path) if name is not None else run_name_from_path(path)
            file_hash = file_sha256(path)
            status = self._plan_load("runs", name, file_hash, path, replace)
            if status != "unchanged":
                plans.append((path, name, file_hash, len(results)))
            results.append(LoadResult("runs", name, 0, status))
        seen: dict[str, Path] = {}
        for path, name, _, _ in plans:
            if name in seen:
                raise StoreError(
                    f"run name {name!r} comes from both {seen[name]} and {path}; load one of them with --name NAME, "
                    "or name every run by its tag with --tag-names"
                )
            seen[name] = path
        if plans:
            with self.transaction() as con, self._load_memory(con):
                first = next_id(con, "runs", "run_id")
                files = [(path, first + i) for i, (path, *_) in enumerate(plans)]
                for _, name, _, _ in plans:
                    self._drop_run(con, name)
                staged = write_run_files(con, files, on_duplicate)
                crash_point("mid-load")
                for (path, name, file_hash, index), (_, run_id) in zip(plans, files):
                    rows, tags, notes = staged[run_id]
                    con.execute(
                        "INSERT INTO runs (run_id, name, tag, path, file_hash, n_entries) VALUES (?, ?, ?, ?, ?, ?)",
                        [run_id, name, tags[0] if len(tags) == 1 else ",".join(tags), str(path), file_hash, rows],
                    )
                    self._record_load(con, "runs", name, path, file_hash, rows)
                    results[index] = LoadResult("runs", name, rows, results[index].status, notes=notes)
        return results

    def _drop_run(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        """A run's row and entries gone (a reload writes them again under a new id)."""
        row = con.execute("SELECT run_id FROM runs WHERE name = ?", [name]).fetchone()
        if row is not None:
            delete_entries(con, RUN_ENTRIES, row[0])
            con.execute("DELETE FROM runs WHERE name = ?", [name])

    def load_run(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        replace: bool = False,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> LoadResult:
        return self.load_runs([path], names=[name], replace=replace, on_duplicate=on_duplicate)[0]

    def load_qrels(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        replace: bool = False,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> LoadResult:
        def prepare(path: Path, name: str):
            graded = self.qrels_origin(name)
            if graded is not None and graded[0] == "graded" and not replace:
                raise StoreError(
                    f"qrels set {name!r} holds qrels graded from judge run {graded[1]}; loading {path} would replace them: "
                    "choose another --name, or pass --replace"
                )
            if irds_id(path) is not None:
                blocks: Iterable[Block] = [Block(qrels_from(path, name=name, on_duplicate=on_duplicate).table)]
                source = None
            else:
                blocks, source = iter_qrels_blocks(path, on_duplicate), path

            def write(con: duckdb.DuckDBPyConnection) -> int:
                with self._load_memory(con):
                    file_hash = source_sha256(path)
                    return self._replace_qrels(
                        con, name, blocks, origin="loaded", path=str(path), file_hash=file_hash, source=source, on_duplicate=on_duplicate
                    )

            return write

        return self._load("qrels", path, name, replace, prepare)

    def qrels_origin(self, name: str) -> tuple[str, str | None, str | None] | None:
        """(origin, judge run id, path) of a qrels set, or None when there is no set of that name."""
        row = self.con.execute("SELECT origin, judge_run_id, path FROM qrels_sets WHERE name = ?", [name]).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def _replace_qrels(
        self,
        con: duckdb.DuckDBPyConnection,
        name: str,
        blocks: Iterable[Block],
        *,
        origin: str,
        path: str | None = None,
        file_hash: str | None = None,
        judge_run_id: str | None = None,
        grading: dict | None = None,
        source: Path | None = None,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> int:
        """The qrels set ``name`` replaced by ``blocks`` (streamed from ``source`` when read from a
        file); the judgments stored."""
        checked_name(name, "the qrels set's name", path)  # every set is made here: a graded set's name too
        old = con.execute("SELECT qrels_set_id FROM qrels_sets WHERE name = ?", [name]).fetchone()
        if old is not None:
            delete_entries(con, QRELS, old[0])
            con.execute("DELETE FROM qrels_sets WHERE name = ?", [name])
        qrels_set_id = next_id(con, "qrels_sets", "qrels_set_id")
        con.execute(
            "INSERT INTO qrels_sets (qrels_set_id, name, origin, judge_run_id, grading, path, file_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [qrels_set_id, name, origin, judge_run_id, json.dumps(grading) if grading else None, path, file_hash],
        )
        return write_qrels_blocks(con, qrels_set_id, blocks, source, on_duplicate)

    def save_qrels(self, qrels: Qrels, *, judge_run_id: str, grading: dict, replace: bool = False) -> None:
        """Store qrels graded from a judge run, with the record of how they were graded.

        Reference qrels are protected: a set loaded from a file is never overwritten by grading,
        and a set graded earlier is replaced only when asked (``replace``)."""
        existing = self.qrels_origin(qrels.name)
        if existing is not None:
            origin, previous_run, path = existing
            if origin != "graded":
                raise StoreError(
                    f"qrels set {qrels.name!r} holds qrels loaded from {path}; grading judge run {judge_run_id} into it "
                    f"would overwrite them. Grade into another name (--name, or grading.name in the job)"
                )
            if not replace:
                raise StoreError(
                    f"qrels set {qrels.name!r} was already graded from judge run {previous_run}; pass --replace to grade it again, "
                    "or choose another --name"
                )
        with self.transaction() as con:
            self._replace_qrels(con, qrels.name, [Block(qrels.table)], origin="graded", judge_run_id=judge_run_id, grading=grading)

    # -- reading ---------------------------------------------------------------------------

    def topics(self) -> list[Topic]:
        rows = self.con.execute("SELECT qid, text, fields FROM topics ORDER BY qid").fetchall()
        return [Topic(qid, text, json.loads(fields) if fields else {}) for qid, text, fields in rows]

    def documents(self, docids: list[str] | None = None) -> dict[str, Document]:
        """Documents as loaded; an image document carries the hash its bytes had then ("" when they
        could not be read), which the bytes read to judge it must match."""
        query = "SELECT docid, text, image_path, image_root, fields, image_sha256 FROM documents"
        if docids is None:
            rows = self.con.execute(query).fetchall()
        else:
            rows = self.con.execute(query + " WHERE list_contains(?, docid)", [list(docids)]).fetchall()
        return {
            docid: Document(docid, text, image, root, json.loads(fields) if fields else {}, (sha or "") if image is not None else None)
            for docid, text, image, root, fields, sha in rows
        }

    def document_hashes(self) -> dict[str, str]:
        """docid -> the content hash of the document as loaded now (its text or image, and its fields)."""
        return dict(self.con.execute("SELECT docid, content_hash FROM documents").fetchall())

    def retire_stale_judgments(self) -> int:
        """Move judgments whose topic or document changed since they were judged (their recorded
        input hash is not the one loaded now) into `judgment_history`, kept as the history of the
        old content and never used for the new; the number moved. Such a pair is judged again.
        A probe's judgment judged a perturbed copy: it is stale when the copy is no longer the one
        it judged, or the document the copy was made from changed."""
        copy = "p.judge_run_id = j.judge_run_id AND p.qid = j.qid AND p.docid = j.docid"
        stale = (
            "(j.content_hash IS NOT NULL AND NOT EXISTS (SELECT 1 FROM perturbations p WHERE " + copy + ") AND EXISTS "
            "(SELECT 1 FROM documents d WHERE d.docid = j.docid AND d.content_hash <> j.content_hash)) "
            "OR (j.content_hash IS NOT NULL AND EXISTS (SELECT 1 FROM perturbations p LEFT JOIN documents d ON d.docid = p.docid "
            "WHERE " + copy + " AND (p.content_hash <> j.content_hash OR d.content_hash <> p.source_hash))) "
            "OR (j.topic_hash IS NOT NULL AND EXISTS (SELECT 1 FROM topics t WHERE t.qid = j.qid AND t.content_hash <> j.topic_hash))"
        )
        with self.transaction() as con:
            moved = con.execute(f"SELECT count(*) FROM judgments j WHERE {stale}").fetchall()[0][0]
            if moved:
                columns = ", ".join(HISTORY_COLUMNS)
                con.execute(f"INSERT INTO judgment_history ({columns}) SELECT {columns} FROM judgments j WHERE {stale}")
                con.execute(f"DELETE FROM judgments j WHERE {stale}")
        return int(moved)

    def run_names(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM runs ORDER BY name").fetchall()]

    def _run_ids(self, names: list[str]) -> dict[str, tuple[int, str, str]]:
        """name -> (run id, tag, path) of each named run; an unknown name is an error listing the known."""
        rows = self.con.execute("SELECT name, run_id, tag, path FROM runs WHERE list_contains(?, name)", [names]).fetchall()
        found = {name: (run_id, tag or "", path) for name, run_id, tag, path in rows}
        for name in names:
            if name not in found:
                known = ", ".join(self.run_names()) or "none"
                raise StoreError(f"no run named {name!r} in {self.path} (loaded runs: {known})")
        return found

    def run(self, name: str) -> Run:
        return self.runs([name])[0]

    def runs(self, names: list[str] | None = None) -> list[Run]:
        """The named runs (all, by name, when None), read back as columns."""
        return list(self.iter_runs(names))

    def iter_runs(self, names: list[str] | None = None) -> Iterator[Run]:
        """The named runs (all, by name, when None), one at a time in one pass (`StoredRuns`): a
        caller that keeps only results holds one run. Every name is checked before the first run."""
        names = list(names or self.run_names())
        found = self._run_ids(names)
        return self._iter_runs(names, found)

    def _iter_runs(self, names: list[str], found: dict[str, tuple[int, str, str]]) -> Iterator[Run]:
        stored = StoredRuns(self.con)
        for name in names:
            run_id, tag, path = found[name]
            yield Run.from_table(name, stored.table(run_id), tag=tag, source=path)

    def run_ids(self, names: list[str] | None = None) -> list[int]:
        """The ids of the named runs (of all when None); an unknown name is an error."""
        return [run_id for run_id, _, _ in self._run_ids(list(names or self.run_names())).values()]

    def qrels_names(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM qrels_sets ORDER BY name").fetchall()]

    def _qrels_set(self, name: str) -> tuple[int, str | None]:
        """(id, path) of a qrels set; an unknown name is an error listing the known."""
        rows = self.con.execute("SELECT qrels_set_id, path FROM qrels_sets WHERE name = ?", [name]).fetchall()
        if not rows:
            known = ", ".join(self.qrels_names()) or "none"
            raise StoreError(f"no qrels set named {name!r} in {self.path} (qrels sets: {known})")
        return int(rows[0][0]), rows[0][1]

    def qrels_set_id(self, name: str) -> int:
        return self._qrels_set(name)[0]

    def qrels(self, name: str) -> Qrels:
        qrels_set_id, path = self._qrels_set(name)
        return Qrels.from_table(name, read_entries(self.con, QRELS, [qrels_set_id])[qrels_set_id], source=path)

    def qrels_grading(self, name: str) -> dict | None:
        """The grading record of a qrels set graded from a judge run (None for a loaded set)."""
        row = self.con.execute("SELECT grading FROM qrels_sets WHERE name = ?", [name]).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def summary(self) -> list[tuple[str, int, str]]:
        """(what, count, detail) lines describing what the database holds."""
        count = self._scalar
        lines = [
            ("topics", count("SELECT count(*) FROM topics"), ""),
            (
                "documents",
                count("SELECT count(*) FROM documents"),
                f"{count('SELECT count(*) FROM documents WHERE image_path IS NOT NULL')} images",
            ),
            ("runs", count("SELECT count(*) FROM runs"), f"{count('SELECT count(*) FROM run_entries')} entries"),
        ]
        for name, origin, judge_run_id, path, file_hash, grading, n in self.con.execute(
            "SELECT s.name, s.origin, s.judge_run_id, s.path, s.file_hash, s.grading, count(q.qid_id) FROM qrels_sets s "
            "LEFT JOIN qrels q USING (qrels_set_id) GROUP BY ALL ORDER BY s.name"
        ).fetchall():
            if origin == "graded":
                detail = f"graded from judge run {judge_run_id} ({grading_label(json.loads(grading) if grading else {})})"
            else:
                detail = f"loaded from {path} (sha256 {str(file_hash)[:12]})"
            lines.append((f"qrels {name}", n, detail))
        for run_id, judge, template, total, statuses in self.con.execute(
            "SELECT r.judge_run_id, r.judge, coalesce(r.template_id, '-'), coalesce(sum(j.n), 0), "
            "string_agg(j.status || '=' || j.n, ' ' ORDER BY j.status) "
            "FROM judge_runs r LEFT JOIN (SELECT judge_run_id, status, count(*) AS n FROM judgments "
            "GROUP BY ALL) j USING (judge_run_id) GROUP BY ALL ORDER BY 1"
        ).fetchall():
            lines.append((f"judge run {run_id} ({judge}, template {template})", int(total), statuses or ""))
        lines.append(("embeddings", count("SELECT count(*) FROM embeddings"), ""))
        return lines


def grading_label(grading: dict) -> str:
    """A grading record in a few words for `qrelkit show`: the method and, for quantiles, per topic
    or global and the tie rule (the oldest records name none)."""
    method = grading.get("method", "?")
    if method != "quantile":
        return method
    return f"quantile, {'per topic' if grading.get('per_topic') else 'global'}, ties {grading.get('ties') or 'not recorded'}"
