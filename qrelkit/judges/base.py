"""What every judge is: a pure function from a batch of pairs to judgments.

A judge never writes to the database; the job runner does. Shared resources a judge may
use (an embedding cache) are handed to it in a `JudgeContext`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from qrelkit.errors import FatalJobError, QrelkitError
from qrelkit.io import Document, Topic
from qrelkit.prompts import PromptTemplate

Status = Literal["ok", "parse_error", "model_error", "input_error"]


class JudgeError(QrelkitError):
    """A judge cannot be built or configured as asked."""


class FatalJudgeError(JudgeError, FatalJobError):
    """Raised by a judge when going on is pointless (a rejected API key, a missing model, a dead
    endpoint): the runner saves what was judged and stops, instead of failing every remaining pair."""


@dataclass(frozen=True)
class Pair:
    topic: Topic
    document: Document

    @property
    def key(self) -> tuple[str, str]:
        return (self.topic.qid, self.document.docid)


@dataclass
class Judgment:
    qid: str
    docid: str
    status: Status
    score: float | None = None
    parsed: float | None = None  # the grade the parser read from the answer
    expected: float | None = None  # Σ g·p(g) over the grade tokens (judges.scoring)
    raw_output: str | None = None
    error: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    cost: float | None = None
    attempts: int = 1  # tries this call made (HTTP retries count); the runner adds earlier calls'
    model_id: str | None = None
    system_fingerprint: str | None = None
    notes: str | None = None  # what the judge or driver noticed about the answer (stored with the judgment's own notes)

    def __post_init__(self) -> None:
        # A failure never carries a score, so it can never be mistaken for a 0.
        if self.status != "ok":
            self.score = None
            self.parsed = None
            self.expected = None

    @classmethod
    def failed(cls, pair: Pair, status: Status, error: str, **extra: Any) -> Judgment:
        return cls(pair.topic.qid, pair.document.docid, status, error=error, **extra)


class JudgeConfig(BaseModel):
    """Base for judge options: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class EmbeddingCache(Protocol):
    """Handed to judges by the runner: vectors by (embedder, item kind, item id, text)."""

    def vectors(
        self, embedder: Any, item_kind: str, items: Mapping[str, str], content_hashes: Mapping[str, str] | None = None
    ) -> dict[str, np.ndarray]: ...


@dataclass
class JudgeContext:
    embedding_cache: EmbeddingCache | None = None


@runtime_checkable
class Judge(Protocol):
    name: ClassVar[str]
    Config: ClassVar[type[JudgeConfig]]
    needs_template: ClassVar[bool]

    @property
    def model_id(self) -> str: ...

    def preflight(self) -> None: ...

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]: ...

    def close(self) -> None: ...


@runtime_checkable
class BatchJudge(Protocol):
    """A judge that can also run through a Batch API (files of requests answered within hours, at a
    lower price). It still never writes: the job's batch driver records, submits and collects, and
    asks the judge only for request bodies, a client, and the judgment an answer line makes."""

    def batch_settings(self) -> Any: ...  # qrelkit.judges.batch_api.BatchSettings

    def batch_request(self, pair: Pair) -> dict[str, Any] | Judgment: ...  # the body, or the pair's input_error

    def batch_client(self, folder: Path) -> Any: ...  # a BatchClient; ``folder``: the job's batch folder (a local runner's home)

    def batch_judgment(self, qid: str, docid: str, line: Any) -> Judgment | None: ...  # None: send the pair again

    def preflight(self) -> None: ...

    def close(self) -> None: ...


ConfigT = TypeVar("ConfigT", bound=JudgeConfig)


class BaseJudge(Generic[ConfigT]):
    """Convenience base, generic over the judge's config model (``class MyJudge(BaseJudge[MyConfig])``,
    so ``self.config`` has the judge's own options): holds config, template and context; `close`
    does nothing. A judge that needs a template gets one (the registry refuses to build it without),
    so ``self.template`` is a PromptTemplate there; the others may see None."""

    name: ClassVar[str] = ""
    Config: ClassVar[type[JudgeConfig]] = JudgeConfig
    needs_template: ClassVar[bool] = True
    # Pairs a dry run judges to estimate the judging time (`qrelkit.jobs.estimate`): a few seconds'
    # work for a judge that starts in seconds; 0 for one that needs a network or minutes to start.
    timing_pairs: ClassVar[int] = 0
    config: ConfigT
    template: PromptTemplate

    def __init__(self, config: ConfigT, template: PromptTemplate | None, context: JudgeContext | None = None):
        self.config = config
        self.template = template  # type: ignore[assignment]  # None only for judges that need none
        self.context = context or JudgeContext()

    @classmethod
    def model_id_for(cls, config: Any) -> str:
        """The model this configuration runs, known without loading it (part of the run's identity)."""
        return cls.name

    @property
    def model_id(self) -> str:
        return self.model_id_for(self.config)

    @classmethod
    def startup_problems(cls, config: Any) -> list[str]:
        """What would stop this judge from starting, found without loading a model or sending a
        request (a backend not installed, a key variable unset, a model file or the device missing;
        `qrelkit.judges.startup`): a line each, naming the fix. Checked before a job writes anything."""
        return []

    @classmethod
    def endpoint_problem(cls, config: Any) -> str | None:
        """One cheap request to the judge's endpoint (only when asked: `judge --check-endpoint`);
        None when it answers, or when the judge has no endpoint."""
        return None

    def preflight(self) -> None:
        """A cheap check, before the first batch, that the judge can work at all: an endpoint
        answers, a model runs one forward pass. Raise FatalJudgeError naming the endpoint or model."""
        return None

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:  # pragma: no cover - abstract
        raise NotImplementedError

    def salvage(self) -> list[Judgment]:
        """Judgments made in a batch that then raised (answers that arrived before another pair
        failed), handed over once: the runner stores them rather than asking for them again."""
        return []

    def close(self) -> None:
        return None
