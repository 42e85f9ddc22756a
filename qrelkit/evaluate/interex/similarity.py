"""Cosine top-k between two sets of query embeddings, in blocks: never a full queries × candidates matrix.

Training sets have ~500k queries; 500 test queries against them would be a 1 GB float32 matrix.
Similarities are computed for ``query_rows`` × ``block_rows`` at a time, the block's top k kept
(numpy argpartition), and merged with the running top k.

Ties are broken by the lower candidate index, exactly: MS MARCO repeats query texts, and identical
texts have identical embeddings, so which of two tied training queries is "in the top E" must not
depend on the block size. Each similarity is packed with its index into one uint64 key (the float's
order-preserving bits high, the inverted index low), so selection has no ties left to break.
Dot products run in float64 and are rounded to float32: BLAS takes different paths for different
block shapes (gemv for one row), and float32 sums in a different order would split identical
queries by a last bit; float64 rounded to float32 makes a cosine independent of its block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qrelkit.errors import QrelkitError

QUERY_ROWS = 1024
BLOCK_ROWS = 4096  # with QUERY_ROWS: ~4M similarities (32 MB in float64, 32 MB as keys) per block
_LOW32 = np.uint64(0xFFFFFFFF)
_SIGN = np.uint64(0x80000000)


@dataclass(frozen=True)
class TopK:
    """``indices[i]``: the candidate rows most similar to query row i, best first; ``scores[i]`` their cosines."""

    indices: np.ndarray  # (n_queries, k) int64
    scores: np.ndarray  # (n_queries, k) float32


def unit_rows(vectors: np.ndarray, what: str = "embeddings", dtype=np.float32) -> np.ndarray:
    """Rows scaled to length 1 (a zero row stays zero: its cosine with anything is 0)."""
    vectors = np.asarray(vectors, dtype=dtype)
    if vectors.ndim != 2:
        raise QrelkitError(f"{what}: expected a 2-d array (rows are queries), got shape {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise QrelkitError(f"{what}: contains NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(dtype)


def _keys(scores: np.ndarray, first_index: int) -> np.ndarray:
    """uint64 keys ordered like (score descending, index ascending) when sorted descending."""
    bits = (scores + np.float32(0.0)).view(np.uint32).astype(np.uint64)  # + 0.0 turns -0.0 into 0.0
    negative = bits >= _SIGN
    ordered = np.where(negative, _LOW32 - bits, bits + _SIGN)  # monotone in the float's value
    index = np.arange(first_index, first_index + scores.shape[1], dtype=np.uint64)
    return (ordered << np.uint64(32)) | (_LOW32 - index)


def _decode(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ordered = keys >> np.uint64(32)
    bits = np.where(ordered >= _SIGN, ordered - _SIGN, _LOW32 - ordered).astype(np.uint32)
    indices = (_LOW32 - (keys & _LOW32)).astype(np.int64)
    return indices, bits.view(np.float32)


def _largest(keys: np.ndarray, k: int) -> np.ndarray:
    if keys.shape[1] <= k:
        return keys
    return np.take_along_axis(keys, np.argpartition(keys, keys.shape[1] - k, axis=1)[:, -k:], axis=1)


def top_k_similar(
    queries: np.ndarray,
    candidates: np.ndarray,
    k: int,
    *,
    allowed: np.ndarray | None = None,
    query_rows: int = QUERY_ROWS,
    block_rows: int = BLOCK_ROWS,
) -> TopK:
    """For each query row, the ``k`` candidate rows of highest cosine similarity (best first, ties
    by lower index). ``allowed`` (a boolean mask over candidates) restricts the candidates; k is
    cut to the number of candidates allowed. Candidates are read block by block, so a memory-mapped
    array works; memory beyond the inputs is O(query_rows × block_rows + n_queries × k).
    """
    if k < 0:
        raise QrelkitError(f"k must be >= 0, got {k}")
    if query_rows < 1 or block_rows < 1:
        raise QrelkitError("query_rows and block_rows must be >= 1")
    queries = unit_rows(queries, "query embeddings", np.float64)
    candidates = np.asarray(candidates)
    if candidates.ndim != 2 or candidates.shape[1] != queries.shape[1]:
        raise QrelkitError(f"candidate embeddings have shape {candidates.shape}, the queries' dimension is {queries.shape[1]}")
    n_candidates = candidates.shape[0]
    if n_candidates >= 2**32:
        raise QrelkitError("more than 2^32 candidates: split them")
    if allowed is not None:
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (n_candidates,):
            raise QrelkitError(f"allowed mask has shape {allowed.shape}, expected ({n_candidates},)")
    k = min(k, n_candidates if allowed is None else int(allowed.sum()))
    n_queries = queries.shape[0]
    if k == 0 or n_queries == 0:
        return TopK(np.zeros((n_queries, k), np.int64), np.zeros((n_queries, k), np.float32))
    # Normalised block by block, so a 500k × 384 candidate matrix is never copied whole.
    blocks = [(start, min(start + block_rows, n_candidates)) for start in range(0, n_candidates, block_rows)]
    best_rows = []
    for q_start in range(0, n_queries, query_rows):
        chunk = queries[q_start : q_start + query_rows]
        best = np.zeros((chunk.shape[0], 0), np.uint64)
        for start, stop in blocks:
            block = unit_rows(candidates[start:stop], "candidate embeddings", np.float64)
            scores = (chunk @ block.T).astype(np.float32)
            if allowed is not None:
                scores[:, ~allowed[start:stop]] = -np.inf  # sorts below every allowed cosine
            best = _largest(np.concatenate([best, _largest(_keys(scores, start), k)], axis=1), k)
        best_rows.append(np.sort(best, axis=1)[:, ::-1])
    indices, scores = _decode(np.concatenate(best_rows, axis=0))
    return TopK(np.ascontiguousarray(indices), np.ascontiguousarray(scores))
