"""`qrelkit compare`, and what `qrelkit judge` prints for a sweep job (one judge run per cell)."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, err, out, print_json, print_result
from qrelkit.cli.command import build
from qrelkit.commands.requests import CompareRequest, JudgeRequest


def show_comparison(result: Any, request: CompareRequest) -> None:
    from qrelkit.report import compare as views

    if request.html is not None:
        err.print(f"wrote {request.html}", highlight=False)
    print_result(result, views, as_json=request.as_json, output_format=request.output_format)
    if result.probes and not request.as_json:  # the judges side by side on their gullibility probes (docs/probes.md)
        from qrelkit.report.probes import side_by_side

        shown = side_by_side(result.probes, request.output_format if request.output_format != "table" or out.is_terminal else "plain")
        if isinstance(shown, str):
            print(shown, end="")
        else:
            for part in shown:
                out.print(part)


def show_sweep(outcome: Any, request: JudgeRequest) -> None:
    """Every cell of a sweep, a table of what each did; exit 3 when a cell failed (the others ran),
    130 when interrupted."""
    from qrelkit.report import compare as views

    if request.as_json:
        print_json(outcome.to_dict())
    elif not out.is_terminal:
        print(views.sweep_grid(outcome).plain())
    else:
        out.print(views.sweep_table(outcome))
    for line in views.sweep_failures(outcome):
        err.print(line, highlight=False)
    if outcome.interrupted:
        raise typer.Exit(130)
    outcome.raise_for_failed_cells()


build(app, "compare", CompareRequest, show_comparison)
