"""`qrelkit status` (and `qrelkit show` on a database a job holds): what a judging job is doing, read
from the status it writes beside its database (`qrelkit.io.job_status`), never from the database
itself, which the job holds: the answer comes at once, and the job is not slowed. With reference
qrels, also an audit of the judgments made so far (`agree --partial`: graded as the job grades,
systems ranked on the pairs judged so far, and said to be partial)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.requests import ModelAudit, StatusRequest
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io.job_status import process_alive, read_status, status_path
from qrelkit.io.results import Result, duration


@dataclass(frozen=True, repr=False)
class JobStatus(Result):
    """A job's last status (the file's fields), whether its process still runs (None: it ran on
    another host), and an audit of its judgments so far when one was asked for."""

    database: str
    status: dict[str, Any]
    running: bool | None
    audit: Any = None  # qrelkit.evaluate.audit.Audit
    held: bool = False  # shown by `qrelkit show`, whose database the job holds

    @property
    def state(self) -> str:
        """judging (its process runs; a batch job: waiting on its batches), finished, submitted (a
        batch job that ended with batches open at the API), interrupted, stopped, failed, or gone (it
        was judging and its process is no more: killed)."""
        state = str(self.status.get("state"))
        return "gone" if state == "judging" and self.running is False else state

    def counts(self) -> dict[str, Any]:
        s = self.status
        statuses = s.get("statuses") or {}
        ok = int(statuses.get("ok", 0))
        return {
            "judged": int(s.get("already_ok", 0)) + ok,
            "failed": int(s.get("already_failed", 0)) + sum(int(n) for k, n in statuses.items() if k != "ok"),
            "pending": s.get("pending"),
            "pairs": s.get("pool_pairs"),
            "this_run": s.get("done"),
            "pairs_per_second": s.get("pairs_per_second"),
            "seconds_left": s.get("seconds_left"),
        }

    def lead(self) -> str:
        s, c = self.status, self.counts()
        rate = f", {c['pairs_per_second']:.1f} pairs/s" if c["pairs_per_second"] else ""
        batches = s.get("batches")
        if batches:
            rate = f", {batches['pairs']:,} of them in {batches['open']:,} open batch(es) at the API"
        left = f", about {duration(c['seconds_left'])} left" if c["seconds_left"] is not None and self.state == "judging" else ""
        age = max(time.time() - float(s.get("updated_unix", time.time())), 0.0)
        return (
            f"judge run {s.get('judge_run_id')} ({s.get('judge')}, {s.get('model_id')}): {self.state}; "
            f"{c['judged']:,} of {c['pairs']:,} pairs judged ok, {c['failed']:,} failed, {c['pending']:,} pending{rate}{left} "
            f"(process {s.get('pid')} on {s.get('host')}, as of {duration(age)} ago)"
        )

    def summary(self) -> str:
        return f"database={self.database!r}, state={self.state!r}, " + ", ".join(f"{k}={v}" for k, v in self.counts().items())

    def to_dict(self) -> dict[str, Any]:
        out = {"database": self.database, "state": self.state, "running": self.running, **self.counts(), "status": self.status}
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        return out

    def document(self) -> Any:
        from qrelkit.report.document import Document, Table, notes, warnings

        s, c = self.status, self.counts()
        rows: list[list[Any]] = [
            ["judged ok", c["judged"]],
            ["failed", c["failed"]],
            ["pending", c["pending"]],
            ["pairs/s", c["pairs_per_second"]],
            ["time left", duration(c["seconds_left"]) if c["seconds_left"] is not None and self.state == "judging" else None],
            ["judged by this run", c["this_run"]],
            ["job", s.get("job")],
            ["started", s.get("started_at")],
            ["updated", s.get("updated_at")],
        ]
        if s.get("batches") is not None:  # a batch job
            rows.insert(3, ["in open batches", f"{s['batches']['pairs']:,} pairs in {s['batches']['open']:,} batch(es)"])
        document = Document(lead=[self.lead()], blocks=[Table("The job", None, rows, digits=1, name="status")], data=self.to_dict())
        if self.held:
            document.notes += notes(
                [f"database {self.database} is held by this judging job: `qrelkit show` lists what it holds once the job ends"],
                qualifies=True,
            )
        if self.state == "gone":
            document.notes += warnings(
                [f"process {s.get('pid')} is gone while the status says it was judging: the job was killed; run it again to resume"],
                qualifies=True,
            )
        if self.running is None:
            document.notes += notes([f"the job ran on {s.get('host')}: whether it still runs cannot be seen from here"], qualifies=True)
        if s.get("write_failed"):
            document.notes += warnings([f"the job could not write its status every time: {s['write_failed']}"])
        if self.audit is not None:  # κ and each measure's Kendall τ-b, in one line
            labels = self.audit.labels
            taus = "".join(f", Kendall τ-b {measure} {corr.kendall_tau:.4f}" for measure, corr in self.audit.systems.items())
            document.lead += [f"Judgments so far: Cohen's κ {labels.cohen_kappa:.4f} on {labels.shared_pairs:,} shared pairs{taus}"]
            document.notes += notes([self.audit.coverage.sentence() or ""], qualifies=True)
        return document


def job_status(database: Path) -> JobStatus | None:
    """The status a job last wrote beside ``database`` (None when none did)."""
    found = read_status(database)
    if found is None:
        return None
    return JobStatus(str(database), found, process_alive(found))


def held_by_job(database: Path | None) -> JobStatus | None:
    """The status of the judging job that holds ``database`` now (its process runs here, or on
    another host, and it was judging when it last wrote), else None: the database can be opened."""
    found = job_status(database) if database is not None else None
    if found is None or found.state != "judging":
        return None
    return JobStatus(found.database, found.status, found.running, held=True)


def run(request: StatusRequest, workspace: Workspace) -> JobStatus:
    """`qrelkit status`: the job's status; with --reference-qrels, an audit of its judgments so far."""
    if workspace.db is None:
        raise QrelkitError("no database given (--db)")
    found = job_status(workspace.db)
    if found is None:
        raise QrelkitError(
            f"no judging job has written a status beside {workspace.db} ({status_path(workspace.db).name}): "
            "a job writes one while it judges (qrelkit judge JOB.yaml); `qrelkit show` lists what the database holds"
        )
    if not request.reference_qrels.given:
        return found
    from qrelkit.commands import agree

    asked = ModelAudit(reference_qrels=request.reference_qrels, runs=request.runs, partial=True, resamples=0)
    return JobStatus(found.database, found.status, found.running, agree.run(asked, workspace))
