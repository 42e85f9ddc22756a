"""`qrelkit batches`: the Batch API submissions a database holds, checked and collected; `cancel`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qrelkit.errors import StoreError
from qrelkit.jobs.batch_api_job import DEFAULT_ENDPOINT, Endpoint, cancel_batch, check_batches
from qrelkit.storage import Store
from qrelkit.storage.batch_api import Submission, submissions


def list_batches(
    db: Path, *, check: bool = True, endpoint: Endpoint = DEFAULT_ENDPOINT, use_stored_endpoint: bool = False
) -> list[Submission]:
    """Every submission in ``db``; with ``check``, each open batch is first asked about on its API and
    the finished ones are collected into judgments (as a run of the job would). Requests go to
    ``endpoint`` (the command line's) with its key variable, once every open batch is checked to
    have been sent there; ``use_stored_endpoint`` takes the endpoint stored with each batch instead."""
    if not db.exists():
        raise StoreError(f"database {db} does not exist")
    with Store(db) as store:
        return check_batches(store, db, None if use_stored_endpoint else endpoint) if check else submissions(store)


def payload(found: list[Submission]) -> list[dict[str, Any]]:
    """`--json`: every field of each submission."""
    return [submission.to_dict() for submission in found]


def cancel(db: Path, ref: str, *, endpoint: Endpoint = DEFAULT_ENDPOINT, use_stored_endpoint: bool = False) -> Submission:
    """Cancel a running batch by its batch id (or submission id), at ``endpoint`` (see `list_batches`)."""
    if not db.exists():
        raise StoreError(f"database {db} does not exist")
    with Store(db) as store:
        return cancel_batch(store, db, ref, None if use_stored_endpoint else endpoint)
