"""The use cases behind `qrelkit judge | grade | import scores | export | prompts show`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from qrelkit.commands.requests import (
    ExportJudgmentsRequest,
    ExportQrelsRequest,
    GradeRequest,
    ImportScoresRequest,
    JobRequest,
    JudgeRequest,
    JudgesRequest,
    PromptsListRequest,
    PromptsShowRequest,
)
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io import Qrels, write_qrels
from qrelkit.io.files import check_output, write_atomically
from qrelkit.io.results import Result
from qrelkit.jobs.grade import GradingResult, grade_judge_run, grade_scores
from qrelkit.jobs.report import JobReport, JobStopped, ProgressCallback
from qrelkit.jobs.runner import run_job
from qrelkit.jobs.spec import JobSpec
from qrelkit.prompts import load_template
from qrelkit.report.phrases import judge_run_match_note
from qrelkit.storage import Store
from qrelkit.storage.judgments import graded_qrels, import_scores, ok_scores
from qrelkit.storage.judgments import judge_run as find_judge_run


def run_prompts_list(request: PromptsListRequest, workspace: Workspace) -> list[Any]:
    """`qrelkit prompts list`: the built-in templates."""
    from qrelkit.prompts import builtin_templates

    return builtin_templates()


def run_prompts_show(request: PromptsShowRequest, workspace: Workspace) -> Any:
    """`qrelkit prompts show TEMPLATE [--topic QID --doc DOCID]`: the template (without a pair), or the
    messages a model sees for one pair."""
    template = load_template(request.template)
    if request.topic is None or request.doc is None:
        return template
    qid, docid, store = request.topic, request.doc, workspace.store
    topics = {t.qid: t for t in store.topics()}
    documents = store.documents([docid])
    if qid not in topics:
        raise QrelkitError(f"topic {qid!r} is not in {workspace.db}")
    if docid not in documents:
        raise QrelkitError(f"document {docid!r} is not in {workspace.db}")
    template.check_topics([topics[qid]])
    return template.render(topics[qid], documents[docid])


def run_judges(request: JudgesRequest, workspace: Workspace) -> Any:
    """`qrelkit judges [NAME]`: the registered judges with their options."""
    from qrelkit.judges import describe_judges

    return describe_judges(request.name)


def run_grade(request: GradeRequest, workspace: Workspace) -> GradingResult:
    """`qrelkit grade`: a judge run's scores graded and stored as a qrels set; from Python
    (`qrelkit.grade`) the graded qrels alone, of a judge run or of scores given."""
    spec = request.spec
    if request.store:
        with workspace.writing() as store:
            return grade_judge_run(store, str(request.judge_run), spec, replace=request.replace)
    default = f"graded-{request.judge_run}" if request.judge_run is not None else "graded"
    return grade_scores(_scores(request, workspace, spec.score_from), spec, name=spec.name or default)


def _scores(request: GradeRequest, workspace: Workspace, score_from: str) -> list[tuple[str, str, float]]:
    """(qid, docid, score) triples: a judge run's `ok` scores, or the scores given (triples, a `Run`,
    or any form of qrels, whose grades are then the scores)."""
    from qrelkit.io import Run

    scores = request.scores
    if request.judge_run is not None:
        if not workspace.has_db:
            raise QrelkitError(f"judge run {request.judge_run}: no database {workspace.db} to read it from")
        return ok_scores(workspace.store, find_judge_run(workspace.store, request.judge_run).judge_run_id, score_from)
    if isinstance(scores, Run):
        return list(zip(*(scores.table.column(c).to_pylist() for c in ("qid", "docid", "score"))))
    if isinstance(scores, list | tuple) and scores and isinstance(scores[0], list | tuple) and len(scores[0]) == 3:
        return _triples(scores)
    qrels = workspace.qrels(scores)
    return [(q, d, float(g)) for q, d, g in zip(*(qrels.table.column(c).to_pylist() for c in ("qid", "docid", "grade")))]


def _triples(scores: Any) -> list[tuple[str, str, float]]:
    """(qid, docid, score) triples, each pair once and each score a finite number: a repeated pair
    would give the qrels a pair twice, a NaN a grade of nothing."""
    import math

    triples: list[tuple[str, str, float]] = []
    seen: set[tuple[str, str]] = set()
    for item in scores:
        if not isinstance(item, list | tuple) or len(item) != 3:
            raise QrelkitError(f"scores: {item!r} is not a (qid, docid, score) triple")
        qid, docid, score = str(item[0]), str(item[1]), item[2]
        if (qid, docid) in seen:
            raise QrelkitError(f"scores: ({qid}, {docid}) is given twice; give each pair one score")
        try:
            value = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else math.nan
        except OverflowError:  # an int beyond any float
            value = math.nan
        if not math.isfinite(value):
            raise QrelkitError(f"scores: the score of ({qid}, {docid}), {score!r}, is not a finite number")
        seen.add((qid, docid))
        triples.append((qid, docid, value))
    return triples


def grade_job(spec: JobSpec, judge_run_id: str) -> GradingResult | None:
    """The job's own grading step: it may re-grade the set it graded before from the same judge run,
    never a loaded set or one graded from another run (both are refused before judging, too). The
    set is recorded as the judge run's own: the one `--judge-run` audits."""
    if spec.grading is None:
        return None
    with Store(spec.database) as store:
        name = spec.grading.name or f"graded-{judge_run_id}"
        origin = store.qrels_origin(name)
        own = origin is not None and origin[0] == "graded" and origin[1] == judge_run_id
        return grade_judge_run(store, judge_run_id, spec.grading, replace=own, by_job=True)


