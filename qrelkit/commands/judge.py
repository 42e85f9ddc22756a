"""`qrelkit judge JOB.yaml`: the job judged (and graded), or every cell of a sweep job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qrelkit.commands.judging import load_judging_job, run_judging
from qrelkit.commands.requests import JudgeRequest
from qrelkit.commands.sweep import run_sweep
from qrelkit.commands.workspace import Workspace
from qrelkit.jobs.spec import JobSpec
from qrelkit.jobs.sweep import read_sweep


def run(request: JudgeRequest, workspace: Workspace) -> Any:
    """A `JudgingOutcome`, or a `SweepOutcome` for a sweep job (one judge run per cell)."""
    if not isinstance(request.job, JobSpec) and read_sweep(request.job) is not None:
        return run_sweep(request, workspace)
    spec = load_judging_job(request)
    name = request.job.name if isinstance(request.job, Path) else "job"
    with workspace.progress(f"judging {name}") as progress:
        return run_judging(spec, request, progress)
