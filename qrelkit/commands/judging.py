"""The use cases behind `qrelkit judge | grade | import scores | export | prompts show`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from qrelkit.errors import QrelkitError
from qrelkit.io import Qrels, write_qrels
from qrelkit.io.files import check_output, write_atomically
from qrelkit.io.numbers import ascii_int, ascii_number
from qrelkit.io.results import Result
from qrelkit.jobs.grade import GradingResult, GradingSpec, grade_judge_run, grading_spec
from qrelkit.jobs.runner import JobReport, JobStopped, ProgressCallback, run_job
from qrelkit.jobs.spec import JobSpec
from qrelkit.prompts import PromptTemplate, RenderedPrompt, load_template
from qrelkit.report.tables import describe_grading, describe_job, judge_run_match_note
from qrelkit.storage import Store
from qrelkit.storage.judgments import graded_qrels
from qrelkit.storage.judgments import judge_run as find_judge_run

# `qrelkit grade` flags, for error messages that name the flag a user typed.
GRADE_FLAGS = {
    "method": "--method",
    "quantiles": "--quantiles",
    "thresholds": "--thresholds",
    "labels": "--labels",
    "per_topic": "--per-topic/--global",
    "ties": "--ties",
    "map": "--map",
    "score_from": "--score-from",
    "name": "--name",
}


def builtin_templates() -> list[PromptTemplate]:
    from qrelkit.prompts import builtin_templates as templates

    return templates()


def templates_payload(templates: list[PromptTemplate]) -> list[dict[str, Any]]:
    return [t.content() for t in templates]


def render_pair(template_ref: str, db: Path, qid: str | None, docid: str | None) -> RenderedPrompt:
    """`qrelkit prompts show TEMPLATE --topic QID --doc DOCID`: the messages a model sees for one pair."""
    if qid is None or docid is None:
        raise QrelkitError("give both --topic QID and --doc DOCID (or neither)")
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


def _numbers(text: str | None, flag: str, kind: type = float) -> list[Any] | None:
    """Comma-separated ASCII numbers (`1_0` or non-ASCII digits are refused, as in files; a `nan`
    goes on to the grading specification, which says why it cannot stand, as for a job file)."""
    if text is None:
        return None
    parse = (lambda v: ascii_int(v, flag)) if kind is int else (lambda v: ascii_number(v, flag))
    try:
        return [parse(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise QrelkitError(f"{flag}: expected comma-separated {what}, got {text!r}") from None


def _mapping(text: str | None) -> dict[str, int] | None:
    """`3:2,2:2,1:1,0:0` or `1-25:0,26-75:1,76-100:2` -> {"3": 2, ...}; the spec checks the keys."""
    if text is None:
        return None
    mapping: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        key, colon, grade = item.rpartition(":")
        try:
            if not colon or not key:
                raise ValueError
            onto = ascii_int(grade.strip(), "--map")
        except ValueError:
            raise QrelkitError(f"--map {text!r}: {item!r} is not SCORE:GRADE or LOW-HIGH:GRADE (e.g. 3:2,2:2,1:1,0:0)") from None
        if key.strip() in mapping and mapping[key.strip()] != onto:  # as agree's --map: a score mapped twice is a typo, not a choice
            raise QrelkitError(f"--map {text!r}: {key.strip()} is mapped twice ({mapping[key.strip()]} and {onto})")
        mapping[key.strip()] = onto
    return mapping


def grading_from_flags(
    *,
    method: str | None = None,
    quantiles: str | None = None,
    thresholds: str | None = None,
    labels: str | None = None,
    per_topic: bool | None = None,
    ties: str | None = None,
    grade_map: str | None = None,
    score_from: str | None = None,
    name: str | None = None,
) -> GradingSpec:
    """The command line's grading flags as the same validated specification a job file gives (and
    so the same defaults: quantiles per topic, ties by mid-rank)."""
    options: dict[str, Any] = {
        "method": method,
        "quantiles": _numbers(quantiles, "--quantiles"),
        "thresholds": _numbers(thresholds, "--thresholds"),
        "labels": _numbers(labels, "--labels", int),
        "per_topic": per_topic,
        "ties": ties,
        "map": _mapping(grade_map),
        "score_from": score_from,
        "name": name,
    }
    if method is None and options["thresholds"] is not None:
        options["method"] = "thresholds"  # --thresholds alone means fixed cut points, as before
    if method is None and options["map"] is not None:
        options["method"] = "map"
    return grading_spec({k: v for k, v in options.items() if v is not None}, option_names=GRADE_FLAGS)


def grade_run(db: Path, judge_run_id: str, spec: GradingSpec, *, replace: bool = False) -> GradingResult:
    with Store(db) as store:
        return grade_judge_run(store, judge_run_id, spec, replace=replace)


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


def executor_sets(executor: str | None, workers: int | None) -> list[str]:
    """`--executor KIND --workers N` as the job overrides they stand for (validated with the job)."""
    if executor is not None and executor not in ("local", "ray"):
        raise QrelkitError(f"--executor {executor!r}: choose local or ray")
    # --executor local runs a Ray job here: the job's Ray options are dropped, not an error
    sets = {None: [], "local": ["executor={kind: local}"], "ray": ["executor.kind=ray"]}[executor]
    if workers is not None:
        if workers < 1:
            raise QrelkitError(f"--workers must be 1 or more, got {workers}")
        sets.append(f"executor.workers={workers}")
    return sets


def sample_sets(sample: int | None, seed: int | None) -> list[str]:
    """`--sample N --seed S` as the job overrides they stand for (`sample:` in a job file)."""
    if sample is None:
        if seed is not None:
            raise QrelkitError("--seed goes with --sample N (the seed of the sample's order)")
        return []
    if sample < 1:
        raise QrelkitError(f"--sample must be 1 or more, got {sample}")
    return [f"sample.pairs={sample}"] + ([f"sample.seed={seed}"] if seed is not None else [])


def load_judging_job(
    path: Path,
    *,
    sets: list[str] | None = None,
    sample: int | None = None,
    seed: int | None = None,
    mode: str | None = None,
    executor: str | None = None,
    workers: int | None = None,
    on_duplicate: str | None = None,
    allow_import: bool = False,
    cell: dict[str, Any] | None = None,
) -> JobSpec:
    """The job file (or one ``cell`` of a sweep job) with `--set` overrides, `--mode` (the judge's `mode` option: sync or batch),
    `--executor`/`--workers`, `--on-duplicate` (the collection's on_duplicate),
    `--sample N --seed S` (the job's `sample`) and `--allow-import` (a `module:Class` judge may be imported)."""
    from qrelkit.jobs import load_job

    if mode is not None and mode not in ("sync", "batch"):
        raise QrelkitError(f"--mode {mode!r}: choose sync or batch")
    extra = [f"judge.options.mode={mode}"] if mode else []
    extra += [f"collection.on_duplicate={on_duplicate}"] if on_duplicate else []
    extra += sample_sets(sample, seed)
    overrides = {"allow_import": True} if allow_import else None
    return load_job(path, overrides, sets=[*(sets or []), *extra, *executor_sets(executor, workers)], cell=cell)


def run_judging(
    spec: JobSpec,
    *,
    limit: int | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    grade: bool = True,
    progress: ProgressCallback | None = None,
    wait: bool = False,
) -> JudgingOutcome:
    """`qrelkit judge`: run the job, then grade it when the job asks, the run was not interrupted and
    no pair is still in a batch. Without ``grade`` the job's grading is left out altogether (its
    checks too: nothing is graded)."""
    if not grade and spec.grading is not None:
        spec = spec.model_copy(update={"grading": None})
    report = run_job(spec, limit=limit, dry_run=dry_run, retry_failed=retry_failed, progress=progress, wait=wait)
    if report.mostly_failed:
        raise JobStopped(report.failure_message(), report)
    outcome = JudgingOutcome(report, limit=limit)
    settled = not report.interrupted and report.in_batches == 0
    if grade and not dry_run and settled and (report.judged or report.to_judge == 0):
        outcome.grading = grade_job(spec, report.judge_run_id)
    return outcome


def finish_job(spec: JobSpec, report: JobReport, *, dry_run: bool, grade: bool, console: Console) -> GradingResult | None:
    """Say what a run did, and grade it when the job asks (for callers that ran `run_job` themselves)."""
    for line in describe_job(report, dry_run=dry_run):
        console.print(line, highlight=False)
    if dry_run or report.interrupted or not grade:
        return None
    result = grade_job(spec, report.judge_run_id)
    if result is not None:
        for line in describe_grading(result):
            console.print(line, highlight=False)
    return result


def export_qrels_file(
    db: Path, output: Path, *, judge_run_id: str | None, name: str | None, force: bool = False
) -> tuple[Qrels, str | None]:
    """`qrelkit export qrels`: a qrels set, named or a judge run's (the set an audit of it reads), as a
    TREC qrels file (an existing file only with ``force``); the set, and a note when `--judge-run`
    found its run by name."""
    if (judge_run_id is None) == (name is None):
        raise QrelkitError("name what to export: --judge-run ID or --name QRELS_SET")
    check_output(output, force=force, inputs={"--db": db})
    note = None
    with Store(db, read_only=True) as store:
        if judge_run_id is not None:
            qrels, info = graded_qrels(store, judge_run_id)
            note = judge_run_match_note(judge_run_id, info.judge_run_id, info.matched_by)
        else:
            qrels = store.qrels(name)  # type: ignore[arg-type]
    write_atomically(output, partial(write_qrels, qrels))
    return qrels, note


def export_judgments(db: Path, output: Path, *, judge_run: str | None = None, force: bool = False) -> tuple[int, list[str]]:
    """`qrelkit export judgments`: every stored field of a judge run's judgments (or of all runs)
    as Parquet, CSV or JSON Lines (an existing file only with ``force``); returns the row count and
    the judge runs written."""
    from qrelkit.io.tables import table_format, write_table
    from qrelkit.storage.judgments import copy_judgments, judgments_table

    check_output(output, force=force, inputs={"--db": db})
    suffix = table_format(output)
    with Store(db, read_only=True) as store:
        judge_run_id = find_judge_run(store, judge_run).judge_run_id if judge_run is not None else None
        if suffix != ".csv":  # DuckDB writes these itself, a block at a time
            copied: list[tuple[int, list[str]]] = []
            fmt = "parquet" if suffix == ".parquet" else "json"
            write_atomically(output, lambda temporary: copied.append(copy_judgments(store, temporary, fmt, judge_run_id)))
            return copied[0]
        table = judgments_table(store, judge_run_id)
    write_atomically(output, partial(write_table, table))  # CSV: the cells' quoting is ours
    return table.num_rows, sorted(set(table.column("judge_run_id").to_pylist()))


def import_scores(db: Path, path: Path, *, name: str, replace: bool = False):
    """`qrelkit import scores`: scores made by any tool, stored as a judge run of origin `imported`."""
    from qrelkit.io.scores import read_scores

    scores = read_scores(path)
    with Store(db) as store:
        return store.import_scores(scores, name=name, path=path, replace=replace)
