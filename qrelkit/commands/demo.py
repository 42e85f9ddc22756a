"""`qrelkit demo`: judge the bundled toy collection with MiniLM (int8 ONNX), grade the scores into
qrels by per-topic quantiles, and compare how the model qrels and the human qrels rank the
bundled runs.

Safe to run again into the same folder: the database resumes (the pairs already judged are not
judged again) and the demo's qrels file, its own output, is written again."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from qrelkit.commands.judging import run_export_qrels, run_judging
from qrelkit.commands.requests import DemoRequest, ExportQrelsRequest, JudgeRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.embed.onnx import check_onnx_extra
from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.agreement import kendall_tau_b
from qrelkit.jobs.grade import GradingResult
from qrelkit.jobs.report import JobReport
from qrelkit.jobs.spec import load_job

DEMO_JOB = Path(__file__).resolve().parents[1] / "data" / "demo" / "job.yaml"
MEASURE = "nDCG@10"


@dataclass
class DemoResult:
    report: JobReport
    grading: GradingResult
    measure: str
    under_human: dict[str, float]  # run -> mean under the human qrels
    under_model: dict[str, float]
    kendall_tau: float
    binary_agreement: tuple[int, int]  # pairs agreeing on grade >= 2, shared pairs
    qrels_file: Path
    database: Path
    seconds: float


def run(request: DemoRequest, workspace: Workspace) -> DemoResult:
    """Judge, grade, export the graded qrels and compare the rankings, in ``request.out``."""
    check_onnx_extra("qrelkit demo (MiniLM, int8 ONNX)")  # before anything is written: no half-made out_dir
    started = time.perf_counter()
    out_dir = request.out
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = load_job(DEMO_JOB, {"database": str((out_dir / "demo.duckdb").resolve())})
    with workspace.progress("judging the demo collection") as progress:
        outcome = run_judging(spec, JudgeRequest(job=spec), progress)
    assert outcome.grading is not None  # the demo job grades
    qrels_file = out_dir / "minilm.qrels"
    with Workspace(spec.database) as database:
        human = database.store.qrels("human")
        runs = database.store.runs()
        # The demo's own file, remade on every run: a second `make demo` resumes the judge run (nothing
        # left to judge) and writes the same qrels again, so it must not stop at its own earlier output.
        run_export_qrels(ExportQrelsRequest(output=qrels_file, judge_run=outcome.report.judge_run_id, force=True), database)
    under_human = {run: v[MEASURE] for run, v in evaluate_runs(human, runs, [MEASURE]).means().items()}
    under_model = {run: v[MEASURE] for run, v in evaluate_runs(outcome.grading.qrels, runs, [MEASURE]).means().items()}
    order = sorted(under_human, key=lambda r: -under_human[r])
    tau = kendall_tau_b([under_human[r] for r in order], [under_model[r] for r in order])
    shared = [(human.grades[q.qid][q.docid], q.grade) for q in outcome.grading.qrels.entries if q.docid in human.grades.get(q.qid, {})]
    agree = sum(1 for h, m in shared if (h >= 2) == (m >= 2))
    return DemoResult(
        outcome.report,
        outcome.grading,
        MEASURE,
        under_human,
        under_model,
        tau,
        (agree, len(shared)),
        qrels_file,
        spec.database,
        time.perf_counter() - started,
    )
