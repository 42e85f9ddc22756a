"""The bootstrap over queries, one way for every statistic: one resample draw and one interval.

A resample draws the Q queries with replacement; it is kept as multiplicities (how often each
query was drawn, a multinomial draw), so a statistic that is a mean over queries is a matrix
product with the per-query values, and every analysis that uses the same seed sees the same
draws. The jackknife (each query left out once) is the same kind of weight matrix, so any
statistic written as a function of query weights gets its bootstrap and jackknife values from
one code path: :func:`paired_intervals`.

Four interval methods, each a function of the same draws (:func:`interval_of`):

- ``jackknife`` (the default): θ̂ ± z·SE, the standard error from the jackknife over queries
  (each left out once). Of the four it is the one whose coverage came nearest 95% on DL-shaped
  simulated tracks (benchmarks/bench_interval_coverage.py, the table in docs/audit.md): 98.5-100%
  for τ-b and τ_AP, 94% for κ, where the bootstrap's intervals of τ covered 30-97% (BCa's 70-84%). It is wide
  for τ (the jackknife overstates the spread of a statistic that moves in steps, as τ does), but
  it claims no more than it has: resampling queries with replacement biases τ between system
  rankings, and no bootstrap interval here corrected that. It needs no draw, holds its estimate,
  and an end beyond a correlation's [−1, 1] is cut back to it.
- ``bca``: bias-corrected and accelerated (Efron, JASA 1987; Efron and Tibshirani 1993, 14.3).
  Resampling queries with replacement adds noise to every system's mean, so resampled τ sits
  below the full-sample τ and a percentile interval can miss its own estimate; BCa moves the
  percentiles by the bias correction z0 = Φ⁻¹(share of resamples below the estimate, ties counted
  half) and the acceleration a from the jackknife over queries. The formulas and conventions are
  scipy.stats.bootstrap's (method='BCa'): tests feed scipy our own resamples and get the same
  interval. When the correction is extreme (fewer than 2.5% of the resamples on one side of the
  estimate) the note says which few resamples the interval spans.
- ``percentile``: the percentiles of the resampled values (numpy's linear interpolation), the
  interval qrelkit gave before BCa; the draws are unchanged, so it is the same to the last digit.
- ``subsampling``: m-out-of-n subsampling of queries without replacement, m = ⌊n/2⌋
  (:func:`subsampling_interval`); its draws are half-samples (:func:`draw_weights`).

An estimate outside its interval always carries a note, as does a BCa interval that could not
be computed (then the percentile interval is given, and named).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import (
    DEFAULT_METHOD,
    METHOD_NAMES,
    NEEDS_JACKKNIFE,
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


def finite_values(values: np.ndarray | None) -> np.ndarray:
    """The values on which a statistic is defined (flattened; none for None)."""
    values = np.asarray(values if values is not None else [], np.float64).ravel()
    return values[np.isfinite(values)]


class Interval(NamedTuple):
    low: float
    high: float


def percentile_interval(values: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval of ``values``, ignoring resamples where the statistic is undefined (NaN or inf)."""
    values = finite_values(values)
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
    low, high = (ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z))) for z in (z_alpha, -z_alpha))
    return low, high, z0, a


def extreme_bias_note(share: float, z0: float, alpha_low: float, alpha_high: float, values: np.ndarray, low: float, high: float) -> str:
    """Why a BCa interval with an extreme bias correction should be read with care: how few
    resamples lie on one side of the estimate, and on how few resamples the interval then rests."""
    if share >= 0.5:  # the estimate above nearly every resample: BCa reads the top of the resamples
        rests_on, side = int(np.count_nonzero(values >= low)), "at or above its lower end"
    else:
        rests_on, side = int(np.count_nonzero(values <= high)), "at or below its upper end"
    return (
        f"only {min(share, 1.0 - share):.1%} of the resamples lie {'below' if share < 0.5 else 'above'} the estimate: "
        f"the bootstrap distribution is strongly biased here and BCa's bias correction is extreme (z0 = {z0:+.2f}), "
        f"so the interval spans the resamples' {100 * alpha_low:.1f}th to {100 * alpha_high:.1f}th percentiles and rests on the "
        f"{rests_on} of {values.size} resamples {side}; read it with care"
    )


