"""Judging: `qrelkit judge` (a job, or every cell of a sweep job), `grade`, `import scores`, `export`,
`prompts`, `judges`, `batches` and `demo`; and the judgments of a run as a table (`qrelkit.judgments`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.commands.fields import Request, declared, option, strings
from qrelkit.commands.requests.parts import force_option
from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import check_seed
from qrelkit.io.duplicates import on_duplicate


def _job(value: Any) -> Any:
    """A job file's path, or (from Python) a loaded `JobSpec` as it is."""
    return Path(value) if isinstance(value, str | Path) else value


@dataclass(frozen=True)
class JobRequest(Request):
    """What a command that runs a job's judge is given (`judge`, `probe`): the job, the overrides of
    its settings, whether a `module:Class` judge may be imported and failed pairs judged again."""

    job: Any = option(
        "JOB", "Job YAML: database, collection, pool, judge, template, grading.", None, cli=Path | None, parse=_job, argument=True
    )
    retry_failed: bool = option("--retry-failed", "Judge failed pairs (parse/model/input errors) again.", False)
    sets: tuple[str, ...] = option(
        "--set", "Override a job setting: KEY.PATH=VALUE (YAML value), e.g. judge.options.batch_size=32.", (), parse=strings
    )
    allow_import: bool = option("--allow-import", "Allow a `judge.name: module:Class` job to import and run that Python module.", False)
    quiet: bool = option("--quiet", "No progress output.", False, api=False)

    uses_db = False  # the job names its database

    @property
    def overrides(self) -> list[str]:
        """The job overrides the request stands for, validated with the job."""
        return list(self.sets)


@dataclass(frozen=True)
class JudgeRequest(JobRequest):
    """`qrelkit judge JOB.yaml`: judge what the job's pool still lacks (or a --sample of it), then grade
    as the job says. Resumable: running it again judges only what is missing.

    Judgments are committed every few seconds; Ctrl-C stops cleanly after writing what was judged.
    A judge that fails the same way on `max_consecutive_failures` pairs in a row (default 20) stops
    the job; a job whose judgments mostly failed exits 3. In batch mode (`--mode batch`, or the
    judge option `mode: batch`) the pairs go out in Batch API files; running the job again (or
    `qrelkit batches`) collects the finished batches (docs/openai-batch.md). `--executor ray
    --workers N` judges on Ray actors (the `ray` extra; see docs/ray.md); this process stays the
    only writer. A sweep job judges every cell, a judge run each (docs/compare.md)."""

    limit: int | None = option(
        "--limit", "A cap on this run's calls: the first N pending pairs in pool order (not a sample: see --sample).", None
    )
    sample: int | None = option(
        "--sample", "Judge N pairs of the pool spread over every topic (stratified; a larger N later judges only the difference).", None
    )
    seed: int | None = option("--seed", "Seed of the --sample order (default 0).", None, parse=check_seed)
    dry_run: bool = option(
        "--dry-run",
        "Only count (what it would load; pairs, done, failed, to judge), estimate cost and run the checks made before "
        "judging (database, grading target, template grades); writes nothing.",
        False,
    )
    check_endpoint: bool = option(
        "--check-endpoint", "Before anything is written, send the judge's endpoint one cheap request (its model list).", False
    )
    time_pairs: int | None = option(
        "--time-pairs",
        "Pairs a dry run judges to estimate the judging time (default: the judge's choice, 256 for MiniLM, none for an API "
        "or vLLM; a judge run that judged before is estimated from its stored rate unless this is given; 0: no timing).",
        None,
    )
    grade: bool = option("--grade", "Grade into qrels when the job has `grading`.", True, secondary="--no-grade")
    executor: str | None = option("--executor", "local (one judge in this process) or ray (Ray actors); overrides the job's.", None)
    workers: int | None = option("--workers", "Ray workers, each with its own judge (with --executor ray).", None)
    on_duplicate: str | None = option(
        "--on-duplicate",
        "A repeated (qid, docid) in a run or qrels file: error, first, last or max (job key collection.on_duplicate).",
        None,
        parse=lambda value: None if value is None else on_duplicate(value).value,
    )
    mode: str | None = option("--mode", "sync (a live request per pair) or batch (the Batch API: half price, within 24 h).", None)
    wait: bool = option("--wait", "Batch mode: check with backoff until every batch is collected.", False)

    use_case = "qrelkit.commands.judge:run"
    document = "qrelkit.commands.documents.judging:judging"
    positional = ("job",)

    def check(self) -> None:
        if self.job is None:
            raise QrelkitError("give the job: qrelkit judge JOB.yaml")
        if self.mode is not None and self.mode not in ("sync", "batch"):
            raise QrelkitError(f"--mode {self.mode!r}: choose sync or batch")
        if self.executor is not None and self.executor not in ("local", "ray"):
            raise QrelkitError(f"--executor {self.executor!r}: choose local or ray")
        if self.workers is not None and self.workers < 1:
            raise QrelkitError(f"--workers must be 1 or more, got {self.workers}")
        if self.sample is None and self.seed is not None:
            raise QrelkitError("--seed goes with --sample N (the seed of the sample's order)")
        if self.time_pairs is not None and self.time_pairs < 0:
            raise QrelkitError(f"--time-pairs must be 0 or more, got {self.time_pairs}")
        if self.sample is not None and self.sample < 1:
            raise QrelkitError(f"--sample must be 1 or more, got {self.sample}")

    @property
    def overrides(self) -> list[str]:
        """The job overrides the flags stand for (`--set` first), validated with the job."""
        extra = [f"judge.options.mode={self.mode}"] if self.mode else []
        extra += [f"collection.on_duplicate={self.on_duplicate}"] if self.on_duplicate else []
        if self.sample is not None:
            extra += [f"sample.pairs={self.sample}"] + ([f"sample.seed={self.seed}"] if self.seed is not None else [])
        # --executor local runs a Ray job here: the job's Ray options are dropped, not an error
        extra += {None: [], "local": ["executor={kind: local}"], "ray": ["executor.kind=ray"]}[self.executor]
        extra += [f"executor.workers={self.workers}"] if self.workers is not None else []
        return [*self.sets, *extra]


