"""Every command of the command line, each made from its request class (`qrelkit.cli.command.build`):
its options are the request's fields, and what it prints is its result's document."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, err, export_app, import_app, load_app, prompts_app
from qrelkit.cli.command import build
from qrelkit.commands import requests as r

data_app = typer.Typer(
    help="Named public data (TREC DL 2019-2021, AToMiC 2023, the extrapolate-eval splits): list them, fetch one into the data folder.",
    no_args_is_help=True,
)
batches_app = typer.Typer(help="Batch API submissions: check and collect them (the default), or cancel one.", invoke_without_command=True)
resample_app = typer.Typer(
    help="Interpolation and extrapolation (Zhan et al., CIKM 2022): resample training (and test) queries by "
    "query similarity (ReSTrain, ReSTTest), score runs in both regimes, measure train/test overlap.",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")
app.add_typer(batches_app, name="batches")
assess_app = typer.Typer(
    help="Plan which pairs human assessors label beside a judge's labels, and load what they return.", no_args_is_help=True
)
app.add_typer(resample_app, name="resample")
app.add_typer(assess_app, name="assess")


def job_stopped(exc: BaseException) -> None:
    """A job that stopped (a broken judge, most judgments failed): what it did before, on stderr."""
    from qrelkit.commands.documents.judging import job_lines
    from qrelkit.jobs.report import JobStopped

    if isinstance(exc, JobStopped):
        for line in job_lines(exc.report):
            err.print(line, highlight=False, markup=False)


COMMANDS: list[tuple[typer.Typer, str | None, type, dict[str, Any]]] = [
    (load_app, "topics", r.LoadTopicsRequest, {}),
    (load_app, "docs", r.LoadDocsRequest, {}),
    (load_app, "runs", r.LoadRunsRequest, {}),
    (load_app, "qrels", r.LoadQrelsRequest, {}),
    (app, "show", r.ShowRequest, {}),
    (app, "status", r.StatusRequest, {}),
    (app, "evaluate", r.EvaluateRequest, {}),
    (app, "correlate", r.CorrelateRequest, {}),
    (import_app, "scores", r.ImportScoresRequest, {}),
    (export_app, "qrels", r.ExportQrelsRequest, {}),
    (export_app, "judgments", r.ExportJudgmentsRequest, {}),
    (prompts_app, "list", r.PromptsListRequest, {}),
    (prompts_app, "show", r.PromptsShowRequest, {}),
    (app, "judges", r.JudgesRequest, {}),
    (app, "judge", r.JudgeRequest, {"failure": job_stopped}),
    (app, "grade", r.GradeRequest, {"fixed": {"store": True}}),
    (app, "demo", r.DemoRequest, {}),
    (app, "agree", r.AuditRequest, {}),
    (app, "report", r.ReportRequest, {}),
    (app, "fd", r.FDRequest, {}),
    (app, "nrg", r.NRGRequest, {}),
    (app, "compare", r.CompareRequest, {}),
    (app, "probe", r.ProbeRequest, {}),
    (data_app, "list", r.DataListRequest, {}),
    (data_app, "path", r.DataPathRequest, {}),
    (data_app, "fetch", r.DataFetchRequest, {}),
    (batches_app, None, r.BatchesRequest, {}),
    (batches_app, "list", r.BatchesRequest, {}),
    (batches_app, "cancel", r.BatchCancelRequest, {}),
    (resample_app, "restrain", r.RestrainRequest, {}),
    (resample_app, "resttest", r.ResttestRequest, {}),
    (resample_app, "evaluate", r.ResampleEvaluateRequest, {}),
    (resample_app, "overlap", r.OverlapRequest, {}),
    (assess_app, "plan", r.AssessPlanRequest, {}),
    (assess_app, "load", r.AssessLoadRequest, {}),
    (app, "estimate", r.EstimateRequest, {}),
]

for group, name, request_cls, extra in COMMANDS:
    build(group, name, request_cls, **extra)
