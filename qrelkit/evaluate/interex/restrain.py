"""ReSTrain (Zhan et al., CIKM 2022, §4.1.2): resample the training queries, keep the test set.

The interpolation training set is the union of each test query's top-I most similar training
queries; the extrapolation training set is every training query except the union of each test
query's top-E, optionally cut to a size (a seeded uniform sample of what remains, so it keeps
the training distribution away from the test queries). Similarity is the cosine of query
embeddings (the paper uses a dense retriever's query encoder).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.interex.similarity import BLOCK_ROWS, top_k_similar


@dataclass(frozen=True)
class NearestSimilarity:
    """How close each test query's nearest training query in one training set is (cosine)."""

    mean: float
    min: float
    max: float

    @classmethod
    def of(cls, scores: np.ndarray) -> NearestSimilarity | None:
        return cls(float(scores.mean()), float(scores.min()), float(scores.max())) if scores.size else None


@dataclass(frozen=True)
class ReSTrainSplit:
    """The two training sets of ReSTrain, as training qids in their input order."""

    interpolation_per_query: int  # I
    exclusion_per_query: int  # E
    extrapolation_size: int | None  # the cap asked for (None: keep every remaining query)
    seed: int
    train_queries: int
    test_queries: int
    interpolation: tuple[str, ...]
    extrapolation: tuple[str, ...]
    excluded: int  # training queries in some test query's top E
    extrapolation_available: int  # training queries left after the exclusion, before the cap
    nearest_interpolation: NearestSimilarity | None  # per test query, its nearest training query in the set
    nearest_extrapolation: NearestSimilarity | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["interpolation_queries"] = len(self.interpolation)
        out["extrapolation_queries"] = len(self.extrapolation)
        del out["interpolation"], out["extrapolation"]
        return out


def _size(extrapolation_size: int | str | None, interpolation: int) -> int | None:
    if extrapolation_size is None:
        return None
    if extrapolation_size == "match":
        return interpolation
    if isinstance(extrapolation_size, str):
        if not extrapolation_size.isdigit():
            raise QrelkitError(f"extrapolation size must be a number of queries or 'match', got {extrapolation_size!r}")
        extrapolation_size = int(extrapolation_size)
    if extrapolation_size < 1:
        raise QrelkitError(f"extrapolation size must be >= 1, got {extrapolation_size}")
    return extrapolation_size


def restrain(
    test_vectors: np.ndarray,
    train_vectors: np.ndarray,
    train_qids: Sequence[str],
    *,
    interpolation_per_query: int,
    exclusion_per_query: int,
    extrapolation_size: int | str | None = None,
    seed: int = 0,
    block_rows: int = BLOCK_ROWS,
) -> ReSTrainSplit:
    """ReSTrain's interpolation and extrapolation training sets.

    ``extrapolation_size``: None keeps every training query outside the top-E sets; a number
    keeps a seeded uniform sample of that many; ``"match"`` samples as many as the interpolation
    set has (the paper compares sets of equal size: 14k, 45k, 200k).
    """
    if interpolation_per_query < 1:
        raise QrelkitError(f"I (training queries per test query for interpolation) must be >= 1, got {interpolation_per_query}")
    if exclusion_per_query < 0:
        raise QrelkitError(f"E (training queries excluded per test query) must be >= 0, got {exclusion_per_query}")
    if interpolation_per_query > exclusion_per_query:
        # a training query ranked between E and I for some test query would be in both training sets
        raise QrelkitError(
            f"I = {interpolation_per_query} > E = {exclusion_per_query}: the extrapolation set excludes only each test query's "
            f"top-{exclusion_per_query}, so queries ranked {exclusion_per_query + 1} to {interpolation_per_query} would be in both "
            "training sets: use E >= I"
        )
    n_train = len(train_qids)
    if train_vectors.shape[0] != n_train:
        raise QrelkitError(f"{train_vectors.shape[0]} training embeddings for {n_train} training qids")
    if len(set(train_qids)) != n_train:
        raise QrelkitError("training qids repeat: each training query must appear once")
    if test_vectors.shape[0] == 0:
        raise QrelkitError("no test queries")
    top = top_k_similar(test_vectors, train_vectors, max(interpolation_per_query, exclusion_per_query), block_rows=block_rows)
    in_interpolation = np.zeros(n_train, bool)
    in_interpolation[top.indices[:, :interpolation_per_query].ravel()] = True
    excluded = np.zeros(n_train, bool)
    excluded[top.indices[:, :exclusion_per_query].ravel()] = True
    available = np.flatnonzero(~excluded)
    if available.size == 0:
        raise QrelkitError(f"E = {exclusion_per_query} excludes all {n_train} training queries: the extrapolation set would be empty")
    size = _size(extrapolation_size, int(in_interpolation.sum()))
    kept = available
    if size is not None and size < available.size:
        kept = np.sort(np.random.default_rng(seed).choice(available, size=size, replace=False))
    in_extrapolation = np.zeros(n_train, bool)
    in_extrapolation[kept] = True
    nearest_extrapolation = top_k_similar(test_vectors, train_vectors, 1, allowed=in_extrapolation, block_rows=block_rows)
    return ReSTrainSplit(
        interpolation_per_query=interpolation_per_query,
        exclusion_per_query=exclusion_per_query,
        extrapolation_size=size,
        seed=seed,
        train_queries=n_train,
        test_queries=int(test_vectors.shape[0]),
        interpolation=tuple(train_qids[int(i)] for i in np.flatnonzero(in_interpolation)),
        extrapolation=tuple(train_qids[int(i)] for i in kept),
        excluded=int(excluded.sum()),
        extrapolation_available=int(available.size),
        # the top-1 is in every top-I, so the nearest interpolation query is the nearest overall
        nearest_interpolation=NearestSimilarity.of(top.scores[:, 0]),
        nearest_extrapolation=NearestSimilarity.of(nearest_extrapolation.scores[:, 0]),
    )
