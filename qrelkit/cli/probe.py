"""`qrelkit probe`: a job's judge put to gullibility probes (its options: `ProbeRequest`'s fields)."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, print_json
from qrelkit.cli.command import build
from qrelkit.commands.requests import ProbeRequest


def show_probes(result: Any, request: ProbeRequest) -> None:
    """The built-in probes (--list), or each probe's shift as a table, Markdown, LaTeX or JSON."""
    from qrelkit.report import probes as views

    if request.list_probes:
        out.print(views.probes_table(result))
        return
    if request.as_json:
        print_json(result.to_dict())
    elif request.output_format == "markdown":
        print(views.markdown(result), end="")
    elif request.output_format == "latex":
        print(views.latex(result), end="")
    elif not out.is_terminal:  # a pipe or a file: plain text, no cell cut to a width
        print(views.plain(result), end="")
    else:
        for part in views.terminal(result):
            out.print(part)
    if result.interrupted:
        raise typer.Exit(130)


build(app, "probe", ProbeRequest, show_probes)