def bootstrap_interval(
    estimate: float,
    resampled: np.ndarray | None,
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
    values = finite_values(resampled)
    if values.size == 0:
        return None
    estimate = float(estimate)
    if method == "percentile":
        low, high = percentile_interval(values, level)
        return IntervalEstimate(low, high, "percentile", level, int(values.size), _outside_note(estimate, low, high, "percentile", level))
    jack = finite_values(jackknife)
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
    alpha_low, alpha_high, z0, _ = bca_levels(estimate, values, jack, level)
    low, high = (float(v) for v in np.percentile(values, [100.0 * alpha_low, 100.0 * alpha_high]))
    notes = [_outside_note(estimate, low, high, "BCa", level)]
    share = _share_below(values, estimate)
    if min(share, 1.0 - share) < (1.0 - level) / 2.0:
        notes.append(extreme_bias_note(share, z0, alpha_low, alpha_high, values, low, high))
    if math.isnan(acceleration(jack)) and np.ptp(values) > 0:
        notes.append("the statistic does not change when one query is left out, so no acceleration (a = 0)")
    return IntervalEstimate(low, high, "BCa", level, int(values.size), "; ".join(n for n in notes if n) or None)


def half_sample_size(n_queries: int) -> int:
    """m of the m-out-of-n subsampling: half the queries (rounded down), at least one."""
    return max(1, n_queries // 2)


def subsample_counts(n_queries: int, resamples: int, seed: int | None = 0) -> np.ndarray:
    """(resamples, n_queries) of 0/1: each row draws m = ⌊n/2⌋ of the queries without replacement
    (:func:`half_sample_size`)."""
    if n_queries < 2:
        raise QrelkitError("subsampling needs at least two queries")
    check_resamples(resamples, n_queries)
    rng = np.random.default_rng(seed)
    keys = rng.random((resamples, n_queries))
    chosen = np.argsort(keys, axis=1, kind="stable")[:, : half_sample_size(n_queries)]
    counts = np.zeros((resamples, n_queries))
    np.put_along_axis(counts, chosen, 1.0, axis=1)
    return counts


def subsampling_interval(estimate: float, subsampled: np.ndarray | None, n_queries: int, level: float = 0.95) -> IntervalEstimate | None:
    """The m-out-of-n subsampling interval (Politis and Romano, Annals of Statistics 1994) from
    half-samples drawn without replacement: the spread of θ*_m − θ̂ stands in for θ̂ − θ, scaled by
    √(m/(n−m)), the ratio of a mean's standard error over n queries to its spread over m of the n
    (sampling without replacement); [θ̂ − c(q_hi − θ̂), θ̂ − c(q_lo − θ̂)]. With m = n/2 the scale is 1
    and the half-samples' bias against θ̂ equals θ̂'s own first-order bias, so the interval moves
    away from the side resampling biases toward (where BCa's correction rests on a few resamples)."""
    values = finite_values(subsampled)
    estimate = float(estimate)
    if values.size == 0 or not math.isfinite(estimate):
        return None
    m = half_sample_size(n_queries)
    scale = math.sqrt(m / (n_queries - m))
    low_q, high_q = percentile_interval(values, level)
    low, high = estimate - scale * (high_q - estimate), estimate - scale * (low_q - estimate)
    return IntervalEstimate(low, high, "subsampling", level, int(values.size), _outside_note(estimate, low, high, "subsampling", level))


def jackknife_interval(estimate: float, jackknife: np.ndarray, level: float = 0.95) -> IntervalEstimate | None:
    """θ̂ ± z·SE with the jackknife's standard error √((n−1)/n · Σ (θ_(i) − θ̄_(·))²) (Efron and
    Tibshirani 1993, 11.5), over the n queries (or groups of queries) left out one at a time. No
    resampling: the interval is the same for every seed, and it always holds its estimate."""
    values = finite_values(jackknife)
    estimate = float(estimate)
    if values.size < 2 or not math.isfinite(estimate):
        return None
    n = values.size
    error = math.sqrt((n - 1) / n * float(np.sum((values - values.mean()) ** 2)))
    z = -ndtri((1.0 - level) / 2.0)
    undefined = np.size(jackknife) - n
    note = (
        f"the statistic is undefined with {undefined} of {np.size(jackknife)} queries left out: the jackknife rests on the other {n}"
        if undefined
        else None
    )
    return IntervalEstimate(estimate - z * error, estimate + z * error, "jackknife", level, n, note)


def interval_of(
    method: str,
    estimate: float,
    resampled: np.ndarray | None,
    jackknife: np.ndarray | None,
    n_queries: int,
    level: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> IntervalEstimate | None:
    """The interval ``method`` gives from a statistic's estimate, its values on the draws
    (:func:`draw_weights`: bootstrap resamples, or half-samples for subsampling) and its jackknife
    values; ends beyond the statistic's ``bounds`` (a correlation's [−1, 1]) are cut back to them."""
    method = check_method(method)
    if method == "jackknife":
        found = jackknife_interval(estimate, np.zeros(0) if jackknife is None else jackknife, level)
    elif method == "subsampling":
        found = subsampling_interval(estimate, resampled, n_queries, level)
    else:
        found = bootstrap_interval(estimate, resampled, jackknife, method=method, level=level)
    if found is None or bounds is None:
        return found
    low, high = max(found.low, bounds[0]), min(found.high, bounds[1])
    return found if (low, high) == (found.low, found.high) else dataclasses.replace(found, low=low, high=high)


def draw_counts(n_queries: int, resamples: int, seed: int | None = 0, method: str = DEFAULT_METHOD) -> np.ndarray:
    """The draws an interval method reads, as multiplicities (for statistics of multisets of items,
    FD): half-samples for subsampling, bootstrap resamples for the others (the jackknife needs none,
    but the same draws keep every output's resamples alike)."""
    if check_method(method) == "subsampling":
        return subsample_counts(n_queries, resamples, seed)
    return resample_counts(n_queries, resamples, seed)


def draw_weights(n_queries: int, resamples: int, seed: int | None = 0, method: str = DEFAULT_METHOD) -> np.ndarray:
    """:func:`draw_counts` as means: a row times a per-query vector is that draw's mean."""
    drawn = half_sample_size(n_queries) if check_method(method) == "subsampling" else n_queries
    return draw_counts(n_queries, resamples, seed, method) / drawn


def describe_intervals(method: str, level: float, n_queries: int, resamples: int, seed: int | None) -> str:
    """What the intervals are, in words: "95% jackknife intervals over 43 queries (each left out once)",
    "95% BCa bootstrap over 43 queries, 1000 resamples, seed 0" (``method`` as printed or as given)."""
    if not resamples:
        return "no intervals (--resamples 0)"
    key = next((k for k, printed in METHOD_NAMES.items() if method in (k, printed)), method)
    if key == "jackknife":
        return f"{level:.0%} jackknife intervals over {n_queries} queries (each left out once)"
    if key == "subsampling":
        half = half_sample_size(n_queries)
        return f"{level:.0%} subsampling intervals over {n_queries} queries, {resamples} half-samples of {half}, seed {seed}"
    return f"{level:.0%} {METHOD_NAMES.get(key, method)} bootstrap over {n_queries} queries, {resamples} resamples, seed {seed}"


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
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> PairedBootstrap:
    """Estimates and intervals of named statistics that are functions of query weights.

    ``statistic`` maps (rows, Q) query weights (each row sums to 1: a mean over queries) to
    name -> (rows,) values (bounding its own memory for many rows); ``weights`` are the draws
    (:func:`draw_weights` for ``method``; none: no intervals). The estimate is the statistic under
    uniform weights, the jackknife under :func:`jackknife_weights`, so that any statistic of
    per-query values — a correlation between two qrels' system means, or the difference of two such
    correlations (one judge against another, the same draws for both) — gets a paired interval from
    one definition. ``bounds``: name -> the statistic's range, where an interval's end is cut back.
    """
    method = check_method(method)
    n_queries = weights.shape[1]
    estimates = {name: float(values[0]) for name, values in statistic(uniform_weights(n_queries)).items()}
    if not len(weights):
        return PairedBootstrap(estimates, {name: None for name in estimates}, {})
    resampled = statistic(weights)
    jackknife = statistic(jackknife_weights(n_queries)) if method in NEEDS_JACKKNIFE and n_queries >= 2 else {}
    intervals = {
        name: interval_of(method, estimates[name], resampled[name], jackknife.get(name), n_queries, level, (bounds or {}).get(name))
        for name in estimates
    }
    return PairedBootstrap(estimates, intervals, resampled)


@dataclass(frozen=True)
class BootstrapSummary(IntervalEstimate):
    """An interval with the mean of the statistic's resampled values."""

    mean: float = math.nan


def summarize(
    values: np.ndarray,
    level: float = 0.95,
    *,
    estimate: float | None = None,
    jackknife: np.ndarray | None = None,
    method: str = "percentile",
    n_queries: int | None = None,
) -> BootstrapSummary | None:
    """None when the statistic is undefined on every resample. The percentile interval unless
    ``method`` says otherwise: 'bca' and 'jackknife' need the ``estimate`` and the ``jackknife``
    values, 'subsampling' the estimate and ``n_queries`` (``values`` are then its half-samples)."""
    finite = finite_values(values)
    if finite.size == 0:
        return None
    method = check_method(method)
    if method != "percentile" and estimate is None:
        raise ValueError(f"a {METHOD_NAMES[method]} interval needs the estimate")
    if method == "subsampling" and n_queries is None:
        raise ValueError("a subsampling interval needs the number of queries")
    given = math.nan if estimate is None else estimate
    found = interval_of(method, given, finite, jackknife, n_queries or 0, level)
    if found is None and method == "jackknife":  # the estimate or the jackknife undefined: say so, give the percentile interval
        low, high = percentile_interval(finite, level)
        note = "no jackknife interval (the estimate or the jackknife is undefined): the percentile interval is given"
        return BootstrapSummary(low, high, "percentile", level, int(finite.size), note, mean=float(finite.mean()))
    if found is None:
        return None
    return BootstrapSummary(found.low, found.high, found.method, level, found.resamples, found.note, mean=float(finite.mean()))
