"""The judgments' one way into the database during a job: rows are made ready (coerced, as Arrow
columns) where the judgments arrive, and stored by a thread of their own on its own connection,
so that the database's insert and commit overlap the judging instead of following it.

The thread takes at most `QUEUED` flushes ahead of the judge (so memory holds a few flushes, not a
pool's worth); what it stored, or why it could not, comes back to the job's thread, which counts
it, calls `on_flush`, and raises a write's failure there, as a write in the job's thread would.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from qrelkit.jobs.stream import PendingStream
from qrelkit.judges import Judgment
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgmentRows, JudgmentWriteError, judgment_rows, write_judgment_rows

# Judgments waiting for a flush: flushed every `flush_seconds`, or sooner at this many rows, so
# that a fast judge's waiting rows stay a few MB of Arrow columns.
FLUSH_ROWS = 65_536
QUEUED = 2  # flushes handed to the writing thread and not yet stored: past this, the job waits


class _StoreThread:
    """Stores flushes in order on its own connection to the job's database."""

    def __init__(self, store: Store, judge_run_id: str):
        self.store = store.another_connection()  # a DuckDB connection serves one thread
        self.judge_run_id = judge_run_id
        self.todo: queue.Queue[list[JudgmentRows] | None] = queue.Queue(maxsize=QUEUED)
        self.done: queue.Queue[list[str] | BaseException] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="qrelkit-judgment-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            batches = self.todo.get()
            try:
                if batches is None:
                    return
                self.done.put(write_judgment_rows(self.store, self.judge_run_id, batches))
            except BaseException as exc:  # noqa: BLE001 - handed to the job's thread, which raises it
                self.done.put(exc)
            finally:
                self.todo.task_done()

    def close(self) -> None:
        if self.thread.is_alive():
            self.todo.put(None)
            self.thread.join()
        self.store.close()


class JudgmentWriter:
    """Collects judgments, as rows ready to store, and commits them every few seconds. A judgment is
    stored with what its pair had in the pending stream (its document's content hash, its earlier
    attempts), which the stream then forgets."""

    def __init__(
        self,
        store: Store,
        judge_run_id: str,
        stream: PendingStream,
        report: Any,  # a JobReport: judged and statuses are counted on it
        flush_seconds: float,
        on_flush: Callable[[int], None] | None,
    ):
        self.judge_run_id, self.stream, self.report = judge_run_id, stream, report
        self.flush_seconds, self.on_flush = flush_seconds, on_flush
        self.storing = _StoreThread(store, judge_run_id)
        self.pending: list[JudgmentRows] = []
        self.rows = 0
        self.last = time.monotonic()

    def add(self, judgments: Iterable[Judgment]) -> None:
        judgments = list(judgments)
        if not judgments:
            return
        hashes = []
        replaces = False
        settle = self.stream.settle
        for judgment in judgments:
            content_hash, earlier = settle(judgment)
            if earlier:
                replaces = True  # the pair's earlier (failed) judgment is replaced
                if isinstance(getattr(judgment, "attempts", None), int):
                    judgment.attempts += earlier
            hashes.append(content_hash)
        rows = judgment_rows(self.judge_run_id, judgments, hashes, replaces=replaces)
        self.pending.append(rows)
        self.rows += len(rows)

    def due(self) -> bool:
        return self.rows >= FLUSH_ROWS or time.monotonic() - self.last >= self.flush_seconds

    def flush(self, *, wait: bool = False) -> None:
        """Hand what is pending to the writing thread; with ``wait``, return once every judgment
        handed over is stored (or raise why it could not be)."""
        if self.pending:
            self.storing.todo.put(self.pending)
            self.pending, self.rows = [], 0
        self.last = time.monotonic()
        if wait:
            self.storing.todo.join()
        while True:
            try:
                outcome = self.storing.done.get_nowait()
            except queue.Empty:
                return
            if isinstance(outcome, JudgmentWriteError):
                self._count(outcome.statuses)
                raise outcome
            if isinstance(outcome, BaseException):
                raise outcome
            self._count(outcome)

    def close(self) -> None:
        """Store what was handed over, then stop the thread (the job's end, or its failure)."""
        self.storing.close()

    def _count(self, statuses: list[str]) -> None:
        self.report.judged += len(statuses)
        for status, n in Counter(statuses).items():
            self.report.statuses[status] = self.report.statuses.get(status, 0) + n
        if self.on_flush:
            self.on_flush(self.report.judged)
