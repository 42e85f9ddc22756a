"""`qrelkit probe`: a job's judge put to gullibility probes (its options: `ProbeRequest`'s fields)."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, print_result
from qrelkit.cli.command import build
from qrelkit.commands.requests import ProbeRequest


def show_probes(result: Any, request: ProbeRequest) -> None:
    """The built-in probes (--list), or each probe's shift as a table, Markdown, LaTeX or JSON."""
    from qrelkit.report import probes as views

    if request.list_probes:
        out.print(views.probes_table(result))
        return
    print_result(result, views, as_json=request.as_json, output_format=request.output_format)
    if result.interrupted:
        raise typer.Exit(130)


build(app, "probe", ProbeRequest, show_probes)
