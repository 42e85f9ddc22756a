"""Judging on Ray: actors that each build the judge once and pull shards of the pending pairs.

The driver (the process that runs `qrelkit judge`) stays the only writer: a worker returns the
judgments of a shard, and the embeddings it encoded, and the runner writes them as they arrive.
Shards are pulled, not split up front, so a slow worker does not hold the job: each worker has at
most `IN_FLIGHT` shards queued, and gets the next one when it hands one back. A worker that dies
(SIGKILL, out of memory, a lost node) has its shards judged again by the others and is replaced;
a shard whose worker died `SHARD_TRIES` times is recorded as failed, so one pair that kills its
worker cannot stop the job. A fatal judge error (a rejected key, a missing model) in any worker
stops every worker and the job.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from qrelkit.embed.cache import CollectingVectorStore, ComputedEmbeddings
from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.jobs.calls import StoreEmbeddingCache, judge_batch_safely
from qrelkit.jobs.ray_reaper import reap_on_exit
from qrelkit.jobs.spec import ExecutorSpec, JobError
from qrelkit.judges import JudgeContext, JudgeFactory, Judgment, Pair
from qrelkit.storage.store import first_line

IN_FLIGHT = 2  # shards queued on a worker: one being judged, one waiting, so no worker idles on a round trip
SHARD_TRIES = 3  # a shard whose worker died this often is recorded as failed (a pair that kills its worker)
WAIT_SECONDS = 0.5  # the driver wakes at least this often, so Ctrl-C and SIGTERM stop it promptly


class RayWorkersFailed(FatalJobError):
    """Ray workers keep dying without judging anything (the CLI exits 3)."""


def import_ray() -> Any:
    try:
        import ray  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        raise QrelkitError(
            "the ray executor (`executor: {kind: ray}`, --executor ray) needs the package 'ray', which is not installed; "
            "install it with: pip install 'qrelkit[ray]'"
        ) from None
    return ray


# -- the worker side -------------------------------------------------------------------------------


@dataclass
class WorkerInfo:
    pid: int
    host: str
    error: BaseException | None = None  # building or checking the judge failed: the driver raises it


@dataclass
class ShardResult:
    shard: int
    judgments: list[Judgment]
    embeddings: list[ComputedEmbeddings] = field(default_factory=list)
    error: BaseException | None = None  # what the local runner would let through (FatalJudgeError, ...)


def portable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (most do), else a FatalJobError with its text,
    so the driver can raise what the worker raised."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return FatalJobError(f"{type(exc).__name__}: {exc}")


class JudgeWorker:
    """A Ray actor: builds the job's judge once (on the GPU Ray gave it), checks it, then judges shards.
    It never touches the database: new embeddings go back to the driver with each shard."""

    def __init__(self, factory: JudgeFactory):
        self.factory = factory
        self.vectors = CollectingVectorStore()
        self.judge: Any = None

    def start(self) -> WorkerInfo:
        info = WorkerInfo(os.getpid(), socket.gethostname())
        try:
            self.judge = self.factory.create(JudgeContext(StoreEmbeddingCache(self.vectors)))
            self.judge.preflight()
        except (Exception, KeyboardInterrupt) as exc:
            info.error = portable(exc)
        return info

    def judge_shard(self, shard: int, pairs: list[Pair]) -> ShardResult:
        try:
            judgments = judge_batch_safely(self.judge, pairs)
        except (Exception, KeyboardInterrupt) as exc:
            return ShardResult(shard, [], self.vectors.take(), portable(exc))
        return ShardResult(shard, judgments, self.vectors.take())

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()


# -- the driver side -------------------------------------------------------------------------------


def group_key(pair: Pair) -> tuple[str, str]:
    """Pairs of one image go to one shard (an image is the expensive thing to encode); text pairs go
    by topic (a document is usually pooled for one topic only, a topic for many documents)."""
    return ("image", pair.document.docid) if pair.document.image_path is not None else ("text", pair.topic.qid)


def shards_of(window: Sequence[Pair], size: int) -> list[list[Pair]]:
    """A window of the runner's pending pairs regrouped by `group_key`, in shards of ``size``."""
    pairs = sorted(window, key=group_key)
    return [pairs[start : start + size] for start in range(0, len(pairs), size)]


