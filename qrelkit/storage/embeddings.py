"""Cached embeddings: rows keyed by (embedder_id, item_kind, item_id, content_hash).

Vectors travel as Arrow list<float32> both ways, so a few thousand 384-d rows are one
bulk read or one insert, not a statement per row. The store has them as its methods
(`EmbeddingCache`, the interface `qrelkit.embed.cache.VectorStore` reads): this module knows the
store only as a connection with transactions, so it imports nothing back.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from qrelkit.storage.entries import registered

Key = tuple[str, str]  # (item_id, content_hash)


class Connected(Protocol):
    """What the cache needs of the store: its connection and its transactions."""

    con: Any

    def transaction(self) -> AbstractContextManager[Any]: ...


def _vectors_from_list_column(column: pa.ChunkedArray | pa.Array) -> list[np.ndarray]:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], pa.list_(pa.float32()))
    offsets = column.offsets.to_numpy()
    values = column.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return [values[offsets[i] : offsets[i + 1]].copy() for i in range(len(column))]


class EmbeddingCache:
    """The store's embedding cache (a mixin of `qrelkit.storage.Store`)."""

    def read_embeddings(
        self: Connected, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], np.ndarray]:
        """The cached vectors among ``keys`` = [(item_id, content_hash)], keyed the same way."""
        return read_embeddings(self, embedder_id, item_kind, keys)

    def write_embeddings(self: Connected, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]], vectors: np.ndarray) -> int:
        """Insert vectors for [(item_id, content_hash)] in one transaction; rows already there are kept."""
        return write_embeddings(self, embedder_id, item_kind, keys, vectors)


def read_embeddings(
    store: Connected, embedder_id: str, item_kind: str, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], np.ndarray]:
    """The cached vectors among ``keys`` = [(item_id, content_hash)], keyed the same way."""
    if not keys:
        return {}
    wanted = pa.table({"item_id": [k[0] for k in keys], "content_hash": [k[1] for k in keys]})
    # A cursor of its own: the store's connection may hold a half-read result (a fetchone),
    # which duckdb 2 lets no `register` interrupt.
    with store.con.cursor() as cursor:
        cursor.register("wanted_embeddings", wanted)
        found = cursor.sql(
            "SELECT e.item_id, e.content_hash, e.vector FROM embeddings e "
            "JOIN (SELECT DISTINCT item_id, content_hash FROM wanted_embeddings) w "
            "ON e.item_id = w.item_id AND e.content_hash = w.content_hash "
            "WHERE e.embedder_id = ? AND e.item_kind = ?",
            params=[embedder_id, item_kind],
        ).to_arrow_table()
    ids = found.column("item_id").to_pylist()
    hashes = found.column("content_hash").to_pylist()
    return dict(zip(zip(ids, hashes), _vectors_from_list_column(found.column("vector"))))


def write_embeddings(
    store: Connected,
    embedder_id: str,
    item_kind: str,
    keys: Sequence[tuple[str, str]],
    vectors: np.ndarray,
) -> int:
    """Insert vectors for [(item_id, content_hash)] in one transaction; rows already there are kept."""
    if not keys:
        return 0
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    rows = pa.table(
        {
            "embedder_id": [embedder_id] * n,
            "item_kind": [item_kind] * n,
            "item_id": [k[0] for k in keys],
            "content_hash": [k[1] for k in keys],
            "vector": pa.ListArray.from_arrays(offsets, pa.array(vectors.reshape(-1))),
        }
    )
    store.con.execute("SELECT 1").fetchall()  # finish any half-read result (see read_embeddings)
    if _read_only(store):
        return 0  # a read-only database still serves cached vectors; new ones are not kept
    with store.transaction() as con, registered(con, "new_embeddings", rows):
        con.execute(
            "INSERT OR IGNORE INTO embeddings (embedder_id, item_kind, item_id, content_hash, vector) "
            "SELECT embedder_id, item_kind, item_id, content_hash, vector FROM new_embeddings"
        ).fetchall()  # finish the result before unregistering (duckdb 2 refuses otherwise)
    return n


def _read_only(store: Connected) -> bool:
    setting = store.con.execute("SELECT current_setting('access_mode')").fetchall()[0][0]
    return str(setting).lower() == "read_only"
