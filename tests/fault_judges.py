"""Judges for fault injection in runner tests, loaded by `module:Class` (no packaging needed).

They compute a real, checkable score (word overlap), and fail on demand the way real
backends do: a raise for one pair, a parse failure, an interrupt mid-job.
"""

from __future__ import annotations

import time
from typing import ClassVar, Literal

from pydantic import Field

from qrelkit.judges import BaseJudge, FatalJudgeError, JudgeConfig, Judgment
from qrelkit.prompts import parse_score


class OverlapConfig(JudgeConfig):
    fail_docids: list[str] = Field(default_factory=list)
    interrupt_after: int | None = None
    unparseable_docids: list[str] = Field(default_factory=list)
    fatal_docids: list[str] = Field(default_factory=list)  # raise FatalJudgeError here (a key revoked mid-job)
    workers: int = Field(1, json_schema_extra={"identity": False})  # operational: not part of the run's identity
    delay_seconds: float = Field(0.0, json_schema_extra={"identity": False})  # per batch: keeps a job in flight long enough to kill


def overlap(query: str, text: str) -> float:
    words = set(query.lower().split())
    return len(words & set(text.lower().split())) / max(len(words), 1)


class OverlapJudge(BaseJudge):
    """Word overlap between query and document."""

    name = "overlap"
    Config = OverlapConfig
    needs_template = False
    calls: ClassVar[list[tuple[str, str]]] = []

    def judge(self, batch):
        time.sleep(self.config.delay_seconds)
        out = []
        for pair in batch:
            if self.config.interrupt_after is not None and len(OverlapJudge.calls) >= self.config.interrupt_after:
                raise KeyboardInterrupt
            OverlapJudge.calls.append(pair.key)
            if pair.document.docid in self.config.fatal_docids:
                raise FatalJudgeError(f"the key was revoked while judging {pair.document.docid}")
            if pair.document.docid in self.config.fail_docids:
                raise RuntimeError(f"backend crashed on {pair.document.docid}")
            if pair.document.docid in self.config.unparseable_docids and self.template is not None:
                parsed = parse_score("I cannot decide.", self.template)
                out.append(Judgment(*pair.key, "parse_error", raw_output="I cannot decide.", error=parsed.error))
                continue
            out.append(Judgment(*pair.key, "ok", score=overlap(pair.topic.text, pair.document.text or "")))
        return out


class SlowConfig(JudgeConfig):
    seconds: float = 0.05


class SlowJudge(BaseJudge):
    """Word overlap that takes ``seconds`` per pair: work long enough to report progress on."""

    name = "slow"
    Config = SlowConfig
    needs_template = False

    def judge(self, batch):
        import time

        out = []
        for pair in batch:
            time.sleep(self.config.seconds)
            out.append(Judgment(*pair.key, "ok", score=overlap(pair.topic.text, pair.document.text or "")))
        return out


class ConstantJudge(BaseJudge):
    """Scores every pair 1.0 at no cost: what a job over it measures is the runner itself."""

    name = "constant"
    Config = JudgeConfig
    needs_template = False

    def judge(self, batch):
        return [Judgment(*pair.key, "ok", score=1.0) for pair in batch]


class ShortFirstJudge(OverlapJudge):
    """Word overlap, with a sort key (the document's length): the runner orders each window by it."""

    name = "short-first"
    calls_seen: ClassVar[list[list[str]]] = []  # the docids of each call, in call order

    def sort_keys(self, pairs):
        return [len(pair.document.text or "") for pair in pairs]

    def judge(self, batch):
        ShortFirstJudge.calls_seen.append([pair.document.docid for pair in batch])
        return super().judge(batch)


class AnswerConfig(JudgeConfig):
    answer: float = 3.0
    score: Literal["parsed", "expected"] = "parsed"


class AnswerJudge(BaseJudge):
    """A generative judge as grading sees one (it needs a template, and scores by its parsed grade or
    its expected grade): it answers `answer` for every pair, and records each call."""

    name = "answer"
    Config = AnswerConfig
    needs_template = True
    calls: ClassVar[list[tuple[str, str]]] = []

    def judge(self, batch):
        AnswerJudge.calls.extend(pair.key for pair in batch)
        answer = self.config.answer
        return [
            Judgment(*pair.key, "ok", score=answer, parsed=answer, expected=answer, raw_output=f"Relevance: {answer:g}") for pair in batch
        ]
