"""Documents of `qrelkit judge | grade | demo | prompts | judges | batches`: what a judging run did."""

from __future__ import annotations

from typing import Any

from qrelkit.report.document import Document, Lines, Table, warnings
from qrelkit.report.phrases import describe_sample, grading_rule, judge_run_match_note


def describe_pairs(report: Any) -> str:
    """The pairs a job works on: its pool, or the sample of it (qrelkit.jobs.plan.JobPlan.sample)."""
    sample = report.sample
    if sample is None:
        return f"{report.pairs} pairs in the pool"
    if sample["pairs"] >= sample["pool_pairs"]:
        return f"{report.pairs} pairs in the pool (--sample {sample['asked']} covers all of it)"
    return describe_sample(sample)


def job_lines(report: Any, *, dry_run: bool = False, limit: int | None = None) -> list[str]:
    """What a judging run did, as lines (qrelkit.jobs.runner.JobReport); ``limit``: the run's --limit."""
    lines = [
        f"judge run {report.judge_run_id}: {describe_pairs(report)}; before this run "
        f"{report.already_ok} ok, {report.already_failed} failed; {report.to_judge} to judge",
        *load_lines(report.loads, dry_run=dry_run),
    ]
    if limit is not None:
        lines.append(
            f"--limit {limit} caps this run's calls: the first pending pairs in pool order, not a sample "
            "(--sample N spreads its pairs over every topic)"
        )
    if dry_run:
        lines += [f"checked before judging: {check}" for check in getattr(report, "checks", [])]
        if report.estimate:
            lines.append("estimate for the pairs to judge: " + ", ".join(f"{k} {v}" for k, v in report.estimate.items()))
        if getattr(report, "time_estimate", None):
            lines.append(f"estimated time: {report.time_estimate['sentence']}")
        return lines
    if report.judged:
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(report.statuses.items()))
        rate = report.judged / report.seconds if report.seconds else 0.0
        lines.append(f"judged {report.judged} pairs in {report.seconds:.1f}s ({rate:.1f}/s): {statuses}")
    if getattr(report, "mode", "sync") == "batch" or getattr(report, "in_batches", 0):
        lines += batch_job_lines(report)
    if report.interrupted:
        lines.append("interrupted: what was judged is saved; run the same command again to resume")
    return lines


def load_lines(loads: list[Any], *, dry_run: bool = False) -> list[str]:
    """What a job loaded: a line per file, or one line for many of a kind (a folder of 37 runs: the first
    three named, the rest counted; --json has every one)."""
    verbs = {"loaded": "would load", "replaced": "would replace"} if dry_run else {}
    lines = [f"skipped {load.name}: {load.reason}" for load in loads if load.status == "skipped"]
    groups: dict[tuple[str, str], list[Any]] = {}
    for load in loads:
        if load.status not in ("skipped", "unchanged"):
            groups.setdefault((load.status, load.kind), []).append(load)
    for (status, kind), found in groups.items():
        verb = verbs.get(status, status)
        if len(found) <= 3:
            lines += [f"{verb} {kind} {load.name!r} ({load.rows} rows)" for load in found]
        else:
            names = ", ".join(repr(load.name) for load in found[:3]) + f" and {len(found) - 3} more"
            lines.append(f"{verb} {len(found)} {kind} ({sum(load.rows for load in found):,} rows): {names}")
    return lines


def grading_lines(result: Any) -> list[str]:
    """What grading did (qrelkit.jobs.grade.GradingResult): the rule and the grades (its warnings are notes)."""
    d = result.description
    grades = ", ".join(f"{g}: {n}" for g, n in result.grade_counts().items())
    lines = [f"graded {d['n_scores']} scores into qrels {result.qrels.name!r} ({grading_rule(d)}); grades {grades}"]
    if d.get("sample"):
        lines.append(f"the judge run covers a {describe_sample(d['sample'])}, not its whole pool")
    return lines


