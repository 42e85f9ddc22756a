"""What a judging job will do, before any model runs: the judge, its configuration and identity,
the collection loaded, the pool (or a sample of it), the resume state (which pairs are done, failed
or pending), and every check that can fail a job before its first call rather than after it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io import Topic, list_run_files, sha256_text
from qrelkit.jobs.grade import template_grade_check
from qrelkit.jobs.pool import depth_pool_query, pairs_file_blocks, qrels_pool_query, sample_pool
from qrelkit.jobs.spec import JobError, JobSpec, SampleSpec
from qrelkit.judges import JudgeConfig, JudgeFactory
from qrelkit.prompts import PromptTemplate, load_template
from qrelkit.storage import LoadResult, Store
from qrelkit.storage.batch_api import open_batch_count
from qrelkit.storage.judgments import JudgeRunInfo, judged_pairs, stored_sample
from qrelkit.storage.pools import PendingPairs, Pool, listed_pool, pool_counts, pool_pairs, pooled_qids


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
    the same judge run instead of starting a new one. Fields marked `{"identity": "unless-default"}`
    (options added later whose default keeps the earlier behaviour) count only when set, so adding
    one leaves every earlier judge run's identity as it was."""

    def counts(name: str, value: Any) -> bool:
        field = config_class.model_fields[name]
        extra = field.json_schema_extra
        marked = extra.get("identity") if isinstance(extra, dict) else None
        return marked is not False and not (marked == "unless-default" and value == field.default)

    return {name: value for name, value in config_data.items() if counts(name, value)}


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


def build_pool(store: Store, spec: JobSpec) -> Pool:
    """The job's pool as a query of its database (a pairs file is staged there first)."""
    pool = spec.pool
    if pool.depth is not None:
        return depth_pool_query(store, pool.depth, pool.runs)
    if pool.pairs is not None:
        return listed_pool(store, pairs_file_blocks(pool.pairs))
    return qrels_pool_query(store, pool.qrels or "")


class _WithJudge:
    """The judge class and validated config of a resolved judge's factory."""

    factory: JudgeFactory

    @property
    def judge_class(self) -> type:
        return self.factory.judge_class

    @property
    def config(self) -> JudgeConfig:
        return self.factory.config


@dataclass
class JobPlan(_WithJudge):
    """What a job will judge. The pool stays in the database: the plan holds its counts, and
    `pending` reads the pairs to judge back in blocks."""

    spec: JobSpec
    factory: JudgeFactory
    model_id: str
    judge_run_id: str
    loads: list[LoadResult] = field(default_factory=list)
    pool: Pool = field(default_factory=lambda: Pool(""))  # the pool, or the sample of it the job judges
    pool_size: int = 0  # pairs in it
    sample: dict[str, Any] | None = None  # the sample asked for: pairs, seed, topics, pool_pairs, pool_topics
    checks: list[str] = field(default_factory=list)  # what was checked before judging (a dry run lists it)
    already_ok: int = 0  # pool pairs with an `ok` judgment before this run
    already_failed: int = 0  # pool pairs with a failed one
    to_judge: int = 0  # pending pool pairs this run judges (--limit applied)
    in_batches: int = 0  # pairs sent in a Batch API batch not yet collected
    topics: dict[str, Topic] = field(default_factory=dict)
    limit: int | None = None
    retry_failed: bool = False
    probe: dict[str, Any] | None = None  # a probe's run (docs/probes.md): with a perturbation, it judges the copies stored for it

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
            self.sample if self.sample and self.sample["pairs"] < (self.sample["pool_pairs"] or 0) else None,
            probe=self.probe,
        )

    def pending(self, store: Store, *, limit: int | None = None) -> PendingPairs:
        """The pairs to judge now, taken from the database as it is (see `PendingPairs`), at most
        ``limit`` (the plan's own --limit when None)."""
        return PendingPairs(
            store,
            self.pool,
            self.judge_run_id,
            retry_failed=self.retry_failed,
            limit=self.limit if limit is None else limit,
            perturbed=self.probe is not None and self.probe.get("perturbation") is not None,
        )


@dataclass(frozen=True)
class ResolvedJudge(_WithJudge):
    """A job's judge resolved once, with no model loaded: its factory (class, validated config,
    template), its model id, its judge run id, and what the check of the grading against the
    template's grades found (a note for a dry run; a grading that cannot grade them is refused
    when the judge is resolved, before any judging)."""

    factory: JudgeFactory
    model_id: str
    judge_run_id: str
    template_note: str | None = None


def resolve_judge(spec: JobSpec) -> ResolvedJudge:
    """The job's judge, resolved once for the whole job (every route and executor builds from it)."""
    source = str(spec.source or "job")
    template = load_template(spec.template) if spec.template else None
    factory = JudgeFactory.resolve(spec.judge.name, spec.judge.options, template, source=source, allow_import=spec.allow_import)
    cls: Any = factory.judge_class
    if template is None and getattr(cls, "needs_template", True):  # before any route uses it: a dry run's estimate renders prompts too
        raise JobError(f"{source}: judge {spec.judge.name!r} needs a prompt template (set `template:` in the job)")
    config = factory.config
    note = template_check(spec, template, cls, config)
    model_id = cls.model_id_for(config)
    identity = identity_options(cls.Config, config.model_dump(mode="json"))
    return ResolvedJudge(factory, model_id, judge_run_id_for(spec.judge.name, identity, template, model_id), note)


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


