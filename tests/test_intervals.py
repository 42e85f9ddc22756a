"""Bootstrap intervals over queries (issue 23, point 6): BCa by default, as scipy.stats.bootstrap
computes it, on the project's own resamples; percentile on request, unchanged to the last digit;
the method named in every output; a note wherever an estimate lies outside its interval."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import correlate_systems, kendall_tau_b
from qrelkit.evaluate.bias import group_bias, relative_delta
from qrelkit.evaluate.bootstrap import (
    bootstrap_interval,
    jackknife_counts,
    jackknife_weights,
    paired_intervals,
    percentile_interval,
    resample_counts,
    resample_weights,
)
from qrelkit.evaluate.choices import MAX_RESAMPLES
from qrelkit.evaluate.labels import GradeMaps, cohen_kappa, kappa_statistic_of, mapped_pairs
from qrelkit.evaluate.metrics import Evaluation


def _evaluation(matrix: np.ndarray, measure: str = "m") -> Evaluation:
    runs = [f"r{i}" for i in range(matrix.shape[0])]
    queries = [f"q{j:02d}" for j in range(matrix.shape[1])]
    return Evaluation([measure], queries, runs, {run: {measure: matrix[i]} for i, run in enumerate(runs)})


def _track(seed: int = 3, runs: int = 9, queries: int = 15, noise: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    reference = rng.random((runs, queries))
    return reference + rng.normal(0, noise, reference.shape), reference


def _scipy_bca(statistic, n_queries: int, ours: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """scipy.stats.bootstrap's BCa interval over the queries, fed our bootstrap distribution: scipy
    computes the estimate and the jackknife itself from ``statistic`` (a function of the drawn
    query indices) and reads its percentiles off our resampled values."""
    given = SimpleNamespace(bootstrap_distribution=np.asarray(ours, np.float64))
    result = stats.bootstrap(
        (np.arange(n_queries),), statistic, n_resamples=0, bootstrap_result=given, method="BCa", vectorized=False, confidence_level=level
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def test_bca_of_kendall_tau_equals_scipy_bootstrap_on_the_same_resamples():
    model, reference = _track()
    n_queries = reference.shape[1]
    weights = resample_weights(n_queries, 400, seed=2)
    result = correlate_systems(_evaluation(model), _evaluation(reference), weights=weights, interval="bca")["m"]
    assert result.method == "BCa" and result.intervals["kendall_tau"].method == "BCa"
    # our bootstrap distribution of τ, recomputed with scipy's τ on each resample written as query indices
    ours = [stats.kendalltau(reference[:, topics].mean(axis=1), model[:, topics].mean(axis=1)).statistic for topics in _indices(weights)]

    def tau(topics):
        return stats.kendalltau(reference[:, topics].mean(axis=1), model[:, topics].mean(axis=1)).statistic

    expected = _scipy_bca(tau, n_queries, np.array(ours))
    assert result.ci95["kendall_tau"] == pytest.approx(expected, abs=1e-12)
    low, high = result.ci95["kendall_tau"]
    assert low <= result.kendall_tau <= high


def _indices(weights: np.ndarray) -> list[np.ndarray]:
    """Each resample as the list of drawn query indices."""
    n_queries = weights.shape[1]
    return [np.repeat(np.arange(n_queries), row) for row in np.rint(weights * n_queries).astype(int)]


@pytest.mark.parametrize("seed", range(4))
def test_bca_of_a_mean_equals_scipy_bootstrap(seed):
    """The same check on the plainest statistic, a skewed mean, where BCa's acceleration matters."""
    rng = np.random.default_rng(seed)
    values = rng.lognormal(0, 1, 25)
    weights = resample_weights(25, 300, seed=seed)
    found = paired_intervals(lambda w: {"mean": w @ values}, weights, method="bca")
    ours = weights @ values
    expected = _scipy_bca(lambda topics: values[topics].mean(), 25, ours)
    assert (found.intervals["mean"].low, found.intervals["mean"].high) == pytest.approx(expected, rel=1e-12)
    assert found.estimates["mean"] == pytest.approx(values.mean(), rel=1e-15)


def test_percentile_on_request_is_the_interval_of_before():
    model, reference = _track(seed=5)
    weights = resample_weights(reference.shape[1], 200, seed=0)
    result = correlate_systems(_evaluation(model), _evaluation(reference), weights=weights, interval="percentile")["m"]
    ours = [kendall_tau_b(reference[:, topics].mean(axis=1), model[:, topics].mean(axis=1)) for topics in _indices(weights)]
    assert result.ci95["kendall_tau"] == pytest.approx(percentile_interval(np.array(ours)), abs=1e-12)
    assert result.method == "percentile"


