"""Bootstrap of FD@k over queries (seed 000, section 4, Figure 1), without re-stacking vectors.

A resample draws the query set with replacement: query q appears w_q times (a multinomial
draw). Every item then carries its query's multiplicity as a weight, so a resample's sample
is the original items with weights, and its statistics are weighted sums:

    n = Σ_q w_q n_q,   μ = Σ_q w_q s_q / n,   Tr Σ = (Σ_q w_q ‖x‖²_q − n‖μ‖²) / (n − 1)

with n_q, s_q (sum of vectors) and ‖x‖²_q (sum of squared norms) kept per query: one matrix
product gives every resample's mean and trace term at once. Only the cross term
Tr (Σ₁^½ Σ₂ Σ₁^½)^½ needs an eigenvalue problem per (resample, run), and it is solved in the
smallest space available (see `fd.py`): the drawn relevant items' own rows when they are fewer
than d (FD@k with at most m relevant per query), else the run's drawn rows against Σ₁, else d.
The relevant side's factor is built once per resample and shared by every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from qrelkit.evaluate.fd.distance import sum_sqrt_eigenvalues, trace_sqrt_product
from qrelkit.evaluate.fd.items import ItemSample


@dataclass(frozen=True)
class QueryStats:
    """Per-query sufficient statistics of an ItemSample (Q queries)."""

    counts: np.ndarray  # (Q,)
    sums: np.ndarray  # (Q, d)
    sq_norms: np.ndarray  # (Q,)

    @classmethod
    def of(cls, sample: ItemSample) -> QueryStats:
        n_queries, d = len(sample.qids), sample.vectors.shape[1]
        counts = np.bincount(sample.query_index, minlength=n_queries).astype(np.float64)
        sums = np.zeros((n_queries, d))
        np.add.at(sums, sample.query_index, sample.vectors)
        sq_norms = np.bincount(sample.query_index, weights=np.sum(sample.vectors**2, axis=1), minlength=n_queries)
        return cls(counts, sums, sq_norms)

    def moments(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, μ, Tr Σ) for each row of ``weights`` (B, Q); Tr Σ is NaN where n < 2."""
        n = weights @ self.counts
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (weights @ self.sums) / n[:, None]
            trace = (weights @ self.sq_norms - n * np.sum(mean**2, axis=1)) / (n - 1)
        trace[n < 2] = np.nan
        return n, mean, trace


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


class _RelevantSide:
    """The relevant items under one resample: which are drawn, their weights and mean, and Σ₁
    when the drawn items outnumber the dimensions."""

    def __init__(self, sample: ItemSample, weights: np.ndarray, n: float, mean: np.ndarray):
        item_weights = weights[sample.query_index]
        self.drawn = np.flatnonzero(item_weights > 0)
        self.weights = item_weights[self.drawn]
        self.n = n
        self.mean = mean
        self.d = sample.vectors.shape[1]
        self.small = len(self.drawn) <= self.d
        self.cov: np.ndarray | None = None
        self.square_factor: np.ndarray | None = None
        if not self.small:
            rows = np.sqrt(self.weights / (n - 1))[:, None] * (sample.vectors[self.drawn] - mean)
            self.cov = rows.T @ rows

    def factor(self) -> np.ndarray:
        """A d×d factor of Σ₁ (Cholesky; eigenvectors when Σ₁ is singular), for large runs."""
        if self.square_factor is None:
            try:
                self.square_factor = np.linalg.cholesky(self.cov).T
            except np.linalg.LinAlgError:
                values, vectors = np.linalg.eigh(self.cov)
                keep = values > 0
                self.square_factor = np.sqrt(values[keep])[:, None] * vectors[:, keep].T
        return self.square_factor


