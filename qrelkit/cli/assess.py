"""`qrelkit assess plan | load` and `qrelkit estimate`: a few human labels beside a judge's, and the
estimates they give (docs/human-budget.md)."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, show
from qrelkit.cli.command import build
from qrelkit.commands.requests import AssessLoadRequest, AssessPlanRequest, EstimateRequest

assess_app = typer.Typer(
    help="Plan which pairs human assessors label beside a judge's labels, and load what they return.", no_args_is_help=True
)
app.add_typer(assess_app, name="assess")


def _format(request: Any) -> str:
    """JSON with --json; on a pipe or in a file the plain tables (every cell whole)."""
    if request.as_json:
        return "json"
    if request.output_format == "table" and not out.is_terminal:
        return "plain"
    return request.output_format


def show_plan(result: Any, request: AssessPlanRequest) -> None:
    from qrelkit.commands.assess_results import plan_document

    show(plan_document(result), _format(request))


def show_load(result: Any, request: AssessLoadRequest) -> None:
    from qrelkit.commands.assess_results import load_document

    show(load_document(result), _format(request))


def show_estimate(result: Any, request: EstimateRequest) -> None:
    from qrelkit.commands.estimate_document import estimate_document

    show(estimate_document(result), _format(request), verbose=request.verbose)


build(assess_app, "plan", AssessPlanRequest, show_plan)
build(assess_app, "load", AssessLoadRequest, show_load)
build(app, "estimate", EstimateRequest, show_estimate)