@dataclass(repr=False)
class JudgingOutcome(Result):
    """What `qrelkit judge` (and `qrelkit.judge`) did: the run's report and, when the job grades, its grading."""

    report: JobReport
    grading: GradingResult | None = None
    limit: int | None = None  # --limit: a cap on this run's calls, not a sample

    @property
    def judge_run_id(self) -> str:
        return self.report.judge_run_id

    def summary(self) -> str:
        graded = f", qrels={self.grading.qrels.name!r}" if self.grading is not None else ""
        report = self.report
        return f"judge_run_id={self.judge_run_id!r}, pairs={report.pairs}, judged={report.judged}, statuses={report.statuses}{graded}"

    def to_pandas(self):
        """One row: the counts of this run (pairs, judged, each status) and the graded set."""
        from qrelkit.io.results import pandas

        row = {k: v for k, v in self.to_dict().items() if not isinstance(v, dict | list)}
        row.update({f"status_{status}": n for status, n in self.report.statuses.items()})
        row["qrels"] = self.grading.qrels.name if self.grading is not None else None
        return pandas().DataFrame([row])

    def to_dict(self) -> dict[str, Any]:
        out = self.report.to_dict()
        out["limit"] = self.limit
        if self.grading is not None:
            out["grading"] = {"qrels": self.grading.qrels.name, "grades": self.grading.grade_counts(), **self.grading.description}
        return out


def load_judging_job(request: JobRequest, cell: dict[str, Any] | None = None) -> JobSpec:
    """The request's job file (or one ``cell`` of a sweep job) with the overrides its flags stand for
    (`JobRequest.overrides`); `--allow-import` lets a `module:Class` judge be imported. A job given
    as a `JobSpec` (from Python) is taken as it is."""
    from qrelkit.jobs import load_job

    if isinstance(request.job, JobSpec):
        return request.job
    return load_job(request.job, {"allow_import": True} if request.allow_import else None, sets=request.overrides, cell=cell)


def run_judging(spec: JobSpec, request: JudgeRequest, progress: ProgressCallback | None = None, judge: Any = None) -> JudgingOutcome:
    """Run the job as the request says, then grade it when the job asks, the run was not interrupted
    and no pair is still in a batch. Without ``grade`` the job's grading is left out altogether (its
    checks too: nothing is graded)."""
    if not request.grade and spec.grading is not None:
        spec = spec.model_copy(update={"grading": None})
    report = run_job(
        spec,
        limit=request.limit,
        dry_run=request.dry_run,
        retry_failed=request.retry_failed,
        wait=request.wait,
        progress=progress,
        judge=judge,
        check_endpoint=request.check_endpoint,
        timing_pairs=request.time_pairs,
    )
    if report.mostly_failed:
        raise JobStopped(report.failure_message(), report)
    outcome = JudgingOutcome(report, limit=request.limit)
    settled = not report.interrupted and report.in_batches == 0
    if request.grade and not request.dry_run and settled and (report.judged or report.to_judge == 0):
        outcome.grading = grade_job(spec, report.judge_run_id)
    return outcome


def run_export_qrels(request: ExportQrelsRequest, workspace: Workspace) -> tuple[Qrels, str | None]:
    """`qrelkit export qrels`: a qrels set, named or a judge run's (the set an audit of it reads), as a
    TREC qrels file (an existing file only with --force); the set, and a note when `--judge-run`
    found its run by name."""
    check_output(request.output, force=request.force, inputs={"--db": workspace.db})
    note = None
    if request.judge_run is not None:
        qrels, info = graded_qrels(workspace.store, request.judge_run)
        note = judge_run_match_note(request.judge_run, info.judge_run_id, info.matched_by)
    else:
        qrels = workspace.store.qrels(str(request.name))
    workspace.close()
    with workspace.progress(f"exporting qrels to {request.output.name}", unit="rows") as progress:
        write_atomically(request.output, partial(write_qrels, qrels, progress=progress))
    return qrels, note


def run_export_judgments(request: ExportJudgmentsRequest, workspace: Workspace) -> tuple[int, list[str]]:
    """`qrelkit export judgments`: every stored field of a judge run's judgments (or of all runs)
    as Parquet, CSV or JSON Lines (an existing file only with --force); returns the row count and
    the judge runs written."""
    from qrelkit.io.tables import table_format
    from qrelkit.storage.judgments import export_judgments

    output = request.output
    check_output(output, force=request.force, inputs={"--db": workspace.db})
    suffix = table_format(output)
    store = workspace.store
    judge_run_id = find_judge_run(store, request.judge_run).judge_run_id if request.judge_run is not None else None
    copied: list[tuple[int, list[str]]] = []
    fmt = {".parquet": "parquet", ".jsonl": "json", ".csv": "csv"}[suffix]
    with workspace.progress(f"exporting judgments to {output.name}", unit="rows") as progress:
        copy = partial(export_judgments, store, fmt=fmt, judge_run_id=judge_run_id, progress=progress)
        write_atomically(output, lambda temporary: copied.append(copy(temporary)))
    return copied[0]


def run_import(request: ImportScoresRequest, workspace: Workspace) -> Any:
    """`qrelkit import scores`: scores made by any tool, stored as a judge run of origin `imported`."""
    from qrelkit.io.scores import read_scores

    scores = read_scores(request.file)
    with workspace.writing() as store:
        return import_scores(store, scores, name=request.name, replace=request.replace)