def _trace_from_products(side: _RelevantSide, products: np.ndarray, drawn: np.ndarray, weights: np.ndarray, n2: float) -> float:
    """Tr (Σ₁^½ Σ₂ Σ₁^½)^½ when the drawn relevant items are at most d, from P = X_rel Y_runᵀ.

    K = A₁A₂ᵀ = D₁ (X − 1μ₁ᵀ)(Y − 1μ₂ᵀ)ᵀ D₂ needs only inner products: with P_s the drawn block of
    P, Xμ₂ = P_s u/n₂, Yμ₁ = P_sᵀw/n₁ and μ₁·μ₂ = wᵀP_s u/(n₁n₂). So a resample costs r×c
    operations on numbers already computed, not r×c×d.
    """
    block = products[np.ix_(side.drawn, drawn)]
    rel_dot_run_mean = block @ weights / n2
    run_dot_rel_mean = side.weights @ block / side.n
    means_dot = side.weights @ rel_dot_run_mean / side.n
    centred = block - rel_dot_run_mean[:, None] - run_dot_rel_mean[None, :] + means_dot
    k = np.sqrt(side.weights / (side.n - 1))[:, None] * centred * np.sqrt(weights / (n2 - 1))[None, :]
    return sum_sqrt_eigenvalues(k @ k.T if k.shape[0] <= k.shape[1] else k.T @ k)


def _trace_from_rows(side: _RelevantSide, run_rows: np.ndarray) -> float:
    """Tr (Σ₁^½ Σ₂ Σ₁^½)^½ when the drawn relevant items outnumber d, with Σ₂ = run_rowsᵀ run_rows."""
    if run_rows.shape[0] <= side.d:
        # eigenvalues of A₂ Σ₁ A₂ᵀ (c×c) = those of K Kᵀ with K = A₂ A₁ᵀ, without forming K
        return sum_sqrt_eigenvalues(run_rows @ side.cov @ run_rows.T)
    return trace_sqrt_product(side.factor(), run_rows)


def _score_run(
    sample: ItemSample,
    moments: tuple[np.ndarray, np.ndarray, np.ndarray],
    products: np.ndarray | None,
    sides: list[tuple[int, _RelevantSide | None]],
    weights: np.ndarray,
    rel_trace: np.ndarray,
    out: np.ndarray,
) -> None:
    n2, mean2, trace2 = moments
    for b, side in sides:
        if side is None or not n2[b] >= 2:
            continue
        item_weights = weights[b][sample.query_index]
        drawn = np.flatnonzero(item_weights > 0)
        run_weights = item_weights[drawn]
        if side.small:
            cross = _trace_from_products(side, products, drawn, run_weights, n2[b])
        else:
            run_rows = np.sqrt(run_weights / (n2[b] - 1))[:, None] * (sample.vectors[drawn] - mean2[b])
            cross = _trace_from_rows(side, run_rows)
        diff = side.mean - mean2[b]
        out[b] = max(float(diff @ diff) + rel_trace[b] + trace2[b] - 2.0 * cross, 0.0)


def bootstrap_fd(
    relevant: ItemSample,
    retrieved: Sequence[ItemSample],
    weights: np.ndarray,
    *,
    workers: int | None = None,
    chunk: int = 50,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """FD of each retrieved sample against the relevant one under each resample: (runs, N).

    ``weights`` (N, Q) are query multiplicities over ``relevant.qids`` (the retrieved samples
    must use the same qids). A resample in which either side has fewer than 2 items gives NaN.
    Runs are scored in ``workers`` threads (default: the available cores) with single-threaded
    BLAS each: the matrices are small, and BLAS threads on a busy machine cost more than they give.
    """
    for sample in retrieved:
        if sample.qids != relevant.qids:
            raise ValueError("retrieved samples must be grouped by the relevant sample's qids")
    weights = np.asarray(weights, dtype=np.float64)
    n1, mean1, trace1 = QueryStats.of(relevant).moments(weights)
    run_moments = [QueryStats.of(sample).moments(weights) for sample in retrieved]
    out = np.full((len(retrieved), weights.shape[0]), np.nan)
    workers = workers or _cores()
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=workers) as pool:
        products: list[np.ndarray | None] = [None] * len(retrieved)
        for start in range(0, weights.shape[0], chunk):
            sides = [
                (b, _RelevantSide(relevant, weights[b], n1[b], mean1[b]) if n1[b] >= 2 else None)
                for b in range(start, min(start + chunk, weights.shape[0]))
            ]
            if any(side is not None and side.small for _, side in sides) and products[0] is None:
                # inner products of every relevant item with every retrieved item, once per run
                products = list(pool.map(lambda sample: relevant.vectors @ sample.vectors.T, retrieved))
            jobs = [
                pool.submit(_score_run, sample, run_moments[j], products[j], sides, weights, trace1, out[j])
                for j, sample in enumerate(retrieved)
            ]
            for job in jobs:
                job.result()
            if progress is not None:
                progress(min(start + chunk, weights.shape[0]), weights.shape[0])
    return out
