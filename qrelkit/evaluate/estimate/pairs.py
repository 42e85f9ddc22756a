"""Design-based estimators for samples of pairs (the stratified and weighted designs).

Each pair's label features are estimated as the judge's prediction corrected by the human sample,
x_i = p_i + w_i (y_i - p_i) on sampled pairs and p_i elsewhere, where w_i is the pair's design
weight (1 / pi, or its share across phases of `--next`): a Horvitz-Thompson difference estimator,
unbiased for every total whatever the predictions are. The predictions (`predictions`) make it
precise: none (``human``), the judge's label (``ppi``), PPI++'s power tuning with an intercept per
query (``ppi++``, Angelopoulos, Duchi and Zrnic, 2023, as a model-assisted (GREG) survey
estimator: `_query_intercepts`), or a fit on the judge's own levels (``calibrated``).

The measures are computed from the estimated features (`measures.Kernel`); their variance by
linearisation (`linear_parts`, `design_covariance`). nDCG's ideal DCG is a concave, kinked function
of estimated counts: `ideal_parts` and `ratio_bias` say what the estimate does about it.
docs/human-budget.md has the simulation (`benchmarks/bench_human_budget.py`) behind each choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from qrelkit.evaluate.estimate.designs import Plan
from qrelkit.evaluate.estimate.measures import Gradient, Kernel, cutoff_of, query_totals
from qrelkit.evaluate.estimate.pool import NO_PAIR, Pool


@dataclass(frozen=True)
class PairSample:
    """The sampled pairs of one or more draws, padded: ``index`` (D, n) pool positions (NO_PAIR
    where padded), ``weight`` (D, n) each one's design weight, ``coef`` (D, n) and ``group`` (D, n)
    how its variance is estimated (a group >= 0 is centred on its mean first)."""

    index: np.ndarray
    weight: np.ndarray
    coef: np.ndarray
    group: np.ndarray

    @property
    def draws(self) -> int:
        return self.index.shape[0]

    @property
    def present(self) -> np.ndarray:
        return self.index != NO_PAIR

    def sizes(self) -> np.ndarray:
        return self.present.sum(axis=-1)

    def take(self, draws: slice) -> PairSample:
        return PairSample(self.index[draws], self.weight[draws], self.coef[draws], self.group[draws])


def _compact(chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(D, P) bool -> (index (D, n) padded with NO_PAIR, present (D, n))."""
    chosen = np.atleast_2d(chosen)
    width = max(int(chosen.sum(axis=-1).max(initial=0)), 1)
    order = np.argsort(~chosen, axis=-1, kind="stable")[:, :width]
    present = np.take_along_axis(chosen, order, axis=-1)
    return np.where(present, order, NO_PAIR), present


