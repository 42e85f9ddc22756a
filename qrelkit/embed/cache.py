"""Embed through the store's cache: each (embedder, item kind, item, content hash) is encoded once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from qrelkit.embed.base import TextEmbedder
from qrelkit.io import sha256_text
from qrelkit.io.images import ImageFile


class VectorStore(Protocol):
    """Where cached vectors live (the DuckDB store implements it); embed never writes a database itself."""

    def read_embeddings(self, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]: ...

    def write_embeddings(self, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]], vectors: np.ndarray) -> int: ...


@dataclass
class ComputedEmbeddings:
    """Vectors encoded where the database cannot be reached (a Ray worker), for the writer to store."""

    embedder_id: str
    item_kind: str
    keys: list[tuple[str, str]]  # (item_id, content_hash)
    vectors: np.ndarray  # float32, one row per key


class CollectingVectorStore:
    """A VectorStore for a process that cannot reach the database: nothing is cached in it, and what
    is encoded is kept until the process that can write collects it with `take`. (The judges keep
    their own vectors for the rest of the job, so this keeps only the not yet collected ones.)"""

    def __init__(self) -> None:
        self.computed: list[ComputedEmbeddings] = []

    def read_embeddings(self, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
        return {}

    def write_embeddings(self, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]], vectors: np.ndarray) -> int:
        self.computed.append(ComputedEmbeddings(embedder_id, item_kind, list(keys), np.asarray(vectors, dtype=np.float32)))
        return len(keys)

    def take(self) -> list[ComputedEmbeddings]:
        computed, self.computed = self.computed, []
        return computed


def text_hash(text: str) -> str:
    """sha256 of the UTF-8 text: the same content hash the store keeps for text documents."""
    return sha256_text(text)


def content_hash(item: Any) -> str:
    """An image file's hash is that of its bytes; a text's (or a path's) that of its UTF-8."""
    return item.sha256 if isinstance(item, ImageFile) else text_hash(str(item))


def embed_with_cache(
    store: VectorStore | None,
    embedder: TextEmbedder,
    item_kind: str,
    items: Mapping[str, Any],
    *,
    content_hashes: Mapping[str, str] | None = None,
) -> dict[str, np.ndarray]:
    """item_id -> float32 vector for ``items`` (item_id -> text; or, for an image embedder, an
    image path or an ImageFile already read).

    Looks the items up in ``store``'s embeddings table, encodes only the misses (each distinct
    input once, however many items share it), writes them back in one transaction, and returns
    every item's vector. ``content_hashes`` overrides the hash of an input (an image's file
    bytes rather than its path); ``store=None`` encodes without a cache. An embedder may fail on
    some inputs (an image that cannot be decoded) by returning a row that is not finite: such
    items are neither stored nor returned, and the embedder says why.
    """
    ids = list(items)
    hashes = {i: (content_hashes[i] if content_hashes and i in content_hashes else content_hash(items[i])) for i in ids}
    cached = store.read_embeddings(embedder.embedder_id, item_kind, [(i, hashes[i]) for i in ids]) if store else {}
    out = {i: cached[(i, hashes[i])] for i in ids if (i, hashes[i]) in cached}
    missing = [i for i in ids if i not in out]
    if missing:
        distinct: dict[str, int] = {}  # content hash -> row in the encoded batch
        inputs: list[str] = []
        for i in missing:
            if hashes[i] not in distinct:
                distinct[hashes[i]] = len(inputs)
                inputs.append(items[i])
        vectors = np.asarray(embedder.encode(inputs), dtype=np.float32)
        encoded = [i for i in missing if np.isfinite(vectors[distinct[hashes[i]]]).all()]
        for i in encoded:
            out[i] = vectors[distinct[hashes[i]]]
        if store is not None and encoded:
            store.write_embeddings(embedder.embedder_id, item_kind, [(i, hashes[i]) for i in encoded], np.stack([out[i] for i in encoded]))
    return {i: out[i] for i in ids if i in out}
