"""The judgments a running job has made so far (`agree --partial`), read from the file it writes
beside its database and graded as its job grades (`qrelkit.commands.status` says how far it got)."""

from __future__ import annotations

from typing import Any

from qrelkit.commands.workspace import ResolvedQrels, Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io.job_status import job_state, partial_path, read_partial, read_status, status_path


def partial_qrels(workspace: Workspace, judge_run: str | None = None) -> ResolvedQrels:
    """The running job's judgments so far (the file it writes beside --db), graded as its job
    grades; the source says they are partial, and how far the job had got."""
    from qrelkit.jobs.grade import GradingSpec, grade_scores

    if workspace.db is None:
        raise QrelkitError("--partial needs the job's database (--db)")
    s = read_status(workspace.db)
    table = read_partial(workspace.db)
    if s is None or table is None:
        raise QrelkitError(
            f"--partial: no judging job has written its judgments so far beside {workspace.db} ({partial_path(workspace.db).name}); "
            "a job writes them while it judges"
        )
    if judge_run is not None and not str(s.get("judge_run_id", "")).startswith(judge_run):
        raise QrelkitError(
            f"--partial --judge-run {judge_run}: the job writing beside {workspace.db} judges judge run {s.get('judge_run_id')}"
        )
    if not s.get("grading"):
        raise QrelkitError(
            f"--partial: the job of judge run {s.get('judge_run_id')} grades nothing (no `grading:`), so its scores are no qrels yet"
        )
    try:
        spec = GradingSpec.model_validate({key: value for key, value in s["grading"].items() if value is not None})
    except ValueError as exc:  # pydantic's ValidationError is one
        raise QrelkitError(f"--partial: the grading in {status_path(workspace.db)} cannot be read: {exc}") from None
    triples = _last_ok_scores(table)
    if not triples:
        raise QrelkitError(f"--partial: the job of judge run {s.get('judge_run_id')} has no ok judgment yet ({job_state(s)})")
    name = f"{spec.name or 'graded-' + str(s.get('judge_run_id'))} (partial)"
    graded = grade_scores(triples, spec, name=name)
    pool = int(s.get("pool_pairs") or 0)
    partial = f"{len(triples):,} of {pool:,} pairs judged ok so far, the job {job_state(s)} as of {s.get('updated_at')}"
    judge_run_part = {"id": s.get("judge_run_id"), "name": None, "judge": s.get("judge"), "matched_by": "status file"}
    source = {"name": name, "origin": "partial", "path": str(partial_path(workspace.db)), "judge_run": judge_run_part}
    source |= {"grading": graded.description, "partial": partial}
    return ResolvedQrels(graded.qrels, source, str(s.get("judge_run_id")))


def _last_ok_scores(table: Any) -> list[tuple[str, str, float]]:
    """(qid, docid, score) of each pair's last judgment, where it is ok (a failure judged again later
    is replaced by its new judgment)."""
    last: dict[tuple[str, str], tuple[str, float | None]] = {}
    for qid, docid, status, score in zip(*(table.column(c).to_pylist() for c in ("qid", "docid", "status", "score"))):
        last[(qid, docid)] = (status, score)
    return [(qid, docid, float(score)) for (qid, docid), (status, score) in last.items() if status == "ok" and score is not None]
