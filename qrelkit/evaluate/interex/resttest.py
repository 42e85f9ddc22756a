"""ReSTTest (Zhan et al., CIKM 2022, §4.1.3): resample training and test queries together.

k-means (scikit-learn, seeded) clusters the training and test query embeddings into k buckets.
For bucket b: a model is trained on the training queries of the other k − 1 buckets, the test
queries of those buckets are its interpolation test set and the test queries of b its
extrapolation test set. Over the k buckets every test query is extrapolated exactly once and
interpolated k − 1 times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.interex.regimes import BucketQueries
from qrelkit.evaluate.interex.similarity import unit_rows


@dataclass(frozen=True)
class Bucket:
    """The training and test queries k-means put in one cluster, in their input order."""

    name: str  # bucket-1 ... bucket-k
    train_qids: tuple[str, ...]
    test_qids: tuple[str, ...]


@dataclass(frozen=True)
class ReSTTestSplit:
    k: int
    seed: int
    buckets: tuple[Bucket, ...]
    inertia: float  # k-means' sum of squared distances to the centres (unit vectors)

    def bucket(self, name: str) -> Bucket:
        for bucket in self.buckets:
            if bucket.name == name:
                return bucket
        raise QrelkitError(f"no bucket {name!r}; buckets: {', '.join(b.name for b in self.buckets)}")

    def training_qids(self, name: str) -> tuple[str, ...]:
        """The training set of bucket ``name``: the training queries of every other bucket."""
        return tuple(q for b in self.buckets if b.name != name for q in b.train_qids)

    def interpolation_qids(self, name: str) -> tuple[str, ...]:
        return tuple(q for b in self.buckets if b.name != name for q in b.test_qids)

    def extrapolation_qids(self, name: str) -> tuple[str, ...]:
        return self.bucket(name).test_qids

    def test_splits(self) -> tuple[BucketQueries, ...]:
        """What `evaluate_resttest` takes: each bucket's interpolation and extrapolation test queries."""
        return tuple(BucketQueries(b.name, self.interpolation_qids(b.name), b.test_qids) for b in self.buckets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "seed": self.seed,
            "inertia": self.inertia,
            "buckets": {
                b.name: {
                    "train_queries_in_bucket": len(b.train_qids),
                    "test_queries_in_bucket": len(b.test_qids),
                    "training_set": sum(len(o.train_qids) for o in self.buckets if o is not b),
                    "interpolation_test_set": sum(len(o.test_qids) for o in self.buckets if o is not b),
                    "extrapolation_test_set": len(b.test_qids),
                }
                for b in self.buckets
            },
        }


def resttest(
    test_vectors: np.ndarray,
    test_qids: Sequence[str],
    train_vectors: np.ndarray,
    train_qids: Sequence[str],
    *,
    k: int = 5,
    seed: int = 0,
    n_init: int = 1,
    max_iter: int = 300,
) -> ReSTTestSplit:
    """Cluster training and test queries together into ``k`` buckets.

    Rows are scaled to unit length first, so k-means' squared distances are 2 − 2·cosine: the
    buckets follow the same similarity as ReSTrain. Memory: one float32 copy of all rows.
    """
    if k < 2:
        raise QrelkitError(f"ReSTTest needs k >= 2 buckets, got {k}")
    for what, vectors, qids in (("test", test_vectors, test_qids), ("training", train_vectors, train_qids)):
        if vectors.shape[0] != len(qids):
            raise QrelkitError(f"{vectors.shape[0]} {what} embeddings for {len(qids)} {what} qids")
        if len(set(qids)) != len(qids):
            raise QrelkitError(f"{what} qids repeat: each {what} query must appear once")
    if len(test_qids) == 0 or len(train_qids) == 0:
        raise QrelkitError("ReSTTest needs training and test queries")
    if test_vectors.shape[1] != train_vectors.shape[1]:
        raise QrelkitError(f"test embeddings have dimension {test_vectors.shape[1]}, training embeddings {train_vectors.shape[1]}")
    n_test, n_all = len(test_qids), len(test_qids) + len(train_qids)
    if n_all < k:
        raise QrelkitError(f"{n_all} queries cannot fill k = {k} buckets")
    from sklearn.cluster import KMeans

    rows = np.empty((n_all, test_vectors.shape[1]), np.float32)
    rows[:n_test] = unit_rows(test_vectors, "test embeddings")
    for start in range(0, len(train_qids), 65536):  # normalised in slices: no second full-size copy
        stop = min(start + 65536, len(train_qids))
        rows[n_test + start : n_test + stop] = unit_rows(train_vectors[start:stop], "training embeddings")
    # copy_x=False: k-means centres the rows in place; they are our own copy.
    model = KMeans(n_clusters=k, random_state=seed, n_init=n_init, max_iter=max_iter, copy_x=False)
    labels = model.fit_predict(rows)
    del rows
    test_labels, train_labels = labels[:n_test], labels[n_test:]
    buckets = tuple(
        Bucket(
            f"bucket-{b + 1}",
            tuple(train_qids[int(i)] for i in np.flatnonzero(train_labels == b)),
            tuple(test_qids[int(i)] for i in np.flatnonzero(test_labels == b)),
        )
        for b in range(k)
    )
    return ReSTTestSplit(k, seed, buckets, float(model.inertia_))
