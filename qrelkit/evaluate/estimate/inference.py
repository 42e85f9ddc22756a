"""What is concluded from estimates and their covariance: 95% intervals, the differences between
runs and which are told apart, each run's possible ranks, and the effective number of labels.

Intervals are estimate -/+ q standard errors, q the normal's 97.5% quantile, or Student's t with
``df`` degrees of freedom where the variance comes from a few units (n - 1 for n whole queries);
their coverage is measured, not assumed (`benchmarks/bench_human_budget.py`). A pair of runs is told apart when the 95% interval of its
difference excludes 0; each comparison is at 95% on its own (no correction for the many pairs).
"""

from __future__ import annotations

import numpy as np

Z95 = 1.959963984540054  # the normal's 97.5% quantile


def quantile(df: float | np.ndarray | None) -> np.ndarray:
    """The 97.5% quantile: the normal's for df None or inf, else Student's t."""
    if df is None or not np.isfinite(df).any():
        return np.full(np.shape(df), Z95) if df is not None else np.asarray(Z95)
    from scipy.special import stdtrit  # scipy.stats alone would take a second to import

    df = np.asarray(df, dtype=np.float64)
    return np.where(np.isfinite(df), stdtrit(np.where(np.isfinite(df), np.maximum(df, 1.0), 1.0), 0.975), Z95)


def intervals(values: np.ndarray, covariance: np.ndarray, df: float | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) (..., R); ``df`` (...,) per draw."""
    half = quantile(df)[..., None] * np.sqrt(np.clip(np.diagonal(covariance, axis1=-2, axis2=-1), 0.0, None))
    return values - half, values + half


def differences(values: np.ndarray, covariance: np.ndarray, df: float | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(value_r - value_s (..., R, R), the half-width of its 95% interval (..., R, R))."""
    variance = np.diagonal(covariance, axis1=-2, axis2=-1)
    spread = variance[..., :, None] + variance[..., None, :] - 2.0 * covariance
    return values[..., :, None] - values[..., None, :], quantile(df)[..., None, None] * np.sqrt(np.clip(spread, 0.0, None))


def told_apart(values: np.ndarray, covariance: np.ndarray, df: float | np.ndarray | None = None) -> np.ndarray:
    """(..., R, R) bool: run r is told apart from run s (their difference's interval excludes 0)."""
    difference, half = differences(values, covariance, df)
    return np.abs(difference) > half


def rank_intervals(values: np.ndarray, covariance: np.ndarray, df: float | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) possible rank of each run (1 = highest): the runs told apart above it fix how
    high it can stand, those told apart below how low."""
    difference, half = differences(values, covariance, df)
    above = ((-difference) > half).sum(axis=-1)  # runs significantly higher
    below = (difference > half).sum(axis=-1)
    return 1 + above, values.shape[-1] - below


def effective_labels(labels: int | np.ndarray, human_variance: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """How many human labels the human-only estimator of the same design would need for the
    variance ``variance``: labels x human_variance / variance (what the judge's labels were worth)."""
    safe = np.where(variance > 0, variance, np.nan)
    return np.asarray(labels) * human_variance / safe
