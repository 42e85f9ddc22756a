"""The resumable batch runner: the only place judgments are written.

Re-running a job judges only pairs with no judgment yet (and failed ones when asked);
judgments are committed every few seconds, so a kill loses at most the unflushed batch
and never leaves a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from qrelkit.errors import QrelkitError
from qrelkit.jobs.pool import depth_pool, pairs_file_pool, qrels_pool
from qrelkit.jobs.spec import JobError, JobSpec
from qrelkit.judges import FatalJudgeError, JudgeContext, Judgment, Pair, create_judge, judge_class, make_config
from qrelkit.prompts import PromptTemplate, TemplateError, load_template
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, judgment_states, write_judgments


@dataclass
class JobReport:
    judge_run_id: str
    pairs: int
    already_ok: int
    already_failed: int
    to_judge: int
    judged: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False
    seconds: float = 0.0
    estimate: dict[str, Any] | None = None  # a judge's cost estimate for the pending pairs (dry run)


def judge_run_id_for(judge: str, config: dict[str, Any], template: PromptTemplate | None, model_id: str) -> str:
    """Identity of a judge run: any change of judge, option, template content or model is a new run."""
    identity = {
        "judge": judge,
        "config": config,
        "template": template.content_hash if template else None,
        "model": model_id,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def identity_options(config_class: Any, config_data: dict[str, Any]) -> dict[str, Any]:
    """The options that can change a judgment. Fields marked `json_schema_extra={"identity": False}`
    (concurrency, rate limits, timeouts, prices, batch sizes) are left out, so tuning them resumes
    the same judge run instead of starting a new one."""

    def counts(name: str) -> bool:
        extra = config_class.model_fields[name].json_schema_extra
        return not (isinstance(extra, dict) and extra.get("identity") is False)

    return {name: value for name, value in config_data.items() if counts(name)}


def load_collection(store: Store, spec: JobSpec, console: Console | None = None) -> None:
    """Load the job's files into its database (idempotent: unchanged files are skipped)."""
    from qrelkit.io import list_run_files

    c = spec.collection
    results = []
    if c.topics:
        results.append(store.load_topics(c.topics))
    if c.documents:
        results.append(store.load_documents(c.documents, image_root=c.image_root))
    for path in list_run_files(list(c.runs)):
        results.append(store.load_run(path))
    for name, path in c.qrels.items():
        results.append(store.load_qrels(path, name=name))
    if console:
        loaded = [r for r in results if r.status != "unchanged"]
        for r in loaded:
            console.print(f"{r.status} {r.kind} {r.name!r} ({r.rows} rows)")


def build_pool(store: Store, spec: JobSpec) -> list[tuple[str, str]]:
    pool = spec.pool
    if pool.depth is not None:
        return depth_pool(store, pool.depth, pool.runs)
    if pool.pairs is not None:
        return pairs_file_pool(pool.pairs)
    return qrels_pool(store, pool.qrels or "")


class StoreEmbeddingCache:
    """Gives judges cached embeddings; the runner's store does the writing."""

    def __init__(self, store: Store):
        self.store = store

    def vectors(self, embedder: Any, item_kind: str, items: dict[str, str], content_hashes: dict[str, str] | None = None):
        from qrelkit.embed import embed_with_cache

        return embed_with_cache(self.store, embedder, item_kind, items, content_hashes=content_hashes)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler stopping the job) ends it like Ctrl-C: flush, then stop."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failure(pair: Pair, exc: Exception) -> Judgment:
    status = "input_error" if isinstance(exc, (TemplateError, ValueError, OSError)) else "model_error"
    return Judgment.failed(pair, status, f"{type(exc).__name__}: {exc}")


def _judge_safely(judge: Any, batch: Sequence[Pair]) -> list[Judgment]:
    """A batch that raises is judged again pair by pair, so one bad pair fails alone."""
    try:
        results = judge.judge(batch)
    except (KeyboardInterrupt, FatalJudgeError):
        raise
    except Exception as exc:  # the backend failed; record it on the pair(s) and go on
        if len(batch) == 1:
            return [_failure(batch[0], exc)]
        return [j for pair in batch for j in _judge_safely(judge, [pair])]
    if len(results) != len(batch):
        raise QrelkitError(f"judge {judge.name!r} returned {len(results)} judgments for {len(batch)} pairs")
    return results


