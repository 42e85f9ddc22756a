"""A judging job in batch mode, and the batches of a database without a job file (`qrelkit batches`).

A run reconciles what an earlier run left, collects the batches that finished, and sends the
pending pairs (those never judged, those a batch sent back, failed ones with ``retry_failed``) in
new batches. With ``wait`` it then checks with backoff until every batch is collected, sending
back-to-pending pairs again as they appear.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.jobs.batch_api import BatchDriver, EndpointMismatch, batch_folder, poll_delays, submission_endpoint
from qrelkit.jobs.plan import JobPlan
from qrelkit.jobs.report import JobReport
from qrelkit.jobs.spec import JobError
from qrelkit.jobs.stream import PendingStream
from qrelkit.jobs.watch import JobWatch, status_facts
from qrelkit.judges import BatchJudge, JudgeContext, JudgeFactory, Pair, judge_class
from qrelkit.judges.batch_api import BatchEndpoint
from qrelkit.prompts import PromptTemplate
from qrelkit.storage import Store
from qrelkit.storage import batch_api as recorded
from qrelkit.storage.judgments import ensure_judge_run, judge_run


def run_batch_job(
    store: Store,
    plan: JobPlan,
    report: JobReport,
    *,
    limit: int | None,
    wait: bool,
    progress: Callable[[int, int], None] | None,
    sleep: Callable[[float], Any] = time.sleep,
) -> JobReport:
    """Fill ``report`` (a JobReport) with what this run sent and collected."""
    ensure_judge_run(store, plan.info())
    judge: Any = plan.factory.create(JudgeContext())
    if not isinstance(judge, BatchJudge):
        judge.close()
        raise JobError(f"{plan.spec.source}: judge {plan.factory.name!r} has no batch mode; remove `mode: batch`")
    driver = BatchDriver(store, plan.judge_run_id, judge, plan.config.model_dump(mode="json"), batch_folder(plan.spec.database))
    # the status `qrelkit status` reads: what it sent and collected, its open batches; no partial
    # judgments file (they arrive a batch at a time)
    watch = JobWatch(plan.spec.database, {**status_facts(plan.spec, plan), "mode": "batch"})
    started = time.perf_counter()
    ended = "failed"
    try:
        judge.preflight()
        driver.reconcile(create_missing=True)
        driver.check()
        budget = [limit]
        _submit_pending(driver, plan, budget)
        if wait:
            _wait(driver, plan, budget, progress, sleep, watch)
        ended = "finished"  # "submitted" where batches are still open (`_status`)
    except KeyboardInterrupt:
        report.interrupted, ended = True, "interrupted"  # every step is recorded as it happens: the next run carries on
    finally:
        driver.close()
        judge.close()
        report.seconds = time.perf_counter() - started
        _status(watch, driver, plan, ended)
    activity = driver.activity
    report.judged = activity.judged
    report.statuses = dict(activity.statuses)
    report.submitted = activity.requests
    report.in_batches = recorded.open_batch_count(store, plan.judge_run_id)
    mine = set(activity.submitted) | set(activity.collected)
    report.batches = [
        s.to_dict() for s in recorded.submissions(store, plan.judge_run_id) if s.state != "collected" or s.submission_id in mine
    ]
    return report


def _status(
    watch: JobWatch, driver: BatchDriver, plan: JobPlan, state: str | None = None, open_subs: list[recorded.Submission] | None = None
) -> None:
    """Write the status now (``state`` None: the job is waiting on its batches, at most once a second;
    "finished" with batches still open reads "submitted"). ``open_subs``: the open submissions where
    the caller has just read them."""
    import duckdb

    if open_subs is None:
        try:
            open_subs = recorded.submissions(driver.store, plan.judge_run_id, open_only=True)
        except (QrelkitError, duckdb.Error):  # a status is never worth stopping the job for (or hiding why it stopped)
            return
    if state == "finished" and open_subs:
        state = "submitted"
    waiting = sum(s.requests for s in open_subs)
    watch.batches = {"open": len(open_subs), "pairs": waiting}
    watch.statuses = Counter(driver.activity.statuses)
    done = driver.activity.judged
    if state is None:
        watch.tick(done, done + waiting)
    else:
        watch.finish(state, done, done + waiting)


def _pending(driver: BatchDriver, plan: JobPlan, budget: int | None) -> Generator[Pair, None, None]:
    """The pending pairs, read from the database as they are sent (at most ``budget``); the pairs the
    collection lacks are written as input errors on the way. A failure of this run is not retried in it."""
    failed_now = driver.activity.failed
    pending = plan.pending(driver.store, limit=None)
    try:
        stream = PendingStream(pending, plan.topics, plan.spec.database)
        sent = 0
        for window in stream.windows():
            stream.in_flight.clear()  # the batch route stores what it collects with the submission's pairs
            driver.write([j for j in window.missing if (j.qid, j.docid) not in failed_now])
            for pair in window.pairs:
                if budget is not None and sent >= budget:
                    return
                if pair.key not in failed_now:
                    sent += 1
                    yield pair
    finally:
        pending.close()


def _submit_pending(driver: BatchDriver, plan: JobPlan, budget: list[int | None]) -> None:
    left = None if budget[0] is None else max(budget[0] - driver.activity.requests, 0)
    if left == 0:
        return
    pairs = _pending(driver, plan, left)
    try:
        first = next(pairs, None)
        if first is not None:
            driver.submit(itertools.chain([first], pairs))
    finally:
        pairs.close()  # its pending pairs' table goes now, not when the generator is collected


def _wait(
    driver: BatchDriver,
    plan: JobPlan,
    budget: list[int | None],
    progress: Callable[[int, int], None] | None,
    sleep: Callable[[float], Any],
    watch: JobWatch,
) -> None:
    settings = driver.settings
    delays = poll_delays(settings.poll_initial, settings.poll_max)
    while True:
        open_subs = recorded.submissions(driver.store, plan.judge_run_id, open_only=True)
        if progress:
            waiting = sum(s.requests for s in open_subs)
            progress(driver.activity.judged, driver.activity.judged + waiting)
        _status(watch, driver, plan, open_subs=open_subs)
        if not open_subs:
            return
        sleep(next(delays))
        collected = len(driver.activity.collected)
        driver.check()
        if len(driver.activity.collected) > collected:
            _submit_pending(driver, plan, budget)  # what came back goes out again
            delays = poll_delays(settings.poll_initial, settings.poll_max)


# -- a database's batches, without its job file ------------------------------------------------------


def trusted_options(sub: recorded.Submission, endpoint: BatchEndpoint | None) -> dict[str, Any]:
    """The judge options to reach a submission's batch with: those stored with it, sent where the
    batch went, once ``endpoint`` (the command line's, never the database's) is checked to be that
    endpoint with that key variable (EndpointMismatch names both otherwise); ``endpoint`` None: the
    stored endpoint taken on trust (`--use-stored-endpoint`). A batch of a runner on this machine is
    only read from its folder: nothing is sent or started."""
    stored = submission_endpoint(sub)
    if stored.on_this_machine:
        return dict(sub.options)
    given = endpoint or stored
    if stored != given:
        raise EndpointMismatch(
            f"batch {sub.batch_id or sub.submission_id} (judge run {sub.judge_run_id}) was sent to {stored.url} with the key in "
            f"${stored.key_variable}, the database says; this command would reach {given.url} with ${given.key_variable}, so nothing "
            "was sent. If you trust that endpoint, give --base-url and --api-key-env for it (or --use-stored-endpoint)"
        )
    return {**sub.options, "base_url": stored.url, "api_key_env": stored.key_variable}


def driver_for(store: Store, database: Path, judge_run_id: str, options: dict[str, Any]) -> BatchDriver:
    """A driver for a judge run's batches, its judge built from the stored template and ``options``
    (`trusted_options`). Only a registered judge with a batch mode is built: the judge a database
    names is never imported or loaded otherwise."""
    info = judge_run(store, judge_run_id)
    cls = judge_class(info.judge)  # a `module:Class` name is refused: a database cannot allow an import
    if not issubclass(cls, BatchJudge):
        raise JobError(
            f"judge run {judge_run_id} in {database} names judge {info.judge!r}, which has no batch mode: its batches are not qrelkit's"
        )
    template = PromptTemplate.model_validate(info.template) if info.template else None
    judge = JudgeFactory.resolve(info.judge, options, template).create()
    return BatchDriver(store, judge_run_id, judge, options, batch_folder(database), elsewhere="skip")


def check_batches(store: Store, database: Path, endpoint: BatchEndpoint | None) -> list[recorded.Submission]:
    """Reconcile and check every open batch of the database, collecting the finished ones (no new
    batch is created here: a half-done submission is finished by running its job again). Every
    open batch's endpoint is checked against ``endpoint`` before any request is sent."""
    newest: dict[tuple[str, str | None], tuple[recorded.Submission, dict[str, Any]]] = {}
    for sub in recorded.submissions(store, open_only=True):
        options = trusted_options(sub, endpoint)
        newest[(sub.judge_run_id, submission_endpoint(sub).url)] = (sub, options)  # one driver per judge run and endpoint
    for (judge_run_id, _), (_, options) in newest.items():
        driver = driver_for(store, database, judge_run_id, options)
        try:
            driver.reconcile(create_missing=False)
            driver.check()
        finally:
            driver.close()
            driver.judge.close()
    return recorded.submissions(store)


def cancel_batch(store: Store, database: Path, ref: str, endpoint: BatchEndpoint | None) -> recorded.Submission:
    """Ask the API to cancel a batch (by batch id or submission id); its answered requests are kept
    when it is collected, the rest go back to pending."""
    sub = recorded.submission_for(store, ref)
    driver = driver_for(store, database, sub.judge_run_id, trusted_options(sub, endpoint))
    try:
        driver.cancel(sub)
    finally:
        driver.close()
        driver.judge.close()
    return recorded.submission_for(store, ref)
