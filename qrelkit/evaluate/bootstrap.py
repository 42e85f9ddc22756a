"""The bootstrap over queries, one way for every statistic: one resample draw and one interval.

A resample draws the Q queries with replacement; it is kept as multiplicities (how often each
query was drawn, a multinomial draw), so a statistic that is a mean over queries is a matrix
product with the per-query values, and every analysis that uses the same seed sees the same
draws. Intervals are percentile intervals over the resamples on which the statistic is defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from qrelkit.errors import QrelkitError


def resample_counts(n_queries: int, resamples: int, seed: int | None = 0) -> np.ndarray:
    """(resamples, n_queries) float64 multiplicities: each row draws n_queries queries with replacement."""
    if n_queries < 1:
        raise QrelkitError("the bootstrap needs at least one query")
    if resamples < 0:
        raise QrelkitError(f"bootstrap resamples must be >= 0, got {resamples}")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=resamples).astype(np.float64)


def resample_weights(n_queries: int, resamples: int, seed: int | None = 0) -> np.ndarray:
    """The same draws as :func:`resample_counts`, divided by n_queries: a row times a per-query
    vector is that resample's mean."""
    return resample_counts(n_queries, resamples, seed) / n_queries


class Interval(NamedTuple):
    """A percentile bootstrap interval."""

    low: float
    high: float


def percentile_interval(values: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval of ``values``, ignoring resamples where the statistic is undefined (NaN or inf)."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return Interval(math.nan, math.nan)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return Interval(float(low), float(high))


@dataclass(frozen=True)
class BootstrapSummary:
    """Mean and percentile interval of a statistic's resampled values."""

    mean: float
    interval: Interval
    resamples: int  # resamples on which the statistic is defined
    level: float = 0.95

    @property
    def low(self) -> float:
        return self.interval.low

    @property
    def high(self) -> float:
        return self.interval.high


def summarize(values: np.ndarray, level: float = 0.95) -> BootstrapSummary | None:
    """None when the statistic is undefined on every resample."""
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    return BootstrapSummary(float(finite.mean()), percentile_interval(finite, level), int(finite.size), level)