def judging(outcome: Any, request: Any) -> Document:
    """`qrelkit judge`: a job's report and grading (exit 130 when interrupted); a sweep's cells."""
    from qrelkit.commands.sweep import SweepOutcome

    if isinstance(outcome, SweepOutcome):
        return sweep(outcome, request)
    lead = job_lines(outcome.report, dry_run=request.dry_run, limit=request.limit)
    grading = outcome.grading
    if grading is not None:
        lead += grading_lines(grading)
    notes = warnings(grading.warnings) if grading is not None else []
    return Document(lead=lead, notes=notes, data=outcome.to_dict(), status=130 if outcome.report.interrupted else 0)


def grading(result: Any, request: Any) -> Document:
    """`qrelkit grade`."""
    note = judge_run_match_note(str(request.judge_run), result.description["judge_run_id"], result.matched_by)
    data = {"qrels": result.qrels.name, "grades": result.grade_counts(), **result.description}
    return Document(lead=grading_lines(result), notes=warnings(result.warnings), data=data, said=[note] if note else [])


def sweep(outcome: Any, request: Any) -> Document:
    """Every cell of a sweep, a row each; exit 3 when a cell failed (the others ran), 130 when interrupted."""
    dry = outcome.dry_run
    title = f"Sweep {outcome.job.name} over {', '.join(outcome.keys)}: {len(outcome.cells)} cells" + (" (dry run)" if dry else "")
    header = ["cell", "judge run", "status", "pairs", "done", "to judge"]
    header += ["est. requests", "est. cost USD (max)"] if dry else ["judged", "failed", "graded set"]
    rows: list[list[Any]] = []
    for cell in outcome.cells:
        report = cell.report
        base: list[Any] = [cell.cell.name, cell.judge_run_id, cell.status]
        if report is None:
            rows.append(base + [None] * (len(header) - 3))
            continue
        base += [report.pairs, report.already_ok, report.to_judge]
        if dry:
            estimate = report.estimate or {}
            base += [estimate.get("requests"), estimate.get("cost_usd_max")]
        else:
            graded = cell.outcome.grading if cell.outcome is not None else None
            base += [report.judged, report.failed, graded.qrels.name if graded is not None else None]
        rows.append(base)
    failed = [f"cell {c.cell.name} failed: {c.error}" for c in outcome.cells if c.status == "failed"]
    failure = outcome.failure()
    status = 130 if outcome.interrupted else 3 if failure else 0
    table = Table(title, header, rows, text_columns=frozenset({0, 1, 2, 8}) if not dry else 3, name="cells")
    ran = len(outcome.cells) - len(outcome.failed)
    lead = [f"{ran} of {len(outcome.cells)} sweep cells {'would run' if dry else 'ran'}."]
    return Document(lead=lead, blocks=[table], data=outcome.to_dict(), status=status, failure=failure, said=failed)


def demo(result: Any, request: Any) -> Document:
    """`qrelkit demo`: the judging, the grading, both rankings of the bundled runs and their agreement."""
    report = result.report
    rows = [
        [run, result.under_human[run], result.under_model[run]] for run in sorted(result.under_human, key=lambda r: -result.under_human[r])
    ]
    table = Table(f"{result.measure} of the bundled runs under human and MiniLM qrels", ["run", "human qrels", "MiniLM qrels"], rows)
    agree, shared = result.binary_agreement
    runs = len(result.under_human)
    lead = [
        f"MiniLM's qrels rank the {runs} bundled runs by {result.measure} with Kendall τ {result.kendall_tau:.3f} against the human "
        f"qrels' ranking; binary agreement (grade ≥ 2) on {agree}/{shared} pairs.",
        f"judged {report.judged} of {report.pairs} pairs with MiniLM (int8 ONNX) [{report.already_ok} already in the database]",
        *grading_lines(result.grading),
    ]
    after = [f"model qrels: {result.qrels_file}", f"database: {result.database}", f"done in {result.seconds:.1f}s"]
    data = {
        "measure": result.measure,
        "under_human": result.under_human,
        "under_model": result.under_model,
        "kendall_tau": result.kendall_tau,
        "binary_agreement": {"agree": agree, "shared": shared},
        "qrels_file": str(result.qrels_file),
        "database": str(result.database),
    }
    return Document(lead=lead, blocks=[table, Lines(after)], data=data)