@dataclass
class _Worker:
    handle: Any
    started: Any  # the ObjectRef of its start(); None once it has answered
    info: WorkerInfo | None = None
    in_flight: dict[Any, int] = field(default_factory=dict)  # ObjectRef -> shard
    dead: bool = False


class RayExecutor:
    """Runs the job's batches on `spec.workers` Ray actors (see the module docstring).

    With no `address` and no Ray running in this process, it starts a local Ray and stops it at the
    end; a Ray this process already joined (``ray.init`` by the caller) is used as it is."""

    def __init__(self, spec: ExecutorSpec):
        self.spec = spec
        self.ray: Any = None
        self.started_ray = False
        self.reaper: IO[bytes] | None = None  # the pipe to the watcher of a local Ray we started (`ray_reaper`)
        self.workers: list[_Worker] = []
        self.factory: JudgeFactory | None = None
        self.save: Any = None
        self.deaths = 0  # workers lost during the job
        self.retried_shards = 0
        self.finished = False

    # -- lifecycle

    def open(self, factory: JudgeFactory, context: JudgeContext) -> None:
        self.ray = import_ray()
        self._connect()
        self._check_resources()
        self.factory = factory
        self.save = getattr(context.embedding_cache, "save", None)
        self.actor = self.ray.remote(JudgeWorker).options(
            num_cpus=self.spec.num_cpus,
            num_gpus=self.spec.num_gpus,
            runtime_env=self.spec.runtime_env,  # per actor, so it holds on a Ray this process joined before too
            max_restarts=0,
            max_task_retries=0,
        )
        for _ in range(self.spec.workers):
            self._spawn()
        self._await_first_worker()  # the preflight: a judge that cannot be built stops the job here

    def close(self) -> None:
        if self.ray is None:
            return
        live = [w for w in self.workers if not w.dead and w.info is not None and w.info.error is None]
        if self.finished and live:  # let judges release what they hold (a vLLM engine, a GPU) before the kill
            try:
                self.ray.get([w.handle.close.remote() for w in live], timeout=30)
            except Exception:
                pass
        for worker in self.workers:
            if not worker.dead:
                self.ray.kill(worker.handle)
                worker.dead = True
        if self.started_ray:
            self.ray.shutdown()
            if self.reaper is not None:
                self.reaper.close()  # the watcher kills what is left of the Ray (an agent slow to go)
                self.reaper = None
        self.ray = None

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers that have built their judge (for tests and monitoring)."""
        return [w.info.pid for w in self.workers if not w.dead and w.info is not None]

    # -- judging

    def map(self, windows: Iterable[list[Pair]], batch_size: int) -> Iterator[list[Judgment]]:
        """Shards of the windows, dispatched as workers free up. A window is read only when the
        shards queued could not keep every worker busy, so the driver holds about one window and
        the shards in flight, whatever the pool's size."""
        upcoming = iter(windows)
        shards: dict[int, list[Pair]] = {}  # shard -> its pairs, until its judgments are in
        tries: dict[int, int] = {}  # shard -> its workers that died judging it
        queue: deque[int] = deque()
        made = 0
        exhausted = False
        deaths_in_a_row = 0
        while True:
            while not exhausted and len(queue) < self.spec.workers * IN_FLIGHT:
                window = next(upcoming, None)
                if window is None:
                    exhausted = True
                    break
                for pairs in shards_of(window, batch_size):
                    shards[made], tries[made] = pairs, 0
                    queue.append(made)
                    made += 1
            if not shards:
                break
            self._dispatch(queue, shards)
            waiting = {w.started: w for w in self.workers if w.started is not None and not w.dead}
            judging = {ref: w for w in self.workers for ref in w.in_flight}
            if not waiting and not judging:
                raise RayWorkersFailed("no Ray worker is left to judge the remaining shards")
            ready, _ = self.ray.wait([*waiting, *judging], num_returns=1, timeout=WAIT_SECONDS)
            for ref in ready:
                if ref in waiting:
                    deaths_in_a_row += self._on_started(waiting[ref])
                    continue
                worker = judging[ref]
                shard = worker.in_flight.pop(ref)
                try:
                    result: ShardResult = self.ray.get(ref)
                except self.ray.exceptions.RayActorError as exc:
                    deaths_in_a_row += self._on_death(worker, exc)
                    tries[shard] += 1
                    if tries[shard] < SHARD_TRIES:
                        self.retried_shards += 1
                        queue.appendleft(shard)
                        continue
                    result = ShardResult(shard, [died_judgment(pair, tries[shard], exc) for pair in shards[shard]])
                except self.ray.exceptions.RayError as exc:  # not the judge's doing: a lost object, a result that did not unpickle
                    raise RayWorkersFailed(f"a Ray worker failed: {first_line(exc)}") from None
                if result.error is not None:
                    raise result.error
                deaths_in_a_row = 0
                if self.save is not None and result.embeddings:
                    self.save(result.embeddings)
                for judgment in result.judgments:
                    judgment.attempts += tries[shard]  # tries lost with a dead worker count as attempts
                del shards[shard], tries[shard]
                yield result.judgments
            if deaths_in_a_row > self.spec.workers + 2:
                raise RayWorkersFailed(f"{deaths_in_a_row} Ray workers died in a row without judging a shard; see the Ray logs")
        self.finished = True

    def _dispatch(self, queue: deque[int], shards: dict[int, list[Pair]]) -> None:
        for worker in self.workers:
            while queue and not worker.dead and worker.info is not None and len(worker.in_flight) < IN_FLIGHT:
                shard = queue.popleft()
                worker.in_flight[worker.handle.judge_shard.remote(shard, shards[shard])] = shard

    def _spawn(self) -> _Worker:
        handle = self.actor.remote(self.factory)
        worker = _Worker(handle, handle.start.remote())
        self.workers.append(worker)
        return worker

    def _on_started(self, worker: _Worker) -> int:
        """1 when the worker died while starting (it is replaced), else 0; raises the judge's own error."""
        try:
            info: WorkerInfo = self.ray.get(worker.started)
        except self.ray.exceptions.RayActorError as exc:
            worker.started = None
            return self._on_death(worker, exc)
        worker.started, worker.info = None, info
        if info.error is not None:
            raise info.error
        return 0

    def _on_death(self, worker: _Worker, exc: BaseException) -> int:
        """Count a worker's death once (each of its shards reports it) and start a replacement."""
        if worker.dead:
            return 0
        worker.dead = True
        self.deaths += 1
        logging.getLogger(__name__).warning("a Ray worker died (%s); its shards go to the others", first_line(exc))
        self._spawn()
        return 1

    def _await_first_worker(self) -> None:
        deaths = 0
        while not any(w.info is not None for w in self.workers):
            waiting = {w.started: w for w in self.workers if w.started is not None}
            ready, _ = self.ray.wait(list(waiting), num_returns=1, timeout=WAIT_SECONDS)
            for ref in ready:
                deaths += self._on_started(waiting[ref])
            if deaths > self.spec.workers + 2:
                raise RayWorkersFailed(f"{deaths} Ray workers died while building the judge; see the Ray logs")

    # -- the cluster

    def _connect(self) -> None:
        if self.ray.is_initialized():
            return
        try:
            self.ray.init(
                address=self.spec.address,
                include_dashboard=False if self.spec.address is None else None,
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {self.spec.address!r}" if self.spec.address else "a local Ray"
            raise JobError(f"executor: cannot start or reach {where}: {first_line(exc)}") from None
        self.started_ray = True
        if self.spec.address is None:  # a Ray of our own lives no longer than this process, however it ends
            self.reaper = reap_on_exit(self.ray)

    def _check_resources(self) -> None:
        """A worker the cluster can never place would wait forever: say so at once."""
        total = self.ray.cluster_resources()
        for name, need in (("CPU", self.spec.num_cpus), ("GPU", self.spec.num_gpus)):
            if need > total.get(name, 0):
                raise JobError(
                    f"executor: a worker needs {need:g} {name}(s) (num_{name.lower()}s) but the Ray cluster has {total.get(name, 0):g}"
                )


def died_judgment(pair: Pair, tries: int, exc: BaseException) -> Judgment:
    return Judgment.failed(pair, "model_error", f"the Ray worker judging this pair died {tries} times ({first_line(exc)})", attempts=0)
