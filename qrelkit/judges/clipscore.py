"""`clipscore`: CLIPScore (Hessel et al. 2021) of an image and the topic text with open_clip:
w · max(cos(E_img, E_txt), 0), w = 2.5, both embeddings L2-normalised; the raw cosine is kept.

As in seed 003, CLIP sees only the template's context part (its text encoder holds 77 tokens);
longer texts are truncated keeping the end-of-text token and counted. Every distinct text and
image is encoded once per job and cached in the store (an image pooled for 30 topics is encoded
once). Each image file is read once (its cache key is the hash of those bytes) and, when not
cached, decoded once, in parallel with the encoding (`qrelkit.embed.clip`). A missing, corrupt or
oversized image is an `input_error` for its pairs, found where it is read or decoded; the job
goes on.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from qrelkit.embed.cache import embed_with_cache
from qrelkit.embed.clip import ClipImageEmbedder, ClipSource, ClipTextEmbedder, OpenClip
from qrelkit.errors import FatalJobError
from qrelkit.io.images import ImageError, ImageFile, read_image_file
from qrelkit.io.workers.parallel import ordered_map
from qrelkit.judges.base import BaseJudge, FatalJudgeError, JudgeConfig, Judgment, Pair

CLIPSCORE_WEIGHT = 2.5


class ClipScoreConfig(JudgeConfig):
    model: str = Field("ViT-B-32", description="open_clip architecture name.")
    pretrained: str | None = Field(None, description="open_clip pretrained tag, e.g. openai or laion2b_s34b_b79k.")
    checkpoint: str | None = Field(None, description="A local checkpoint file of `model`'s weights.")
    hf_hub: str | None = Field(None, description="A Hugging Face hub id (open_clip format), e.g. laion/CLIP-ViT-g-14-laion2B-s12B-b42K.")
    model_config_file: str | None = Field(None, description="A JSON file registering a custom open_clip architecture.")
    device: str = Field("auto", description="auto (CUDA when present), cpu, cuda, cuda:1 ...")
    half: bool = Field(False, description="Half precision on a GPU (pixels follow the visual tower's dtype).")
    batch_size: int = Field(32, ge=1, description="Images per forward pass.", json_schema_extra={"identity": False})
    text_batch_size: int = Field(256, ge=1, description="Texts per forward pass.", json_schema_extra={"identity": False})
    decode_workers: int | None = Field(
        None,
        ge=1,
        description="Processes decoding images on the CPU path, threads reading files (default: one per core).",
        json_schema_extra={"identity": False},
    )
    # Not part of the identity, as `device: auto` is not: the paths differ by float rounding and at
    # most one step of 255 in a resampled pixel (tested: CLIPScore within 1e-3).
    image_decode: Literal["auto", "device", "cpu"] = Field(
        "auto",
        description="Where JPEGs are decoded and preprocessed: auto (the GPU when the model is on one), device, or cpu (processes).",
        json_schema_extra={"identity": False},
    )
    weight: float = Field(CLIPSCORE_WEIGHT, gt=0, description="w in w·max(cos, 0); 2.5 as in Hessel et al.")
    caption_prefix: str = Field("", description='Prefix for the text, e.g. "A photo depicts" (Hessel et al.).')
    text: Literal["context", "query"] = Field("context", description="Embed the template's context part, or the plain query.")

    @model_validator(mode="after")
    def _one_source(self) -> ClipScoreConfig:
        if sum(x is not None for x in (self.pretrained, self.checkpoint, self.hf_hub)) > 1:
            raise ValueError("give one of pretrained, checkpoint or hf_hub")
        return self

    def source(self) -> ClipSource:
        return ClipSource(self.model, self.pretrained, self.checkpoint, self.hf_hub, self.model_config_file)


class ClipScoreJudge(BaseJudge[ClipScoreConfig]):
    """CLIPScore = 2.5·max(cos, 0) of open_clip image and text embeddings."""

    name = "clipscore"
    Config = ClipScoreConfig
    timing_pairs = 64
    needs_template = False

    @classmethod
    def model_id_for(cls, config: ClipScoreConfig) -> str:
        return config.source().model_id

    @classmethod
    def startup_problems(cls, config: ClipScoreConfig) -> list[str]:
        from qrelkit.judges.startup import missing_device, missing_file, missing_modules

        problems = missing_modules({"torch": "pip install 'qrelkit[clip]'", "open_clip": "pip install 'qrelkit[clip]'"}, cls.name)
        files = [
            missing_file(config.checkpoint, cls.name, "checkpoint", "give an existing checkpoint file"),
            missing_file(config.model_config_file, cls.name, "model_config_file", "give an existing JSON file"),
        ]
        return problems + [p for p in (*files, missing_device(config.device, cls.name)) if p]

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        self.clip = OpenClip(
            config.source(),
            device=config.device,
            half=config.half,
            batch_size=config.batch_size,
            text_batch_size=config.text_batch_size,
            decode_workers=config.decode_workers,
            image_decode=config.image_decode,
        )
        self.text_embedder = ClipTextEmbedder(self.clip)
        self.image_embedder = ClipImageEmbedder(self.clip)
        self.text_vectors: dict[str, np.ndarray] = {}
        self.image_vectors: dict[str, np.ndarray] = {}
        self.image_errors: dict[str, str] = {}
        self.truncated_topics: set[str] = set()

    def topic_text(self, pair: Pair) -> str:
        if self.config.text == "context" and self.template is not None:
            text = self.template.render_context(pair.topic)
        else:
            text = pair.topic.text
        return f"{self.config.caption_prefix} {text}".strip() if self.config.caption_prefix else text

    def preflight(self) -> None:
        """One text and one image through the encoders, in the dtype and on the device the job uses."""
        try:
            self.clip.check_forward()
        except Exception as exc:
            where = f"{self.clip.precision} on {self.clip.device}"
            raise FatalJudgeError(f"CLIP model {self.model_id} ({where}) fails a forward pass: {type(exc).__name__}: {exc}") from None

    def _vectors(self, embedder, kind: str, items: dict, hashes: dict[str, str] | None = None):
        cache = self.context.embedding_cache
        if cache is not None:
            return cache.vectors(embedder, kind, items, content_hashes=hashes)
        return embed_with_cache(None, embedder, kind, items, content_hashes=hashes)

    def _read_images(self, pairs: Sequence[Pair]) -> dict[str, ImageFile]:
        """Each new image file read once, in parallel; failures go to image_errors."""
        paths: dict[str, tuple[str, str | None, str | None]] = {}
        for p in pairs:
            docid = p.document.docid
            if docid in self.image_vectors or docid in self.image_errors or docid in paths:
                continue
            if p.document.image_path is None:
                self.image_errors[docid] = f"document {docid!r} has no image"
                continue
            paths[docid] = (str(p.document.image_path), p.document.image_root, p.document.image_sha256)

        def read(item: tuple[str, str | None, str | None]) -> ImageFile | str:
            try:
                return read_image_file(*item)
            except ImageError as exc:
                return str(exc)

        files: dict[str, ImageFile] = {}
        results = ordered_map(read, paths.values(), workers=self.clip.decode_workers, window=4 * self.clip.decode_workers)
        for docid, result in zip(paths, results):
            if isinstance(result, ImageFile):
                files[docid] = result
            else:
                self.image_errors[docid] = result
        return files

    def prepare(self, pairs: Sequence[Pair]) -> None:
        texts = {p.topic.qid: self.topic_text(p) for p in pairs if p.topic.qid not in self.text_vectors}
        newly_truncated = {qid for qid, text in texts.items() if (self.clip.tokens_needed(text) or 0) > self.clip.context_length}
        self.truncated_topics |= newly_truncated
        if texts:
            self.text_vectors.update(self._vectors(self.text_embedder, "clip-text", texts))
        files = self._read_images(pairs)
        if files:
            vectors = self._vectors(self.image_embedder, "clip-image", files, {docid: f.sha256 for docid, f in files.items()})
            for docid, image in files.items():
                if docid in vectors:
                    self.image_vectors[docid] = vectors[docid]
                else:
                    self.image_errors[docid] = self.image_embedder.errors.get(image.sha256, f"image {image.path} was not encoded")
        if newly_truncated:
            warnings.warn(
                f"{len(newly_truncated)} topic text(s) exceed CLIP's {self.clip.context_length}-token context "
                "and were truncated (as in Yang and Lin, LLM4Eval workshop at SIGIR 2024: CLIP sees only the context part)",
                stacklevel=2,
            )

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        try:
            self.prepare(batch)
        except FatalJobError as exc:  # a decoding process died: the machine's failure, not the pairs'
            if isinstance(exc, FatalJudgeError):
                raise
            raise FatalJudgeError(f"CLIP model {self.model_id}: {exc}") from exc
        out = []
        for pair in batch:
            qid, docid = pair.key
            if docid in self.image_errors:
                out.append(Judgment.failed(pair, "input_error", self.image_errors[docid]))
                continue
            cosine = float(np.dot(self.text_vectors[qid], self.image_vectors[docid]))
            score = self.config.weight * max(cosine, 0.0)
            out.append(Judgment(qid, docid, "ok", score=score, raw_output=f"cos={cosine:.6f}", model_id=self.model_id))
        return out

    def close(self) -> None:
        self.clip.close()
