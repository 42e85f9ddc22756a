"""Batch API submissions in the terminal: the lines `qrelkit judge` prints in batch mode and the
table of `qrelkit batches`."""

from __future__ import annotations

from typing import Any

from rich import box

from qrelkit.report.terminal_table import Table


def _progress(batch: dict[str, Any]) -> str:
    total = batch.get("total") or batch.get("requests") or 0
    return f"{batch.get('completed') or 0}/{total} done, {batch.get('failed') or 0} failed"


def batch_line(batch: dict[str, Any]) -> str:
    """One submission: its batch (or how far it got), the API's status and counts, what it gave."""
    name = batch.get("batch_id") or f"(submission {batch['submission_id']}, {batch['state']})"
    line = f"batch {name}: {batch.get('status') or batch['state']}, {batch['requests']} requests, {_progress(batch)}"
    if batch["state"] == "collected":
        line += f"; collected: {batch.get('judged') or 0} judgments, {batch.get('resubmitted') or 0} pairs pending again"
    if batch.get("errors"):
        line += f"; errors: {batch['errors']}"
    return line


def batch_job_lines(report: Any) -> list[str]:
    """What a batch-mode run sent and collected, and what is still out (qrelkit.jobs.runner.JobReport)."""
    lines = []
    if report.mode != "batch":
        if report.in_batches:
            lines.append(f"{report.in_batches} pairs of the pool are in open Batch API batches; `qrelkit batches` collects them")
        return lines
    new = [b for b in report.batches if b["state"] != "collected" and b.get("requests")]
    if report.submitted:
        lines.append(f"sent {report.submitted} requests to the Batch API")
    lines += [batch_line(b) for b in report.batches]
    if report.in_batches:
        lines.append(
            f"{report.in_batches} pairs wait in {len(new)} open batches (answered within 24 h): run the job again, or "
            "`qrelkit batches --db DB`, to collect them; `--wait` waits"
        )
    return lines


def batches_table(batches: list[Any]) -> Table:
    """`qrelkit batches`: every submission of the database, oldest first (`--json` has every field, times included)."""
    table = Table(box=box.SIMPLE_HEAD, title="Batch API submissions", pad_edge=False, collapse_padding=True)
    table.add_column("batch", overflow="fold", min_width=12)
    table.add_column("judge run", overflow="fold", min_width=8, max_width=16)
    table.add_column("status", overflow="fold", min_width=11)
    for column in ("sent", "done", "failed", "judged", "again"):
        table.add_column(column, justify="right", min_width=len(column))

    def count(value: Any) -> str:
        return "–" if value is None else str(value)

    for batch in batches:
        b = batch.to_dict()
        status = b.get("status") or b["state"]
        table.add_row(
            b["batch_id"] or f"({b['submission_id']})",
            b["judge_run_id"],
            status if b["state"] in ("submitted", "collected") else f"{status} (not created)",
            str(b["requests"]),
            count(b.get("completed")),
            count(b.get("failed")),
            count(b.get("judged")),
            count(b.get("resubmitted")),
        )
    return table


def batches_payload(found: list[Any]) -> list[dict[str, Any]]:
    """`qrelkit batches --json`: every field of each submission."""
    return [submission.to_dict() for submission in found]
