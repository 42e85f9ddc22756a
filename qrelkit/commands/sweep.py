"""`qrelkit judge SWEEP.yaml`: every cell of a sweep job judged (and graded) as a job of its own.

Every cell is loaded and checked before the first is judged, so a bad value is one line before any
call. A cell whose judge breaks (a model that does not exist, a judge that fails every pair) stops
alone: it is shown as failed with its reason and the next cell goes on. A machine failure (disk,
database) or Ctrl-C stops the sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.judging import JudgingOutcome, load_judging_job, run_judging
from qrelkit.errors import JobFailed
from qrelkit.jobs.plan import resolve_judge
from qrelkit.jobs.runner import JobReport, JobStopped, ProgressCallback
from qrelkit.jobs.spec import JobError, JobSpec
from qrelkit.jobs.sweep import Sweep, SweepCell, check_sets_leave_axes_alone, read_sweep
from qrelkit.judges import FatalJudgeError


@dataclass
class CellOutcome:
    """What one cell did: its judge run, the run's report and grading, or why it failed."""

    cell: SweepCell
    judge_run_id: str
    status: str = "not run"  # ok | failed | interrupted | planned (a dry run) | not run
    outcome: JudgingOutcome | None = None
    report: JobReport | None = None  # also for a failed cell: what it judged before it stopped
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cell": self.cell.name,
            "values": self.cell.values,
            "judge_run_id": self.judge_run_id,
            "status": self.status,
            "error": self.error,
            "report": self.report.to_dict() if self.report is not None else None,
            # what this cell loaded: the first cell loads the collection, the others find it unchanged
            "loads": {r.status: sum(1 for s in self.report.loads if s.status == r.status) for r in self.report.loads}
            if self.report is not None
            else {},
            "grading": self.outcome.to_dict().get("grading") if self.outcome is not None else None,
        }


@dataclass
class SweepOutcome:
    job: Path
    keys: list[str]
    cells: list[CellOutcome] = field(default_factory=list)
    dry_run: bool = False

    @property
    def failed(self) -> list[CellOutcome]:
        return [c for c in self.cells if c.status == "failed"]

    @property
    def interrupted(self) -> bool:
        return any(c.status == "interrupted" for c in self.cells)

    def raise_for_failed_cells(self) -> None:
        """A sweep with a failed cell failed (exit 3), after every other cell ran."""
        if not self.failed:
            return
        if len(self.failed) == len(self.cells):
            raise JobFailed(
                f"all {len(self.cells)} sweep cells failed (see above)"
                if len(self.cells) > 1
                else "the sweep's one cell failed (see above)"
            )
        ran = len(self.cells) - len(self.failed)
        raise JobFailed(f"{len(self.failed)} of {len(self.cells)} sweep cells failed (the other {ran} ran; see above)")

    def to_dict(self) -> dict[str, Any]:
        return {"job": str(self.job), "sweep": self.keys, "dry_run": self.dry_run, "cells": [c.to_dict() for c in self.cells]}


def sweep_of(job: Path) -> Sweep | None:
    """The job's sweep, or None for a plain job."""
    return read_sweep(job)


def load_cells(job: Path, sweep: Sweep, *, sets: list[str] | None = None, **options: Any) -> list[tuple[SweepCell, JobSpec, str]]:
    """(cell, its job, its judge run id) for every cell, each loaded and its judge resolved (no model
    loaded) before any is judged; options as `load_judging_job`'s."""
    check_sets_leave_axes_alone(sweep, sets or [])
    out = []
    for cell in sweep.cells():
        spec = load_judging_job(job, sets=sets, cell=cell.settings(sweep.graded), **options)
        try:
            judge_run_id = resolve_judge(spec)[4]
        except JobError as exc:
            raise JobError(f"sweep cell {cell.name}: {exc}") from None
        out.append((cell, spec, judge_run_id))
    return out


def run_sweep(
    job: Path,
    *,
    sets: list[str] | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    grade: bool = True,
    wait: bool = False,
    progress_for: Callable[[SweepCell], Any] | None = None,
    **options: Any,
) -> SweepOutcome:
    """Judge every cell in turn. ``progress_for(cell)`` gives a context manager yielding that cell's
    progress callback (or None); options as `load_judging_job`'s (sample, seed, mode, executor, ...)."""
    sweep = read_sweep(job)
    if sweep is None:
        raise JobError(f"{job}: no sweep: in this job")
    result = SweepOutcome(job, sweep.keys, dry_run=dry_run)
    cells = load_cells(job, sweep, sets=sets, **options)
    result.cells = [CellOutcome(cell, judge_run_id) for cell, _, judge_run_id in cells]
    for (cell, spec, _), outcome in zip(cells, result.cells, strict=True):
        try:
            judging = dict(limit=limit, dry_run=dry_run, retry_failed=retry_failed, grade=grade, wait=wait)
            outcome.outcome = _judge_cell(spec, cell, progress_for, **judging)
        except JobStopped as stopped:
            outcome.status, outcome.report, outcome.error = "failed", stopped.report, str(stopped)
            continue
        except (FatalJudgeError, JobFailed) as exc:  # the judge says going on is pointless: this cell ends here
            outcome.status, outcome.error = "failed", str(exc)
            continue
        outcome.report = outcome.outcome.report
        outcome.status = "interrupted" if outcome.report.interrupted else "planned" if dry_run else "ok"
        if outcome.report.interrupted:
            break  # Ctrl-C stops the sweep, not just the cell; later cells stay "not run"
    return result


def _judge_cell(spec: JobSpec, cell: SweepCell, progress_for: Callable[[SweepCell], Any] | None, **options: Any) -> JudgingOutcome:
    if progress_for is None:
        return run_judging(spec, **options)
    with progress_for(cell) as progress:
        callback: ProgressCallback | None = progress
        return run_judging(spec, progress=callback, **options)