def phase_weights(
    kind: str, pi: np.ndarray, drawn: np.ndarray, size: np.ndarray, share: float = 1.0, later: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """(weight, variance coefficient) of pairs drawn in a phase with inclusion ``pi``: a stratified
    phase's (``drawn`` n_h of ``size`` N_h in each pair's stratum) estimate a stratum's total as
    N_h times its sample mean, with variance N_h^2 (1 - n_h/N_h) s_h^2 / n_h (0 where n_h < 2); a
    Poisson phase's term by term, (1 - pi) / pi^2. ``share`` and ``later``: the phase's a_k and the
    a_j of the phases after it (`combine`)."""
    if kind == "stratified":
        coef = np.where(drawn > 1, size**2 * (1.0 - drawn / size) / (drawn * np.maximum(drawn - 1.0, 1.0)), 0.0)
    else:
        coef = (1.0 - pi) / pi**2
    return share / pi + later, share**2 * coef


def sample_of(plan: Plan, share: float = 1.0, later: float = 0.0, group_offset: int = 0) -> PairSample:
    """The sample a design drew, with its weights; ``share`` and ``later``: its phase's weight a_k
    and the weights of the phases after it (one phase: 1 and 0)."""
    index, present = _compact(plan.chosen)
    safe = np.where(present, index, 0)
    pi = plan.inclusion[safe]
    if plan.kind == "stratified":
        assert plan.counts is not None
        stratum = plan.stratum[safe]
        drawn = plan.counts[stratum].astype(np.float64)
        size = np.bincount(plan.stratum, minlength=len(plan.counts))[stratum].astype(np.float64)
        group = stratum + group_offset
    else:
        drawn = size = np.zeros(index.shape)
        group = np.full(index.shape, -1)
    weight, coef = phase_weights(plan.kind, pi, drawn, size, share, later)
    return PairSample(index, np.where(present, weight, 0.0), np.where(present, coef, 0.0), np.where(present, group, -1))


def combine(phases: Sequence[PairSample], budgets: Sequence[float]) -> PairSample:
    """Samples drawn in phases (the first plan, then each `--next`), each over the pairs not yet
    labelled and possibly chosen with what the earlier ones found: phase k's estimator T_k (the
    labels known before it, plus its own Horvitz-Thompson estimate of the rest) is unbiased given
    the past, so the T_k are uncorrelated and sum_k a_k T_k with fixed a_k (each phase's share of
    the labels) is unbiased with variance sum_k a_k^2 V_k. Each phase must come from `sample_of`
    with its ``share`` and ``later`` (and distinct group offsets)."""
    index = np.concatenate([p.index for p in phases], axis=-1)
    order = np.argsort(index == NO_PAIR, axis=-1, kind="stable")

    def pick(name: str) -> np.ndarray:
        return np.take_along_axis(np.concatenate([getattr(p, name) for p in phases], axis=-1), order, axis=-1)

    return PairSample(pick("index"), pick("weight"), pick("coef"), pick("group"))


def phase_shares(budgets: Sequence[float]) -> list[tuple[float, float]]:
    """(a_k, sum of a_j for j > k) per phase: each phase's share of all labels."""
    total = float(sum(budgets))
    shares = [b / total for b in budgets]
    return [(share, float(sum(shares[k + 1 :]))) for k, share in enumerate(shares)]


def level_matrix(judge: np.ndarray) -> np.ndarray:
    """(P, K) regressors of the calibrated estimator: an intercept, the judge's label's step at each
    of its own levels 1..ceil(max) (one-hot in effect for whole grades), and an indicator of pairs
    without a judge label where there are any."""
    missing = np.isnan(judge)
    values = np.nan_to_num(judge, nan=0.0)
    top = int(np.ceil(values.max(initial=0.0)))
    columns = [np.ones(len(judge))] + [np.clip(values - level + 1.0, 0.0, 1.0) for level in range(1, top + 1)]
    if missing.any():
        columns.append(missing.astype(np.float64))
    return np.stack(columns, axis=-1)


def _weighted_fit(design: np.ndarray, targets: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per draw, the design-weighted least squares coefficients (D, K, F) of targets (D, n, F) on
    regressors (D, n, K); a tiny ridge keeps a level no sampled pair has at 0."""
    gram = np.einsum("dnk,dn,dnl->dkl", design, weights, design)
    ridge = 1e-9 * np.maximum(np.trace(gram, axis1=1, axis2=2), 1.0)[:, None, None] * np.eye(gram.shape[-1])
    right = np.einsum("dnk,dn,dnf->dkf", design, weights, targets)
    return np.linalg.solve(gram + ridge, right)


def predictions(
    estimator: str, judge_features: np.ndarray, levels: np.ndarray, human: np.ndarray, sample: PairSample, query: np.ndarray
) -> np.ndarray:
    """(D, P, F) or (P, F): each pair's predicted features under ``estimator`` (``query`` (P,) each
    pair's query)."""
    if estimator == "human":
        return np.zeros_like(judge_features)
    if estimator in ("judge", "ppi"):
        return judge_features
    safe = np.where(sample.present, sample.index, 0)
    observed = human[safe]  # (D, n, F)
    weights = np.where(sample.present, sample.weight, 0.0)
    if estimator == "calibrated":
        beta = _weighted_fit(levels[safe], observed, weights)
        return np.einsum("pk,dkf->dpf", levels, beta)
    if estimator == "ppi++":
        return _query_intercepts(judge_features, observed, weights, sample, query)
    raise ValueError(f"unknown estimator {estimator!r}")


def _own_intercepts(sample: PairSample, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flat (D, n) the (draw, query) cell of each sampled pair, counts (D, Q) of sampled pairs in
    the queries that get an intercept of their own: two or more pairs, in a draw without pairs of
    a stratified design (`PairSample.group` >= 0): its strata are the queries, and intercepts fitted
    in strata of a few pairs measured worse there (coverage 0.88 -> 0.79 at 1,000 labels), so it
    keeps the one intercept of the plain GREG fit)."""
    present, safe = sample.present, np.where(sample.present, sample.index, 0)
    draws, n_queries = present.shape[0], int(query.max(initial=-1)) + 1
    flat = np.arange(draws)[:, None] * n_queries + query[safe]
    counts = np.bincount(flat[present], minlength=draws * n_queries).reshape(draws, n_queries)
    return flat, np.where(((sample.group >= 0) & present).any(axis=-1)[:, None] | (counts < 2), 0, counts)


def _query_intercepts(judge: np.ndarray, observed: np.ndarray, weights: np.ndarray, sample: PairSample, query: np.ndarray) -> np.ndarray:
    """(D, P, F) PPI++'s predictions a_q + lambda_f * judge_f: per draw and feature, the design-
    weighted least squares fit of the human feature on the judge's with an intercept for each query
    that has one of its own (`_own_intercepts`) and one shared by the other sampled pairs, which the
    queries without one take (the whole sample's where every sampled query has its own)."""
    flat, counts = _own_intercepts(sample, query)
    present, safe = sample.present, np.where(sample.present, sample.index, 0)

    def per_cell(values: np.ndarray) -> np.ndarray:
        return np.bincount(flat[present], weights=values[present], minlength=counts.size).reshape(counts.shape)

    def mean(values: np.ndarray, mass: np.ndarray) -> np.ndarray:
        return values / np.where(mass > 0, mass, 1.0)

    own = counts > 0
    pair_own = np.take_along_axis(own, query[safe], axis=1) & present
    rest = np.where(pair_own, 0.0, weights)
    shared = np.where(rest.sum(axis=-1, keepdims=True) > 0, rest, weights)  # the pairs the shared intercept is fitted on
    mass = per_cell(weights)
    out = np.empty((counts.shape[0],) + judge.shape)
    for f in range(judge.shape[-1]):
        x, y = judge[safe, f], observed[..., f]
        x_query, y_query = mean(per_cell(weights * x), mass), mean(per_cell(weights * y), mass)
        x_rest = mean((shared * x).sum(axis=-1), shared.sum(axis=-1))
        y_rest = mean((shared * y).sum(axis=-1), shared.sum(axis=-1))
        dx = x - np.where(pair_own, np.take_along_axis(x_query, query[safe], axis=1), x_rest[:, None])
        dy = y - np.where(pair_own, np.take_along_axis(y_query, query[safe], axis=1), y_rest[:, None])
        spread = (weights * dx * dx).sum(axis=-1)
        lam = np.where(spread > 1e-12, (weights * dx * dy).sum(axis=-1) / np.where(spread > 1e-12, spread, 1.0), 0.0)
        intercept = np.where(own, y_query - lam[:, None] * x_query, (y_rest - lam * x_rest)[:, None])
        out[..., f] = intercept[:, query] + lam[:, None] * judge[None, :, f]
    return out


def variance_sample(estimator: str, sample: PairSample, query: np.ndarray) -> PairSample:
    """The sample whose terms give ``estimator``'s variance: for PPI++, the variance terms of its
    Poisson pairs scaled by n_q / (n_q - 1) where their query's intercept was fitted on its n_q
    sampled pairs (the residuals about a fitted mean understate the spread about the true one by
    that factor); for the others ``sample`` as it is."""
    if estimator != "ppi++":
        return sample
    safe = np.where(sample.present, sample.index, 0)
    _, counts = _own_intercepts(sample, query)
    n_q = np.take_along_axis(counts, query[safe], axis=1)
    scale = np.where(sample.present & (n_q >= 2), n_q / np.maximum(n_q - 1.0, 1.0), 1.0)
    return PairSample(sample.index, sample.weight, sample.coef * scale, sample.group)


def corrected(prediction: np.ndarray, human: np.ndarray, sample: PairSample) -> tuple[np.ndarray, np.ndarray]:
    """(estimated features (D, P, F), residuals (D, n, F) of the sampled pairs)."""
    draws = sample.draws
    estimated = np.broadcast_to(prediction, (draws,) + prediction.shape[-2:]).copy()
    safe = np.where(sample.present, sample.index, 0)
    predicted = np.take_along_axis(estimated, safe[..., None], axis=1)
    residual = np.where(sample.present[..., None], human[safe] - predicted, 0.0)
    rows = np.broadcast_to(np.arange(draws)[:, None], safe.shape)
    np.add.at(estimated, (rows[sample.present], safe[sample.present]), (sample.weight[..., None] * residual)[sample.present])
    return estimated, residual


def _centred(u: np.ndarray, sample: PairSample) -> np.ndarray:
    """(D, K, n) terms u with a group's terms (a stratum: `PairSample.group` >= 0) centred on their mean."""
    grouped = sample.group >= 0
    if not grouped.any():
        return u
    draws = u.shape[0]
    n_groups = int(sample.group.max()) + 1
    flat = (np.arange(draws)[:, None] * n_groups + np.where(grouped, sample.group, 0)).ravel()
    mask = grouped.ravel()
    counts = np.bincount(flat[mask], minlength=draws * n_groups)
    centred = u.copy()
    for k in range(u.shape[1]):
        sums = np.bincount(flat[mask], weights=u[:, k, :].ravel()[mask], minlength=draws * n_groups)
        means = sums / np.maximum(counts, 1)
        centred[:, k, :] -= np.where(grouped, means[flat].reshape(grouped.shape), 0.0)
    return centred


def design_covariance(u: np.ndarray, sample: PairSample) -> np.ndarray:
    """(D, R, R) the estimated design covariance of the runs' estimates from their linearised
    terms u (D, R, n): a group's terms centred on their mean, then sum_i coef_i u_ri u_si."""
    u = _centred(u, sample)
    weighted = u * sample.coef[:, None, :]
    if u.shape[0] == 1:  # a command's one sample: too small to be worth waking BLAS's threads (60 ms on a busy machine)
        return np.einsum("drn,dsn->drs", weighted, u)
    # one BLAS product per draw: numpy's stacked matmul runs without BLAS, ~20x slower here
    return np.stack([weighted[d] @ u[d].T for d in range(u.shape[0])])


def per_query_products(a: np.ndarray, b: np.ndarray, sample: PairSample, pool: Pool) -> np.ndarray:
    """(D, K, Q) sum over query q's sampled pairs of coef_i a_ki b_ki (a, b (D, K, n), centred in
    their groups first): the design (co)variance of two per-query totals whose linear terms they
    are (every pair belongs to one query)."""
    a, b = _centred(a, sample), _centred(b, sample)
    draws, n_terms, _ = a.shape
    n_queries = pool.n_queries
    safe = np.where(sample.present, sample.index, 0)
    cell = (np.arange(draws)[:, None, None] * n_terms + np.arange(n_terms)[None, :, None]) * n_queries + pool.query[safe][:, None, :]
    products = np.where(sample.present[:, None, :], sample.coef[:, None, :] * a * b, 0.0)
    return np.bincount(cell.ravel(), weights=products.ravel(), minlength=draws * n_terms * n_queries).reshape(draws, n_terms, n_queries)


@dataclass(frozen=True)
class PairEstimate:
    """One measure's estimates: ``values`` (D, R) each run's mean, ``covariance`` (D, R, R)."""

    values: np.ndarray
    covariance: np.ndarray


def known_bounds(human: np.ndarray, sample: PairSample, pool: Pool) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) (D, Q, F) what the labels seen prove about each query's feature totals: at least
    the sampled pairs' own, at most that plus one full step for every pair not sampled."""
    draws, n_queries, n_features = sample.draws, pool.n_queries, human.shape[-1]
    safe = np.where(sample.present, sample.index, 0)
    flat = (np.arange(draws)[:, None] * n_queries + pool.query[safe])[sample.present]
    seen = np.zeros((draws * n_queries, n_features))
    np.add.at(seen, flat, human[safe][sample.present])
    unseen = pool.sizes()[None, :] - np.bincount(flat, minlength=draws * n_queries).reshape(draws, n_queries)
    low = seen.reshape(draws, n_queries, n_features)
    top = np.ones(n_features)
    top[0] = n_features - 1  # the gain's step is the scale's top
    return low, low + unseen[..., None] * top


def constrained(totals: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Counts kept off 0, where 1 / IDCG and 1 / #relevant blow up, by what the labels prove: a count
    estimated below 1 is raised to the relevant pairs seen (the estimate of the pairs unseen was
    negative), a count is whole there (below 1/2 reads 0, else at least 1), none exceeds ``high``,
    and C_1 >= C_2 >= ... (a pair of grade >= L+1 is of grade >= L). The true counts satisfy all
    of it. A count of 1 or more is left as estimated: raising every count to what was seen (a
    projection) moves it toward the truth too, but always upward, and the simulation measured the
    bias that adds up over the queries (nDCG@10 -0.015 at 2,000 labels with EXAM's labels)."""
    out = np.minimum(totals, high)
    counts = out[..., 1:]
    counts = np.where(counts < 1.0, np.maximum(counts, low[..., 1:]), counts)
    out[..., 1:] = np.where(counts < 0.5, 0.0, np.maximum(counts, 1.0))
    for level in range(out.shape[-1] - 2, 0, -1):
        out[..., level] = np.maximum(out[..., level], out[..., level + 1])
    return out


def estimate(
    kernel: Kernel,
    pool: Pool,
    estimated: np.ndarray,
    residual: np.ndarray,
    sample: PairSample,
    place: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
) -> PairEstimate:
    """The runs' means of ``kernel``'s measure from estimated features (D, P, F), and their
    covariance from the sampled pairs' residuals (D, n, F). ``place``: `RankedLists.place`;
    ``bounds``: `known_bounds`. Per-query values are kept within `Kernel.capped`; nDCG as
    `ideal_parts` says."""
    listed = kernel.gather(estimated)
    totals = query_totals(estimated, pool)
    kept = constrained(totals, *bounds)
    # where a constraint holds a total or a value, small changes of the labels do not move it
    held = kept != totals
    low, cap = kernel.capped
    high: float | np.ndarray = cap
    ndcg = kernel.measure.family == "nDCG"
    spread = None
    if ndcg:
        kept, held, high, spread = ideal_parts(kernel, pool, kept, held, bounds[0], residual, sample)
    values, gradient = kernel.gradient(listed, kept, spread, slope="spread")
    on_query = np.where(~held[..., None, :, :], gradient.query, 0.0)
    on_list, on_ideal = linear_parts(kernel, Gradient(gradient.listed, on_query), pool, residual, sample, place)
    terms = on_list + on_ideal
    if ndcg:
        values = values - ratio_bias(values, terms, on_ideal, sample, pool)
    inside = (values >= low) & (values <= high)
    safe = np.where(sample.present, sample.index, 0)
    inside_at = np.take_along_axis(inside, np.broadcast_to(pool.query[safe][:, None, :], terms.shape), axis=2)
    u = np.where(inside_at, terms, 0.0) / pool.n_queries  # terms are 0 at padded places already
    means = np.clip(values, low, high).mean(axis=-1)
    return PairEstimate(means, design_covariance(u, sample))


def ideal_parts(
    kernel: Kernel, pool: Pool, kept: np.ndarray, held: np.ndarray, seen: np.ndarray, residual: np.ndarray, sample: PairSample
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """nDCG's ideal DCG where the sample decides it: (counts, held, the cap (D, 1, Q), each count's
    standard deviation (D, Q, F)).

    - A level whose labelled pairs of grade >= L (``seen``) already reach the cutoff has its part
      of the ideal DCG proven whole: its count is kept at least that, and held (no variance);
    - a query whose every level is proven has its ideal DCG exactly, so its nDCG is the estimated
      DCG over a known number, unbiased, and is not capped at 1 (the cap biased the best runs of
      the held-out simulation down by 0.02 at 1,000 labels);
    - each count's standard deviation from its sampled residuals reads the slope of the ideal DCG
      over that uncertainty (`measures.ideal_curve`, ``slope="spread"``)."""
    cutoff = cutoff_of(kernel.measure)
    proven = np.zeros(kept.shape, bool)
    if cutoff is not None:
        proven[..., 1:] = seen[..., 1:] >= cutoff
    kept = np.where(proven, np.maximum(kept, seen), kept)
    residual_terms = np.moveaxis(residual, -1, 1)  # (D, F, n)
    spread = np.sqrt(np.moveaxis(per_query_products(residual_terms, residual_terms, sample, pool), 1, -1))
    whole = proven[..., 1:].all(axis=-1) if cutoff is not None else np.zeros(kept.shape[:-1], bool)
    high = np.where(whole, np.inf, kernel.capped[1])[..., None, :]
    return kept, held | proven, high, spread


def ratio_bias(values: np.ndarray, u: np.ndarray, on_ideal: np.ndarray, sample: PairSample, pool: Pool) -> np.ndarray:
    """(D, R, Q) the second-order bias of nDCG = DCG / IDCG with both estimated:
    (nDCG Var(IDCG) - Cov(DCG, IDCG)) / IDCG^2, read from the linear terms: with u_i run r's term
    at pair i and b_i = -nDCG dIDCG_i / IDCG its ideal DCG's part, it is sum_i coef_i u_i b_i / nDCG
    (0 where nDCG is). Without it the honest variance left nDCG over-estimated on DL19 by 0.3-0.6
    of a standard error (coverage 92-94%)."""
    products = per_query_products(u, on_ideal, sample, pool)  # a pair's terms are its own query's only
    return np.where(values != 0.0, products / np.where(values != 0.0, values, 1.0), 0.0)


def linear_parts(
    kernel: Kernel, gradient: Gradient, pool: Pool, residual: np.ndarray, sample: PairSample, place: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """((D, R, n), (D, R, n)): run r's per-query value's linear term at sampled pair i, its gradient
    times its residuals, split into the part through the pair's place in the run's list and the part
    through its query's totals."""
    draws, n_runs = gradient.query.shape[:2]
    safe = np.where(sample.present, sample.index, 0)
    spot = np.moveaxis(place[:, safe], 0, 1)  # (D, R, n) the pair's place in the run's lists
    listed = spot >= 0
    spot = np.where(listed, spot, 0)
    query = np.broadcast_to(pool.query[safe][:, None, :], spot.shape)
    flat = gradient.listed.reshape(draws, n_runs, -1, gradient.listed.shape[-1])
    on_list_features, on_query_features = kernel.moved_by()
    on_list = np.zeros(spot.shape)
    on_query = np.zeros(spot.shape)
    for f in on_list_features:
        on_list += np.where(listed, np.take_along_axis(flat[..., f], spot, axis=2), 0.0) * residual[:, None, :, f]
    for f in on_query_features:
        on_query += np.take_along_axis(gradient.query[..., f], query, axis=2) * residual[:, None, :, f]
    present = sample.present[:, None, :]
    return np.where(present, on_list, 0.0), np.where(present, on_query, 0.0)
