"""A database as a notebook holds it: `qrelkit.Store(path)` keeps no connection between calls.

DuckDB lets one process write a file or several read it, never both; a `Store` that held its
connection would lock every `qrelkit show` out for as long as the notebook runs. So each call
opens the file (read-only unless the call writes), does its work and closes it. A call that finds
the file locked by another process waits for it a bounded time (`Store` retries with backoff)
and then names the holder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from qrelkit.errors import StoreError
from qrelkit.storage.store import Store

# The Store methods a call may make: those that read, and those that write. A connection's own
# tools (`transaction`, `close`) mean nothing on a connection that closes after the call.
READS = frozenset(
    {
        "topics",
        "documents",
        "document_hashes",
        "run_names",
        "run",
        "runs",
        "run_ids",
        "qrels_names",
        "qrels",
        "qrels_set_id",
        "qrels_origin",
        "qrels_grading",
        "summary",
        "load_status",
        "read_embeddings",
    }
)
WRITES = frozenset(
    {
        "load_topics",
        "load_documents",
        "load_runs",
        "load_run",
        "load_qrels",
        "save_qrels",
        "write_embeddings",
        "retire_stale_judgments",
    }
)


class BriefStore:
    """`Store`'s methods, each on a connection of its own opened for the call. ``read_only``: a
    file that must exist and is never written; otherwise a missing file is created (as `Store`
    does). Usable as a context manager, like `Store`, though there is nothing to close."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if not read_only and not self.path.exists():
            Store(self.path).close()  # created and migrated, as `Store(path)` would
        else:
            with self._open(True):  # the file is checked now, not at the first call
                pass

    def _open(self, read_only: bool) -> Store:
        if not read_only and self.read_only:
            raise StoreError(f"database {self.path} was opened read-only (qrelkit.Store(..., read_only=True)); this call writes")
        return Store(self.path, read_only=read_only)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in READS | WRITES:
            if name in ("con", "transaction"):
                raise AttributeError(
                    "qrelkit.Store holds no connection between calls (so it never locks the command line out); "
                    "for one, use qrelkit.storage.Store(path) as a context manager"
                )
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        method = getattr(Store, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._open(name not in WRITES) as store:
                return getattr(store, name)(*args, **kwargs)

        call.__name__ = name
        call.__doc__ = method.__doc__
        return call

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *READS, *WRITES})

    def judgments(self, judge_run: str | None = None):
        """Every stored field of a judge run's judgments (its id, a unique prefix or its name; all
        runs when None), as an Arrow table."""
        from qrelkit.storage.judgments import judge_run as find_judge_run
        from qrelkit.storage.judgments import judgments_table

        with self._open(True) as store:
            judge_run_id = find_judge_run(store, judge_run).judge_run_id if judge_run is not None else None
            return judgments_table(store, judge_run_id)

    def import_scores(self, scores: Any, *, name: str, replace: bool = False) -> Any:
        """Scores made elsewhere stored as a judge run of origin `imported` (`qrelkit import scores`)."""
        from qrelkit.storage.judgments import import_scores

        with self._open(False) as store:
            return import_scores(store, scores, name=name, replace=replace)

    def contents(self) -> dict:
        """What the database holds, as `qrelkit show --json` prints it."""
        from qrelkit.storage.contents import contents

        with self._open(True) as store:
            return contents(store)

    def close(self) -> None:
        """Nothing to close: no connection is held between calls."""

    def __enter__(self) -> BriefStore:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}{', read_only=True' if self.read_only else ''})"
