"""The functions behind `qrelkit judge | grade | export | prompts show`: one call each, text out."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from qrelkit.errors import QrelkitError
from qrelkit.io import write_qrels
from qrelkit.io.trec import Qrels
from qrelkit.jobs.grade import GradingResult, grade_judge_run
from qrelkit.jobs.runner import JobReport
from qrelkit.jobs.spec import JobSpec
from qrelkit.prompts import RenderedPrompt, load_template
from qrelkit.storage import Store
from qrelkit.storage.judgments import graded_qrels


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise QrelkitError(f"{what}: expected comma-separated numbers, got {text!r}") from None


def render_pair(template_ref: str, db: Path, qid: str, docid: str) -> RenderedPrompt:
    template = load_template(template_ref)
    with Store(db, read_only=True) as store:
        topics = {t.qid: t for t in store.topics()}
        documents = store.documents([docid])
    if qid not in topics:
        raise QrelkitError(f"topic {qid!r} is not in {db}")
    if docid not in documents:
        raise QrelkitError(f"document {docid!r} is not in {db}")
    template.check_topics([topics[qid]])
    return template.render(topics[qid], documents[docid])


def describe_grading(result: GradingResult) -> str:
    counts: dict[int, int] = {}
    for q in result.qrels.entries:
        counts[q.grade] = counts.get(q.grade, 0) + 1
    d = result.description
    if d["per_topic"]:
        cuts = f"per-topic quantiles {d['quantiles']} over {len(result.thresholds)} topics"
    else:
        cuts = "cut points " + ", ".join(f"{c:.4g}" for c in next(iter(result.thresholds.values())))
    grades = ", ".join(f"{g}: {n}" for g, n in sorted(counts.items()))
    return f"graded {d['n_scores']} scores into qrels {result.qrels.name!r} ({cuts}); grades {grades}"


def grade_and_describe(
    db: Path,
    judge_run_id: str,
    *,
    quantiles: str,
    thresholds: str | None,
    labels: str,
    per_topic: bool,
    score: str,
    name: str | None,
) -> str:
    label_values = [int(v) for v in _floats(labels, "--labels")]
    with Store(db) as store:
        result = grade_judge_run(
            store,
            judge_run_id,
            name=name,
            score_column=score,
            method="thresholds" if thresholds else "quantile",
            quantiles=_floats(quantiles, "--quantiles"),
            thresholds=_floats(thresholds, "--thresholds") if thresholds else None,
            labels=label_values,
            per_topic=per_topic,
        )
    return describe_grading(result)


def export_qrels_file(db: Path, output: Path, *, judge_run_id: str | None, name: str | None) -> Qrels:
    if (judge_run_id is None) == (name is None):
        raise QrelkitError("name what to export: --judge-run ID or --name QRELS_SET")
    with Store(db, read_only=True) as store:
        qrels = graded_qrels(store, judge_run_id)[0] if judge_run_id is not None else store.qrels(name)
    write_qrels(qrels, output)
    return qrels


def finish_job(spec: JobSpec, report: JobReport, *, dry_run: bool, grade: bool, console: Console) -> None:
    """Say what the run did, and grade it when the job asks and nothing is left to judge."""
    console.print(
        f"judge run {report.judge_run_id}: {report.pairs} pairs in the pool; before this run "
        f"{report.already_ok} ok, {report.already_failed} failed; {report.to_judge} to judge",
        highlight=False,
    )
    if dry_run:
        if report.estimate:
            console.print("estimate for the pairs to judge: " + ", ".join(f"{k} {v}" for k, v in report.estimate.items()), highlight=False)
        return
    if report.judged:
        statuses = ", ".join(f"{s} {n}" for s, n in sorted(report.statuses.items()))
        rate = report.judged / report.seconds if report.seconds else 0.0
        console.print(f"judged {report.judged} pairs in {report.seconds:.1f}s ({rate:.1f}/s): {statuses}", highlight=False)
    if report.interrupted:
        console.print("interrupted: what was judged is saved; run the same command again to resume")
        return
    if grade and spec.grading is not None:
        g = spec.grading
        with Store(spec.database) as store:
            result = grade_judge_run(
                store,
                report.judge_run_id,
                name=g.name,
                score_column=g.score,
                method=g.method,
                quantiles=g.quantiles,
                thresholds=g.thresholds,
                labels=g.labels,
                per_topic=g.per_topic,
            )
        console.print(describe_grading(result), highlight=False)
