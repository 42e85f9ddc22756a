"""`qrelkit load | show | evaluate | correlate | import | export`."""

from __future__ import annotations

from typing import Any

from qrelkit.cli.base import app, err, export_app, import_app, load_app, out, print_json, print_lines, show
from qrelkit.cli.command import build
from qrelkit.commands.requests import (
    CorrelateRequest,
    EvaluateRequest,
    ExportJudgmentsRequest,
    ExportQrelsRequest,
    ImportScoresRequest,
    LoadDocsRequest,
    LoadQrelsRequest,
    LoadRunsRequest,
    LoadTopicsRequest,
    ShowRequest,
    StatusRequest,
)


def show_loads(results: Any, request: Any) -> None:
    from qrelkit.report import tables

    for line in tables.describe_loads(results):
        out.print(line, highlight=False)


def show_contents(found: Any, request: ShowRequest) -> None:
    from qrelkit.report import tables

    if hasattr(found, "document"):  # the database is held by a judging job: its status instead
        return show_status(found, request)
    if request.as_json:
        print_json(found)
        return
    out.print(tables.summary_table(*found))


def show_status(found: Any, request: Any) -> None:
    show(found.document(), "json" if request.as_json else "table")


def show_evaluation(evaluation: Any, request: EvaluateRequest) -> None:
    from qrelkit.report import tables

    if request.as_json or request.output_format == "json":
        print_json(evaluation.to_dict(request.per_query))
        return
    if request.output_format == "trec":
        # stdout is trec_eval's, byte for byte; what the means run over goes to stderr
        err.print(f"means {evaluation.describe_average()}" + (f"; qrels cut to {evaluation.qrels_cut}" if evaluation.qrels_cut else ""))
        print_lines(tables.trec_eval_lines(evaluation))
        return
    out.print(tables.evaluation_table(evaluation, evaluation.qrels_cut))
    if request.per_query:
        print_lines(tables.per_query_lines(evaluation))


def show_correlations(result: Any, request: CorrelateRequest) -> None:
    from qrelkit.report import tables

    if request.as_json:
        print_json(result.to_dict())
        return
    for table in tables.correlation_tables(result):
        out.print(table)


def show_import(result: Any, request: ImportScoresRequest) -> None:
    if request.as_json:
        print_json(result.__dict__)
        return
    verb = {"imported": "imported", "replaced": "replaced", "unchanged": "already imported, unchanged:"}[result.status]
    out.print(f"{verb} {result.rows or ''} scores as judge run {result.judge_run_id} ({result.name!r})".replace("  ", " "), highlight=False)


def show_exported_qrels(exported: Any, request: ExportQrelsRequest) -> None:
    qrels, note = exported
    if note:
        err.print(note, highlight=False)
    out.print(f"wrote {len(qrels)} judgments of {qrels.name!r} to {request.output}", highlight=False)


def show_exported_judgments(exported: Any, request: ExportJudgmentsRequest) -> None:
    rows, runs = exported
    out.print(f"wrote {rows} judgments of {len(runs)} judge run(s) ({', '.join(runs) or 'none'}) to {request.output}", highlight=False)


build(load_app, "topics", LoadTopicsRequest, show_loads)
build(load_app, "docs", LoadDocsRequest, show_loads)
build(load_app, "runs", LoadRunsRequest, show_loads)
build(load_app, "qrels", LoadQrelsRequest, show_loads)
build(app, "show", ShowRequest, show_contents)
build(app, "status", StatusRequest, show_status)
build(app, "evaluate", EvaluateRequest, show_evaluation)
build(app, "correlate", CorrelateRequest, show_correlations)
build(import_app, "scores", ImportScoresRequest, show_import)
build(export_app, "qrels", ExportQrelsRequest, show_exported_qrels)
build(export_app, "judgments", ExportJudgmentsRequest, show_exported_judgments)
