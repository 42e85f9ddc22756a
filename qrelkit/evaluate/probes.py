"""How far a probe moves a judge: paired statistics over the sampled pairs, resampled by query.

Each sampled pair has the judge's score of the document as it is (``before``) and of the probe's
perturbed copy (``after``), and the score at which the pair counts as relevant (``relevant_at``:
a grade level, or a judge's own cut point for that level). Per probe:

- the mean shift, mean(after − before) over the pairs;
- the share of the pairs whose perturbed score reaches the relevance level ("pushed to relevant"),
  beside the share that reached it before, and their difference.

Pairs cluster in queries (a query's passages share its words, and a judge's view of them), so the
intervals resample queries, not pairs: each statistic is a ratio of per-query sums, Σ_q w_q·S_q /
Σ_q w_q·n_q, under the query weights of the interval method (`qrelkit.evaluate.bootstrap`: the
jackknife by default, or the bootstrap's draws, one draw for every statistic and every probe of a
seed). Under uniform weights it is the plain mean over pairs. The p-value of the mean shift and of the share's change comes from the paired
randomisation test over queries that `qrelkit.evaluate.compare` uses (each query's before and
after trade places with probability ½; two-sided, (1 + #extreme) / (1 + swaps))."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.bootstrap import IntervalEstimate, draw_weights, paired_intervals
from qrelkit.evaluate.choices import DEFAULT_METHOD, DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, METHOD_NAMES, check_method, check_resamples
from qrelkit.evaluate.compare import TEST_NAME, randomisation_p_values, swap_masks

STATISTICS = ("mean_before", "mean_after", "mean_shift", "relevant_before", "pushed_to_relevant", "share_change")
SHARE_BOUNDS = {"relevant_before": (0.0, 1.0), "pushed_to_relevant": (0.0, 1.0), "share_change": (-1.0, 1.0)}  # an end beyond is cut back


@dataclass(frozen=True)
class ProbeShift:
    """A probe's effect on one judge over the pairs where both judgments are `ok`."""

    pairs: int
    queries: int
    estimates: dict[str, float]  # STATISTICS -> estimate (shares NaN where no pair has a relevance level)
    intervals: dict[str, IntervalEstimate | None]
    p_value: float | None  # the mean shift's
    share_p_value: float | None  # the change in the share reaching the relevance level
    raised: int  # pairs whose score went up
    lowered: int
    unchanged: int
    resamples: int
    permutations: int
    seed: int | None
    interval: str  # as printed: "BCa" or "percentile"
    level: float
    test: str = TEST_NAME
    notes: list[str] = field(default_factory=list)

    @property
    def mean_shift(self) -> float:
        return self.estimates["mean_shift"]

    @property
    def pushed_to_relevant(self) -> float:
        return self.estimates["pushed_to_relevant"]


class _PerQuery:
    """The per-query sums every statistic is a ratio of: pairs, Σ before, Σ after, Σ shift, and the
    pairs at or above the relevance level before and after."""

    def __init__(self, qids: Sequence[str], before: np.ndarray, after: np.ndarray, relevant_at: np.ndarray):
        order = sorted(set(qids))
        where = {qid: i for i, qid in enumerate(order)}
        index = np.asarray([where[qid] for qid in qids], dtype=np.int64)
        self.queries = order

        def summed(values: np.ndarray) -> np.ndarray:
            return np.bincount(index, weights=values, minlength=len(order))

        leveled = np.isfinite(relevant_at)
        self.pairs = summed(np.ones(len(qids)))
        self.before, self.after, self.shift = summed(before), summed(after), summed(after - before)
        self.leveled = summed(leveled.astype(float))
        self.relevant_before = summed((leveled & (before >= relevant_at)).astype(float))
        self.relevant_after = summed((leveled & (after >= relevant_at)).astype(float))

    def statistic(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        return {
            "mean_before": _ratio(weights, self.before, self.pairs),
            "mean_after": _ratio(weights, self.after, self.pairs),
            "mean_shift": _ratio(weights, self.shift, self.pairs),
            "relevant_before": _ratio(weights, self.relevant_before, self.leveled),
            "pushed_to_relevant": _ratio(weights, self.relevant_after, self.leveled),
            "share_change": _ratio(weights, self.relevant_after - self.relevant_before, self.leveled),
        }

    def swapped(self, masks: np.ndarray) -> dict[str, np.ndarray]:
        """Each swap pattern (rows, Q) flips the sign of the swapped queries' differences."""
        signs = 1.0 - 2.0 * masks
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "mean_shift": (signs @ self.shift) / self.pairs.sum(),
                "share_change": (signs @ (self.relevant_after - self.relevant_before)) / self.leveled.sum(),
            }


