"""Bootstrap of FD@k over queries (seed 000, section 4, Figure 1), without re-stacking vectors.

A resample draws the query set with replacement: query q appears w_q times (a multinomial
draw). Every item then carries its query's multiplicity as a weight, so a resample's sample
is the original items with weights, and its statistics are weighted sums:

    n = Σ_q w_q n_q,   μ = Σ_q w_q s_q / n,   Tr Σ = (Σ_q w_q ‖x‖²_q − n‖μ‖²) / (n − 1)

with n_q, s_q (sum of vectors) and ‖x‖²_q (sum of squared norms) kept per query: one matrix
product gives every resample's mean and trace term at once. Only the cross term
Tr (Σ₁^½ Σ₂ Σ₁^½)^½ = Σ √λ(G) needs an eigenvalue problem per (resample, run), on a Gram
matrix G of the smallest size available (see `distance.py` for the identity): K Kᵀ from the
inner products of relevant and retrieved items when at most d relevant items are drawn
(`_cross_from_products`); else A₂ Σ₁ A₂ᵀ over the run's drawn items, one matrix product for a
chunk of resamples (`_cross_from_run_gram`); or, when that tensor would not fit in memory (very
deep k), both covariances in d dimensions (`_RunScorer.cross_in_d`).

Runs are independent, so a large bootstrap is spread over worker processes (one per core), each
with single-threaded BLAS. Not threads: NumPy's eigenvalue routine holds the GIL, so two threads
took as long as one (measured: 1.05 s for twice the work one thread did in 0.52 s; two processes
0.60 s). A small one (under about a second of work) stays in this process.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from qrelkit.errors import FatalJobError
from qrelkit.evaluate.fd.distance import factor_from_covariance, sum_sqrt_eigenvalues
from qrelkit.evaluate.fd.items import ItemSample
from qrelkit.io.workers.processes import can_start_processes, children_skip_main, ignore_interrupts, stop_workers
from qrelkit.machine import available_cores

Progress = Callable[[int, int], None]
TENSOR_LIMIT = 40_000_000  # float64 entries (320 MB) of one run's per-query Gram tensor


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


def _second_moments(sample: ItemSample) -> np.ndarray:
    """(Q, d, d) Σ_{items of q} x xᵀ."""
    n_queries, d = len(sample.qids), sample.vectors.shape[1]
    out = np.zeros((n_queries, d, d))
    for q in range(n_queries):
        rows = sample.vectors[sample.query_index == q]
        out[q] = rows.T @ rows
    return out


def _drawn(sample: ItemSample, weights_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the items whose query was drawn, their weights)."""
    item_weights = weights_row[sample.query_index]
    drawn = np.flatnonzero(item_weights > 0)
    return drawn, item_weights[drawn]


def _cross_from_products(
    products: np.ndarray, rel: tuple[np.ndarray, np.ndarray, float], run: tuple[np.ndarray, np.ndarray, float]
) -> float:
    """Σ √λ of K Kᵀ for K = A₁A₂ᵀ, from P = X Yᵀ: with P_s the drawn block, Xμ₂ = P_s u/n₂ and
    μ₁ᵀ(Y − μ₂) = wᵀ(P_s − Xμ₂ 1ᵀ)/n₁, so K costs r×c operations on P, not r×c×d."""
    (rows, w, n1), (cols, u, n2) = rel, run
    k = products[rows][:, cols]  # a copy, centred and scaled in place below
    k -= (k @ u / n2)[:, None]
    k -= (w @ k / n1)[None, :]
    k *= np.sqrt(w / (n1 - 1))[:, None]
    k *= np.sqrt(u / (n2 - 1))[None, :]
    return sum_sqrt_eigenvalues(k @ k.T if k.shape[0] <= k.shape[1] else k.T @ k)