def test_jackknife_leaves_each_query_out_once_and_groups_when_asked():
    assert np.array_equal(jackknife_counts(3), [[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    assert np.allclose(jackknife_weights(4).sum(axis=1), 1.0)
    grouped = jackknife_counts(10, max_groups=3)
    assert grouped.shape == (3, 10) and np.array_equal((grouped == 0).sum(axis=0), np.ones(10))  # every query left out once


def test_an_estimate_outside_its_interval_always_has_a_note():
    rng = np.random.default_rng(0)
    resampled = rng.uniform(0.0, 0.9, 500)
    percentile = bootstrap_interval(1.0, resampled, method="percentile")
    assert percentile.method == "percentile" and "lies above its 95% percentile interval" in percentile.note
    # BCa cannot place an estimate above every resample: the percentile interval, named, with the reason
    bca = bootstrap_interval(1.0, resampled, rng.uniform(0.9, 1.0, 20))
    assert bca.method == "percentile" and "no BCa interval" in bca.note and "above every resample" in bca.note
    inside = bootstrap_interval(0.45, resampled, rng.uniform(0.4, 0.5, 20))
    assert inside.method == "BCa" and inside.note is None and inside.low <= 0.45 <= inside.high
    assert bootstrap_interval(0.5, np.full(10, np.nan), np.zeros(3)) is None  # undefined on every resample


def test_kappa_interval_resamples_queries_with_the_same_draws():
    """κ over a resample = κ of the pairs of the drawn queries, each query as often as drawn."""
    rng = np.random.default_rng(1)
    queries = [f"q{i}" for i in range(12)]
    reference = {q: {f"d{j}": int(rng.integers(0, 4)) for j in range(int(rng.integers(5, 15)))} for q in queries}
    model = {q: {d: int(np.clip(g + rng.integers(-1, 2), 0, 3)) for d, g in docs.items()} for q, docs in reference.items()}
    weights = resample_weights(len(queries), 200, seed=3)
    statistic = kappa_statistic_of(mapped_pairs(model, reference), queries)

    def by_hand(topics) -> float:
        pairs = [(reference[queries[t]][d], model[queries[t]][d]) for t in topics for d in reference[queries[t]]]
        return cohen_kappa([r for r, _ in pairs], [m for _, m in pairs])

    everything = by_hand(range(len(queries)))
    assert statistic(np.full((1, 12), 1 / 12))["cohen_kappa"][0] == pytest.approx(everything, abs=1e-12)
    resampled = np.array([by_hand(t) for t in _indices(weights)])
    assert statistic(weights)["cohen_kappa"] == pytest.approx(resampled, abs=1e-12)
    found = paired_intervals(statistic, weights, method="bca")
    expected = _scipy_bca(lambda topics: by_hand(topics), len(queries), resampled)
    assert found.intervals["cohen_kappa"].interval == pytest.approx(expected, abs=1e-12)


def test_relative_delta_interval_is_bca_of_the_paired_difference():
    model, reference = _track(seed=8, runs=8, queries=14, noise=0.3)
    groups = {"first": ["r0", "r1", "r2"]}
    weights = resample_weights(14, 300, seed=1)
    bias = group_bias(_evaluation(model), _evaluation(reference), groups, weights=weights, interval="bca")["first"]["m"]
    inside = np.arange(8) < 3

    def difference(topics) -> float:
        model_means, reference_means = model[:, topics].mean(axis=1), reference[:, topics].mean(axis=1)
        return relative_delta(model_means[inside].mean(), model_means[~inside].mean()) - relative_delta(
            reference_means[inside].mean(), reference_means[~inside].mean()
        )

    resampled = np.array([difference(t) for t in _indices(weights)])
    assert bias.difference_ci95 == pytest.approx(_scipy_bca(difference, 14, resampled), abs=1e-9)
    assert bias.method == "BCa" and bias.difference_ci95[0] <= bias.difference <= bias.difference_ci95[1]


def test_resample_counts_above_the_limit_are_refused_before_any_draw():
    with pytest.raises(QrelkitError, match=f"at most {MAX_RESAMPLES:,} bootstrap resamples"):
        resample_counts(43, 100_000_000)
    with pytest.raises(QrelkitError, match="GB of resample weights"):
        resample_counts(7_000, MAX_RESAMPLES)
    with pytest.raises(QrelkitError, match=">= 0"):
        resample_counts(43, -1)
    assert resample_counts(43, MAX_RESAMPLES, seed=0).shape == (MAX_RESAMPLES, 43)


def test_an_unknown_interval_method_is_refused():
    model, reference = _track()
    with pytest.raises(QrelkitError, match="--interval 'basic': choose jackknife \\(the default\\), bca, percentile or subsampling"):
        correlate_systems(_evaluation(model), _evaluation(reference), resamples=10, interval="basic")


def test_orderings_are_compared_in_chunks_with_the_same_values(monkeypatch):
    from qrelkit.evaluate import agreement

    model, reference = _track()
    weights = resample_weights(reference.shape[1], 50, seed=0)
    whole = correlate_systems(_evaluation(model), _evaluation(reference), weights=weights)["m"]
    monkeypatch.setattr(agreement, "ROWS_PER_CHUNK", 7)
    chunked = correlate_systems(_evaluation(model), _evaluation(reference), weights=weights)["m"]
    assert chunked.ci95 == whole.ci95 and not math.isnan(chunked.ci95["tau_ap"][0])


def test_fd_interval_is_bca_over_queries_from_the_same_draws_and_the_jackknife():
    from qrelkit.evaluate.fd import FDSettings, fd_of_runs, frechet_distance
    from qrelkit.io import Qrel, Qrels, Run, RunEntry

    rng = np.random.default_rng(4)
    n_queries, d = 10, 4
    qids = [f"q{i}" for i in range(n_queries)]
    qrels = Qrels("q", tuple(Qrel(q, f"{q}-rel{j}", 2) for q in qids for j in range(3)))
    run = Run("r", tuple(RunEntry(q, f"{q}-ret{j}", j + 1, 10.0 - j) for q in qids for j in range(4)))
    vectors = {f"{q}-rel{j}": rng.normal(0, 1, d) for q in qids for j in range(3)}
    vectors |= {f"{q}-ret{j}": rng.normal(0.5, 1.2, d) for q in qids for j in range(4)}
    report = fd_of_runs(qrels, [run], vectors, FDSettings(ks=(4,), resamples=150, seed=2), keep_samples=True)
    fd = report.runs["r"]["FD@4"]

    def fd_of(topics) -> float:
        relevant = np.stack([vectors[f"{qids[t]}-rel{j}"] for t in topics for j in range(3)])
        retrieved = np.stack([vectors[f"{qids[t]}-ret{j}"] for t in topics for j in range(4)])
        return frechet_distance(relevant, retrieved).value

    counts = resample_counts(n_queries, 150, seed=2)
    by_hand = np.array([fd_of(np.repeat(np.arange(n_queries), row.astype(int))) for row in counts])
    assert fd.samples == pytest.approx(by_hand, rel=1e-9)  # the same draws as every other statistic
    assert fd.bootstrap.method == "BCa" and report.to_dict()["interval"]["method"] == "BCa"
    assert (fd.bootstrap.low, fd.bootstrap.high) == pytest.approx(_scipy_bca(fd_of, n_queries, fd.samples), rel=1e-9)
    assert fd.bootstrap.low <= fd.value <= fd.bootstrap.high
    percentile = fd_of_runs(qrels, [run], vectors, FDSettings(ks=(4,), resamples=150, seed=2, interval="percentile"))
    assert percentile.runs["r"]["FD@4"].bootstrap.interval == pytest.approx(percentile_interval(by_hand), rel=1e-9)


def test_a_paired_difference_of_two_judges_uses_the_same_resamples_as_each_alone():
    """The piece issue 27 builds on: Δτ (judge A − judge B, against one reference) is a statistic of
    query weights like any other, so its interval pairs both judges on every resample."""
    from qrelkit.evaluate.agreement import kendall_tau_b_rows

    judge_a, reference = _track(seed=11, noise=0.1)
    judge_b = reference + np.random.default_rng(12).normal(0, 0.3, reference.shape)
    weights = resample_weights(reference.shape[1], 300, seed=5)

    def delta_tau(w: np.ndarray) -> dict[str, np.ndarray]:
        truth = w @ reference.T
        return {"delta_tau": kendall_tau_b_rows(truth, w @ judge_a.T) - kendall_tau_b_rows(truth, w @ judge_b.T)}

    found = paired_intervals(delta_tau, weights, method="bca")
    alone = {
        name: correlate_systems(_evaluation(m), _evaluation(reference), weights=weights)["m"]
        for name, m in (("a", judge_a), ("b", judge_b))
    }
    assert found.estimates["delta_tau"] == pytest.approx(alone["a"].kendall_tau - alone["b"].kendall_tau, abs=1e-12)
    tau_a = [kendall_tau_b(reference[:, t].mean(axis=1), judge_a[:, t].mean(axis=1)) for t in _indices(weights)]
    tau_b = [kendall_tau_b(reference[:, t].mean(axis=1), judge_b[:, t].mean(axis=1)) for t in _indices(weights)]
    assert found.resampled["delta_tau"] == pytest.approx(np.subtract(tau_a, tau_b), abs=1e-12)
    interval = found.intervals["delta_tau"]
    assert interval.method == "BCa" and interval.low <= found.estimates["delta_tau"] <= interval.high


def test_every_kappa_of_the_audit_has_its_statistic_binary_and_mapped_included():
    from qrelkit.evaluate.labels import label_agreement

    rng = np.random.default_rng(6)
    queries = [f"q{i}" for i in range(9)]
    reference = {q: {f"d{j}": int(rng.integers(0, 4)) for j in range(8)} for q in queries}
    model = {q: {d: int(rng.integers(0, 3)) for d in docs} for q, docs in reference.items()}
    mapping = {3: 2, 2: 2, 1: 1, 0: 0}
    labels = label_agreement(model, reference, maps=GradeMaps(reference=mapping), rel_level=2)
    statistic = kappa_statistic_of(mapped_pairs(model, reference, GradeMaps(reference=mapping)), queries, rel_level=2)
    at_estimate = statistic(np.full((1, 9), 1 / 9))
    for name in ("cohen_kappa", "cohen_kappa_linear", "cohen_kappa_quadratic", "cohen_kappa_binary"):
        assert at_estimate[name][0] == pytest.approx(getattr(labels, name), abs=1e-12), name
