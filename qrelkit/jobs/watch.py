"""A running job's status and its judgments so far, written beside its database for readers that
cannot open it while the job does (`qrelkit.io.job_status`: `qrelkit status`, `qrelkit show`,
`qrelkit agree --partial`).

What it costs the job: the status (a few hundred bytes of JSON) is written at most every
``STATUS_SECONDS``; the judgments so far (qid, docid, status, score) at most every
``PARTIAL_SECONDS``, and never more often than 50 times the last write took, so that writing them
stays within 2% of the job's time however many there are (benchmarks/RESULTS.md, issue 44).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io.job_status import partial_path, this_process, write_partial, write_status
from qrelkit.judges import Judgment

STATUS_SECONDS = 1.0
PARTIAL_SECONDS = 5.0
PARTIAL_BUDGET = 50  # seconds between partial writes, at least, per second one write took


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class JobWatch:
    """Collects what the job made and writes it out now and then. ``plan_facts``: what the status
    says throughout (judge run, job file, pool and what was done before, grading, sample)."""

    def __init__(self, database: Any, plan_facts: dict[str, Any], earlier: Any = None, clock: Any = time.monotonic):
        self.database = database
        self.partials = plan_facts.get("mode") != "batch"  # a batch job's judgments reach the database only as batches are collected
        self.batches: dict[str, int] | None = None  # a batch job's open batches and the pairs in them
        self.facts = {**this_process(), **plan_facts, "started_at": _now()}
        self.clock = clock
        self.started = clock()
        self.statuses: Counter[str] = Counter()
        self.columns: dict[str, list[Any]] = {"qid": [], "docid": [], "status": [], "score": []}
        self.earlier = earlier  # the judge run's judgments stored before this run (an Arrow table), or None
        self.done = self.to_judge = 0
        self.first_done: int | None = None
        self.last_status = -float("inf")
        self.last_partial = clock()
        self.partial_cost = 0.0
        self.partial_rows = 0
        self.failed_write: str | None = None
        self.overhead_seconds = 0.0  # the job's time spent in this class: what being watchable costs it

    def saw(self, judgments: Sequence[Judgment]) -> None:
        started = time.perf_counter()
        columns = self.columns
        for judgment in judgments:
            columns["qid"].append(judgment.qid)
            columns["docid"].append(judgment.docid)
            columns["status"].append(judgment.status)
            columns["score"].append(judgment.score)
            self.statuses[judgment.status] += 1
        self.overhead_seconds += time.perf_counter() - started

    def tick(self, done: int, to_judge: int) -> None:
        """After each call of the judge: write what is due."""
        started = time.perf_counter()
        if self.first_done is None:
            self.first_done = done
        self.done, self.to_judge = done, to_judge
        now = self.clock()
        if self.partials and now - self.last_partial >= max(PARTIAL_SECONDS, PARTIAL_BUDGET * self.partial_cost):
            self._write_partial()
        if now - self.last_status >= STATUS_SECONDS:
            self._write_status("judging")
        self.overhead_seconds += time.perf_counter() - started

    def finish(self, state: str, done: int, to_judge: int) -> None:
        """The job's end (finished, interrupted, stopped, failed): everything it made, and how it ended."""
        self.done, self.to_judge = done, to_judge
        if self.partials:
            self._write_partial()
        self._write_status(state)

    def _rate(self) -> float | None:
        elapsed = self.clock() - self.started
        judged = self.done - (self.first_done or 0)
        return judged / elapsed if elapsed > 0 and judged > 0 else None

    def _write_status(self, state: str) -> None:
        rate = self._rate() if self.batches is None else None  # a batch's judgments come all at once, when it is collected
        pending = max(self.to_judge - self.done, 0)
        status = {
            **self.facts,
            "state": state,
            "updated_at": _now(),
            "updated_unix": time.time(),
            "done": self.done,
            "to_judge": self.to_judge,
            "pending": pending,
            "statuses": dict(self.statuses),
            "pairs_per_second": rate,
            "seconds_left": pending / rate if rate and state == "judging" else None,
            "elapsed_seconds": self.clock() - self.started,
            "partial": {"file": partial_path(self.database).name, "rows": self.partial_rows} if self.partial_rows else None,
            "batches": self.batches,
            "write_failed": self.failed_write,
            "overhead_seconds": self.overhead_seconds,
        }
        self.last_status = self.clock()
        self._safely(lambda: write_status(self.database, status))

    def _write_partial(self) -> None:
        import pyarrow as pa

        started = time.perf_counter()
        table = pa.table(
            {name: pa.array(values, pa.float64() if name == "score" else pa.string()) for name, values in self.columns.items()}
        )
        if self.earlier is not None and self.earlier.num_rows:
            table = pa.concat_tables([self.earlier.cast(table.schema), table])
        self._safely(lambda: write_partial(self.database, table))
        self.partial_rows = table.num_rows
        self.partial_cost = time.perf_counter() - started
        self.last_partial = self.clock()

    def _safely(self, write: Any) -> None:
        """A status that cannot be written never stops the job: the judgments are what matters. The
        next status that can be written says why."""
        try:
            write()
        except (QrelkitError, OSError) as exc:
            self.failed_write = str(exc)


def status_facts(spec: Any, plan: Any) -> dict[str, Any]:
    """What a job's status file says throughout (`JobWatch`), live or batch: its judge run, job, pool,
    what was done before, and the grading a partial audit grades its scores by."""
    return {
        "judge_run_id": plan.judge_run_id,
        "judge": plan.factory.name,
        "model_id": plan.model_id,
        "job": str(spec.source) if spec.source else None,
        "database": str(spec.database),
        "pool_pairs": plan.pool_size,
        "already_ok": plan.already_ok,
        "already_failed": plan.already_failed,
        "sample": plan.sample,
        "grading": spec.grading.model_dump(mode="json", exclude_none=True) if spec.grading is not None else None,
    }
