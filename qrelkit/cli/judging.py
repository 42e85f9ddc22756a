"""`qrelkit prompts | judges | judge | grade | demo`."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, err, out, print_json, print_lines, prompts_app
from qrelkit.cli.command import build
from qrelkit.commands.requests import DemoRequest, GradeRequest, JudgeRequest, JudgesRequest, PromptsListRequest, PromptsShowRequest


def show_templates(templates: Any, request: PromptsListRequest) -> None:
    from qrelkit.report import tables

    if request.as_json:
        print_json(tables.templates_payload(templates))
        return
    out.print(tables.prompts_table(templates))


def show_prompt(shown: Any, request: PromptsShowRequest) -> None:
    if request.topic is None:
        out.print(f"id {shown.id} version {shown.version} sha256 {shown.content_hash}", highlight=False)
        print(shown.model_dump_json(indent=1))
        return
    print_lines([str(shown)])


def show_judges(judges: Any, request: JudgesRequest) -> None:
    from qrelkit.report import tables

    if request.as_json:
        print_json(judges)
        return
    for table in tables.judges_tables(judges):
        out.print(table)


def show_judging(outcome: Any, request: JudgeRequest) -> None:
    """A job's report and grading; a sweep's table of cells (exit 3 when a cell failed, the others ran)."""
    from qrelkit.commands.sweep import SweepOutcome
    from qrelkit.report import tables

    if isinstance(outcome, SweepOutcome):
        from qrelkit.cli.compare import show_sweep

        return show_sweep(outcome, request)
    if request.as_json:
        print_json(outcome.to_dict())
    else:
        for line in tables.describe_job(outcome.report, dry_run=request.dry_run, limit=request.limit):
            out.print(line, highlight=False)
        for line in tables.describe_grading(outcome.grading) if outcome.grading else []:
            out.print(line, highlight=False)
    if outcome.report.interrupted:
        raise typer.Exit(130)


def show_stopped(exc: BaseException) -> None:
    """A job that stopped (a broken judge, most judgments failed): what it did before, on stderr."""
    from qrelkit.jobs.report import JobStopped
    from qrelkit.report import tables

    if isinstance(exc, JobStopped):
        for line in tables.describe_job(exc.report):
            err.print(line, highlight=False)


def show_grading(result: Any, request: GradeRequest) -> None:
    from qrelkit.report import tables

    note = tables.judge_run_match_note(str(request.judge_run), result.description["judge_run_id"], result.matched_by)
    if note:
        err.print(note, highlight=False)
    if request.as_json:
        print_json({"qrels": result.qrels.name, "grades": result.grade_counts(), **result.description})
        return
    for line in tables.describe_grading(result):
        out.print(line, highlight=False)


def show_demo(result: Any, request: DemoRequest) -> None:
    from qrelkit.report import tables

    for line in tables.demo_lines(result):
        out.print(line, highlight=False)


build(prompts_app, "list", PromptsListRequest, show_templates)
build(prompts_app, "show", PromptsShowRequest, show_prompt)
build(app, "judges", JudgesRequest, show_judges)
build(app, "judge", JudgeRequest, show_judging, failure=show_stopped)
build(app, "grade", GradeRequest, show_grading, fixed={"store": True})
build(app, "demo", DemoRequest, show_demo)
