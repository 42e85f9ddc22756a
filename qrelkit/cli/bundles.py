"""`qrelkit data list | path | fetch`: the named public data bundles."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, print_json
from qrelkit.cli.command import build
from qrelkit.commands.requests import DataFetchRequest, DataListRequest, DataPathRequest

data_app = typer.Typer(
    help="Named public data (TREC DL 2019-2021, AToMiC 2023, the extrapolate-eval splits): list them, fetch one into the data folder.",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")


def show_bundles(found: Any, request: DataListRequest) -> None:
    from qrelkit.report import bundles as shown

    if request.as_json:
        print_json(shown.manifests_payload(found))
        return
    if request.name is None:
        out.print(shown.bundles_table(found))
        return
    for line in shown.bundle_lines(found):
        out.print(line, highlight=False, markup=False)


def show_path(folder: Any, request: DataPathRequest) -> None:
    print(folder)


def show_fetched(report: Any, request: DataFetchRequest) -> None:
    """What was fetched; exit 3 when a file could not be had."""
    from qrelkit.errors import FatalJobError
    from qrelkit.report import bundles as shown

    if request.as_json:
        print_json(report.to_dict())
    else:
        for line in shown.fetch_lines(report):
            out.print(line, highlight=False, markup=False)
    if report.failed:
        raise FatalJobError(report.failure())


build(data_app, "list", DataListRequest, show_bundles)
build(data_app, "path", DataPathRequest, show_path)
build(data_app, "fetch", DataFetchRequest, show_fetched)
