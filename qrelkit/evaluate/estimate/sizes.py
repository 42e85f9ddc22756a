"""How much each pair matters to the estimates: the size measure of the weighted design and of
`--next`.

A pair's weight is how far an error of one grade in the judge's label there would move the runs'
means (their gradients at the judge's labels, `measures.Kernel.gradient`): a grade up changes the
gain and the indicator of the next level, a grade down the gain and the indicator of the judge's
own level. The size is the root mean square of those moves over the runs (or over the differences
of the run pairs still undecided), times the judge's uncertainty where it is known.

nDCG's ideal DCG moves with a query's count of pairs at a level only below the cut-off, and the
judge's count is itself uncertain (by `SPREAD` a pair, SPREAD * sqrt(N_q) for a query of N_q pairs),
so a pair's move of the count is weighed by the slope expected over that uncertainty, not at the
judge's count alone (docs/human-budget.md: a count just past the cut-off left its pairs to the floor).
"""

from __future__ import annotations

import numpy as np

from qrelkit.evaluate.estimate.designs import FLOOR
from qrelkit.evaluate.estimate.measures import Kernel, query_totals
from qrelkit.evaluate.estimate.pool import Pool

SPREAD = 0.5  # the residual a whole grade of the judge is taken to have (`judge_uncertainty`)
SIZING = ("floor", "count_spread")  # what a weighted design records of how it sized its pairs


def sizing_params() -> dict[str, float]:
    """How this version sizes a weighted design's pairs, recorded with each design: the same seed
    under another rule draws other pairs."""
    return {"floor": FLOOR, "count_spread": SPREAD}


def pair_gradients(kernel: Kernel, pool: Pool, features: np.ndarray, place: np.ndarray) -> np.ndarray:
    """(R, P, F) the gradient of each run's mean over the queries at each pair's features, at the
    labels ``features`` (P, F), each query's counts taken as uncertain by SPREAD * sqrt(N_q)."""
    totals = query_totals(features[None], pool)
    spread = np.broadcast_to((SPREAD * np.sqrt(pool.sizes()))[None, :, None], totals.shape)
    _, gradient = kernel.gradient(kernel.gather(features[None]), totals, spread)
    n_runs = place.shape[0]
    flat = gradient.listed[0].reshape(n_runs, -1, features.shape[-1])
    on_list = np.take_along_axis(flat, np.where(place >= 0, place, 0)[..., None], axis=1)
    on_list = np.where((place >= 0)[..., None], on_list, 0.0)
    return (on_list + gradient.query[0][:, pool.query, :]) / pool.n_queries


def grade_moves(gradients: np.ndarray, judge: np.ndarray, top: int) -> np.ndarray:
    """(..., P, 2) how a grade up and a grade down from the judge's label move each mean
    (gradients (..., P, F)); a move past either end of the scale is 0."""
    grade = np.clip(np.round(np.nan_to_num(judge, nan=0.0)), 0, top).astype(np.int64)
    gain = gradients[..., 0]
    up_level = np.clip(grade + 1, 1, top)
    down_level = np.clip(grade, 1, top)
    shape = gradients.shape[:-1] + (1,)
    up_step = np.take_along_axis(gradients, np.broadcast_to(up_level[..., None], shape), axis=-1)[..., 0]
    down_step = np.take_along_axis(gradients, np.broadcast_to(down_level[..., None], shape), axis=-1)[..., 0]
    up = np.where(grade < top, gain + up_step, 0.0)
    down = np.where(grade > 0, gain + down_step, 0.0)
    return np.stack([up, down], axis=-1)


def measure_sizes(gradients: np.ndarray, judge: np.ndarray, top: int) -> np.ndarray:
    """(P,) root mean square over runs and the two moves of a one-grade error (gradients (R, P, F))."""
    moves = grade_moves(gradients, judge, top)
    return np.sqrt((moves**2).mean(axis=(0, -1)))


def judge_uncertainty(judge: np.ndarray, spread: float = SPREAD) -> np.ndarray:
    """(P,) a relative standard deviation of the human grade around the judge's label: a whole
    grade says nothing more (1 everywhere); a fractional one (an expected grade, a mean of
    several answers) adds its own Bernoulli spread between its neighbouring grades, relative to
    ``spread``, the residual a whole grade is taken to have."""
    values = np.nan_to_num(judge, nan=0.0)
    part = values - np.floor(values)
    return np.sqrt(1.0 + part * (1.0 - part) / spread**2)
