"""One recorded sample (a design's planned pairs with their human grades) turned into estimates of
every estimator, and the pairs a `--next` phase draws from.

Plain data: the planned pairs as pool positions with their phase, stratum, stratum size and
inclusion probability (what `qrelkit.storage.designs` records), the phases' kinds and budgets, and
the human grades in pool order (NaN where a pair has none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qrelkit.evaluate.estimate import pairs
from qrelkit.evaluate.estimate.estimators import Estimates, Setting, pair_estimates, query_estimates
from qrelkit.evaluate.estimate.measures import features
from qrelkit.evaluate.estimate.nextpairs import next_inclusion, next_sizes, residual_spread
from qrelkit.evaluate.estimate.sizes import pair_gradients


@dataclass(frozen=True)
class RecordedSample:
    """A design's planned pairs: ``index`` (n,) pool positions, ``phase`` (n,) 1-based, ``stratum``
    (n,) (-1: drawn on its own), ``stratum_size`` (n,) the pool pairs of its stratum, ``inclusion``
    (n,); ``kinds`` and ``budgets`` per phase."""

    design: str
    index: np.ndarray
    phase: np.ndarray
    stratum: np.ndarray
    stratum_size: np.ndarray
    inclusion: np.ndarray
    kinds: list[str]
    budgets: list[int]

    def pair_sample(self) -> pairs.PairSample:
        """The sample with each pair's weight and variance coefficient, phases combined."""
        shares = pairs.phase_shares(self.budgets)
        weight = np.zeros(len(self.index))
        coef = np.zeros(len(self.index))
        group = np.full(len(self.index), -1)
        offset = 0
        for number, (kind, (share, later)) in enumerate(zip(self.kinds, shares), start=1):
            at = self.phase == number
            stratum = self.stratum[at]
            drawn = np.zeros(at.sum())
            if kind == "stratified":
                counts = np.bincount(stratum, minlength=int(stratum.max(initial=0)) + 1)
                drawn = counts[stratum].astype(np.float64)
                group[at] = stratum + offset
                offset += len(counts)
            weight[at], coef[at] = pairs.phase_weights(
                kind, self.inclusion[at], drawn, self.stratum_size[at].astype(np.float64), share, later
            )
        return pairs.PairSample(self.index[None], weight[None], coef[None], group[None])


def estimate_sample(setting: Setting, sample: RecordedSample, grades: np.ndarray, top: int, estimators: list[str]) -> dict[str, Estimates]:
    """Each estimator's estimates (one draw) from the human ``grades`` (P,) of the planned pairs."""
    human = features(grades, top)
    if sample.kinds[0] == "queries":
        per_query = setting.per_query(human)
        chosen = np.zeros((1, setting.pool.n_queries), bool)
        chosen[0, np.unique(sample.stratum)] = True  # a whole-query design's strata are its queries
        return {estimator: query_estimates(setting, per_query, chosen, estimator) for estimator in estimators}
    drawn = sample.pair_sample()
    return {estimator: pair_estimates(setting, human, drawn, estimator) for estimator in estimators}


def next_phase(
    setting: Setting, sample: RecordedSample, grades: np.ndarray, top: int, count: int, decided: np.ndarray, estimator: str
) -> np.ndarray:
    """(P,) the inclusion probabilities of a `--next` phase of ``count`` pairs: the pairs not yet
    labelled, weighted by how much they would move the run pairs not yet ``decided`` (R, R),
    at the estimates ``estimator`` makes of every pair's features."""
    human = features(grades, top)
    drawn = sample.pair_sample()
    prediction = pairs.predictions(estimator, setting.judge_features, setting.levels, human, drawn, setting.pool.query)
    estimated, _ = pairs.corrected(prediction, human, drawn)
    current = estimated[0]
    current[:, 1:] = np.clip(current[:, 1:], 0.0, 1.0)
    current[:, 0] = current[:, 1:].sum(axis=-1)
    gradients = pair_gradients(setting.kernel, setting.pool, current, setting.place)
    labelled = np.zeros(len(setting.pool), bool)
    labelled[sample.index] = True
    weights = np.zeros(len(setting.pool))
    weights[drawn.index[0]] = drawn.weight[0]
    spread = residual_spread(setting.pool.judge, np.nan_to_num(grades, nan=0.0), weights, labelled)
    return next_inclusion(next_sizes(gradients, setting.pool.judge, top, decided, spread), labelled, count)