def choose_pairs(store: Store, pool: Pool, sample: SampleSpec | None) -> tuple[Pool, dict[str, Any] | None]:
    """The pairs a job judges: its pool, or the sample of it the job asks for (staged as a pool of
    listed pairs, which the pending query reads as it reads any pool), with what the sample is. A
    sample's order is drawn in Python (`sample_order`'s hashes), so its pool's pairs are read once."""
    if sample is None:
        return pool, None
    pairs = pool_pairs(store, pool)
    if not pairs:
        return pool, None  # an empty pool is refused by the caller
    chosen = sample_pool(pairs, sample.pairs, sample.seed)
    described = {
        "pairs": len(chosen),
        "asked": sample.pairs,
        "seed": sample.seed,
        "topics": len({qid for qid, _ in chosen}),
        "pool_pairs": len(pairs),
        "pool_topics": len({qid for qid, _ in pairs}),
    }
    return listed_pool(store, [chosen]), described


def sample_check(store: Store, spec: JobSpec, judge_run_id: str, sample: dict[str, Any] | None) -> None:
    """A judge run covers one sample: a run with another seed (or of another pool) would judge a second
    sample into it, and the run would then be neither while its record named one of them. Refused
    before any pair is judged; a larger sample of the same seed extends the same one."""
    exists, earlier = stored_sample(store, judge_run_id)
    if not exists or sample is None or earlier is None or sample["pairs"] >= sample["pool_pairs"]:
        return
    if (earlier.get("seed"), earlier.get("pool_pairs")) == (sample["seed"], sample["pool_pairs"]) or not judged_pairs(store, judge_run_id):
        return
    raise JobError(
        f"{spec.source or 'job'}: judge run {judge_run_id} holds a sample of {earlier.get('pairs')} pairs drawn with seed "
        f"{earlier.get('seed')} from a pool of {earlier.get('pool_pairs')} pairs; --sample {sample['asked']} --seed {sample['seed']} "
        f"(a pool of {sample['pool_pairs']}) would judge another sample into it, and it would then be neither: keep --seed "
        f"{earlier.get('seed')} (a larger --sample extends that sample), judge the whole pool, or judge into another database"
    )


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


def plan_job(
    store: Store,
    spec: JobSpec,
    *,
    limit: int | None = None,
    retry_failed: bool = False,
    judge: ResolvedJudge | None = None,
    pairs: list[tuple[str, str]] | None = None,
    probe: dict[str, Any] | None = None,
    pairs_sample: dict[str, Any] | None = None,
) -> JobPlan:
    """Load the collection, pool the pairs (or sample them), check what can be checked before
    judging, and count what is done and what is left to judge. The caller has checked the job's
    files (`JobSpec.check_paths`) before opening ``store``, and may give the judge it resolved.
    ``pairs``: judge these instead of the job's pool (a probe's sample, described by
    ``pairs_sample`` as `choose_pairs` describes a sample); ``probe``: the run is a probe's (its judge
    run id is the caller's, in ``judge``), judging the perturbed copies stored for it."""
    if limit is not None and limit < 0:
        raise QrelkitError(f"--limit must be 0 or more, got {limit}")
    judge = judge or resolve_judge(spec)
    factory, run_id = judge.factory, judge.judge_run_id
    plan = JobPlan(spec, factory, judge.model_id, run_id, limit=limit, retry_failed=retry_failed, probe=probe)
    plan.loads = load_collection(store, spec)
    source = str(spec.source or "job")
    if pairs is not None:
        plan.pool, plan.sample = listed_pool(store, [pairs]), pairs_sample
    else:
        plan.pool, plan.sample = choose_pairs(store, build_pool(store, spec), spec.sample)
        sample_check(store, spec, run_id, plan.sample)
    pooled = pooled_qids(store, plan.pool)
    if not pooled:
        raise JobError(f"{source}: the pool is empty")
    plan.checks = [f"database {spec.database.resolve()}: can be written"]
    plan.checks += [c for c in (grading_target_check(store, spec, run_id), judge.template_note) if c]
    plan.topics = {t.qid: t for t in store.topics()}
    if factory.template is not None:
        factory.template.check_topics([plan.topics[q] for q in pooled if q in plan.topics], source=source)
    store.retire_stale_judgments()  # a document changed some other way than a load: judge it again
    # A pair in an open batch is already paid for: neither route sends it again until the batch is collected.
    counts = pool_counts(store, plan.pool, run_id, retry_failed=retry_failed)
    plan.pool_size, plan.already_ok, plan.already_failed = counts.pairs, counts.ok, counts.failed
    plan.to_judge = counts.pending if limit is None else min(counts.pending, limit)
    plan.in_batches = open_batch_count(store, run_id)
    return plan
