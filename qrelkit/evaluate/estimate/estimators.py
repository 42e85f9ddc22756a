"""Every estimator of every design behind one call: the runs' means of a measure, with their
covariance, for one sample (a command) or a thousand (a simulation), in chunks of draws.

``estimator`` names what the judge's labels are used for (`qrelkit.evaluate.choices.DESIGN_ESTIMATORS`);
``judge`` is never a valid interval (its covariance is 0 and its interval is not shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from qrelkit.evaluate.estimate import pairs, queries
from qrelkit.evaluate.estimate.measures import Kernel, query_totals
from qrelkit.evaluate.estimate.pool import Pool

CHUNK = 5  # draws at a time: small arrays stay in cache (5 ms a draw on DL19 against 30 ms at 50)


@dataclass(frozen=True)
class Estimates:
    """``values`` (D, R), ``covariance`` (D, R, R), ``df`` (D,) the degrees of freedom of the
    intervals (inf: normal), ``labels`` (D,) human labels used, ``lam`` (D, R) PPI's lambda where
    the estimator has one (whole-query designs)."""

    values: np.ndarray
    covariance: np.ndarray
    df: np.ndarray
    labels: np.ndarray
    lam: np.ndarray | None = None


@dataclass(frozen=True)
class Setting:
    """What every estimate of one pool and measure shares: the kernel (the measure over the runs'
    lists), where each pair stands in the lists, the features of the judge's labels, the
    calibration regressors, and the per-query values under the judge's labels."""

    pool: Pool
    kernel: Kernel
    place: np.ndarray
    judge_features: np.ndarray
    levels: np.ndarray

    @classmethod
    def of(cls, pool: Pool, kernel: Kernel, judge_features: np.ndarray) -> Setting:
        return cls(pool, kernel, kernel.lists.place(len(pool)), judge_features, pairs.level_matrix(pool.judge))

    @cached_property
    def judge_values(self) -> np.ndarray:
        """(R, Q) per-query values under the judge's labels."""
        return self.per_query(self.judge_features)

    def per_query(self, features: np.ndarray) -> np.ndarray:
        """(R, Q) per-query values under labels with ``features`` (P, F) (exact where they are whole)."""
        return self.kernel.values(self.kernel.gather(features[None]), query_totals(features[None], self.pool))[0]


def pair_estimates(setting: Setting, human: np.ndarray, sample: pairs.PairSample, estimator: str) -> Estimates:
    """Estimates from sampled pairs: ``human`` (P, F) the human features (read on sampled pairs
    only), ``sample`` the draws' samples with their weights."""
    n_runs = len(setting.kernel.lists.runs)
    if estimator == "judge":
        judged = np.broadcast_to(setting.judge_values.mean(axis=-1), (sample.draws, n_runs)).copy()
        return Estimates(judged, np.zeros((sample.draws, n_runs, n_runs)), np.full(sample.draws, np.inf), np.zeros(sample.draws, np.int64))
    values: list[np.ndarray] = []
    covariance: list[np.ndarray] = []
    for start in range(0, sample.draws, CHUNK):
        part = sample.take(slice(start, start + CHUNK))
        prediction = pairs.predictions(estimator, setting.judge_features, setting.levels, human, part, setting.pool.query)
        estimated, residual = pairs.corrected(prediction, human, part)
        part = pairs.variance_sample(estimator, part, setting.pool.query)
        bounds = pairs.known_bounds(human, part, setting.pool)
        found = pairs.estimate(setting.kernel, setting.pool, estimated, residual, part, setting.place, bounds)
        values.append(found.values)
        covariance.append(found.covariance)
    return Estimates(np.concatenate(values), np.concatenate(covariance), np.full(sample.draws, np.inf), sample.sizes())


def query_estimates(setting: Setting, human_values: np.ndarray, chosen: np.ndarray, estimator: str, variance: str = "finite") -> Estimates:
    """Estimates from whole queries: ``human_values`` (R, Q) per-query values under human labels
    (read on chosen queries only), ``chosen`` (D, Q) the sampled queries of each draw."""
    values, covariance, lam = queries.query_estimates(human_values[None], setting.judge_values, chosen, estimator, variance)
    count = chosen.sum(axis=-1)
    df = np.where(np.full(len(count), variance == "finite"), count - 1.0, np.inf) if estimator != "judge" else np.full(len(count), np.inf)
    labels = np.array([int(setting.pool.sizes()[row].sum()) for row in chosen])
    return Estimates(values, covariance, df.astype(np.float64), labels, lam)
