"""Job specs, pooling, planning, the resumable batch runner, and grading. No model code lives here."""

from qrelkit.jobs.grade import GradingResult, GradingSpec, grade_judge_run, grade_scores, grading_spec, label_for, quantile_cuts
from qrelkit.jobs.plan import JobPlan, judge_run_id_for, plan_job
from qrelkit.jobs.report import JobReport, JobStopped
from qrelkit.jobs.runner import run_job
from qrelkit.jobs.spec import JobError, JobSpec, load_job

__all__ = [
    "GradingResult",
    "GradingSpec",
    "JobError",
    "JobPlan",
    "JobReport",
    "JobSpec",
    "JobStopped",
    "grade_judge_run",
    "grade_scores",
    "grading_spec",
    "judge_run_id_for",
    "label_for",
    "load_job",
    "plan_job",
    "quantile_cuts",
    "run_job",
]
