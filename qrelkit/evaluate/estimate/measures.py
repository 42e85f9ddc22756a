"""The measures as functions of per-pair label features, and their gradients.

A label y on a scale 0..G is read as G + 1 features: its gain (trec_eval's linear gain, y where
y > 0) and the indicators 1[y >= L] for L = 1..G (`features`). Every measure is a function of the
features of the pairs in the runs' lists and of their totals per query (`counts`):

- nDCG@k = DCG@k / IDCG@k, DCG linear in the gains; IDCG@k = sum over L of Phi_k(C_L), where C_L
  is the query's number of pairs with grade >= L and Phi_k(c) the sum of the first min(c, k)
  discounts 1/log2(i + 1) (linear between whole c). For whole counts this is the ideal DCG of the
  sorted grades, and it is defined for an estimated (fractional) count too;
- P(rel=L)@k: the indicators in the top k, over k;
- AP(rel=L) = sum_i x_i (S_{i-1} + 1) / rank_i / C_L, S the relevant pairs ranked above i;
- RR(rel=L) = sum_i x_i prod_{j<i} (1 - x_j) / rank_i.

With the features of whole grades these are exactly trec_eval's (and `evaluate`'s) values; with
estimated features (a judge's label corrected by the human sample, `qrelkit.evaluate.estimate.pairs`)
the polynomial parts are unbiased wherever the estimates of distinct pairs are independent, and the
ratios are estimated by linearisation. Arrays carry any leading axes (draws of a simulation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.estimate.pool import NO_PAIR, Pool, RankedLists
from qrelkit.evaluate.measures import Measure, vectorised_measure

SUPPORTED = "nDCG@k, nDCG, P@k, P(rel=L)@k, AP, AP(rel=L), RR, RR(rel=L)"


def features(labels: np.ndarray, top: int) -> np.ndarray:
    """(..., G + 1): the gain (clipped to the scale) and each level's indicator; for a fractional
    label (a judge's expected grade) the indicators are its share of each step, so the gain is
    still their sum. NaN (no label) reads as 0."""
    values = np.nan_to_num(np.asarray(labels, dtype=np.float64), nan=0.0)
    levels = np.arange(1, top + 1, dtype=np.float64)
    steps = np.clip(values[..., None] - levels + 1.0, 0.0, 1.0)
    return np.concatenate([steps.sum(axis=-1, keepdims=True), steps], axis=-1)


def parse(name: str, top: int) -> Measure:
    """A measure this module estimates, or a clear error."""
    measure = vectorised_measure(name)
    plain = measure is not None and measure.gains is None and not measure.judged_only and not measure.params
    if measure is None or not plain or measure.family not in ("nDCG", "P", "AP", "RR"):
        raise QrelkitError(f"measure {name!r}: estimates from a human sample are made for {SUPPORTED} (linear gains)")
    if measure.family != "nDCG" and not 1 <= measure.rel <= top:
        raise QrelkitError(f"measure {name!r}: relevance level {measure.rel} must lie within the grade scale, 1 to {top}")
    return replace(measure, cutoff=cutoff_of(measure))


def cutoff_of(measure: Measure) -> int | None:
    """The measure's rank cut-off as a whole number (None: the whole ranking)."""
    return None if measure.cutoff is None else int(measure.cutoff)


@dataclass(frozen=True)
class Gradient:
    """d(value_qr)/d(feature of a pair): ``listed`` (..., R, Q, depth, F) for the pair at each place
    of run r's list for query q, plus ``query`` (..., R, Q, F) for every pair of query q."""

    listed: np.ndarray
    query: np.ndarray


class Kernel:
    """One measure over ranked lists: values (..., R, Q) and their gradient, from gathered
    features (..., R, Q, depth, F) and per-query feature totals (..., Q, F)."""

    def __init__(self, measure: Measure, lists: RankedLists, top: int):
        self.measure, self.lists, self.top = measure, lists, top
        self.level = measure.rel
        listed = np.isfinite(lists.rank)
        rank = np.where(listed, lists.rank, 1.0)
        self.discount = np.where(listed, 1.0 / np.log2(rank + 1.0), 0.0)
        self.inverse_rank = np.where(listed, 1.0 / rank, 0.0)

    @property
    def capped(self) -> tuple[float, float]:
        """(low, high) a per-query estimate is kept within: a ratio (nDCG, AP: an estimated IDCG or
        #relevant below) at most 1, against the blow-ups of a small estimated denominator. P@k and
        RR are polynomials of the labels and are left alone: a cap only biased them in the
        simulation (P@10 by -0.03; RR(rel=2)'s coverage fell from 94.5% to 33%). A pair sample lifts
        nDCG's cap where the labels prove its ideal DCG (`pairs.ideal_parts`)."""
        return (-np.inf, 1.0) if self.measure.family in ("nDCG", "AP") else (-np.inf, np.inf)

    def moved_by(self) -> tuple[list[int], list[int]]:
        """The features a list place's gradient, and a query's, can be non-zero on."""
        family, level = self.measure.family, self.level
        if family == "nDCG":
            return [0], list(range(1, self.top + 1))
        return [level], ([level] if family == "AP" else [])

    def gather(self, estimated: np.ndarray) -> np.ndarray:
        """(..., R, Q, depth, F) features of each listed pair from (..., P, F) (0 at padded places)."""
        padded = np.concatenate([estimated, np.zeros(estimated.shape[:-2] + (1, estimated.shape[-1]))], axis=-2)
        index = np.where(self.lists.pair == NO_PAIR, estimated.shape[-2], self.lists.pair)
        return padded[..., index, :]

    def values(self, listed: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return self._evaluate(listed, counts, gradient=False)[0]

    def gradient(
        self, listed: np.ndarray, counts: np.ndarray, spread: np.ndarray | None = None, slope: str = "expected"
    ) -> tuple[np.ndarray, Gradient]:
        """Values and their gradient; ``spread`` (..., Q, F): how uncertain each count is, where the
        slope of nDCG's ideal DCG is to be read over that uncertainty (``slope``: `ideal_curve`'s)."""
        values, gradient = self._evaluate(listed, counts, gradient=True, spread=spread, slope=slope)
        assert gradient is not None
        return values, gradient

    def _evaluate(
        self, listed: np.ndarray, counts: np.ndarray, gradient: bool, spread: np.ndarray | None = None, slope: str = "expected"
    ) -> tuple[np.ndarray, Gradient | None]:
        family = self.measure.family
        if family == "nDCG":
            return self._ndcg(listed, counts, gradient, None if spread is None else spread[..., 1:], slope)
        if family == "P":
            return self._precision(listed, gradient)
        if family == "AP":
            return self._average_precision(listed, counts, gradient)
        return self._reciprocal_rank(listed, gradient)

    def _zeros_query(self, listed: np.ndarray) -> np.ndarray:
        return np.zeros(listed.shape[:-2] + (listed.shape[-1],))

    def _ndcg(
        self, listed: np.ndarray, counts: np.ndarray, gradient: bool, spread: np.ndarray | None, slope: str = "expected"
    ) -> tuple[np.ndarray, Gradient | None]:
        dcg = (listed[..., 0] * self.discount).sum(axis=-1)
        cap = cutoff_of(self.measure)
        ideal_steps, slopes = ideal_curve(counts[..., 1:], cap, spread, slope=slope)
        ideal = ideal_steps.sum(axis=-1)[..., None, :]  # (..., 1, Q): one ideal per query, for every run
        safe = np.where(ideal > 0, ideal, 1.0)
        values = np.where(ideal > 0, dcg / safe, 0.0)
        if not gradient:
            return values, None
        on_listed = np.zeros(listed.shape)
        on_listed[..., 0] = np.where(ideal[..., None] > 0, self.discount / safe[..., None], 0.0)
        on_query = self._zeros_query(listed)
        on_query[..., 1:] = np.where(ideal[..., None] > 0, -(values / safe)[..., None] * slopes[..., None, :, :], 0.0)
        return values, Gradient(on_listed, on_query)

    def _precision(self, listed: np.ndarray, gradient: bool) -> tuple[np.ndarray, Gradient | None]:
        cutoff = self.measure.cutoff
        assert cutoff is not None
        values = listed[..., self.level].sum(axis=-1) / cutoff
        if not gradient:
            return values, None
        on_listed = np.zeros(listed.shape)
        on_listed[..., self.level] = np.where(self.lists.pair != NO_PAIR, 1.0 / cutoff, 0.0)
        return values, Gradient(on_listed, self._zeros_query(listed))

    def _average_precision(self, listed: np.ndarray, counts: np.ndarray, gradient: bool) -> tuple[np.ndarray, Gradient | None]:
        x = listed[..., self.level]
        above = np.cumsum(x, axis=-1) - x  # relevant pairs ranked above each place
        numerator = (x * (above + 1.0) * self.inverse_rank).sum(axis=-1)
        relevant = counts[..., self.level][..., None, :]  # (..., 1, Q)
        safe = np.where(relevant > 0, relevant, 1.0)
        values = np.where(relevant > 0, numerator / safe, 0.0)
        if not gradient:
            return values, None
        weighted = x * self.inverse_rank
        below = np.flip(np.cumsum(np.flip(weighted, axis=-1), axis=-1), axis=-1) - weighted  # sum over places after
        on_listed = np.zeros(listed.shape)
        on_listed[..., self.level] = np.where(relevant[..., None] > 0, ((above + 1.0) * self.inverse_rank + below) / safe[..., None], 0.0)
        on_query = self._zeros_query(listed)
        on_query[..., self.level] = np.where(relevant > 0, -values / safe, 0.0)
        return values, Gradient(on_listed, on_query)

    def _reciprocal_rank(self, listed: np.ndarray, gradient: bool) -> tuple[np.ndarray, Gradient | None]:
        x = listed[..., self.level]
        missed = 1.0 - x
        # none relevant above each place: the product of (1 - x) over the places before it
        before = np.concatenate([np.ones(x.shape[:-1] + (1,)), np.cumprod(missed, axis=-1)[..., :-1]], axis=-1)
        values = (x * before * self.inverse_rank).sum(axis=-1)
        if not gradient:
            return values, None
        # after[j] = sum_{i>j} x_i / rank_i * prod_{j<l<i} (1 - x_l), built from the end of each list
        after = np.zeros(x.shape)
        for place in range(x.shape[-1] - 2, -1, -1):
            nxt = place + 1
            after[..., place] = x[..., nxt] * self.inverse_rank[..., nxt] + missed[..., nxt] * after[..., nxt]
        on_listed = np.zeros(listed.shape)
        on_listed[..., self.level] = np.where(self.lists.pair != NO_PAIR, before * (self.inverse_rank - after), 0.0)
        return values, Gradient(on_listed, self._zeros_query(listed))


def ideal_curve(
    counts: np.ndarray, cutoff: int | None, spread: np.ndarray | None = None, *, slope: str = "expected"
) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(C_L), Phi'(C_L)) for counts (..., G): the summed discounts of the first C_L places
    (to ``cutoff``), linear between whole counts, and the slope there (0 past the cutoff). A
    negative estimated count reads as 0, at the first place's slope.

    With ``spread`` (..., G), a normal standard deviation of each count about C_L (Phi is flat below
    0 and past the cutoff), the slope is read over that uncertainty:

    - ``slope="expected"``: E[Phi'(C_L + sZ)], the slope expected there (the design's size measure:
      a count the judge puts just past the cutoff still matters to the ideal DCG if it may lie
      below it);
    - ``slope="spread"``: sd[Phi(C_L + sZ)] / s, the slope whose linear term has the spread the ideal
      DCG itself has over the count's uncertainty (the estimates' variance: a count estimated past
      the cutoff moves the ideal DCG only in the draws where it falls below, and never by more
      than the curve's range, where the slope at the estimate alone, 0 or a whole discount times
      a count's wide spread, was 0 or up to 16 times the ideal DCG's actual variance)."""
    if slope not in ("expected", "spread"):
        raise ValueError(f"slope {slope!r}: 'expected' or 'spread'")
    places = int(np.ceil(np.nanmax(counts, initial=0.0))) + 2 if cutoff is None else cutoff
    if cutoff is None and spread is not None and slope == "spread":
        places = int(np.ceil(np.nanmax(counts + 6.0 * np.asarray(spread), initial=0.0))) + 2  # room for the spread's tail
    discounts = 1.0 / np.log2(np.arange(1, places + 1) + 1.0)
    summed = np.concatenate([[0.0], np.cumsum(discounts)])
    clipped = np.clip(counts, 0.0, places)
    whole = np.minimum(np.floor(clipped).astype(np.int64), places)
    slope_at = np.minimum(whole, places - 1)
    value = summed[whole] + (clipped - whole) * np.where(whole < places, discounts[slope_at], 0.0)
    plain = np.where(clipped < places, discounts[slope_at], 0.0)
    if spread is None:
        return value, plain
    scale = np.broadcast_to(np.asarray(spread, dtype=np.float64), np.shape(counts))
    if slope == "spread":
        spread_of = _curve_spread(np.asarray(counts, dtype=np.float64), scale, discounts)
        return value, np.where(scale > 1e-9, spread_of / np.maximum(scale, 1e-9), plain)
    from scipy.special import ndtr

    edges = np.arange(places + 1, dtype=np.float64)  # place j's slope holds on [j - 1, j)
    below = ndtr((edges - np.asarray(counts, dtype=np.float64)[..., None]) / np.maximum(scale, 1e-9)[..., None])
    return value, (np.diff(below, axis=-1) * discounts).sum(axis=-1)


def _curve_spread(counts: np.ndarray, scale: np.ndarray, discounts: np.ndarray) -> np.ndarray:
    """sd[Phi(C + sZ)], exactly: Phi = sum_k d_k t_k with t_k = clip(X - k, 0, 1), X ~ N(C, s^2),
    and t_j = 1 wherever t_k > 0 for j < k, so Var = sum_k d_k^2 Var(t_k) + 2 sum_k d_k E[t_k]
    sum_{j<k} d_j (1 - E[t_j]), from the normal's first two moments on each segment."""
    from scipy.special import ndtr

    s = np.maximum(scale, 1e-12)[..., None]
    mu = counts[..., None] - np.arange(len(discounts), dtype=np.float64)  # X - k has mean mu, sd s
    a, b = -mu / s, (1.0 - mu) / s
    pdf_a, pdf_b = np.exp(-0.5 * a * a) / np.sqrt(2.0 * np.pi), np.exp(-0.5 * b * b) / np.sqrt(2.0 * np.pi)
    below, inside, above = ndtr(a), ndtr(b) - ndtr(a), ndtr(-b)
    tail = s * (pdf_a - pdf_b)  # E[(X - k - mu) 1(0 < X - k < 1)]
    spread = s * s * (inside + a * pdf_a - b * pdf_b)  # E[(X - k - mu)^2 1(0 < X - k < 1)]
    # t_k's moments about m = clip(mu, 0, 1), which keeps both small where t_k hardly varies
    m = np.clip(mu, 0.0, 1.0)
    shift = mu - m
    mean_about = -m * below + (1.0 - m) * above + shift * inside + tail
    square_about = m * m * below + (1.0 - m) ** 2 * above + shift * shift * inside + 2.0 * shift * tail + spread
    own = np.maximum(square_about - mean_about**2, 0.0)  # Var(t_k)
    first = m + mean_about  # E[t_k]
    rest = below + (1.0 - mu) * inside - tail  # 1 - E[t_k], without the cancellation
    before = np.cumsum(discounts * rest, axis=-1) - discounts * rest  # sum over j < k of d_j (1 - E[t_j])
    variance = (discounts**2 * own).sum(axis=-1) + 2.0 * (discounts * first * before).sum(axis=-1)
    return np.sqrt(np.maximum(variance, 0.0))


def query_totals(estimated: np.ndarray, pool: Pool) -> np.ndarray:
    """(..., Q, F) the features summed over each query's pairs."""
    lead, (n_pairs, n_features) = estimated.shape[:-2], estimated.shape[-2:]
    flat = estimated.reshape((-1, n_pairs, n_features))
    draws = flat.shape[0]
    where = (np.arange(draws)[:, None] * pool.n_queries + pool.query[None, :]).ravel()
    totals = np.stack(
        [np.bincount(where, weights=flat[..., f].ravel(), minlength=draws * pool.n_queries) for f in range(n_features)], axis=-1
    )
    return totals.reshape(lead + (pool.n_queries, n_features))
