"""What a judging job will do, before any model runs: the judge, its configuration and identity,
the collection loaded, the pool (or a sample of it), the resume state (which pairs are done, failed
or pending), and every check that can fail a job before its first call rather than after it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io import Document, Topic, list_run_files, sha256_text
from qrelkit.jobs.grade import template_grade_check
from qrelkit.jobs.pool import depth_pool, pairs_file_pool, qrels_pool, sample_pool
from qrelkit.jobs.spec import JobError, JobSpec, SampleSpec
from qrelkit.judges import JudgeConfig, JudgeContext, Pair, create_judge, judge_class, make_config
from qrelkit.prompts import PromptTemplate, load_template
from qrelkit.storage import LoadResult, Store
from qrelkit.storage.batches import open_batch_pairs
from qrelkit.storage.judgments import JudgeRunInfo
from qrelkit.storage.pools import pool_state


def judge_run_id_for(judge: str, config: dict[str, Any], template: PromptTemplate | None, model_id: str) -> str:
    """Identity of a judge run: any change of judge, option, template content or model is a new run."""
    identity = {
        "judge": judge,
        "config": config,
        "template": template.content_hash if template else None,
        "model": model_id,
    }
    return sha256_text(json.dumps(identity, sort_keys=True))[:16]


def identity_options(config_class: Any, config_data: dict[str, Any]) -> dict[str, Any]:
    """The options that can change a judgment. Fields marked `json_schema_extra={"identity": False}`
    (concurrency, rate limits, timeouts, prices, batch sizes) are left out, so tuning them resumes
    the same judge run instead of starting a new one."""

    def counts(name: str) -> bool:
        extra = config_class.model_fields[name].json_schema_extra
        return not (isinstance(extra, dict) and extra.get("identity") is False)

    return {name: value for name, value in config_data.items() if counts(name)}


def collection_files(spec: JobSpec, skipped: list[tuple[Path, str]] | None = None) -> list[tuple[str, Path, str | None]]:
    """(kind, file, name or None for the file's own) of every file the job loads, in load order."""
    c = spec.collection
    files: list[tuple[str, Path, str | None]] = []
    if c.topics:
        files.append(("topics", c.topics, None))
    if c.documents:
        files.append(("documents", c.documents, None))
    files += [("runs", path, None) for path in list_run_files(list(c.runs), [] if skipped is None else skipped)]
    files += [("qrels", path, name) for name, path in c.qrels.items()]
    return files


def load_collection(store: Store, spec: JobSpec) -> list[LoadResult]:
    """Load the job's files into its database (idempotent: unchanged files are skipped), all in one
    transaction: a bad file anywhere leaves the database as it was. Files of a runs folder that are
    evidently not runs come back as `skipped` results."""
    c = spec.collection
    skipped: list[tuple[Path, str]] = []
    results: list[LoadResult] = []
    files = collection_files(spec, skipped)
    with store.transaction():
        for kind, path, name in files:
            if kind == "topics":
                results.append(store.load_topics(path))
            elif kind == "documents":
                results.append(store.load_documents(path, image_root=c.image_root))
            elif kind == "qrels":
                results.append(store.load_qrels(path, name=name, on_duplicate=c.on_duplicate))
        runs = [path for kind, path, _ in files if kind == "runs"]
        if runs:
            results += store.load_runs(runs, on_duplicate=c.on_duplicate)
    return results + [LoadResult("runs", str(path), 0, "skipped", reason) for path, reason in skipped]


def collection_unchanged(store: Store, spec: JobSpec) -> bool:
    """Whether every file of the job is already in ``store`` as it is now (read-only: nothing to load)."""
    return all(store.load_status(kind, path, name) == "unchanged" for kind, path, name in collection_files(spec))


def build_pool(store: Store, spec: JobSpec) -> list[tuple[str, str]]:
    pool = spec.pool
    if pool.depth is not None:
        return depth_pool(store, pool.depth, pool.runs)
    if pool.pairs is not None:
        return pairs_file_pool(pool.pairs)
    return qrels_pool(store, pool.qrels or "")


@dataclass(frozen=True)
class JudgeFactory:
    """Everything needed to build the job's judge, in any process (a Ray worker builds its own)."""

    name: str
    options: dict[str, Any]
    template: PromptTemplate | None
    source: str = ""
    allow_import: bool = False  # `module:Class` judges: only when the job or command allows them

    def create(self, context: JudgeContext | None = None) -> Any:
        return create_judge(self.name, self.options, self.template, context, source=self.source, allow_import=self.allow_import)


@dataclass
class JobPlan:
    spec: JobSpec
    factory: JudgeFactory
    judge_class: type
    config: JudgeConfig
    model_id: str
    judge_run_id: str
    loads: list[LoadResult] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # the pool, or the sample of it the job judges
    sample: dict[str, Any] | None = None  # the sample asked for: pairs, seed, topics, pool_pairs, pool_topics
    checks: list[str] = field(default_factory=list)  # what was checked before judging (a dry run lists it)
    states: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # pool pairs judged before: (status, attempts)
    already_ok: int = 0  # pool pairs with an `ok` judgment before this run
    already_failed: int = 0  # pool pairs with a failed one
    todo: list[tuple[str, str]] = field(default_factory=list)
    in_batches: set[tuple[str, str]] = field(default_factory=set)  # sent in a Batch API batch not yet collected
    topics: dict[str, Topic] = field(default_factory=dict)
    documents: dict[str, Document] = field(default_factory=dict)
    content_hashes: dict[str, str] = field(default_factory=dict)  # docid -> the content judged now

    def earlier_attempts(self, key: tuple[str, str]) -> int:
        return self.states.get(key, ("", 0))[1]

    def info(self) -> JudgeRunInfo:
        template = self.factory.template
        return JudgeRunInfo(
            self.judge_run_id,
            self.factory.name,
            self.config.model_dump(mode="json"),
            template.id if template else None,
            template.content_hash if template else None,
            template.content() if template else None,
            self.model_id,
            self.sample if self.sample and self.sample["pairs"] < self.sample["pool_pairs"] else None,
        )

    def pending_pairs(self) -> tuple[list[Pair], list[tuple[str, str, str]]]:
        """The pairs to judge that the collection holds, and (qid, docid, what is missing) for the rest."""
        valid, missing = [], []
        for qid, docid in self.todo:
            if qid not in self.topics:
                missing.append((qid, docid, f"topic {qid!r}"))
            elif docid not in self.documents:
                missing.append((qid, docid, f"document {docid!r}"))
            else:
                valid.append(Pair(self.topics[qid], self.documents[docid]))
        return valid, missing


def resolve_judge(spec: JobSpec) -> tuple[JudgeFactory, type, JudgeConfig, str, str]:
    """(factory, judge class, validated config, model id, judge run id): all known without loading a
    model. A grading that cannot grade the template's grades is refused here, before any judging."""
    source = str(spec.source or "job")
    template = load_template(spec.template) if spec.template else None
    cls = judge_class(spec.judge.name, allow_import=spec.allow_import)
    config = make_config(spec.judge.name, spec.judge.options, source=source, allow_import=spec.allow_import)
    template_check(spec, template, cls, config)
    model_id = cls.model_id_for(config)
    identity = identity_options(cls.Config, config.model_dump(mode="json"))
    run_id = judge_run_id_for(spec.judge.name, identity, template, model_id)
    return JudgeFactory(spec.judge.name, spec.judge.options, template, source, spec.allow_import), cls, config, model_id, run_id


def template_check(spec: JobSpec, template: PromptTemplate | None, cls: type, config: JudgeConfig) -> str | None:
    """The grading against the grades the template asks a generative judge for (its parsed grade or
    the expected grade Σ g·p(g), whichever the grading reads); raises when grading would fail."""
    if spec.grading is None or template is None or not getattr(cls, "needs_template", True):
        return None  # a judge that scores by itself (a cosine, CLIPScore): its scores are not the template's grades
    column = spec.grading.score_from if spec.grading.score_from != "score" else getattr(config, "score", "parsed")
    try:
        return template_grade_check(spec.grading, template.grade_token_list, column, template.id)
    except QrelkitError as exc:
        raise JobError(f"{spec.source or 'job'}: grading: {exc}") from None


def choose_pairs(pool: list[tuple[str, str]], sample: SampleSpec | None) -> tuple[list[tuple[str, str]], dict[str, Any] | None]:
    """The pairs a job judges: its pool, or the sample of it the job asks for, with what the sample is."""
    if sample is None:
        return pool, None
    chosen = sample_pool(pool, sample.pairs, sample.seed)
    described = {
        "pairs": len(chosen),
        "asked": sample.pairs,
        "seed": sample.seed,
        "topics": len({qid for qid, _ in chosen}),
        "pool_pairs": len(pool),
        "pool_topics": len({qid for qid, _ in pool}),
    }
    return chosen, described


def grading_target_check(store: Store, spec: JobSpec, judge_run_id: str) -> str | None:
    """Where the job's grading writes, checked against the store: a loaded set is never graded into,
    and a set graded from another judge run is not replaced (both would stop the job after judging)."""
    if spec.grading is None:
        return None
    source = spec.source or "job"
    name = spec.grading.name or f"graded-{judge_run_id}"
    origin = store.qrels_origin(name)
    if origin is None:
        return f"grading.name {name!r}: a new qrels set"
    kind, graded_from, path = origin
    if kind != "graded":
        raise JobError(
            f"{source}: grading.name: {name!r} holds qrels loaded from {path}; grading into it would overwrite them: "
            "choose another grading.name"
        )
    if graded_from != judge_run_id:
        raise JobError(
            f"{source}: grading.name: {name!r} holds qrels graded from judge run {graded_from}, not from this job's judge run "
            f"{judge_run_id}; grading would be refused after judging: choose another grading.name (e.g. --set grading.name=...)"
        )
    return f"grading.name {name!r}: graded from this judge run before; grading replaces it"


def plan_job(store: Store, spec: JobSpec, *, limit: int | None = None, retry_failed: bool = False) -> JobPlan:
    """Load the collection, pool the pairs (or sample them), check what can be checked before
    judging, and find what is left to judge."""
    if limit is not None and limit < 0:
        raise QrelkitError(f"--limit must be 0 or more, got {limit}")
    spec.check_paths()
    factory, cls, config, model_id, run_id = resolve_judge(spec)
    plan = JobPlan(spec, factory, cls, config, model_id, run_id)
    plan.loads = load_collection(store, spec)
    pool = build_pool(store, spec)
    source = str(spec.source or "job")
    if not pool:
        raise JobError(f"{source}: the pool is empty")
    plan.pairs, plan.sample = choose_pairs(pool, spec.sample)
    plan.checks = [f"database {spec.database.resolve()}: can be written"]
    plan.checks += [c for c in (grading_target_check(store, spec, run_id), template_check(spec, factory.template, cls, config)) if c]
    plan.topics = {t.qid: t for t in store.topics()}
    plan.documents = store.documents()
    if factory.template is not None:
        pooled = sorted({q for q, _ in plan.pairs})
        factory.template.check_topics([plan.topics[q] for q in pooled if q in plan.topics], source=source)
    plan.content_hashes = store.document_hashes()
    store.retire_stale_judgments()  # a document changed some other way than a load: judge it again
    # A pair in an open batch is already paid for: neither route sends it again until the batch is collected.
    state = pool_state(store, run_id, plan.pairs, retry_failed=retry_failed)
    plan.states, plan.already_ok, plan.already_failed, plan.todo = state.judged, state.ok, state.failed, state.todo
    plan.in_batches = open_batch_pairs(store, run_id)
    if limit is not None:
        plan.todo = plan.todo[:limit]
    return plan