def _cross_from_run_gram(moments: np.ndarray, y_mean: np.ndarray, n1: float, cols: np.ndarray, u: np.ndarray, n2: float) -> float:
    """Σ √λ of A₂ Σ₁ A₂ᵀ from the run's items' Σ_q w_q (X_q Yᵀ)ᵀ(X_q Yᵀ) (``moments``) and Y μ₁
    (``y_mean``): M = Y Σ₁ Yᵀ = (moments − n₁ Yμ₁ μ₁ᵀYᵀ)/(n₁ − 1) on the drawn items, then centring
    by μ₂ = Yᵀu/n₂ only needs M u (Y Σ₁ μ₂ = M u/n₂, μ₂ᵀΣ₁μ₂ = uᵀM u/n₂²)."""
    m = moments[cols][:, cols]
    mean = y_mean[cols]
    m -= n1 * mean[:, None] * mean[None, :]
    m /= n1 - 1
    v = m @ u / n2
    m -= v[:, None]
    m -= v[None, :]
    m += (u @ v) / n2
    root = np.sqrt(u / (n2 - 1))
    m *= root[:, None]
    m *= root[None, :]
    return sum_sqrt_eigenvalues(m)


class _RunScorer:
    """The cross terms of one run under every resample."""

    def __init__(self, shared: _Shared, sample: ItemSample):
        self.relevant, self.rel_stats, self.rel_moments = shared.relevant, shared.rel_stats, shared.rel_moments
        self.sample, self.d = sample, shared.relevant.vectors.shape[1]
        self._buffer: np.ndarray | None = None  # (chunk, n_run²) for run_moments

    @cached_property
    def products(self) -> np.ndarray:
        return self.relevant.vectors @ self.sample.vectors.T

    @cached_property
    def tensor(self) -> np.ndarray:
        """(Q, n_run, n_run): (X_q Yᵀ)ᵀ (X_q Yᵀ)."""
        n_queries, n_run = len(self.relevant.qids), len(self.sample)
        tensor = np.zeros((n_queries, n_run, n_run))
        for q in range(n_queries):
            block = self.products[self.relevant.query_index == q]
            tensor[q] = block.T @ block
        return tensor

    @cached_property
    def run_second_moments(self) -> np.ndarray:
        return _second_moments(self.sample)

    def run_moments(self, weights: np.ndarray, n1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For a chunk of resamples (rows of ``weights``): Σ_q w_q (X_q Yᵀ)ᵀ(X_q Yᵀ), (c, n_run,
        n_run), and Y μ₁, (c, n_run). One matrix product for the whole chunk."""
        tensor = self.tensor
        if self._buffer is None or self._buffer.shape[0] < weights.shape[0]:
            self._buffer = np.empty((weights.shape[0], tensor.shape[1] * tensor.shape[2]))
        flat = self._buffer[: weights.shape[0]]  # reused: a fresh 70 MB array per chunk costs more in page faults than the product
        np.matmul(weights, tensor.reshape(tensor.shape[0], -1), out=flat)
        moments = flat.reshape(weights.shape[0], *tensor.shape[1:])
        y_sums = self.sample.vectors @ self.rel_stats.sums.T  # (n_run, Q): Y s_q
        return moments, (weights @ y_sums.T) / n1[:, None]

    def cross_in_d(self, weights_row: np.ndarray, n1: float, mean1: np.ndarray, n2: float, mean2: np.ndarray) -> float:
        """Both covariances in d dimensions, from per-query second moments (very deep k only)."""
        assert self.rel_moments is not None
        cov1 = (np.tensordot(weights_row, self.rel_moments, axes=(0, 0)) - n1 * np.outer(mean1, mean1)) / (n1 - 1)
        cov2 = (np.tensordot(weights_row, self.run_second_moments, axes=(0, 0)) - n2 * np.outer(mean2, mean2)) / (n2 - 1)
        rows = factor_from_covariance(mean1, cov1).rows
        return sum_sqrt_eigenvalues(rows @ cov2 @ rows.T)


@dataclass(frozen=True)
class _Shared:
    """What every piece of work reads: the relevant side and the resamples."""

    relevant: ItemSample
    rel_stats: QueryStats
    rel_moments: np.ndarray | None
    weights: np.ndarray
    rel: tuple[np.ndarray, np.ndarray, np.ndarray]  # (n, μ, Tr Σ) of the relevant side per resample
    chunk: int


def _score_piece(shared: _Shared, sample: ItemSample, start: int, stop: int, report: Callable[[int], None]) -> np.ndarray:
    """One run's FD under resamples start..stop."""
    scorer = _RunScorer(shared, sample)
    weights = shared.weights[start:stop]
    n1, mean1, trace1 = (part[start:stop] for part in shared.rel)
    n2, mean2, trace2 = QueryStats.of(sample).moments(weights)
    out = np.full(weights.shape[0], np.nan)
    for first in range(0, weights.shape[0], shared.chunk):
        last = min(first + shared.chunk, weights.shape[0])
        valid = [b for b in range(first, last) if n1[b] >= 2 and n2[b] >= 2]
        sides = {b: _drawn(scorer.relevant, weights[b]) for b in valid}
        large = [b for b in valid if len(sides[b][0]) > scorer.d]
        grams: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if large and len(scorer.relevant.qids) * len(scorer.sample) ** 2 <= TENSOR_LIMIT:
            moments, y_means = scorer.run_moments(weights[large], n1[large])
            grams = {b: (moments[i], y_means[i]) for i, b in enumerate(large)}
        for b in valid:
            cols, u = _drawn(scorer.sample, weights[b])
            if b not in large:
                rows, w = sides[b]
                cross = _cross_from_products(scorer.products, (rows, w, n1[b]), (cols, u, n2[b]))
            elif b in grams:
                cross = _cross_from_run_gram(*grams.pop(b), n1[b], cols, u, n2[b])
            else:
                cross = scorer.cross_in_d(weights[b], n1[b], mean1[b], n2[b], mean2[b])
            diff = mean1[b] - mean2[b]
            out[b] = max(float(diff @ diff) + trace1[b] + trace2[b] - 2.0 * cross, 0.0)
        report(last - first)
    return out


# In a worker process: the shared inputs, the progress queue, and the BLAS limit kept in force.
_WORKER: dict[str, Any] = {}


def _start_worker(shared: _Shared, events: Any) -> None:
    ignore_interrupts()  # Ctrl-C is the parent's to handle: it stops the workers
    _WORKER.update(shared=shared, events=events, blas=threadpool_limits(limits=1, user_api="blas"))


def _score_in_worker(sample: ItemSample, start: int, stop: int) -> np.ndarray:
    return _score_piece(_WORKER["shared"], sample, start, stop, _WORKER["events"].put)


SERIAL_SECONDS = 1.0  # below this estimate, starting worker processes (~0.3 s) is not worth it


def _estimated_seconds(relevant: ItemSample, retrieved: Sequence[ItemSample], resamples: int) -> float:
    """A rough single-core estimate: per (resample, run) an eigenproblem of the smaller side's
    drawn items (~1.7 ms at size 255 on a 2020s core) plus ~0.1 ms of array work."""
    n_queries = max(len(relevant.qids), 1)
    drawn = 1.0 - (1.0 - 1.0 / n_queries) ** n_queries  # expected share of queries in a resample
    return resamples * sum((min(len(relevant), len(s)) * drawn) ** 3 * 1.0e-10 + 1.0e-4 for s in retrieved)


def _pieces(retrieved: Sequence[ItemSample], resamples: int, workers: int) -> list[tuple[int, int, int]]:
    """(run, first resample, end) tasks, largest runs first: one per run, or a run's resamples cut
    in parts when there are fewer runs than workers."""
    parts = max(1, -(-workers // max(len(retrieved), 1)))
    bounds = np.linspace(0, resamples, min(parts, max(resamples, 1)) + 1).astype(int)
    order = sorted(range(len(retrieved)), key=lambda j: -len(retrieved[j]))
    return [(j, int(a), int(b)) for j in order for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _in_processes(shared: _Shared, retrieved: Sequence[ItemSample], workers: int, out: np.ndarray, tick: Callable[[int], None]) -> None:
    context = multiprocessing.get_context("spawn")  # not fork: the caller may hold threads (DuckDB, BLAS)
    events = context.Queue()
    tasks = _pieces(retrieved, shared.weights.shape[0], workers)
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)), mp_context=context, initializer=_start_worker, initargs=(shared, events)
    )
    try:
        with children_skip_main():  # the pool starts its processes as the tasks are submitted
            running: dict[Future[np.ndarray], tuple[int, int, int]] = {
                pool.submit(_score_in_worker, retrieved[j], start, stop): (j, start, stop) for j, start, stop in tasks
            }
        while running:
            try:
                tick(events.get(timeout=0.2))
            except queue.Empty:
                pass
            for future in [f for f in running if f.done()]:
                j, start, stop = running.pop(future)
                out[j, start:stop] = future.result()  # a worker's exception (or a killed worker) is raised here
        pool.shutdown(wait=True)
    except BrokenProcessPool as exc:
        stop_workers(pool)
        raise FatalJobError(
            "an FD bootstrap worker process ended without finishing (killed, or out of memory); "
            f"nothing was kept: try fewer workers than {workers} or fewer resamples"
        ) from exc
    except BaseException:
        stop_workers(pool)
        raise
    finally:
        events.close()


def bootstrap_fd(
    relevant: ItemSample,
    retrieved: Sequence[ItemSample],
    weights: np.ndarray,
    *,
    workers: int | None = None,
    chunk: int = 50,
    progress: Progress | None = None,
) -> np.ndarray:
    """FD of each retrieved sample against the relevant one under each resample: (runs, N).

    ``weights`` (N, Q) are query multiplicities over ``relevant.qids`` (the retrieved samples
    must use the same qids). A resample in which either side has fewer than 2 items gives NaN.
    ``workers``: processes to score runs in; default: one per available core when the work is
    large enough to repay starting them (about a second), else this process alone; 1 forces
    this process. The values do not depend on it. ``progress(done, total)`` is called in the
    calling thread as (run, resample) pairs complete; the last call is (total, total).
    """
    for sample in retrieved:
        if sample.qids != relevant.qids:
            raise ValueError("retrieved samples must be grouped by the relevant sample's qids")
    weights = np.asarray(weights, dtype=np.float64)
    rel_stats = QueryStats.of(relevant)
    d = relevant.vectors.shape[1]
    deep = any(len(sample) ** 2 * len(relevant.qids) > TENSOR_LIMIT for sample in retrieved) and len(relevant) > d
    shared = _Shared(relevant, rel_stats, _second_moments(relevant) if deep else None, weights, rel_stats.moments(weights), chunk)
    total = len(retrieved) * weights.shape[0]
    out = np.full((len(retrieved), weights.shape[0]), np.nan)
    done = 0

    def tick(pairs: int) -> None:
        nonlocal done
        done = min(done + pairs, total)
        if progress is not None:
            progress(done, total)

    if workers is None:
        workers = available_cores() if _estimated_seconds(relevant, retrieved, weights.shape[0]) >= SERIAL_SECONDS else 1
    if workers > 1 and total and can_start_processes():
        _in_processes(shared, retrieved, workers, out, tick)
    else:
        with threadpool_limits(limits=1, user_api="blas"):
            for j, sample in enumerate(retrieved):
                out[j] = _score_piece(shared, sample, 0, weights.shape[0], tick)
    if progress is not None and done < total:
        progress(total, total)
    return out
