"""`qrelkit batches [list] | cancel`: Batch API submissions of judging jobs."""

from __future__ import annotations

from typing import Any

import typer

from qrelkit.cli.base import app, out, print_json
from qrelkit.cli.command import build
from qrelkit.commands.requests import BatchCancelRequest, BatchesRequest

batches_app = typer.Typer(help="Batch API submissions: check and collect them (the default), or cancel one.", invoke_without_command=True)
app.add_typer(batches_app, name="batches")


def show_batches(found: Any, request: BatchesRequest) -> None:
    from qrelkit.report.batches import batches_payload, batches_table

    if request.as_json:
        print_json(batches_payload(found))
        return
    out.print(batches_table(found))


def show_cancelled(cancelled: Any, request: BatchCancelRequest) -> None:
    from qrelkit.report.batches import batch_line

    if request.as_json:
        print_json(cancelled.to_dict())
        return
    out.print(batch_line(cancelled.to_dict()), highlight=False)


build(batches_app, None, BatchesRequest, show_batches)
build(batches_app, "list", BatchesRequest, show_batches)
build(batches_app, "cancel", BatchCancelRequest, show_cancelled)