# -- grading ------------------------------------------------------------------------------------------


def _numbers(flag: str, integer: bool = False) -> Any:
    """A reader of comma-separated ASCII numbers (`1_0` or non-ASCII digits are refused, as in files;
    a `nan` goes on to the grading specification, which says why it cannot stand, as for a job
    file); a list given from Python is kept as it is."""

    def read(text: Any) -> Any:
        if text is None or not isinstance(text, str):
            return None if text is None else list(text)
        from qrelkit.io.numbers import ascii_int, ascii_number

        try:
            return [ascii_int(v.strip(), flag) if integer else ascii_number(v.strip(), flag) for v in text.split(",") if v.strip()]
        except ValueError:
            raise QrelkitError(f"{flag}: expected comma-separated {'integers' if integer else 'numbers'}, got {text!r}") from None

    return read


def _score_map(text: Any) -> dict[str, int] | None:
    """`3:2,2:2,1:1,0:0` or `1-25:0,26-75:1,76-100:2` -> {"3": 2, ...} (a dict from Python as it is);
    the grading specification checks the keys."""
    if text is None or not isinstance(text, str):
        return None if text is None else {str(k): v for k, v in text.items()}
    from qrelkit.io.numbers import ascii_int

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


@dataclass(frozen=True)
class GradeRequest(Request):
    """`qrelkit grade`: grade a judge run's scores into qrels, stored as a qrels set. Quantile
    grading (Yang and Lin, LLM4Eval workshop at SIGIR 2024): below the median 0, to the 75th percentile
    1, above 2; per topic unless --global; tied scores share a grade (--ties). From Python
    (`qrelkit.grade`) nothing is stored, and the scores may also be given: (qid, docid, score)
    triples, a `Run`, or any form of qrels (their grades as scores)."""

    scores: Any = None
    judge_run: str | None = option("--judge-run", "Judge run: id, unique id prefix, or name.", None)
    method: str | None = option("--method", "quantile (default), thresholds, identity (scores are grades) or map.", None)
    quantiles: Any = option(
        "--quantiles", "Cut points as quantiles of the scores (default 0.5,0.75).", None, cli=str | None, parse=_numbers("--quantiles")
    )
    thresholds: Any = option(
        "--thresholds", "Fixed cut points, e.g. 0.3,0.5 (method thresholds).", None, cli=str | None, parse=_numbers("--thresholds")
    )
    labels: Any = option(
        "--labels",
        "Grades for the intervals between cut points (default 0,1,2); increasing for quantiles, any for thresholds "
        "(0,1,1 merges two intervals; 2,1,0 grades distances).",
        None,
        cli=str | None,
        parse=_numbers("--labels", integer=True),
    )
    per_topic: bool | None = option(
        "--per-topic",
        "Quantiles within each topic (the default, as in job files) or over all scores; thresholds, identity and map "
        "grade all scores alike (--global is what they do).",
        None,
        secondary="--global",
    )
    ties: str | None = option(
        "--ties", "Tied scores: midrank (default; a tie is never split) or at-or-above (seed 003: score >= the quantile value).", None
    )
    map: Any = option("--map", "Score (or LOW-HIGH range) to grade, e.g. 3:2,2:2,1:1,0:0.", None, cli=str | None, parse=_score_map)
    score_from: str | None = option("--score-from", "Which score: score (the judge's own, default), parsed, or expected.", None)
    name: str | None = option("--name", "Name of the qrels set (default graded-<judge run>).", None)
    replace: bool = option("--replace", "Grade again into a set graded before (never a loaded one).", False)
    store: bool = False  # the command line stores the graded set; the Python function returns it alone

    use_case = "qrelkit.commands.judging:run_grade"
    document = "qrelkit.commands.documents.judging:grading"
    positional = ("scores",)

    def check(self) -> None:
        if self.store and self.judge_run is None:
            raise QrelkitError("give the judge run to grade: --judge-run ID_OR_NAME")
        if (self.scores is None) == (self.judge_run is None):
            raise QrelkitError("give the scores to grade, or a judge run (--judge-run, with --db), not both")

    @property
    def spec(self) -> Any:
        """The grading flags as the same validated specification a job file gives, and so the same
        defaults (quantiles per topic, ties by mid-rank) and checks: a field named as an option of
        `qrelkit.jobs.grade.GradingSpec` is that option (its default None: not given), and an error
        names its flag."""
        from qrelkit.jobs.grade import GradingSpec, grading_spec

        flags = {
            field.name: "/".join(filter(None, (f.flag, f.secondary)))
            for field, f in declared(type(self))
            if field.name in GradingSpec.model_fields
        }
        options = {name: getattr(self, name) for name in flags if getattr(self, name) is not None}
        if self.method is None and ("thresholds" in options or "map" in options):  # --thresholds alone: fixed cut points
            options["method"] = "map" if "map" in options else "thresholds"
        return grading_spec(options, option_names=flags)


