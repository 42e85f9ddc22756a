"""A probe's statistics against their definitions (qrelkit.evaluate.probes): the estimates are the
plain means over pairs, the intervals resample queries (checked against scipy's bootstrap of the
same statistic over the same clusters), and the p-value is the randomisation test's, checked
against the exact test that enumerates every swap of 8 queries."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.probes import probe_shift


@pytest.fixture(scope="module")
def pairs():
    """8 queries with 3 to 7 pairs each; scores on 0-3, shifts that differ by query."""
    rng = np.random.default_rng(11)
    qids, before, after = [], [], []
    for q in range(8):
        for _ in range(3 + q % 5):
            b = float(rng.integers(0, 2))
            qids.append(f"q{q}")
            before.append(b)
            after.append(min(3.0, b + float(rng.integers(0, 3)) * (q % 3 != 0)))
    return qids, np.asarray(before), np.asarray(after)


def test_the_estimates_are_the_means_over_the_pairs(pairs):
    qids, before, after = pairs
    found = probe_shift(qids, before, after, 2.0, resamples=0, permutations=0)
    assert found.pairs == len(qids) and found.queries == 8
    assert found.mean_shift == pytest.approx(np.mean(after - before), abs=1e-15)
    assert found.estimates["relevant_before"] == pytest.approx(np.mean(before >= 2), abs=1e-15)
    assert found.pushed_to_relevant == pytest.approx(np.mean(after >= 2), abs=1e-15)
    assert (found.raised, found.lowered, found.unchanged) == (
        int((after > before).sum()),
        int((after < before).sum()),
        int((after == before).sum()),
    )


def test_a_pair_without_a_relevance_level_is_left_out_of_the_shares_only(pairs):
    qids, before, after = pairs
    levels = np.where(np.arange(len(qids)) % 2 == 0, 2.0, np.nan)
    found = probe_shift(qids, before, after, levels, resamples=0, permutations=0)
    kept = ~np.isnan(levels)
    assert found.pushed_to_relevant == pytest.approx(np.mean(after[kept] >= 2))
    assert found.mean_shift == pytest.approx(np.mean(after - before))


def _ratio(qids, values):
    """The statistic on a resample of queries: Σ over the drawn queries' pairs / their pair count."""
    by_query = {}
    for q, v in zip(qids, values):
        by_query.setdefault(q, []).append(v)
    order = sorted(by_query)
    sums = np.asarray([sum(by_query[q]) for q in order])
    counts = np.asarray([len(by_query[q]) for q in order])

    def statistic(drawn, axis=-1):
        drawn = np.asarray(drawn, dtype=int)
        return sums[drawn].sum(axis=axis) / counts[drawn].sum(axis=axis)

    return statistic, len(order)


@pytest.mark.parametrize("method, scipy_method", [("percentile", "percentile"), ("bca", "BCa")])
def test_the_interval_is_scipys_cluster_bootstrap_of_the_same_statistic(pairs, method, scipy_method):
    """scipy resamples the 8 queries with its own generator: the ends agree to the Monte Carlo error
    of 20,000 resamples (well under 0.02 on a shift of about 0.8)."""
    scipy_stats = pytest.importorskip("scipy.stats")
    qids, before, after = pairs
    found = probe_shift(qids, before, after, 2.0, resamples=20_000, permutations=0, interval=method, seed=3)
    statistic, queries = _ratio(qids, after - before)
    reference = scipy_stats.bootstrap(
        (np.arange(queries),), statistic, vectorized=True, n_resamples=20_000, method=scipy_method, random_state=5
    ).confidence_interval
    interval = found.intervals["mean_shift"]
    assert interval.method == ("BCa" if method == "bca" else "percentile")
    assert interval.low == pytest.approx(reference.low, abs=0.02) and interval.high == pytest.approx(reference.high, abs=0.02)


def test_the_default_interval_is_the_jackknife_over_queries(pairs):
    """θ̂ ± 1.96·SE, SE² = (Q−1)/Q · Σ (θ_(q) − θ̄)², θ_(q) the mean shift over the pairs of every query but q
    (computed here from the pairs themselves); the same for every seed."""
    qids, before, after = pairs
    shifts = after - before
    order = sorted(set(qids))
    left_out = np.asarray([np.mean([d for q2, d in zip(qids, shifts) if q2 != q]) for q in order])
    error = np.sqrt((len(order) - 1) / len(order) * np.sum((left_out - left_out.mean()) ** 2))
    for seed in (0, 9):
        interval = probe_shift(qids, before, after, 2.0, permutations=0, seed=seed).intervals["mean_shift"]
        assert interval.method == "jackknife"
        assert interval.low == pytest.approx(np.mean(shifts) - 1.959963984540054 * error, abs=1e-12)
        assert interval.high == pytest.approx(np.mean(shifts) + 1.959963984540054 * error, abs=1e-12)


def test_the_p_value_is_the_exact_randomisation_tests(pairs):
    """Every one of the 2^8 swaps of the queries' before and after: p = share with |Δ*| ≥ |Δ|."""
    qids, before, after = pairs
    order = sorted(set(qids))
    sums = np.asarray([sum(a - b for q2, b, a in zip(qids, before, after) if q2 == q) for q in order])
    observed = sums.sum() / len(qids)
    null = [abs((np.asarray(signs) * sums).sum() / len(qids)) for signs in itertools.product((1, -1), repeat=len(order))]
    exact = np.mean([value >= abs(observed) - 1e-12 for value in null])
    found = probe_shift(qids, before, after, 2.0, resamples=0, permutations=50_000, seed=1)
    assert found.p_value == pytest.approx(exact, abs=0.005)
    assert 0 < exact < 0.2  # a shift the test can see, not a trivial 0 or 1


def test_no_usable_pair_is_an_input_error_not_a_number():
    with pytest.raises(QrelkitError, match="nothing to compare"):
        probe_shift([], [], [], 2.0)
    with pytest.raises(QrelkitError, match="finite"):
        probe_shift(["q1"], [1.0], [float("nan")], 2.0)
