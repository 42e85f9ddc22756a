"""The resumable batch runner: the only place judgments are written.

Re-running a job judges only pairs with no judgment yet (and failed ones when asked);
judgments are committed every few seconds, so a kill loses at most the unflushed batch
and never leaves a duplicate. A judge is built once, checked once (`preflight`), and a job
whose judge is evidently broken stops early instead of failing every pair (see `FailureWatch`).
Where batches run is an executor's business (`LocalExecutor` here; others run elsewhere and
hand judgments back); this module stays the single writer.
"""

from __future__ import annotations

import itertools
import re
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from qrelkit.errors import QrelkitError, StorageFailure
from qrelkit.io.irds import no_downloads
from qrelkit.jobs.calls import (  # noqa: F401 (re-exported)
    PASS_THROUGH,
    StoreEmbeddingCache,
    failure_judgment,
    judge_batch_safely,
    planned_batches,
    salvaged,
)
from qrelkit.jobs.estimate import estimate_time
from qrelkit.jobs.plan import JobPlan, ResolvedJudge, collection_unchanged, plan_job, resolve_judge
from qrelkit.jobs.preflight import check_judge_can_start
from qrelkit.jobs.report import JobReport, JobStopped, ProgressCallback, saved_note
from qrelkit.jobs.spec import ExecutorSpec, JobSpec
from qrelkit.jobs.stream import PendingStream
from qrelkit.jobs.watch import JobWatch, status_facts
from qrelkit.jobs.writer import JudgmentWriter
from qrelkit.judges import FatalJudgeError, JudgeContext, JudgeFactory, Judgment, Pair
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgmentWriteError, ensure_judge_run, judgment_outcomes
from qrelkit.storage.schema import SCHEMA_VERSION
from qrelkit.storage.store import job_memory

# -- noticing a broken judge -----------------------------------------------------------------------

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def failure_class(judgment: Judgment) -> str:
    """What makes two failures 'the same error': the status and the error text with numbers and
    quoted names (paths, ids) blanked, so 'HTTP 503 ... (after 6 tries)' on every pair is one class."""
    text = _QUOTED.sub("'…'", judgment.error or "")
    text = _NUMBERS.sub("#", text)
    return f"{judgment.status}: {' '.join(text.split())[:160]}"


class FailureWatch:
    """Stops a job whose judge is evidently broken: ``limit`` judgments in a row (the first ones of a
    run included) failing with the same error class. 0 never stops."""

    def __init__(self, limit: int):
        self.limit = limit
        self.streak = 0
        self.current: str | None = None
        self.example: Judgment | None = None

    def see(self, judgment: Judgment) -> bool:
        """True when the job should stop."""
        if judgment.status == "ok":
            self.streak, self.current = 0, None
            return False
        kind = failure_class(judgment)
        if kind == self.current:
            self.streak += 1
        else:
            self.current, self.streak, self.example = kind, 1, judgment
        return self.limit > 0 and self.streak >= self.limit

    def see_all(self, judgments: Sequence[Judgment]) -> bool:
        """`see` each judgment in turn; True (at once) when the job should stop."""
        statuses = [j.status for j in judgments]
        if statuses.count("ok") == len(statuses):  # the usual batch: nothing failed, no streak
            if statuses:
                self.streak, self.current = 0, None
            return False
        return any(self.see(j) for j in judgments)

    def message(self) -> str:
        example = self.example
        assert example is not None
        return (
            f"stopped: {self.streak} judgments in a row failed with the same error, so the judge looks broken "
            f"(max_consecutive_failures: {self.limit}); e.g. {example.qid}/{example.docid}: {example.status}: {example.error}"
        )


# -- where batches run -----------------------------------------------------------------------------


