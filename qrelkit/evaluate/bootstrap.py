"""The bootstrap over queries, one way for every statistic: one resample draw and one interval.

A resample draws the Q queries with replacement; it is kept as multiplicities (how often each
query was drawn, a multinomial draw), so a statistic that is a mean over queries is a matrix
product with the per-query values, and every analysis that uses the same seed sees the same
draws. The jackknife (each query left out once) is the same kind of weight matrix, so any
statistic written as a function of query weights gets its bootstrap and jackknife values from
one code path: :func:`paired_intervals`.

Two interval methods, over the resamples on which the statistic is defined:

- ``bca`` (the default): bias-corrected and accelerated (Efron, JASA 1987; Efron and Tibshirani
  1993, 14.3). Resampling queries with replacement adds noise to every system's mean, so
  resampled τ sits below the full-sample τ and a percentile interval can miss its own estimate;
  BCa moves the percentiles by the bias correction z0 = Φ⁻¹(share of resamples below the
  estimate, ties counted half) and the acceleration a from the jackknife over queries. The
  formulas and conventions are scipy.stats.bootstrap's (method='BCa'): tests feed scipy our
  own resamples and get the same interval.
- ``percentile``: the percentiles of the resampled values (numpy's linear interpolation), the
  interval qrelkit gave before BCa; the draws are unchanged, so it is the same to the last digit.

An estimate outside its interval always carries a note, as does a BCa interval that could not
be computed (then the percentile interval is given, and named).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import (  # noqa: F401  (the bootstrap's choices, checked where a request is made)
    DEFAULT_METHOD,
    DEFAULT_RESAMPLES,
    MAX_RESAMPLES,
    MAX_WEIGHT_ENTRIES,
    METHOD_NAMES,
    METHODS,
    check_method,
    check_resamples,
)


def resample_counts(n_queries: int, resamples: int, seed: int | None = 0) -> np.ndarray:
    """(resamples, n_queries) float64 multiplicities: each row draws n_queries queries with replacement."""
    if n_queries < 1:
        raise QrelkitError("the bootstrap needs at least one query")
    check_resamples(resamples, n_queries)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=resamples).astype(np.float64)


def resample_weights(n_queries: int, resamples: int, seed: int | None = 0) -> np.ndarray:
    """The same draws as :func:`resample_counts`, divided by n_queries: a row times a per-query
    vector is that resample's mean."""
    return resample_counts(n_queries, resamples, seed) / n_queries


def jackknife_counts(n_queries: int, max_groups: int | None = None) -> np.ndarray:
    """Multiplicities of the jackknife: row i holds every query once but query i, (n_queries, n_queries).

    With ``max_groups`` = G < n_queries, the grouped (delete-a-group) jackknife instead: query i
    belongs to group i mod G and row g leaves group g out, (G, n_queries). The acceleration is
    computed the same way from G values; for a statistic that costs an eigenvalue problem per row
    (FD) it keeps the jackknife at G rows however many queries there are."""
    if max_groups is None or n_queries <= max_groups:
        return 1.0 - np.eye(n_queries)
    group = np.arange(n_queries) % max_groups
    return (group[None, :] != np.arange(max_groups)[:, None]).astype(np.float64)


def jackknife_weights(n_queries: int) -> np.ndarray:
    """:func:`jackknife_counts` as means: a row times a per-query vector is the mean without one query."""
    if n_queries < 2:
        return np.zeros((0, n_queries))
    return jackknife_counts(n_queries) / (n_queries - 1)


def uniform_weights(n_queries: int) -> np.ndarray:
    """(1, n_queries): every query once, as a mean; the statistic's own estimate."""
    return np.full((1, n_queries), 1.0 / n_queries)


