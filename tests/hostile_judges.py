"""Judges for the hostile-input tests, loaded by `module:Class` (jobs that name them set
`allow_import: true`)."""

from __future__ import annotations

import hashlib
from typing import ClassVar

from pydantic import Field

from qrelkit.judges import BaseJudge, JudgeConfig, Judgment


class BulkyConfig(JudgeConfig):
    answer_bytes: int = Field(32_768, ge=1)


class BulkyJudge(BaseJudge):
    """Answers with a long, incompressible text (a chatty model): fills a disk quickly."""

    name = "bulky"
    Config = BulkyConfig
    needs_template = False

    def judge(self, batch):
        out = []
        for pair in batch:
            seed = f"{pair.topic.qid}/{pair.document.docid}".encode()
            text, block = "", seed
            while len(text) < self.config.answer_bytes:
                block = hashlib.sha256(block).digest()
                text += block.hex()
            out.append(Judgment(*pair.key, "ok", score=float(len(pair.document.text or "")), raw_output=text[: self.config.answer_bytes]))
        return out


class LengthJudge(BaseJudge):
    """Scores a text by its length; remembers what it was asked (to show what a re-run judges)."""

    name = "length"
    Config = JudgeConfig
    needs_template = False
    asked: ClassVar[list[tuple[str, str]]] = []

    def judge(self, batch):
        LengthJudge.asked.extend(pair.key for pair in batch)
        return [Judgment(*pair.key, "ok", score=float(len(pair.document.text or "")), raw_output=pair.document.text) for pair in batch]


class FailingJudge(BaseJudge):
    """Fails every pair with the same server error: a broken judge."""

    name = "failing"
    Config = JudgeConfig
    needs_template = False

    def judge(self, batch):
        return [Judgment(*pair.key, "model_error", error="HTTP 500 from the stand-in server") for pair in batch]


class ImageBytesJudge(BaseJudge):
    """Scores an image document by the size of its file (no model): enough to put image probes' copies to a judge."""

    name = "image-bytes"
    Config = JudgeConfig
    needs_template = False

    def judge(self, batch):
        from pathlib import Path

        out = []
        for pair in batch:
            path = pair.document.image_path
            if path is None or not Path(path).is_file():
                out.append(Judgment(*pair.key, "input_error", error=f"no image at {path}"))
            else:
                out.append(Judgment(*pair.key, "ok", score=float(Path(path).stat().st_size), raw_output=str(path)))
        return out
