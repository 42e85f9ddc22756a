"""The embedder protocol shared by the judges and the Fréchet distance, and small helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from qrelkit.errors import QrelkitError


@runtime_checkable
class TextEmbedder(Protocol):
    """Texts in, L2-normalised float32 rows out, in input order."""

    embedder_id: str  # stable id for the embeddings cache
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def text_lengths(embedder: TextEmbedder, texts: Sequence[str]) -> list[int]:
    """Each text's length as ``embedder`` batches it (its `lengths`: word pieces for the ONNX model),
    or its characters for an embedder that does not say."""
    lengths = getattr(embedder, "lengths", None)
    return list(lengths(texts)) if callable(lengths) else [len(t) for t in texts]


class MissingExtraError(QrelkitError):
    """An optional package the chosen embedder needs is not installed."""


def missing_extra(package: str, extra: str, what: str) -> MissingExtraError:
    return MissingExtraError(
        f"{what} needs the package {package!r}, which is not installed; install it with: pip install 'qrelkit[{extra}]'"
    )


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))