# -- moving judgments in and out -------------------------------------------------------------------


@dataclass(frozen=True)
class ImportScoresRequest(Request):
    """`qrelkit import scores`: store scores made by any tool (UMBRELA's output, a colleague's run) as a
    judge run of origin `imported`, so `grade`, `agree` and `report` work on it."""

    file: Path = option("FILE", "`qid docid score` lines (TSV or spaces), or a TREC qrels file.", parse=Path, argument=True)
    name: str = option("--name", "Name of the imported judge run (use it as --judge-run NAME).")
    replace: bool = option("--replace", "Replace an earlier import of the same name from another file.", False)

    use_case = "qrelkit.commands.judging:run_import"
    document = "qrelkit.commands.documents.data:imported"


@dataclass(frozen=True)
class ExportQrelsRequest(Request):
    """`qrelkit export qrels`: write a qrels set (graded from a judge run, or loaded) as a TREC qrels file."""

    output: Path = option("OUTPUT", "Where to write TREC qrels.", parse=Path, argument=True)
    judge_run: str | None = option("--judge-run", "Export the qrels set this judge run's job graded (or its only graded set).", None)
    name: str | None = option("--name", "Or: the qrels set with this name.", None)
    force: bool = force_option()

    use_case = "qrelkit.commands.judging:run_export_qrels"
    document = "qrelkit.commands.documents.data:exported_qrels"

    def check(self) -> None:
        if (self.judge_run is None) == (self.name is None):
            raise QrelkitError("name what to export: --judge-run ID or --name QRELS_SET")


@dataclass(frozen=True)
class ExportJudgmentsRequest(Request):
    """`qrelkit export judgments`: write judgments with every stored field (raw output, score, parsed and
    expected grade, status, error, tokens, latency, cost, attempts, model id, fingerprint, time; the
    run's judge and template)."""

    output: Path = option(
        "OUTPUT", "Where to write: OUT.parquet, OUT.csv or OUT.jsonl (the suffix chooses the format).", parse=Path, argument=True
    )
    judge_run: str | None = option("--judge-run", "One judge run (id, unique prefix or name); default: all.", None)
    force: bool = force_option()

    use_case = "qrelkit.commands.judging:run_export_judgments"
    document = "qrelkit.commands.documents.data:exported_judgments"


