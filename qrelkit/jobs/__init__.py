"""Pooling, the resumable batch runner, and grading. No model code lives here."""

from qrelkit.jobs.grade import GradingResult, grade_judge_run, grade_scores, label_for, quantile_cuts
from qrelkit.jobs.runner import JobReport, judge_run_id_for, run_job
from qrelkit.jobs.spec import GradingSpec, JobError, JobSpec, load_job

__all__ = [
    "GradingResult",
    "GradingSpec",
    "JobError",
    "JobReport",
    "JobSpec",
    "grade_judge_run",
    "grade_scores",
    "judge_run_id_for",
    "label_for",
    "load_job",
    "quantile_cuts",
    "run_job",
]