class Executor(Protocol):
    """Runs windows of pending pairs through judges built from a factory, in calls of at most
    ``batch_size`` pairs, and yields the judgments as they arrive (any order, one list per call).
    It never writes to the database."""

    def open(self, factory: JudgeFactory, context: JudgeContext) -> None: ...

    def map(self, windows: Iterable[list[Pair]], batch_size: int) -> Iterator[list[Judgment]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """One judge in this process, call after call."""

    def __init__(self) -> None:
        self.judge: Any = None

    def open(self, factory: JudgeFactory, context: JudgeContext) -> None:
        self.judge = factory.create(context)
        self.judge.preflight()

    def map(self, windows: Iterable[list[Pair]], batch_size: int) -> Iterator[list[Judgment]]:
        for window in windows:
            for batch in planned_batches(self.judge, window, batch_size):
                yield judge_batch_safely(self.judge, batch)

    def salvage(self) -> list[Judgment]:
        """Judgments made in the batch that was stopped (an interrupt, a fatal error)."""
        return salvaged(self.judge)

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()


def executor_for(spec: ExecutorSpec) -> Executor:
    """The job's `executor:`; Ray is imported only when chosen (it is the optional extra `qrelkit[ray]`)."""
    if spec.kind == "ray":
        from qrelkit.jobs.ray_executor import RayExecutor

        return RayExecutor(spec)
    return LocalExecutor()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the job) ends it like Ctrl-C: flush, then stop."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_job(
    spec: JobSpec,
    *,
    limit: int | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    progress: ProgressCallback | bool | None = None,
    on_flush: Callable[[int], None] | None = None,
    executor: Executor | None = None,
    wait: bool = False,
    sleep: Callable[[float], Any] = time.sleep,
    judge: ResolvedJudge | None = None,
    pairs: list[tuple[str, str]] | None = None,
    probe: dict[str, Any] | None = None,
    pairs_sample: dict[str, Any] | None = None,
    check_endpoint: bool = False,
    timing_pairs: int | None = None,
) -> JobReport:
    """Judge what the job's pool still lacks. ``progress(done, total)`` is called after each batch.

    Raises JobStopped (after saving what was judged) when the judge looks broken or most of this
    run's judgments failed, FatalJudgeError when the judge says going on is pointless, and
    StorageFailure when the database cannot be written.

    In batch mode (a judge option `mode: batch`) the pending pairs are sent through a Batch API
    and judged when their batches finish: on a later run, or in this one with ``wait``.
    A dry run writes nothing (see `dry_run_report`).

    ``judge`` (the job's judge resolved by the caller: a sweep resolves every cell's before the first
    is judged; a probe's run is under a judge run id of its own),
    ``pairs`` (judged instead of the job's pool, described by ``pairs_sample``; an existing judge
    run's record of what it covers is left as it is) and ``probe`` (the run judges the perturbed
    copies stored for it) are how `qrelkit probe` runs its judge runs (`plan_job`).
    ``check_endpoint``: send the judge's endpoint one cheap request before anything is written
    (`qrelkit.jobs.preflight`; the other checks of the judge run always). ``timing_pairs``: pairs a dry
    run times for its estimate of the judging time (`qrelkit.jobs.estimate`)."""
    if dry_run:
        return dry_run_report(
            spec, limit=limit, retry_failed=retry_failed, judge=judge, check_endpoint=check_endpoint, timing_pairs=timing_pairs
        )
    report_progress = progress if callable(progress) else None
    if limit is not None and limit < 0:  # before the database is opened: a refused command creates nothing
        raise QrelkitError(f"--limit must be 0 or more, got {limit}")
    spec.check_paths()  # a job refused for its files or its judge leaves no database behind
    judge = judge or resolve_judge(spec)  # once: its template loaded and its config validated here, before the database is opened
    started_checks = check_judge_can_start(judge, spec, check_endpoint=check_endpoint)  # a judge that cannot start: nothing written
    with Store(spec.database) as store, job_memory(store):
        plan = plan_job(
            store, spec, limit=limit, retry_failed=retry_failed, judge=judge, pairs=pairs, probe=probe, pairs_sample=pairs_sample
        )
        report = _planned_report(plan, started_checks)
        if report.mode == "batch":
            from qrelkit.jobs.batch_api_job import run_batch_job

            if probe is not None:
                raise QrelkitError(f"{spec.source or 'job'}: a probe judges its copies live; run it without `mode: batch`")

            with _sigterm_as_interrupt():
                return run_batch_job(store, plan, report, limit=limit, wait=wait, progress=report_progress, sleep=sleep)
        if not plan.to_judge:
            return report
        ensure_judge_run(store, plan.info(), update_sample=pairs is None)
        executor = executor or executor_for(spec.executor)
        # before the pending pairs' query holds the connection: the judgments made before, for the partial file
        status = JobWatch(spec.database, status_facts(spec, plan), earlier=judgment_outcomes(store, plan.judge_run_id))
        pending = plan.pending(store)
        stream = PendingStream(pending, plan.topics, spec.database)
        writer = JudgmentWriter(store, plan.judge_run_id, stream, report, spec.flush_seconds, on_flush)
        watch = FailureWatch(spec.max_consecutive_failures)
        ended = "failed"
        started = time.perf_counter()
        done = 0

        def windows() -> Iterator[list[Pair]]:
            """The pending pairs, window by window; the pairs the collection lacks are input errors at once."""
            nonlocal done
            for window in stream.windows():
                if window.missing:
                    writer.add(window.missing)
                    status.saw(window.missing)
                    done += len(window.missing)
                if window.pairs:
                    yield window.pairs

        try:
            with _sigterm_as_interrupt():
                if report_progress:
                    report_progress(done, plan.to_judge)
                executor.open(plan.factory, JudgeContext(StoreEmbeddingCache(store)))
                for judgments in executor.map(windows(), spec.batch_size):
                    writer.add(judgments)
                    status.saw(judgments)
                    done += len(judgments)
                    if report_progress:
                        report_progress(done, plan.to_judge)
                    status.tick(done, plan.to_judge)
                    if watch.see_all(judgments):
                        writer.flush(wait=True)
                        report.seconds = time.perf_counter() - started
                        ended = "stopped"
                        raise JobStopped(watch.message() + saved_note(report), report)
                    if writer.due():
                        writer.flush()
                writer.flush(wait=True)
                ended = "finished"
        except KeyboardInterrupt:
            _save_salvage(executor, writer, status, report)
            report.interrupted, ended = True, "interrupted"
        except FatalJudgeError:
            _save_salvage(executor, writer, status, report)
            ended = "stopped"
            raise
        except JudgmentWriteError as exc:
            raise JobStopped(f"stopped: {exc}" + saved_note(report), report) from None
        except StorageFailure as exc:
            raise StorageFailure(f"{exc}; the job stopped at once: {report.judged} judgments of this run were saved before") from None
        finally:
            executor.close()
            writer.close()
            pending.close()
            report.seconds = time.perf_counter() - started
            status.finish(ended, done, plan.to_judge)
    return report


