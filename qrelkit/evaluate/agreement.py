"""How two qrels rank the same systems: Kendall τ-b, Spearman ρ, Pearson r and τ_AP, with
95% confidence intervals over queries (the jackknife by default; `qrelkit.evaluate.bootstrap`).

The statistics are vectorised over rows (one row = one ordering of the same systems), so all
bootstrap resamples are scored in one call. A resample is a vector of query weights
(multinomial counts / number of queries); the systems' means under it are one matrix product
with the runs × queries matrix of ``Evaluation.matrix``: ir_measures runs once, never per
resample, and the model and reference orderings of a resample use the same queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import Interval, IntervalEstimate, draw_weights, paired_intervals
from qrelkit.evaluate.choices import DEFAULT_METHOD, DEFAULT_RESAMPLES, METHOD_NAMES, check_method
from qrelkit.evaluate.metrics import Evaluation

STATISTICS = ("kendall_tau", "spearman_rho", "pearson_r", "tau_ap")
BOUNDS = {name: (-1.0, 1.0) for name in STATISTICS}  # a correlation's range: an interval's end beyond it is cut back


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    # A correlation with a constant ordering is undefined: NaN, as scipy says, without a warning.
    defined = denominator > 0
    return np.where(defined, numerator / np.where(defined, denominator, 1.0), np.nan)


def _pair_rows(x, y) -> tuple[np.ndarray, np.ndarray]:
    """Rows of two orderings of the same systems; one row of ``x`` may stand for every row of ``y``
    (a fixed reference ordering: its part of the work is done once)."""
    x, y = np.atleast_2d(np.asarray(x, np.float64)), np.atleast_2d(np.asarray(y, np.float64))
    if x.shape != y.shape and not (len(x) == 1 and x.shape[1] == y.shape[1]):
        raise ValueError(f"orderings differ in shape: {x.shape} vs {y.shape}")
    return x, y


def kendall_tau_b_rows(x, y) -> np.ndarray:
    """τ-b of each row pair: Σ sign(Δx)·sign(Δy) / √(pairs untied in x · pairs untied in y)."""
    x, y = _pair_rows(x, y)
    first, second = np.triu_indices(x.shape[1], k=1)
    sign_x = np.sign(x[:, first] - x[:, second])
    sign_y = np.sign(y[:, first] - y[:, second])
    numerator = (sign_x * sign_y).sum(axis=1)
    return _safe_divide(numerator, np.sqrt(np.abs(sign_x).sum(axis=1) * np.abs(sign_y).sum(axis=1)))


def pearson_r_rows(x, y) -> np.ndarray:
    x, y = _pair_rows(x, y)
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    # Round-off can push |r| a hair past 1; scipy clips too.
    return np.clip(_safe_divide((x * y).sum(axis=1), denominator), -1.0, 1.0)


def average_ranks_rows(x) -> np.ndarray:
    """Each row's ranks from 1, ties sharing their average rank, a row with a NaN all NaN: scipy's
    `rankdata(x, axis=1)`, in numpy (importing scipy.stats costs `agree` half a second)."""
    x = np.atleast_2d(np.asarray(x, np.float64))
    order = np.argsort(x, axis=1, kind="stable")
    ordered = np.take_along_axis(x, order, axis=1)
    positions = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    starts_run = np.ones(x.shape, bool)
    starts_run[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends_run = np.ones(x.shape, bool)
    ends_run[:, :-1] = starts_run[:, 1:]
    first = np.maximum.accumulate(np.where(starts_run, positions, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends_run, positions, x.shape[1])[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(x.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=1)
    ranks[np.isnan(x).any(axis=1)] = np.nan
    return ranks


def spearman_rho_rows(x, y) -> np.ndarray:
    """Pearson r of the ranks, ties sharing their average rank (scipy's spearmanr)."""
    x, y = _pair_rows(x, y)
    return pearson_r_rows(average_ranks_rows(x), average_ranks_rows(y))


def tau_ap_rows(reference, estimate) -> np.ndarray:
    """AP correlation τ_AP (Yilmaz, Aslam & Robertson, SIGIR 2008) of ``estimate`` against the
    ``reference`` ordering taken as the truth (higher value = better system).

    τ_AP = 2/(N−1) · Σ_{i=2..N} C(i)/(i−1) − 1, where i runs over the estimate's ranking from the
    top and C(i) counts the systems above position i that the reference also puts above it.
    A swap near the top costs more than one near the bottom. The paper assumes no ties: here a
    pair tied in the reference counts as half correct, and ties in the estimate keep the input
    order of the systems (stable sort), so the result is deterministic.
    """
    reference, estimate = _pair_rows(reference, estimate)
    n_systems = reference.shape[1]
    if n_systems < 2:
        return np.full(len(estimate), np.nan)
    order = np.argsort(-estimate, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n_systems)[None, :].repeat(len(order), axis=0), axis=1)
    above = position[:, :, None] < position[:, None, :]  # [b, i, j]: i is above j in the estimate
    diff = reference[:, :, None] - reference[:, None, :]
    correct = (diff > 0) + 0.5 * (diff == 0)
    correct_above = (above * correct).sum(axis=1)  # C for each system j
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(position > 0, correct_above / np.maximum(position, 1), 0.0)
    return 2.0 / (n_systems - 1) * terms.sum(axis=1) - 1.0


def kendall_tau_b(x, y) -> float:
    return float(kendall_tau_b_rows(x, y)[0])


def spearman_rho(x, y) -> float:
    return float(spearman_rho_rows(x, y)[0])


