"""`qrelkit batches`: the Batch API submissions a database holds, checked and collected; `cancel`."""

from __future__ import annotations

from pathlib import Path

from qrelkit.commands.requests import BatchCancelRequest, BatchesRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import StoreError
from qrelkit.jobs.batch_api_job import cancel_batch, check_batches
from qrelkit.storage.batch_api import Submission, submissions


def run(request: BatchesRequest, workspace: Workspace) -> list[Submission]:
    """Every submission in the database; with --check, each open batch is first asked about on its API
    and the finished ones are collected into judgments (as a run of the job would). Requests go to
    the command line's endpoint with its key variable, once every open batch is checked to have been
    sent there; --use-stored-endpoint takes the endpoint stored with each batch instead."""
    db = _existing(workspace)
    with workspace.writing() as store:
        return check_batches(store, db, request.endpoint) if request.check_open else submissions(store)


def run_cancel(request: BatchCancelRequest, workspace: Workspace) -> Submission:
    """Cancel a running batch by its batch id (or submission id), at the endpoint (see `run`)."""
    db = _existing(workspace)
    with workspace.writing() as store:
        return cancel_batch(store, db, request.batch_id, request.endpoint)


def _existing(workspace: Workspace) -> Path:
    if not workspace.has_db:
        raise StoreError(f"database {workspace.db} does not exist")
    assert workspace.db is not None
    return workspace.db