def planning_store(spec: JobSpec) -> Store:
    """Where a dry run plans, writing nothing: the database itself, read-only, when it holds every
    collection file unchanged; otherwise an in-memory copy the collection is loaded into."""
    spec.check_paths()
    if spec.database.exists():
        store = Store(spec.database, read_only=True)
        try:
            if store.schema_version() == SCHEMA_VERSION and collection_unchanged(store, spec):
                return store
        except BaseException:
            store.close()
            raise
        store.close()
    return Store.in_memory_copy(spec.database)


def dry_run_report(
    spec: JobSpec,
    *,
    limit: int | None = None,
    retry_failed: bool = False,
    judge: ResolvedJudge | None = None,
    check_endpoint: bool = False,
    timing_pairs: int | None = None,
) -> JobReport:
    """What a run would do (what it would load, the pool, what is done, failed and left to judge, and
    an API judge's cost estimate), with no file written: not the database, not its folder. The judge
    is checked first, as the run checks it (`qrelkit.jobs.preflight`): a dry run passes nothing the
    run would refuse at once."""
    spec.check_paths()
    judge = judge or resolve_judge(spec)
    started_checks = check_judge_can_start(judge, spec, check_endpoint=check_endpoint)
    why = (
        "a dry run starts no download, and ir_datasets would fetch this dataset's files; "
        "load it first (qrelkit load topics|docs|qrels irds:ID), or run without --dry-run"
    )
    with no_downloads(why), planning_store(spec) as store:
        plan = plan_job(store, spec, limit=limit, retry_failed=retry_failed, judge=judge)
        report = _planned_report(plan, started_checks)
        if plan.to_judge and hasattr(plan.judge_class, "estimate"):
            # e.g. tokens and cost of an API judge, computed from rendered prompts without a request
            pending = plan.pending(store)
            try:
                stream = PendingStream(pending, plan.topics, spec.database)
                pairs = (pair for window in stream.windows() for pair in window.pairs)
                first = next(pairs, None)
                if first is not None:
                    report.estimate = plan.judge_class.estimate(plan.config, plan.factory.template, itertools.chain([first], pairs))
            finally:
                pending.close()
        found = estimate_time(store, plan, timing_pairs)
        report.time_estimate = found.to_dict() if found is not None else None
    return report


def _planned_report(plan: JobPlan, checks: list[str]) -> JobReport:
    report = JobReport(plan.judge_run_id, plan.pool_size, plan.already_ok, plan.already_failed, plan.to_judge, loads=plan.loads)
    report.sample, report.checks = plan.sample, checks + plan.checks
    report.in_batches = plan.in_batches
    report.mode = getattr(plan.config, "mode", "sync")
    return report


def _save_salvage(executor: Any, writer: JudgmentWriter, status: JobWatch, report: JobReport) -> None:
    """The judgments of the stopped batch saved, in the last flush of a job that is stopping anyway:
    a write failure still ends it clearly."""
    judgments = salvaged(executor)
    writer.add(judgments)
    status.saw(judgments)
    try:
        writer.flush(wait=True)
    except JudgmentWriteError as exc:
        raise JobStopped(f"stopped: {exc}" + saved_note(report), report) from None