class Interval(NamedTuple):
    """The two ends of an interval."""

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
class IntervalEstimate:
    """A bootstrap interval with what it is: its method ('BCa' or 'percentile'), level, the
    resamples it rests on, and a note whenever it should not be read as it stands."""

    low: float
    high: float
    method: str  # as printed: "BCa" or "percentile"
    level: float
    resamples: int  # resamples on which the statistic is defined
    note: str | None = None

    @property
    def interval(self) -> Interval:
        return Interval(self.low, self.high)


def _outside_note(estimate: float, low: float, high: float, method: str, level: float) -> str | None:
    if not (math.isfinite(estimate) and math.isfinite(low) and math.isfinite(high)) or low <= estimate <= high:
        return None
    side = "below" if estimate < low else "above"
    return f"the estimate {estimate:.4g} lies {side} its {level:.0%} {method} interval [{low:.4g}, {high:.4g}]"


# The standard normal's CDF and its inverse, as scipy.special's ndtr and ndtri (to the last bit or
# two) without importing scipy, which was half of `agree`'s start-up (tests/test_startup.py).
def ndtr(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def ndtri(p: float) -> float:
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return NormalDist().inv_cdf(p)


def _share_below(resampled: np.ndarray, estimate: float) -> float:
    """scipy's `_percentile_of_score`: the share of resamples below the estimate, ties counted half."""
    return float((np.count_nonzero(resampled < estimate) + np.count_nonzero(resampled <= estimate)) / (2 * resampled.size))


def acceleration(jackknife: np.ndarray) -> float:
    """a = Σ U³ / (6 (Σ U²)^{3/2}) with U_i = (n − 1)(mean − θ_(i)) (Efron and Tibshirani 14.15, as scipy);
    NaN when the jackknife values do not vary."""
    values = np.asarray(jackknife, np.float64)
    n = float(values.size)
    u = (n - 1.0) * (values.mean() - values)
    denominator = float(np.sum(u**2) / n**2)
    if denominator == 0.0:
        return math.nan
    return float(np.sum(u**3) / n**3) / 6.0 / denominator**1.5


def bca_levels(estimate: float, resampled: np.ndarray, jackknife: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """(α₁, α₂, z0, a): the percentiles (as fractions) BCa reads off the resamples."""
    z0 = float(ndtri(_share_below(resampled, estimate)))
    a = acceleration(jackknife)
    if math.isnan(a):
        a = 0.0
    z_alpha = float(ndtri((1.0 - level) / 2.0))
    ends = []
    for z in (z_alpha, -z_alpha):
        shifted = z0 + z
        ends.append(float(ndtr(z0 + shifted / (1.0 - a * shifted))))
    return ends[0], ends[1], z0, a


def bootstrap_interval(
    estimate: float,
    resampled: np.ndarray,
    jackknife: np.ndarray | None = None,
    *,
    method: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> IntervalEstimate | None:
    """The interval of a statistic from its full-sample ``estimate``, its ``resampled`` values
    (one per bootstrap resample) and, for BCa, its ``jackknife`` values (one per query left out).
    None when the statistic is undefined on every resample. Non-finite resampled or jackknife
    values (the statistic undefined there) are left out and counted in ``resamples``."""
    method = check_method(method)
    values = np.asarray(resampled, np.float64).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    estimate = float(estimate)
    if method == "percentile":
        low, high = percentile_interval(values, level)
        return IntervalEstimate(low, high, "percentile", level, int(values.size), _outside_note(estimate, low, high, "percentile", level))
    jack = np.asarray(jackknife if jackknife is not None else [], np.float64).ravel()
    jack = jack[np.isfinite(jack)]
    reason = None
    if not math.isfinite(estimate):
        reason = "the estimate itself is undefined"
    elif jack.size < 2:
        reason = "the jackknife needs at least two queries on which the statistic is defined"
    elif np.all(values > estimate) or np.all(values < estimate):
        reason = f"the estimate {estimate:.4g} lies {'below' if np.all(values > estimate) else 'above'} every resample"
    if reason is not None:
        low, high = percentile_interval(values, level)
        note = f"no BCa interval ({reason}): the percentile interval is given"
        outside = _outside_note(estimate, low, high, "percentile", level)
        return IntervalEstimate(low, high, "percentile", level, int(values.size), f"{note}; {outside}" if outside else note)
    alpha_low, alpha_high, _, _ = bca_levels(estimate, values, jack, level)
    low, high = (float(v) for v in np.percentile(values, [100.0 * alpha_low, 100.0 * alpha_high]))
    notes = [_outside_note(estimate, low, high, "BCa", level)]
    share = _share_below(values, estimate)
    if min(share, 1.0 - share) < (1.0 - level) / 2.0:
        notes.append(
            f"only {min(share, 1.0 - share):.1%} of the resamples lie {'below' if share < 0.5 else 'above'} the estimate: "
            "the bootstrap distribution is strongly biased here, so read the interval with care"
        )
    if math.isnan(acceleration(jack)) and np.ptp(values) > 0:
        notes.append("the statistic does not change when one query is left out, so no acceleration (a = 0)")
    return IntervalEstimate(low, high, "BCa", level, int(values.size), "; ".join(n for n in notes if n) or None)


@dataclass(frozen=True)
class PairedBootstrap:
    """A statistic's estimate and interval for each name, all from the same query weights."""

    estimates: dict[str, float]
    intervals: dict[str, IntervalEstimate | None]
    resampled: dict[str, np.ndarray]


def paired_intervals(
    statistic: Callable[[np.ndarray], dict[str, np.ndarray]],
    weights: np.ndarray,
    *,
    method: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> PairedBootstrap:
    """Estimates and intervals of named statistics that are functions of query weights.

    ``statistic`` maps (rows, Q) query weights (each row sums to 1: a mean over queries) to
    name -> (rows,) values (bounding its own memory for many rows); ``weights`` are the bootstrap resamples (:func:`resample_weights`).
    The estimate is the statistic under uniform weights, the jackknife under
    :func:`jackknife_weights`, so that any statistic of per-query values — a correlation between
    two qrels' system means, or the difference of two such correlations (one judge against
    another, the same resamples for both) — gets a paired interval from one definition.
    """
    method = check_method(method)
    n_queries = weights.shape[1]
    estimates = {name: float(values[0]) for name, values in statistic(uniform_weights(n_queries)).items()}
    if not len(weights):
        return PairedBootstrap(estimates, {name: None for name in estimates}, {})
    resampled = statistic(weights)
    jackknife = statistic(jackknife_weights(n_queries)) if method == "bca" and n_queries >= 2 else {}
    intervals = {
        name: bootstrap_interval(estimates[name], resampled[name], jackknife.get(name), method=method, level=level) for name in estimates
    }
    return PairedBootstrap(estimates, intervals, resampled)


@dataclass(frozen=True)
class BootstrapSummary:
    """Mean and interval of a statistic's resampled values."""

    mean: float
    interval: Interval
    resamples: int  # resamples on which the statistic is defined
    level: float = 0.95
    method: str = "percentile"  # as printed: "BCa" or "percentile"
    note: str | None = None

    @property
    def low(self) -> float:
        return self.interval.low

    @property
    def high(self) -> float:
        return self.interval.high


def summarize(
    values: np.ndarray,
    level: float = 0.95,
    *,
    estimate: float | None = None,
    jackknife: np.ndarray | None = None,
    method: str = "percentile",
) -> BootstrapSummary | None:
    """None when the statistic is undefined on every resample. The percentile interval unless
    ``method`` is 'bca' (which needs the ``estimate`` and the ``jackknife`` values)."""
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    if check_method(method) == "bca" and estimate is None:
        raise ValueError("a BCa interval needs the estimate")
    found = bootstrap_interval(math.nan if estimate is None else estimate, finite, jackknife, method=method, level=level)
    assert found is not None  # finite values exist
    return BootstrapSummary(float(finite.mean()), found.interval, int(finite.size), level, found.method, found.note)