def _ratio(weights: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Σ_q w_q·N_q / Σ_q w_q·D_q per row of weights. A ratio that is the same in every query (a judge
    that answers 3 to every pair, before and after) is that value under any weights: it is given as
    such, since rounding would scatter the resamples by 1e-16 and make the interval of a constant
    look biased."""
    counted = denominator > 0
    if not counted.any():
        return np.full(len(weights), math.nan)
    per_query = numerator[counted] / denominator[counted]
    drawn = weights @ denominator
    if np.ptp(per_query) == 0.0:
        return np.where(drawn > 0, float(per_query[0]), math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ numerator) / drawn


def probe_shift(
    qids: Sequence[str],
    before: Sequence[float],
    after: Sequence[float],
    relevant_at: Sequence[float] | float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int | None = 0,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> ProbeShift:
    """The statistics of one probe on one judge from its pairs' scores (both `ok`); ``relevant_at``:
    one score for every pair, or each pair's own (NaN: the pair has no relevance level and is left
    out of the shares)."""
    method = check_method(interval)
    check_resamples(resamples)
    check_resamples(permutations)
    before_scores, after_scores = np.asarray(before, np.float64), np.asarray(after, np.float64)
    if not (len(qids) == len(before_scores) == len(after_scores)):
        raise QrelkitError("a probe's pairs need a score before and after each")
    if not len(qids):
        raise QrelkitError("no pair has an `ok` judgment both before and after the probe: nothing to compare")
    if not (np.all(np.isfinite(before_scores)) and np.all(np.isfinite(after_scores))):
        raise QrelkitError("a probe's scores must be finite numbers")
    levels = np.broadcast_to(np.asarray(relevant_at, np.float64), before_scores.shape)
    sums = _PerQuery(list(qids), before_scores, after_scores, levels)
    draws = draw_weights(len(sums.queries), resamples, seed, method)
    found = paired_intervals(sums.statistic, draws, method=method, level=level, bounds=SHARE_BOUNDS)
    p_values: dict[str, float | None] = {"mean_shift": None, "share_change": None}
    if permutations:
        observed = {name: found.estimates[name] for name in p_values}
        p_values = randomisation_p_values(observed, sums.swapped(swap_masks(len(sums.queries), permutations, seed)))
    notes = []
    if len(sums.queries) < 2:
        notes.append("the pairs come from one query: no interval or test over queries can be read from them")
    if not math.isfinite(found.estimates["pushed_to_relevant"]):
        notes.append("no pair has a relevance level: the shares are not given")
    shift = after_scores - before_scores
    return ProbeShift(
        pairs=len(qids),
        queries=len(sums.queries),
        estimates=found.estimates,
        intervals=found.intervals,
        p_value=p_values["mean_shift"],
        share_p_value=p_values["share_change"],
        raised=int(np.count_nonzero(shift > 0)),
        lowered=int(np.count_nonzero(shift < 0)),
        unchanged=int(np.count_nonzero(shift == 0)),
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        interval=METHOD_NAMES[method],
        level=level,
        notes=notes,
    )
