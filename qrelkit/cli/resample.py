"""`qrelkit resample restrain | resttest | evaluate | overlap`: interpolation and extrapolation
(Zhan et al., CIKM 2022)."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, print_json
from qrelkit.cli.command import build
from qrelkit.commands.requests import OverlapRequest, ResampleEvaluateRequest, RestrainRequest, ResttestRequest

resample_app = typer.Typer(
    help="Interpolation and extrapolation (Zhan et al., CIKM 2022): resample training (and test) queries by "
    "query similarity (ReSTrain, ReSTTest), score runs in both regimes, measure train/test overlap.",
    no_args_is_help=True,
)
app.add_typer(resample_app, name="resample")


def show_split(result: Any, request: Any) -> None:
    from qrelkit.report.interex import resample_tables

    _show(result, resample_tables(result) if not request.as_json else [], request.as_json)


def show_regimes(result: Any, request: ResampleEvaluateRequest) -> None:
    from qrelkit.report.interex import evaluation_tables

    _show(result, evaluation_tables(result) if not request.as_json else [], request.as_json)


def show_overlap(result: Any, request: OverlapRequest) -> None:
    from qrelkit.report.interex import overlap_tables

    _show(result, overlap_tables(result) if not request.as_json else [], request.as_json)


def _show(result: Any, tables: Any, as_json: bool) -> None:
    """A resample result as JSON or as its tables."""
    if as_json:
        print_json(result.to_dict())
        return
    for table in tables:
        out.print(table)


build(resample_app, "restrain", RestrainRequest, show_split)
build(resample_app, "resttest", ResttestRequest, show_split)
build(resample_app, "evaluate", ResampleEvaluateRequest, show_regimes)
build(resample_app, "overlap", OverlapRequest, show_overlap)
