"""Embed through the store's cache: each (embedder, item kind, item, content hash) is encoded once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


# Distinct inputs encoded per call of the embedder: progress is said, and the vectors stored, after
# each (a killed `fd` keeps what it embedded). Rows do not depend on what else is in a call (the
# ONNX MiniLM's vectors of 1,500 DL19 passages are bitwise the same in one call or in three).
EMBED_CHUNK = 1024


@dataclass
class EmbeddingTally:
    """What `embed_with_cache` found in the cache and what it encoded, in items."""

    reused: int = 0
    embedded: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"reused": self.reused, "embedded": self.embedded, "failed": self.failed}


def embed_with_cache(
    store: VectorStore | None,
    embedder: TextEmbedder,
    item_kind: str,
    items: Mapping[str, Any],
    *,
    content_hashes: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    tally: EmbeddingTally | None = None,
) -> dict[str, np.ndarray]:
    """item_id -> float32 vector for ``items`` (item_id -> text; or, for an image embedder, an
    image path or an ImageFile already read).

    Looks the items up in ``store``'s embeddings table, encodes only the misses (each distinct
    input once, however many items share it), `EMBED_CHUNK` inputs at a time, each chunk's vectors
    written back as it is done, and returns every item's vector. ``content_hashes`` overrides the
    hash of an input (an image's file bytes rather than its path); ``store=None`` encodes without a
    cache. An embedder may fail on some inputs (an image that cannot be decoded) by returning a row
    that is not finite: such items are neither stored nor returned, and the embedder says why.
    ``progress(done, total)``: distinct inputs encoded so far; ``tally``: counts what was reused and
    what encoded.
    """
    ids = list(items)
    hashes = {i: (content_hashes[i] if content_hashes and i in content_hashes else content_hash(items[i])) for i in ids}
    cached = store.read_embeddings(embedder.embedder_id, item_kind, [(i, hashes[i]) for i in ids]) if store else {}
    out = {i: cached[(i, hashes[i])] for i in ids if (i, hashes[i]) in cached}
    missing = [i for i in ids if i not in out]
    by_hash: dict[str, list[str]] = {}  # content hash -> the missing items that share it
    for i in missing:
        by_hash.setdefault(hashes[i], []).append(i)
    distinct = list(by_hash)
    if progress is not None and distinct:
        progress(0, len(distinct))
    for start in range(0, len(distinct), EMBED_CHUNK):
        chunk = distinct[start : start + EMBED_CHUNK]
        vectors = np.asarray(embedder.encode([items[by_hash[h][0]] for h in chunk]), dtype=np.float32)
        encoded: list[str] = []
        for h, vector in zip(chunk, vectors):
            if np.isfinite(vector).all():
                for i in by_hash[h]:
                    out[i] = vector
                    encoded.append(i)
        if store is not None and encoded:
            store.write_embeddings(embedder.embedder_id, item_kind, [(i, hashes[i]) for i in encoded], np.stack([out[i] for i in encoded]))
        if progress is not None:
            progress(min(start + EMBED_CHUNK, len(distinct)), len(distinct))
    if tally is not None:
        tally.reused += len(ids) - len(missing)
        tally.embedded += sum(1 for i in missing if i in out)
        tally.failed += sum(1 for i in missing if i not in out)
    return {i: out[i] for i in ids if i in out}