def run_job(
    spec: JobSpec,
    *,
    limit: int | None = None,
    dry_run: bool = False,
    retry_failed: bool = False,
    console: Console | None = None,
    progress: bool = True,
    on_flush: Callable[[int], None] | None = None,
) -> JobReport:
    console = console or Console(stderr=True)
    source = str(spec.source or "job")
    template = load_template(spec.template) if spec.template else None
    cls = judge_class(spec.judge.name)
    config = make_config(spec.judge.name, spec.judge.options, source=source)
    model_id = cls.model_id_for(config)
    config_data = config.model_dump(mode="json")
    run_id = judge_run_id_for(spec.judge.name, identity_options(cls.Config, config_data), template, model_id)

    with Store(spec.database) as store:
        load_collection(store, spec, console)
        pairs = build_pool(store, spec)
        if not pairs:
            raise JobError(f"{source}: the pool is empty")
        topics = {t.qid: t for t in store.topics()}
        documents = store.documents()
        if template is not None:
            template.check_topics([topics[q] for q in sorted({q for q, _ in pairs}) if q in topics], source=source)
        states = judgment_states(store, run_id)
        done_ok = sum(1 for p in pairs if states.get(p, ("",))[0] == "ok")
        failed = sum(1 for p in pairs if p in states and states[p][0] != "ok")
        todo = [p for p in pairs if p not in states or (retry_failed and states[p][0] != "ok")]
        if limit is not None:
            todo = todo[:limit]
        report = JobReport(run_id, len(pairs), done_ok, failed, len(todo))
        if dry_run and todo and hasattr(cls, "estimate"):
            # e.g. tokens and cost of an API judge, computed from rendered prompts without a request
            report.estimate = cls.estimate(
                config, template, [Pair(topics[q], documents[d]) for q, d in todo if q in topics and d in documents]
            )
        if dry_run or not todo:
            return report

        ensure_judge_run(
            store,
            JudgeRunInfo(
                run_id,
                spec.judge.name,
                config_data,
                template.id if template else None,
                template.content_hash if template else None,
                template.content() if template else None,
                model_id,
            ),
        )
        judge = create_judge(spec.judge.name, spec.judge.options, template, JudgeContext(StoreEmbeddingCache(store)), source=source)
        started = time.perf_counter()
        pending: list[Judgment] = []

        def flush() -> None:
            write_judgments(store, run_id, pending)
            report.judged += len(pending)
            for j in pending:
                report.statuses[j.status] = report.statuses.get(j.status, 0) + 1
            if on_flush:
                on_flush(report.judged)
            pending.clear()

        invalid, valid = [], []
        for qid, docid in todo:
            if qid not in topics or docid not in documents:
                missing = f"topic {qid!r}" if qid not in topics else f"document {docid!r}"
                invalid.append(
                    Judgment(
                        qid,
                        docid,
                        "input_error",
                        error=f"{missing} is not in the collection ({spec.database})",
                        attempts=states.get((qid, docid), ("", 0))[1] + 1,
                    )
                )
            else:
                valid.append(Pair(topics[qid], documents[docid]))
        pending.extend(invalid)
        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} pairs/s"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        ]
        try:
            with _sigterm_as_interrupt(), Progress(*columns, console=console, disable=not progress) as bar:
                task = bar.add_task(f"judging with {spec.judge.name}", total=len(todo), completed=len(invalid), rate="-")
                last_flush = time.monotonic()
                for start in range(0, len(valid), spec.batch_size):
                    batch = valid[start : start + spec.batch_size]
                    for judgment in _judge_safely(judge, batch):
                        judgment.attempts += states.get((judgment.qid, judgment.docid), ("", 0))[1]
                        pending.append(judgment)
                    done = start + len(batch)
                    elapsed = time.perf_counter() - started
                    bar.update(task, completed=len(invalid) + done, rate=f"{done / elapsed:.1f}" if elapsed else "-")
                    if time.monotonic() - last_flush >= spec.flush_seconds:
                        flush()
                        last_flush = time.monotonic()
                flush()
        except KeyboardInterrupt:
            flush()
            report.interrupted = True
        except FatalJudgeError:
            flush()
            raise
        finally:
            judge.close()
            report.seconds = time.perf_counter() - started
    return report
