"""How long a job's judging will take, said by its dry run beside the counts and the cost.

The rate comes from this judge run's earlier judging in the database when there was any (the same
judge identity: `qrelkit.storage.judgments.judging_rate`), else from timing a few pairs here: the
judge is built (its start timed too), warmed up on a few pairs, then timed on pairs spread over the
pending ones and ordered as the runner orders them. Nothing is written: the judge gets no cache, and
a judge that needs a network or minutes to start (an API, vLLM) is timed only when asked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from qrelkit.io.results import duration
from qrelkit.jobs.calls import judge_batch_safely, planned_batches
from qrelkit.jobs.stream import PendingStream
from qrelkit.judges import JudgeContext

if TYPE_CHECKING:
    from qrelkit.jobs.plan import JobPlan
    from qrelkit.storage import Store

WARM_UP_PAIRS = 8  # judged first and not timed: a model's first call pays for its lazy set-up


@dataclass(frozen=True)
class TimeEstimate:
    """Seconds to judge ``pairs`` at ``pairs_per_second`` (+ ``start_seconds``, the judge's start),
    and where the rate comes from (``source``: "timed" here, or "stored": the earlier judging of this
    judge run; ``measured``: how many pairs the rate rests on)."""

    pairs: int
    pairs_per_second: float
    start_seconds: float | None
    source: str
    measured: int

    @property
    def seconds(self) -> float:
        return self.pairs / self.pairs_per_second + (self.start_seconds or 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 1),
            "pairs": self.pairs,
            "pairs_per_second": round(self.pairs_per_second, 2),
            "start_seconds": None if self.start_seconds is None else round(self.start_seconds, 2),
            "source": self.source,
            "measured_pairs": self.measured,
            "sentence": self.sentence(),
        }

    def sentence(self) -> str:
        how = (
            f"timed on {self.measured} pairs in this dry run"
            + (f"; the judge started in {self.start_seconds:.1f}s" if self.start_seconds is not None else "")
            if self.source == "timed"
            else f"the rate of this judge run's earlier judging ({self.measured} judgments in this database)"
        )
        return f"about {duration(self.seconds)} to judge {self.pairs} pairs at {self.pairs_per_second:.1f} pairs/s ({how})"


def stored_estimate(store: Store, plan: JobPlan) -> TimeEstimate | None:
    from qrelkit.storage.judgments import judging_rate

    found = judging_rate(store, plan.judge_run_id)
    if found is None:
        return None
    pairs, seconds = found
    return TimeEstimate(plan.to_judge, pairs / seconds, None, "stored", pairs)


def spread(pairs_to_judge: int, wanted: int, stream: PendingStream) -> list[Any]:
    """About ``wanted`` + `WARM_UP_PAIRS` pending pairs taken evenly from all of them (the pool's
    order is by topic: a run of consecutive pairs would time a few topics' documents)."""
    step = max(1, pairs_to_judge // (wanted + WARM_UP_PAIRS))
    pairs = (pair for window in stream.windows() for pair in window.pairs)
    return list(islice(pairs, 0, step * (wanted + WARM_UP_PAIRS), step))


def timed_estimate(store: Store, plan: JobPlan, wanted: int) -> TimeEstimate | None:
    """Build the judge, judge `WARM_UP_PAIRS`, then time ``wanted`` pending pairs in the job's calls
    (its `batch_size`, its judge's order); None when too few pairs are pending to time."""
    pending = plan.pending(store)
    try:
        pairs = spread(plan.to_judge, wanted, PendingStream(pending, plan.topics, plan.spec.database))
    finally:
        pending.close()
    if len(pairs) <= WARM_UP_PAIRS:
        return None
    started = time.perf_counter()
    judge = plan.factory.create(JudgeContext())  # no cache: a dry run writes no vector
    try:
        judge.preflight()
        start_seconds = time.perf_counter() - started
        judge_batch_safely(judge, pairs[:WARM_UP_PAIRS])
        timed = pairs[WARM_UP_PAIRS:]
        clock = time.perf_counter()
        for batch in planned_batches(judge, timed, plan.spec.batch_size):
            judge_batch_safely(judge, batch)
        seconds = time.perf_counter() - clock
    finally:
        judge.close()
    return TimeEstimate(plan.to_judge, len(timed) / seconds, start_seconds, "timed", len(timed)) if seconds > 0 else None


def estimate_time(store: Store, plan: JobPlan, timing_pairs: int | None) -> TimeEstimate | None:
    """The dry run's estimate: from this judge run's earlier judging, else from ``timing_pairs`` pairs
    timed here (None: as many as the judge class says, its `timing_pairs`; 0: none)."""
    if not plan.to_judge:
        return None
    stored = stored_estimate(store, plan)
    if stored is not None and timing_pairs is None:
        return stored
    wanted = getattr(plan.judge_class, "timing_pairs", 0) if timing_pairs is None else timing_pairs
    return timed_estimate(store, plan, min(wanted, plan.to_judge)) if wanted > 0 else stored
