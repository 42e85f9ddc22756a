"""`--next N`: the pairs that most shrink the intervals still undecided, drawn with known
probabilities.

The next phase is a Poisson sample of the pairs not yet labelled, pi_i proportional to how much
pair i's human grade would move the differences of the run pairs not yet told apart (the
gradients of those differences at the current estimates, `sizes.grade_moves`), times the spread
of the human grade the labels so far show at the judge's grade of pair i, mixed with a floor so
that every unlabelled pair can be drawn. The probabilities depend on what was found, but they are
fixed before the phase is drawn, so the phase's estimate of what is still unknown is unbiased
given the past, and `pairs.combine` keeps the whole estimate unbiased.
"""

from __future__ import annotations

import numpy as np

from qrelkit.evaluate.estimate.designs import FLOOR, proportional_inclusion, with_floor
from qrelkit.evaluate.estimate.sizes import grade_moves

SHRINK = 20.0  # labels' worth of the pooled spread each judge grade's own spread is shrunk to


def residual_spread(judge: np.ndarray, human: np.ndarray, weight: np.ndarray, labelled: np.ndarray) -> np.ndarray:
    """(P,) the standard deviation of human - judge grade at each pair's judge grade, from the
    labelled pairs (design-weighted), shrunk toward the pooled spread where a grade has few."""
    grade = np.round(np.nan_to_num(judge, nan=-1.0))
    error = np.where(labelled, human - np.nan_to_num(judge, nan=0.0), 0.0) ** 2
    pooled = float((weight * error)[labelled].sum() / max(weight[labelled].sum(), 1e-12))
    out = np.full(len(judge), pooled)
    for value in np.unique(grade):
        at = grade == value
        seen = at & labelled
        total = weight[seen].sum()
        count = seen.sum()
        own = (weight * error)[seen].sum() / total if total > 0 else pooled
        out[at] = (count * own + SHRINK * pooled) / (count + SHRINK)
    return np.sqrt(np.maximum(out, 1e-6))


def undecided_laplacian(decided: np.ndarray) -> np.ndarray:
    """(R, R) the Laplacian of the graph of run pairs not told apart: m' L m sums (m_r - m_s)^2
    over them."""
    open_pairs = ~decided
    np.fill_diagonal(open_pairs, False)
    adjacency = open_pairs.astype(np.float64)
    return np.diag(adjacency.sum(axis=1)) - adjacency


def next_sizes(gradients: np.ndarray, judge: np.ndarray, top: int, decided: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """(P,) each pair's size for the next phase: the root mean square, over a grade up and down,
    of sqrt(m' L m) (m the moves of every run's mean, L `undecided_laplacian`), times ``spread``.
    With every pair of runs decided, the moves of the runs' means themselves."""
    moves = grade_moves(gradients, judge, top)  # (R, P, 2)
    laplacian = undecided_laplacian(decided)
    if not laplacian.any():
        return np.sqrt((moves**2).mean(axis=(0, 2))) * spread
    mixed = np.einsum("rs,spk->rpk", laplacian, moves)
    return np.sqrt(np.clip((mixed * moves).sum(axis=0).mean(axis=-1), 0.0, None)) * spread


def next_inclusion(size: np.ndarray, labelled: np.ndarray, count: int, floor: float = FLOOR) -> np.ndarray:
    """(P,) pi of the next phase: 0 on labelled pairs, ``count`` spread over the others in
    proportion to their floored size."""
    open_pairs = ~labelled
    inclusion = np.zeros(len(size))
    if count > 0 and open_pairs.any():
        inclusion[open_pairs] = proportional_inclusion(with_floor(size[open_pairs], floor), min(count, int(open_pairs.sum())))
    return inclusion
