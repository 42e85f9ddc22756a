"""What a test reads back from a database to check what qrelkit stored in it (plain SQL, so the
check does not lean on the code under test)."""

from __future__ import annotations


def count_embeddings(store, embedder_id: str | None = None) -> int:
    """Cached vectors in ``store`` (of one embedder, or all)."""
    if embedder_id is None:
        return store.con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
    return store.con.execute("SELECT count(*) FROM embeddings WHERE embedder_id = ?", [embedder_id]).fetchall()[0][0]