def pearson_r(x, y) -> float:
    return float(pearson_r_rows(x, y)[0])


def tau_ap(reference, estimate) -> float:
    return float(tau_ap_rows(reference, estimate)[0])


@dataclass(frozen=True)
class SystemCorrelation:
    """How the model qrels order the systems against the reference qrels, for one measure."""

    measure: str
    runs: int
    queries: int
    kendall_tau: float
    spearman_rho: float
    pearson_r: float
    tau_ap: float  # the reference ordering is the truth
    resamples: int  # bootstrap resamples behind the intervals
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    undefined: int = 0  # resamples where τ was undefined (an ordering all tied), left out of the CI
    intervals: dict[str, IntervalEstimate] = field(default_factory=dict)  # ci95 with its method and any note
    method: str = METHOD_NAMES[DEFAULT_METHOD]  # the interval method asked for, as printed

    @property
    def notes(self) -> dict[str, str]:
        """statistic -> why its interval should not be read as it stands (estimate outside it, ...)."""
        return {name: found.note for name, found in self.intervals.items() if found.note}


ROWS_PER_CHUNK = 2000  # orderings compared at a time: τ-b and τ_AP hold rows × runs² values
ROWS = {"kendall_tau": kendall_tau_b_rows, "spearman_rho": spearman_rho_rows, "pearson_r": pearson_r_rows, "tau_ap": tau_ap_rows}


def in_chunks(function: Callable[[np.ndarray, np.ndarray], np.ndarray], truth: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """``function`` on rows of ``truth`` and ``estimate`` a chunk at a time (one row of ``truth``
    stands for all)."""
    starts = range(0, max(len(estimate), 1), ROWS_PER_CHUNK)
    fixed = len(truth) == 1
    return np.concatenate([function(truth if fixed else truth[s : s + ROWS_PER_CHUNK], estimate[s : s + ROWS_PER_CHUNK]) for s in starts])


def printed(values: np.ndarray, decimals: int | None) -> np.ndarray:
    """``values`` as printed with ``decimals`` decimals and read back (correctly rounded, as C's
    printf `%.4f` in trec_eval rounds); None: as they are. A study that ranks systems by trec_eval's
    printed output ties systems whose means agree to 4 decimals (Kendall τ-b counts such ties)."""
    if decimals is None:
        return values
    values = np.asarray(values, np.float64)
    scale = 10.0**decimals
    scaled = values * scale
    out = np.round(scaled) / scale  # the nearest double to k / 10^N, as reading the printed text back gives
    # where the product's rounding error could flip the choice of k, the exact decimal expansion decides
    close = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    if close.any():
        out[close] = [float(f"{v:.{decimals}f}") for v in values[close].tolist()]
    return out


def _correlation_statistic(
    model: np.ndarray, reference: np.ndarray, reference_decimals: int | None = None
) -> Callable[[np.ndarray], dict[str, np.ndarray]]:
    """Query weights (rows, Q) -> the four correlations of the systems' weighted means, per row
    (runs × queries matrices in); the reference's means as printed to ``reference_decimals``."""

    def statistic(weights: np.ndarray) -> dict[str, np.ndarray]:
        model_means, reference_means = weights @ model.T, printed(weights @ reference.T, reference_decimals)
        return {name: in_chunks(function, reference_means, model_means) for name, function in ROWS.items()}

    return statistic


def check_aligned(model: Evaluation, reference: Evaluation) -> None:
    if model.runs != reference.runs or model.queries != reference.queries:
        raise QrelkitError("model and reference evaluations must cover the same runs and queries, in the same order")


def correlate_systems(
    model: Evaluation,
    reference: Evaluation,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    weights: np.ndarray | None = None,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
    reference_decimals: int | None = None,
) -> dict[str, SystemCorrelation]:
    """Per measure: the four correlations between the systems' mean scores under the model and
    under the reference qrels (means over the shared queries), with intervals over queries
    (``interval`` 'jackknife', 'bca', 'percentile' or 'subsampling', at ``level``);
    ``reference_decimals``: the reference's means ranked as printed to that many decimals
    (`printed`), on every resample too.

    ``weights`` (from :func:`qrelkit.evaluate.bootstrap.draw_weights`) overrides ``resamples``/``seed`` so that other
    analyses can share the same resamples.
    """
    check_aligned(model, reference)
    method = check_method(interval)
    if len(model.runs) < 2:
        raise QrelkitError(f"system correlations need at least 2 runs, got {len(model.runs)}")
    if weights is None:
        weights = draw_weights(len(model.queries), resamples, seed, method)
    out = {}
    for measure in model.measures:
        model_matrix, reference_matrix = model.matrix(measure), reference.matrix(measure)
        statistic = _correlation_statistic(model_matrix, reference_matrix, reference_decimals)
        found = paired_intervals(statistic, weights, method=method, level=level, bounds=BOUNDS)
        intervals = {name: interval for name, interval in found.intervals.items() if interval is not None}
        out[measure] = SystemCorrelation(
            measure=measure,
            runs=len(model.runs),
            queries=len(model.queries),
            **{name: found.estimates[name] for name in STATISTICS},
            resamples=len(weights),
            ci95={name: intervals[name].interval if name in intervals else Interval(np.nan, np.nan) for name in STATISTICS}
            if len(weights)
            else {},
            undefined=int(np.isnan(found.resampled["kendall_tau"]).sum()) if len(weights) else 0,
            intervals=intervals,
            method=METHOD_NAMES[method],
        )
    return out