@dataclass(frozen=True)
class JudgmentsRequest(Request):
    """`qrelkit.judgments(db, judge_run)`: a judge run's judgments (its id, a unique prefix or its name;
    every run's when None) as a table: ``.to_pandas()``, ``.to_arrow()``, ``.to_dict()``."""

    judge_run: str | None = None

    use_case = "qrelkit.commands.judgments:run"
    positional = ("db", "judge_run")


# -- templates, judges, batches, the demo -------------------------------------------------------------


@dataclass(frozen=True)
class PromptsListRequest(Request):
    """`qrelkit prompts list`: list the built-in templates (ids usable as `template:` in a job)."""

    use_case = "qrelkit.commands.judging:run_prompts_list"
    document = "qrelkit.commands.documents.judging:templates"
    uses_db = False


@dataclass(frozen=True)
class PromptsShowRequest(Request):
    """`qrelkit prompts show`: render a template for one (topic, document) pair exactly as a model
    would see it; without --topic/--doc, the template's parts and identity."""

    template: str = option("TEMPLATE", "A template YAML file or built-in id.", argument=True)
    topic: str | None = option("--topic", "qid of a topic in --db to render with.", None)
    doc: str | None = option("--doc", "docid of a document in --db to render with.", None)

    use_case = "qrelkit.commands.judging:run_prompts_show"
    document = "qrelkit.commands.documents.judging:prompt"

    def check(self) -> None:
        if (self.topic is None) != (self.doc is None):
            raise QrelkitError("give both --topic QID and --doc DOCID (or neither)")


@dataclass(frozen=True)
class JudgesRequest(Request):
    """`qrelkit judges`: list the registered judges and their options (entry-point group `qrelkit.judges`)."""

    name: str | None = option("NAME", "One judge, with its options' allowed values.", None, argument=True)

    use_case = "qrelkit.commands.judging:run_judges"
    document = "qrelkit.commands.documents.judging:judges"
    uses_db = False


@dataclass(frozen=True)
class DemoRequest(Request):
    """`qrelkit demo`: judge the bundled toy collection with MiniLM, grade, and compare system rankings
    with the human qrels."""

    out: Path = option("--out", "Folder for the demo's database and qrels.", Path("demo-out"), parse=Path)

    use_case = "qrelkit.commands.demo:run"
    document = "qrelkit.commands.documents.judging:demo"
    uses_db = False


@dataclass(frozen=True)
class EndpointRequest(Request):
    """Where `qrelkit batches` sends its requests, and with which key: the command line's endpoint and
    key variable (checked against where each batch went), never the database's, unless
    --use-stored-endpoint trusts it."""

    base_url: str | None = option(
        "--base-url", "The endpoint to ask (default: the openai judge's, https://api.openai.com/v1); never the database's.", None
    )
    api_key_env: str = option(
        "--api-key-env", "The environment variable holding the key sent there (never the database's).", "OPENAI_API_KEY"
    )
    use_stored_endpoint: bool = option(
        "--use-stored-endpoint", "Send to the endpoint, with the key variable, stored with each batch (trust this database).", False
    )

    @property
    def endpoint(self) -> Any:
        """The command line's endpoint (a `qrelkit.judges.batch_api.BatchEndpoint`); None: each batch's own."""
        from qrelkit.judges.batch_api import BatchEndpoint

        return None if self.use_stored_endpoint else BatchEndpoint.remote(self.base_url, self.api_key_env)


@dataclass(frozen=True)
class BatchesRequest(EndpointRequest):
    """`qrelkit batches [list]`: check every open Batch API submission of --db and collect the finished
    ones into judgments, then list them all."""

    check_open: bool = option("--check", "Ask the API about open batches and collect finished ones.", True, secondary="--no-check")

    use_case = "qrelkit.commands.batches:run"
    document = "qrelkit.commands.documents.judging:batches"


@dataclass(frozen=True)
class BatchCancelRequest(EndpointRequest):
    """`qrelkit batches cancel`: cancel a running batch. Its answered requests are kept when it is
    collected; the rest go back to pending (the next run of the job sends them again)."""

    batch_id: str = option("BATCH_ID", "The batch id (batch_...) or qrelkit's submission id.", argument=True)

    use_case = "qrelkit.commands.batches:run_cancel"
    document = "qrelkit.commands.documents.judging:cancelled"
