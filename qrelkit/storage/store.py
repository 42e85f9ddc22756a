"""One DuckDB file holds a collection, its runs and qrels, judge runs and judgments.

Every load is one transaction: it either lands whole or leaves the database as it was.
Loads are idempotent by (kind, name, file hash).
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from qrelkit.errors import DatabaseInUseError, StoreError
from qrelkit.io import (
    Document,
    OnDuplicate,
    Qrel,
    Qrels,
    Run,
    RunEntry,
    Topic,
    file_sha256,
    read_documents,
    read_qrels,
    read_run,
    read_topics,
    run_name_from_path,
)
from qrelkit.storage.schema import MIGRATIONS, SCHEMA_VERSION

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>\S+) \(PID (?P<pid>\d+)\)")


def _crash_point(name: str) -> None:
    """Test hook: die here, uncleanly, when QRELKIT_CRASH_AT names this point."""
    if os.environ.get("QRELKIT_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class LoadResult:
    kind: str
    name: str
    rows: int
    status: str  # "loaded", "replaced" or "unchanged"


class Store:
    """A qrelkit database. Use as a context manager; one writer process at a time."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        if read_only and not self.path.exists():
            raise StoreError(f"database {self.path} does not exist; load data into it first (qrelkit load ...)")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            holder = _LOCK_HOLDER.search(str(exc))
            if holder:
                raise DatabaseInUseError(
                    f"database {self.path} is in use by process {holder['pid']} ({Path(holder['program']).name}); "
                    "wait for it to finish or stop it, then try again"
                ) from None
            raise StoreError(f"cannot open database {self.path}: {exc}") from None
        if not read_only:
            self._migrate()
        else:
            self._check_version()

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self.con
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        _crash_point("before-commit")
        self.con.execute("COMMIT")

    def schema_version(self) -> int:
        exists = self.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchone()[0]
        if not exists:
            return 0
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _check_version(self) -> int:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"database {self.path} has schema version {version}, newer than this qrelkit "
                f"understands ({SCHEMA_VERSION}); upgrade qrelkit"
            )
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

    def _previous_load(self, kind: str, name: str) -> tuple[str, str] | None:
        row = self.con.execute("SELECT file_hash, path FROM loads WHERE kind = ? AND name = ?", [kind, name]).fetchone()
        return (row[0], row[1]) if row else None

    def _plan_load(self, kind: str, name: str, file_hash: str, path: Path, replace: bool) -> str | None:
        """'unchanged' if this exact file is loaded under this name; 'replaced' or 'loaded' otherwise."""
        previous = self._previous_load(kind, name)
        if previous is None:
            return "loaded"
        if previous[0] == file_hash:
            return "unchanged"
        if not replace:
            raise StoreError(
                f"{kind} {name!r} is already loaded from {previous[1]} with different content; "
                f"{path} changed it. Pass --replace to load the new version, or choose another --name"
            )
        return "replaced"

    def _record_load(self, con: duckdb.DuckDBPyConnection, kind: str, name: str, path: Path, file_hash: str, rows: int) -> None:
        con.execute("DELETE FROM loads WHERE kind = ? AND name = ?", [kind, name])
        con.execute(
            "INSERT INTO loads (kind, name, path, file_hash, n_rows) VALUES (?, ?, ?, ?, ?)",
            [kind, name, str(path), file_hash, rows],
        )

    def _insert(self, con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
        con.register("staging_rows", rows)
        try:
            columns = ", ".join(rows.column_names)
            con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM staging_rows")
        finally:
            con.unregister("staging_rows")

    def _refuse_foreign_keys(self, con: duckdb.DuckDBPyConnection, table: str, key: str, rows: pa.Table, source: str, what: str) -> None:
        con.register("incoming_keys", rows.select([key]))
        try:
            clash = con.execute(
                f"SELECT t.{key}, t.source FROM {table} t JOIN incoming_keys i ON t.{key} = i.{key} WHERE t.source <> ? LIMIT 5",
                [source],
            ).fetchall()
        finally:
            con.unregister("incoming_keys")
        if clash:
            listed = ", ".join(f"{k!r} (from {s!r})" for k, s in clash)
            raise StoreError(f"{what} already loaded from another file: {listed}")

    def load_topics(self, path: str | Path, *, name: str | None = None, replace: bool = False) -> LoadResult:
        path = Path(path)
        name = name or run_name_from_path(path)
        file_hash = file_sha256(path)
        status = self._plan_load("topics", name, file_hash, path, replace)
        if status == "unchanged":
            return LoadResult("topics", name, 0, status)
        topics = read_topics(path)
        rows = pa.table(
            {
                "qid": [t.qid for t in topics],
                "text": [t.text for t in topics],
                "fields": [json.dumps(t.fields, ensure_ascii=False) for t in topics],
                "source": [name] * len(topics),
            }
        )
        with self.transaction() as con:
            con.execute("DELETE FROM topics WHERE source = ?", [name])
            self._refuse_foreign_keys(con, "topics", "qid", rows, name, "topics")
            self._insert(con, "topics", rows)
            self._record_load(con, "topics", name, path, file_hash, len(topics))
        return LoadResult("topics", name, len(topics), status)

    def load_documents(
        self, path: str | Path, *, name: str | None = None, image_root: str | Path | None = None, replace: bool = False
    ) -> LoadResult:
        path = Path(path)
        name = name or run_name_from_path(path)
        file_hash = file_sha256(path)
        status = self._plan_load("documents", name, file_hash, path, replace)
        if status == "unchanged":
            return LoadResult("documents", name, 0, status)
        documents = read_documents(path, image_root=image_root)
        rows = pa.table(
            {
                "docid": [d.docid for d in documents],
                "text": pa.array([d.text for d in documents], pa.string()),
                "image_path": pa.array([d.image for d in documents], pa.string()),
                "image_root": pa.array([str(Path(d.image_root).resolve()) if d.image_root else None for d in documents], pa.string()),
                "content_hash": [d.content_hash() for d in documents],
                "fields": [json.dumps(d.fields, ensure_ascii=False) for d in documents],
                "source": [name] * len(documents),
            }
        )
        with self.transaction() as con:
            con.execute("DELETE FROM documents WHERE source = ?", [name])
            self._refuse_foreign_keys(con, "documents", "docid", rows, name, "documents")
            self._insert(con, "documents", rows)
            self._record_load(con, "documents", name, path, file_hash, len(documents))
        return LoadResult("documents", name, len(documents), status)

    def load_run(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        group: str | None = None,
        replace: bool = False,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> LoadResult:
        path = Path(path)
        name = name or run_name_from_path(path)
        file_hash = file_sha256(path)
        status = self._plan_load("runs", name, file_hash, path, replace)
        if status == "unchanged":
            if group is not None:
                self.con.execute("UPDATE runs SET run_group = ? WHERE name = ?", [group, name])
            return LoadResult("runs", name, 0, status)
        run = read_run(path, name=name, on_duplicate=on_duplicate)
        rows = pa.table(
            {
                "run": [name] * len(run),
                "qid": [e.qid for e in run.entries],
                "docid": [e.docid for e in run.entries],
                "rank": pa.array([e.rank for e in run.entries], pa.int32()),
                "score": pa.array([e.score for e in run.entries], pa.float64()),
            }
        )
        with self.transaction() as con:
            con.execute("DELETE FROM run_entries WHERE run = ?", [name])
            con.execute("DELETE FROM runs WHERE name = ?", [name])
            self._insert(con, "run_entries", rows)
            _crash_point("mid-load")
            con.execute(
                "INSERT INTO runs (name, run_group, tag, path, file_hash, n_entries) VALUES (?, ?, ?, ?, ?, ?)",
                [name, group, run.tag, str(path), file_hash, len(run)],
            )
            self._record_load(con, "runs", name, path, file_hash, len(run))
        return LoadResult("runs", name, len(run), status)

    def load_qrels(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        replace: bool = False,
        on_duplicate: OnDuplicate | str = OnDuplicate.error,
    ) -> LoadResult:
        path = Path(path)
        name = name or run_name_from_path(path)
        file_hash = file_sha256(path)
        status = self._plan_load("qrels", name, file_hash, path, replace)
        if status == "unchanged":
            return LoadResult("qrels", name, 0, status)
        qrels = read_qrels(path, name=name, on_duplicate=on_duplicate)
        with self.transaction() as con:
            self._replace_qrels(con, qrels, origin="file", path=str(path), file_hash=file_hash)
            self._record_load(con, "qrels", name, path, file_hash, len(qrels))
        return LoadResult("qrels", name, len(qrels), status)

    def _replace_qrels(
        self,
        con: duckdb.DuckDBPyConnection,
        qrels: Qrels,
        *,
        origin: str,
        path: str | None = None,
        file_hash: str | None = None,
        judge_run_id: str | None = None,
        grading: dict | None = None,
    ) -> None:
        con.execute("DELETE FROM qrels WHERE qrels_set = ?", [qrels.name])
        con.execute("DELETE FROM qrels_sets WHERE name = ?", [qrels.name])
        con.execute(
            "INSERT INTO qrels_sets (name, origin, judge_run_id, grading, path, file_hash) VALUES (?, ?, ?, ?, ?, ?)",
            [qrels.name, origin, judge_run_id, json.dumps(grading) if grading else None, path, file_hash],
        )
        rows = pa.table(
            {
                "qrels_set": [qrels.name] * len(qrels),
                "qid": [q.qid for q in qrels.entries],
                "docid": [q.docid for q in qrels.entries],
                "grade": pa.array([q.grade for q in qrels.entries], pa.int32()),
                "iteration": [q.iteration for q in qrels.entries],
            }
        )
        self._insert(con, "qrels", rows)

    def save_qrels(self, qrels: Qrels, *, judge_run_id: str, grading: dict) -> None:
        """Store qrels graded from a judge run, with the thresholds that produced them."""
        with self.transaction() as con:
            self._replace_qrels(con, qrels, origin="graded", judge_run_id=judge_run_id, grading=grading)

    # -- reading ---------------------------------------------------------------------------

    def topics(self) -> list[Topic]:
        rows = self.con.execute("SELECT qid, text, fields FROM topics ORDER BY qid").fetchall()
        return [Topic(qid, text, json.loads(fields) if fields else {}) for qid, text, fields in rows]

    def documents(self, docids: list[str] | None = None) -> dict[str, Document]:
        query = "SELECT docid, text, image_path, image_root, fields FROM documents"
        if docids is None:
            rows = self.con.execute(query).fetchall()
        else:
            rows = self.con.execute(query + " WHERE list_contains(?, docid)", [list(docids)]).fetchall()
        return {
            docid: Document(docid, text, image, root, json.loads(fields) if fields else {}) for docid, text, image, root, fields in rows
        }

    def run_names(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM runs ORDER BY name").fetchall()]

    def run_groups(self) -> dict[str, str | None]:
        return dict(self.con.execute("SELECT name, run_group FROM runs").fetchall())

    def run(self, name: str) -> Run:
        meta = self.con.execute("SELECT tag, path FROM runs WHERE name = ?", [name]).fetchone()
        if meta is None:
            known = ", ".join(self.run_names()) or "none"
            raise StoreError(f"no run named {name!r} in {self.path} (loaded runs: {known})")
        rows = self.con.execute(
            "SELECT qid, docid, rank, score FROM run_entries WHERE run = ? ORDER BY qid, rank, docid", [name]
        ).fetchall()
        return Run(name, tuple(RunEntry(*row) for row in rows), tag=meta[0] or "", source=meta[1])

    def runs(self, names: list[str] | None = None) -> list[Run]:
        return [self.run(name) for name in (names or self.run_names())]

    def qrels_names(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT name FROM qrels_sets ORDER BY name").fetchall()]

    def qrels(self, name: str) -> Qrels:
        meta = self.con.execute("SELECT path FROM qrels_sets WHERE name = ?", [name]).fetchone()
        if meta is None:
            known = ", ".join(self.qrels_names()) or "none"
            raise StoreError(f"no qrels set named {name!r} in {self.path} (qrels sets: {known})")
        rows = self.con.execute("SELECT qid, docid, grade, iteration FROM qrels WHERE qrels_set = ? ORDER BY qid, docid", [name]).fetchall()
        return Qrels(name, tuple(Qrel(*row) for row in rows), source=meta[0])

    # -- the embedding cache (qrelkit.embed.cache.VectorStore) ---------------------------------

    def read_embeddings(self, embedder_id: str, item_kind: str, keys):
        from qrelkit.storage.embeddings import read_embeddings

        return read_embeddings(self, embedder_id, item_kind, keys)

    def write_embeddings(self, embedder_id: str, item_kind: str, keys, vectors) -> int:
        from qrelkit.storage.embeddings import write_embeddings

        return write_embeddings(self, embedder_id, item_kind, keys, vectors)

    def qrels_grading(self, name: str) -> dict | None:
        """The grading record of a qrels set graded from a judge run (None for a loaded set)."""
        row = self.con.execute("SELECT grading FROM qrels_sets WHERE name = ?", [name]).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def summary(self) -> list[tuple[str, int, str]]:
        """(what, count, detail) lines describing what the database holds."""
        count = lambda sql: self.con.execute(sql).fetchone()[0]  # noqa: E731
        lines = [
            ("topics", count("SELECT count(*) FROM topics"), ""),
            (
                "documents",
                count("SELECT count(*) FROM documents"),
                f"{count('SELECT count(*) FROM documents WHERE image_path IS NOT NULL')} images",
            ),
            ("runs", count("SELECT count(*) FROM runs"), f"{count('SELECT count(*) FROM run_entries')} entries"),
        ]
        for name, origin, n in self.con.execute(
            "SELECT s.name, s.origin, count(q.qid) FROM qrels_sets s LEFT JOIN qrels q ON q.qrels_set = s.name "
            "GROUP BY s.name, s.origin ORDER BY s.name"
        ).fetchall():
            lines.append((f"qrels {name}", n, origin))
        for run_id, judge, template, total, statuses in self.con.execute(
            "SELECT r.judge_run_id, r.judge, coalesce(r.template_id, '-'), coalesce(sum(j.n), 0), "
            "string_agg(j.status || '=' || j.n, ' ' ORDER BY j.status) "
            "FROM judge_runs r LEFT JOIN (SELECT judge_run_id, status, count(*) AS n FROM judgments "
            "GROUP BY ALL) j USING (judge_run_id) GROUP BY ALL ORDER BY 1"
        ).fetchall():
            lines.append((f"judge run {run_id} ({judge}, template {template})", int(total), statuses or ""))
        lines.append(("embeddings", count("SELECT count(*) FROM embeddings"), ""))
        return lines
