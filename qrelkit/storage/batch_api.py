"""Batch API submissions of judge runs: what was sent where, for which pairs, and how far it got.

Only the job's batch driver writes here. The order of the writes is what makes a crash harmless:
a submission and its pairs are committed before its file is uploaded, the file id before the batch
is created, the batch id as soon as the API returns it, and a batch's judgments in the same
transaction that marks it collected.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from qrelkit.errors import StoreError
from qrelkit.storage.entries import registered
from qrelkit.storage.judgments import insert_judgments, of_submission
from qrelkit.storage.store import Store

OPEN_STATES = ("prepared", "uploaded", "submitted")
_COLUMNS = (
    "submission_id, judge_run_id, state, file_name, request_file, requests, bytes, options, input_file_id, batch_id, status, "
    "total, completed, failed, output_file_id, error_file_id, errors, judged, resubmitted, created_unix, "
    "CAST(created_at AS VARCHAR), CAST(checked_at AS VARCHAR), CAST(collected_at AS VARCHAR), endpoint, key_variable"
)


@dataclass(frozen=True)
class Submission:
    submission_id: str
    judge_run_id: str
    state: str  # prepared | uploaded | submitted | collected
    file_name: str
    request_file: str | None
    requests: int
    bytes: int
    options: dict[str, Any]
    input_file_id: str | None = None
    batch_id: str | None = None
    status: str | None = None  # the API's: validating, in_progress, finalizing, completed, expired, cancelling, cancelled, failed
    total: int | None = None
    completed: int | None = None
    failed: int | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: str | None = None
    judged: int | None = None  # pairs that got a judgment from this batch
    resubmitted: int | None = None  # pairs that went back to pending
    created_unix: int = 0
    created_at: str | None = None
    checked_at: str | None = None
    collected_at: str | None = None
    # where the batch went, as its judge declared it (`BatchEndpoint`; no key variable: a runner on this
    # machine); both None for a submission recorded before schema 11 (`jobs.batch_api.submission_endpoint`)
    endpoint: str | None = None
    key_variable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("options", "endpoint", "key_variable")}
        out["model"] = self.options.get("model")
        out["base_url"] = self.options.get("base_url")
        return out


def _submission(row: tuple) -> Submission:
    values = list(row)
    values[7] = json.loads(values[7]) if values[7] else {}
    return Submission(*values)


def record_submission(
    store: Store,
    *,
    submission_id: str,
    judge_run_id: str,
    file_name: str,
    request_file: str,
    pairs: list[tuple[str, str]],
    size: int,
    options: dict[str, Any],
    endpoint: str,
    key_variable: str | None,
    created_unix: int,
) -> None:
    """A submission and its pairs, committed before anything is uploaded, with where it goes."""
    rows = pa.table(
        {
            "submission_id": [submission_id] * len(pairs),
            "judge_run_id": [judge_run_id] * len(pairs),
            "qid": [q for q, _ in pairs],
            "docid": [d for _, d in pairs],
        }
    )
    with store.transaction() as con:
        con.execute(
            "INSERT INTO batch_submissions (submission_id, judge_run_id, state, file_name, request_file, requests, bytes, options, "
            "endpoint, key_variable, created_unix) VALUES (?, ?, 'prepared', ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                *(submission_id, judge_run_id, file_name, request_file, len(pairs), size, json.dumps(options, sort_keys=True)),
                *(endpoint, key_variable, created_unix),
            ],
        )
        with registered(con, "incoming_batch_pairs", rows):
            # the input hashes of what the file sends (its images were checked against them as they were read)
            con.execute(
                "INSERT INTO batch_pairs (submission_id, judge_run_id, qid, docid, topic_hash, content_hash) "
                "SELECT i.submission_id, i.judge_run_id, i.qid, i.docid, t.content_hash, d.content_hash FROM incoming_batch_pairs i "
                "LEFT JOIN topics t ON t.qid = i.qid LEFT JOIN documents d ON d.docid = i.docid"
            )


def set_uploaded(store: Store, submission_id: str, input_file_id: str) -> None:
    with store.transaction() as con:
        con.execute(
            "UPDATE batch_submissions SET state = 'uploaded', input_file_id = ? WHERE submission_id = ?", [input_file_id, submission_id]
        )


def set_submitted(store: Store, submission_id: str, *, batch_id: str, input_file_id: str | None, status: str) -> None:
    with store.transaction() as con:
        con.execute(
            "UPDATE batch_submissions SET state = 'submitted', batch_id = ?, input_file_id = coalesce(?, input_file_id), status = ?, "
            "checked_at = current_timestamp WHERE submission_id = ?",
            [batch_id, input_file_id, status, submission_id],
        )


def set_status(
    store: Store,
    submission_id: str,
    *,
    status: str,
    total: int,
    completed: int,
    failed: int,
    output_file_id: str | None,
    error_file_id: str | None,
    errors: str | None,
) -> None:
    with store.transaction() as con:
        con.execute(
            "UPDATE batch_submissions SET status = ?, total = ?, completed = ?, failed = ?, output_file_id = ?, error_file_id = ?, "
            "errors = ?, checked_at = current_timestamp WHERE submission_id = ?",
            [status, total, completed, failed, output_file_id, error_file_id, errors, submission_id],
        )


def forget_submission(store: Store, submission_id: str) -> None:
    """Drop a submission that never reached the API (nothing uploaded, or refused): its pairs are pending again."""
    with store.transaction() as con:
        con.execute("DELETE FROM batch_pairs WHERE submission_id = ?", [submission_id])
        con.execute("DELETE FROM batch_submissions WHERE submission_id = ? AND state <> 'collected'", [submission_id])


def submissions(store: Store, judge_run_id: str | None = None, *, open_only: bool = False) -> list[Submission]:
    """Submissions, oldest first; of one judge run, and only those not yet collected, when asked."""
    where, params = [], []
    if judge_run_id is not None:
        where.append("judge_run_id = ?")
        params.append(judge_run_id)
    if open_only:
        where.append(f"state IN {OPEN_STATES!r}")
    sql = f"SELECT {_COLUMNS} FROM batch_submissions" + (" WHERE " + " AND ".join(where) if where else "")
    return [_submission(row) for row in store.con.execute(sql + " ORDER BY created_at, submission_id", params).fetchall()]


def submission_for(store: Store, ref: str) -> Submission:
    """A submission by its batch id or its submission id."""
    rows = store.con.execute(f"SELECT {_COLUMNS} FROM batch_submissions WHERE batch_id = ? OR submission_id = ?", [ref, ref]).fetchall()
    if len(rows) != 1:
        known = [r[0] or r[1] for r in store.con.execute("SELECT batch_id, submission_id FROM batch_submissions").fetchall()]
        raise StoreError(f"no batch {ref!r} in {store.path} (batches: {', '.join(known[-10:]) or 'none'})")
    return _submission(rows[0])


def submission_pairs(store: Store, submission_id: str) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    """(qid, docid) -> (topic hash, content hash) of what was sent, for each pair of a submission."""
    rows = store.con.execute(
        "SELECT qid, docid, topic_hash, content_hash FROM batch_pairs WHERE submission_id = ? ORDER BY qid, docid", [submission_id]
    ).fetchall()
    return {(q, d): (topic, content) for q, d, topic, content in rows}


def open_batch_count(store: Store, judge_run_id: str) -> int:
    """How many pairs of the judge run are in a submission not yet collected: sent, or possibly sent, and paid for."""
    return int(
        store._scalar(
            f"SELECT count(*) FROM (SELECT DISTINCT p.qid, p.docid FROM batch_pairs p JOIN batch_submissions s USING (submission_id) "
            f"WHERE p.judge_run_id = ? AND s.state IN {OPEN_STATES!r})",
            [judge_run_id],
        )
    )


def batch_history(store: Store, judge_run_id: str, submission_id: str | None = None) -> dict[tuple[str, str], list[str]]:
    """(qid, docid) -> the outcomes of the collected batches the pair was sent in, oldest first; of
    the pairs of one submission when ``submission_id`` is given (what collecting it needs)."""
    mine, params = of_submission("p", submission_id)
    rows = store.con.execute(
        "SELECT p.qid, p.docid, p.outcome FROM batch_pairs p JOIN batch_submissions s USING (submission_id) "
        f"WHERE p.judge_run_id = ? AND p.outcome IS NOT NULL{mine} ORDER BY s.collected_at, s.submission_id",
        [judge_run_id, *params],
    ).fetchall()
    history: dict[tuple[str, str], list[str]] = {}
    for qid, docid, outcome in rows:
        history.setdefault((qid, docid), []).append(outcome)
    return history


def collect_submission(
    store: Store,
    submission_id: str,
    judge_run_id: str,
    judgments: list[Any],
    resubmit: Iterable[tuple[str, str]],
    sent: Mapping[tuple[str, str], tuple[str | None, str | None]] | None = None,
) -> None:
    """A finished batch's judgments and the pairs it sends back to pending, and the submission marked
    collected: one transaction, so a crash stores all of it or none (and the batch is read again).
    ``sent``: the input hashes each pair was sent with (`submission_pairs`), which its judgment records."""
    again = list(resubmit)
    outcomes = pa.table(
        {
            "qid": [j.qid for j in judgments] + [q for q, _ in again],
            "docid": [j.docid for j in judgments] + [d for _, d in again],
            "outcome": ["judged"] * len(judgments) + ["resubmit"] * len(again),
        }
    )
    with store.transaction() as con:
        insert_judgments(con, judge_run_id, judgments, sent)
        with registered(con, "batch_outcomes", outcomes):
            con.execute(
                "UPDATE batch_pairs SET outcome = o.outcome FROM batch_outcomes o "
                "WHERE batch_pairs.submission_id = ? AND batch_pairs.qid = o.qid AND batch_pairs.docid = o.docid",
                [submission_id],
            )
        con.execute(
            "UPDATE batch_submissions SET state = 'collected', judged = ?, resubmitted = ?, collected_at = current_timestamp "
            "WHERE submission_id = ?",
            [len(judgments), len(again), submission_id],
        )
