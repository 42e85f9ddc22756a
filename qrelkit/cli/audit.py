"""`qrelkit agree | report | fd | nrg`: auditing judges and scoring runs beyond the plain metrics."""

from __future__ import annotations

from typing import Any

from qrelkit.cli.base import app, err, out, print_json, print_lines
from qrelkit.cli.command import build
from qrelkit.commands.requests import AuditRequest, FDRequest, NRGRequest, ReportRequest


def show_audit(result: Any, request: AuditRequest) -> None:
    from qrelkit.report import tables

    for warning in getattr(result, "warnings", []):
        err.print(f"warning: {warning}", highlight=False)
    if request.as_json:
        print_json(result.to_dict())
        return
    for table in tables.audit_tables(result):
        out.print(table)


def show_page(page: Any, request: ReportRequest) -> None:
    out.print(f"wrote {page}", highlight=False)


def show_fd(report: Any, request: FDRequest) -> None:
    from qrelkit.report import tables

    for written in (request.plot, request.plot_metric):
        if written is not None:
            err.print(f"wrote {written}", highlight=False)
    for warning in report.warnings():
        err.print(f"warning: {warning}", highlight=False)
    if report.embedding:
        err.print(report.embedding["sentence"], highlight=False, markup=False)
    if request.as_json:
        print_json(report.to_dict())
        return
    out.print(tables.fd_table(report))


def show_nrg(outcome: Any, request: NRGRequest) -> None:
    from qrelkit.report import tables

    if request.plot:
        err.print(f"wrote {request.plot}")
    if request.as_json:
        print_json(outcome.to_dict(request.per_query))
        return
    out.print(tables.nrg_table(outcome))
    if request.per_query:
        print_lines(tables.nrg_per_query_lines(outcome.result))


build(app, "agree", AuditRequest, show_audit)
build(app, "report", ReportRequest, show_page)
build(app, "fd", FDRequest, show_fd)
build(app, "nrg", NRGRequest, show_nrg)
