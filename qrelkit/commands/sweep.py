"""`qrelkit judge SWEEP.yaml`: every cell of a sweep job judged (and graded) as a job of its own.

Every cell is loaded and checked before the first is judged, so a bad value is one line before any
call. A cell whose judge breaks (a model that does not exist, a judge that fails every pair) stops
alone: it is shown as failed with its reason and the next cell goes on. A machine failure (disk,
database) or Ctrl-C stops the sweep.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.commands.judging import JudgingOutcome, load_judging_job, run_judging
from qrelkit.commands.requests import JudgeRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import JobFailed
from qrelkit.jobs.plan import ResolvedJudge, resolve_judge
from qrelkit.jobs.report import JobReport, JobStopped
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
            "loads": dict(Counter(r.status for r in self.report.loads)) if self.report is not None else {},
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

    def failure(self) -> str | None:
        """Why the sweep failed (exit 3: a cell failed, after every other cell ran), or None."""
        if not self.failed:
            return None
        if len(self.failed) == len(self.cells):
            return (
                f"all {len(self.cells)} sweep cells failed (see above)"
                if len(self.cells) > 1
                else "the sweep's one cell failed (see above)"
            )
        ran = len(self.cells) - len(self.failed)
        return f"{len(self.failed)} of {len(self.cells)} sweep cells failed (the other {ran} ran; see above)"

    def to_dict(self) -> dict[str, Any]:
        return {"job": str(self.job), "sweep": self.keys, "dry_run": self.dry_run, "cells": [c.to_dict() for c in self.cells]}


def load_cells(request: JudgeRequest, sweep: Sweep) -> list[tuple[SweepCell, JobSpec, ResolvedJudge]]:
    """(cell, its job, its judge) for every cell of the request's sweep job, each loaded with the
    request's overrides and its judge resolved (no model loaded) before any is judged."""
    check_sets_leave_axes_alone(sweep, list(request.sets))
    out = []
    for cell in sweep.cells():
        spec = load_judging_job(request, cell=cell.settings(sweep.graded))
        try:
            judge = resolve_judge(spec)
        except JobError as exc:
            raise JobError(f"sweep cell {cell.name}: {exc}") from None
        out.append((cell, spec, judge))
    return out


def run_sweep(request: JudgeRequest, workspace: Workspace) -> SweepOutcome:
    """Judge every cell in turn, each with its own progress report."""
    job = request.job
    sweep = read_sweep(job)
    if sweep is None:
        raise JobError(f"{job}: no sweep: in this job")
    result = SweepOutcome(job, sweep.keys, dry_run=request.dry_run)
    cells = load_cells(request, sweep)
    result.cells = [CellOutcome(cell, judge.judge_run_id) for cell, _, judge in cells]
    for (cell, spec, judge), outcome in zip(cells, result.cells, strict=True):
        try:
            with workspace.progress(f"judging {job.name} [{cell.name}]") as progress:
                outcome.outcome = run_judging(spec, request, progress, judge)
        except JobStopped as stopped:
            outcome.status, outcome.report, outcome.error = "failed", stopped.report, str(stopped)
            continue
        except (FatalJudgeError, JobFailed) as exc:  # the judge says going on is pointless: this cell ends here
            outcome.status, outcome.error = "failed", str(exc)
            continue
        outcome.report = outcome.outcome.report
        outcome.status = "interrupted" if outcome.report.interrupted else "planned" if request.dry_run else "ok"
        if outcome.report.interrupted:
            break  # Ctrl-C stops the sweep, not just the cell; later cells stay "not run"
    return result
