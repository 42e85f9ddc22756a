"""What a run of a job did (`JobReport`), and the stop that carries it (`JobStopped`), in a module of
their own: the runner fills a report, the Batch API route fills the same one, and neither imports
the other for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qrelkit.errors import JobFailed
from qrelkit.storage import LoadResult

ProgressCallback = Callable[[int, int], None]  # (pairs done, pairs to judge)


@dataclass
class JobReport:
    judge_run_id: str
    pairs: int
    already_ok: int
    already_failed: int
    to_judge: int
    judged: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    seconds: float = 0.0
    estimate: dict[str, Any] | None = None  # a judge's cost estimate for the pending pairs (dry run)
    loads: list[LoadResult] = field(default_factory=list)  # what the job loaded into its database
    mode: str = "sync"  # or "batch": the judge's requests go through a Batch API
    in_batches: int = 0  # pairs in batches not yet collected (after this run)
    batches: list[dict[str, Any]] = field(default_factory=list)  # the judge run's batch submissions (batch mode)
    submitted: int = 0  # requests this run sent in new batches
    sample: dict[str, Any] | None = None  # the job judges a sample of its pool (`JobPlan.sample`); `pairs` is then the sample's size
    checks: list[str] = field(default_factory=list)  # what was checked before judging (`JobPlan.checks`)
    time_estimate: dict[str, Any] | None = None  # a dry run's estimate of the judging time (`qrelkit.jobs.estimate.TimeEstimate`)

    @property
    def failed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status != "ok")

    @property
    def mostly_failed(self) -> bool:
        """More than half of this run's judgments are not ok (any failure status counts). In batch
        mode the pairs still out in batches count as undecided: a first run that sends 24 requests and
        finds 4 missing images has not mostly failed."""
        undecided = self.in_batches if self.mode == "batch" else 0
        return not self.interrupted and self.judged > 0 and self.failed * 2 > self.judged + undecided

    def failure_message(self) -> str:
        return f"most judgments failed: {self.failed} of the {self.judged} made by this run are not ok" + saved_note(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge_run_id": self.judge_run_id,
            "pairs": self.pairs,
            "already_ok": self.already_ok,
            "already_failed": self.already_failed,
            "to_judge": self.to_judge,
            "judged": self.judged,
            "statuses": dict(self.statuses),
            "interrupted": self.interrupted,
            "seconds": round(self.seconds, 3),
            "estimate": self.estimate,
            "mode": self.mode,
            "in_batches": self.in_batches,
            "submitted": self.submitted,
            "batches": self.batches,
            "sample": self.sample,
            "checks": self.checks,
            "time_estimate": self.time_estimate,
            # every file the job loaded (or, dry, would load): the text names three of a kind and counts the rest
            "loads": [{"kind": load.kind, "name": load.name, "rows": load.rows, "status": load.status} for load in self.loads],
        }


class JobStopped(JobFailed):
    """The job stopped early or ended with most judgments failed; what was judged is saved."""

    def __init__(self, message: str, report: JobReport):
        super().__init__(message)
        self.report = report


def saved_note(report: JobReport) -> str:
    statuses = ", ".join(f"{status} {n}" for status, n in sorted(report.statuses.items()))
    return f" ({report.judged} judgments saved by this run: {statuses or 'none'}; fix the judge and run the job again to resume)"