def templates(found: list[Any], request: Any) -> Document:
    """`qrelkit prompts list`: the built-in templates (JSON: each one's content)."""
    rows = [[t.id, t.modality, f"{t.score_range[0]:g}-{t.score_range[1]:g}", t.description] for t in found]
    table = Table("Built-in prompt templates (qrelkit prompts show ID)", ["id", "modality", "scores", "description"], rows, text_columns=4)
    return Document(blocks=[table], data=[template.content() for template in found])


def prompt(shown: Any, request: Any) -> Document:
    """`qrelkit prompts show`: a template as it is stored, or the messages a model sees for one pair."""
    if request.topic is None or request.doc is None:
        lead = [f"id {shown.id} version {shown.version} sha256 {shown.content_hash}"]
        return Document(lead=lead, blocks=[Lines(shown.model_dump_json(indent=1).splitlines())], data=shown.content())
    return Document(blocks=[Lines(str(shown).splitlines())], data={"messages": str(shown)})


def judges(found: list[dict[str, Any]], request: Any) -> Document:
    """`qrelkit judges`: one table per judge, its options with type, default and description."""
    tables = [
        Table(
            f"{judge['name']}: {judge['summary']}",
            ["option", "type", "default", "description"],
            [[o["name"], o["type"], repr(o["default"]), o["description"]] for o in judge["options"]],
            text_columns=4,
            name=judge["name"],
        )
        for judge in found
    ]
    return Document(blocks=list(tables), data=found)


# -- Batch API submissions ----------------------------------------------------------------------------


def batch_line(batch: dict[str, Any]) -> str:
    """One submission: its batch (or how far it got), the API's status and counts, what it gave."""
    name = batch.get("batch_id") or f"(submission {batch['submission_id']}, {batch['state']})"
    total = batch.get("total") or batch.get("requests") or 0
    progress = f"{batch.get('completed') or 0}/{total} done, {batch.get('failed') or 0} failed"
    line = f"batch {name}: {batch.get('status') or batch['state']}, {batch['requests']} requests, {progress}"
    if batch["state"] == "collected":
        line += f"; collected: {batch.get('judged') or 0} judgments, {batch.get('resubmitted') or 0} pairs pending again"
    if batch.get("errors"):
        line += f"; errors: {batch['errors']}"
    return line


def batch_job_lines(report: Any) -> list[str]:
    """What a batch-mode run sent and collected, and what is still out (qrelkit.jobs.runner.JobReport)."""
    if report.mode != "batch":
        waiting = f"{report.in_batches} pairs of the pool are in open Batch API batches; `qrelkit batches` collects them"
        return [waiting] if report.in_batches else []
    new = [b for b in report.batches if b["state"] != "collected" and b.get("requests")]
    lines = [f"sent {report.submitted} requests to the Batch API"] if report.submitted else []
    lines += [batch_line(b) for b in report.batches]
    if report.in_batches:
        lines.append(
            f"{report.in_batches} pairs wait in {len(new)} open batches (answered within 24 h): run the job again, or "
            "`qrelkit batches --db DB`, to collect them; `--wait` waits"
        )
    return lines


def batches(found: list[Any], request: Any) -> Document:
    """`qrelkit batches`: every submission of the database, oldest first (JSON: every field, times included)."""
    rows = []
    for submission in found:
        b = submission.to_dict()
        status = b.get("status") or b["state"]
        shown = status if b["state"] in ("submitted", "collected") else f"{status} (not created)"
        rows.append([b["batch_id"] or f"({b['submission_id']})", b["judge_run_id"], shown, b["requests"]])
        rows[-1] += [b.get("completed"), b.get("failed"), b.get("judged"), b.get("resubmitted")]
    header = ["batch", "judge run", "status", "sent", "done", "failed", "judged", "again"]
    table = Table("Batch API submissions", header, rows, text_columns=3, compact=True, name="batches")
    open_ = sum(1 for s in found if s.state != "collected")
    lead = [f"{len(found)} Batch API submission{'s' if len(found) != 1 else ''}, {open_} not collected yet."]
    return Document(lead=lead, blocks=[table], data=[s.to_dict() for s in found])


def cancelled(submission: Any, request: Any) -> Document:
    return Document(lead=[batch_line(submission.to_dict())], data=submission.to_dict())
