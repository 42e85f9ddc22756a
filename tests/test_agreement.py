"""System-ranking agreement: τ-b, ρ, r against scipy; τ_AP against Yilmaz et al.'s definition;
the topic bootstrap; and the DL19 audit's published numbers through `qrelkit agree --json`."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate.agreement import (
    correlate_systems,
    kendall_tau_b,
    kendall_tau_b_rows,
    pearson_r,
    spearman_rho,
    tau_ap,
    tau_ap_rows,
)
from qrelkit.evaluate.bootstrap import percentile_interval, resample_weights
from qrelkit.evaluate.metrics import Evaluation

runner = CliRunner()

# Small integer grids make ties common, which is where τ-b and average ranks matter.
orderings = st.integers(min_value=3, max_value=25).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 6), min_size=n, max_size=n), st.lists(st.integers(0, 6), min_size=n, max_size=n))
)


def _same(ours: float, theirs: float) -> None:
    if np.isnan(theirs):
        assert np.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(orderings)
def test_kendall_tau_b_spearman_pearson_match_scipy_with_ties(pair):
    x, y = (np.array(v, dtype=float) for v in pair)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input; only the values matter here
        _same(kendall_tau_b(x, y), stats.kendalltau(x, y).statistic)  # scipy's default variant is τ-b
        _same(spearman_rho(x, y), stats.spearmanr(x, y).statistic)
        _same(pearson_r(x, y), stats.pearsonr(x, y).statistic if np.ptp(x) and np.ptp(y) else np.nan)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=30), st.randoms(use_true_random=False))
def test_row_versions_equal_one_call_per_row(values, random):
    x = np.array(values)
    y = x.copy()
    random.shuffle(y)
    rows_x, rows_y = np.vstack([x, y, x]), np.vstack([y, x, x[::-1]])
    by_row = [kendall_tau_b(a, b) for a, b in zip(rows_x, rows_y)]
    np.testing.assert_allclose(kendall_tau_b_rows(rows_x, rows_y), by_row, equal_nan=True)


def tau_ap_by_definition(reference: list[float], estimate: list[float]) -> float:
    """τ_AP = 2/(N−1) Σ_{i=2..N} C(i)/(i−1) − 1, written out from the paper (no ties)."""
    order = sorted(range(len(estimate)), key=lambda k: -estimate[k])
    total = 0.0
    for i in range(1, len(order)):
        correct = sum(reference[order[j]] > reference[order[i]] for j in range(i))
        total += correct / i
    return 2.0 / (len(order) - 1) * total - 1.0


def test_tau_ap_penalises_a_swap_at_the_top_more_than_at_the_bottom():
    truth = [4, 3, 2, 1]
    # Swapping the top two: C(2) = 0, the rest correct -> 2/3·(0 + 1 + 1) − 1 = 1/3.
    assert tau_ap(truth, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    # Swapping the bottom two: C(4) = 2 of 3 -> 2/3·(1 + 1 + 2/3) − 1 = 7/9.
    assert tau_ap(truth, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    # Kendall τ cannot tell the two apart.
    assert kendall_tau_b(truth, [3, 4, 2, 1]) == kendall_tau_b(truth, [4, 3, 1, 2]) == pytest.approx(2 / 3)
    assert tau_ap(truth, truth) == 1.0
    assert tau_ap(truth, truth[::-1]) == -1.0


def test_tau_ap_general_formula_for_a_top_swap_is_n_minus_3_over_n_minus_1():
    n = 10
    truth = list(range(n, 0, -1))
    swapped = [truth[1], truth[0], *truth[2:]]
    assert tau_ap(truth, swapped) == pytest.approx((n - 3) / (n - 1))


@settings(max_examples=80, deadline=None)
@given(st.permutations(list(range(12))), st.permutations(list(range(12))))
def test_tau_ap_matches_the_published_definition_on_untied_orderings(reference, estimate):
    assert tau_ap(reference, estimate) == pytest.approx(tau_ap_by_definition(reference, estimate), abs=1e-12)


def test_tau_ap_is_asymmetric_and_rows_agree():
    truth, estimate = [4, 3, 2, 1], [3, 2, 4, 1]
    # The estimate ranks truth's third system first: C = 0, 1, 3 at positions 2..4 -> 2/3·(0 + 1/2 + 1) − 1 = 0.
    assert tau_ap(truth, estimate) == pytest.approx(0.0)
    assert tau_ap(estimate, truth) == pytest.approx(1 / 3)
    rows = tau_ap_rows(np.vstack([truth, estimate]), np.vstack([estimate, truth]))
    np.testing.assert_allclose(rows, [tau_ap(truth, estimate), tau_ap(estimate, truth)])


def test_tau_ap_counts_a_pair_tied_in_the_reference_as_half_correct():
    # Reference ties the two top systems; the estimate puts them in one order: C(2) = 1/2.
    assert tau_ap([2, 2, 1], [3, 2, 1]) == pytest.approx(2 / 2 * (0.5 + 1.0) - 1.0)


def test_topic_weights_are_seeded_resamples_with_replacement():
    weights = resample_weights(43, 500, seed=7)
    assert weights.shape == (500, 43)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    counts = weights * 43
    np.testing.assert_allclose(counts, np.round(counts))  # whole multiplicities: each topic drawn k times
    np.testing.assert_array_equal(weights, resample_weights(43, 500, seed=7))
    assert not np.array_equal(weights, resample_weights(43, 500, seed=8))
    # Each topic is drawn about once per resample on average.
    assert counts.mean(axis=0) == pytest.approx(np.ones(43), abs=0.2)


def _evaluation(matrix: np.ndarray, measure: str = "m") -> Evaluation:
    runs = [f"r{i}" for i in range(matrix.shape[0])]
    queries = [f"q{j}" for j in range(matrix.shape[1])]
    return Evaluation([measure], queries, runs, {run: {measure: matrix[i]} for i, run in enumerate(runs)})


def test_bootstrap_equals_recomputing_both_orderings_on_resampled_topics():
    rng = np.random.default_rng(3)
    reference = rng.random((8, 12))
    model = reference + rng.normal(0, 0.15, reference.shape)
    weights = resample_weights(12, 50, seed=1)
    result = correlate_systems(_evaluation(model), _evaluation(reference), weights=weights, interval="percentile")["m"]
    by_hand = []
    for row in np.rint(weights * 12).astype(int):
        topics = np.repeat(np.arange(12), row)  # the resample, as a list of topic indices
        by_hand.append(stats.kendalltau(reference[:, topics].mean(axis=1), model[:, topics].mean(axis=1)).statistic)
    assert result.ci95["kendall_tau"] == pytest.approx(percentile_interval(np.array(by_hand)))
    assert result.kendall_tau == pytest.approx(stats.kendalltau(reference.mean(axis=1), model.mean(axis=1)).statistic)
    assert result.resamples == 50 and result.runs == 8 and result.queries == 12


def test_identical_qrels_agree_perfectly_with_a_degenerate_interval():
    matrix = np.random.default_rng(0).random((6, 9))
    result = correlate_systems(_evaluation(matrix), _evaluation(matrix), resamples=100, seed=0)["m"]
    for name in ("kendall_tau", "spearman_rho", "pearson_r", "tau_ap"):
        assert getattr(result, name) == pytest.approx(1.0)
        assert result.ci95[name] == pytest.approx((1.0, 1.0))


@pytest.fixture(scope="module")
def dl19_agree_json(dl19):
    result = runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--json",
            "--resamples",
            "200",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_dl19_umbrela_label_agreement_matches_the_known_numbers(dl19_agree_json):
    labels = dl19_agree_json["labels"]
    assert dl19_agree_json["pairs"] == {"model": 9260, "reference": 9260, "shared": 9260}
    assert round(labels["cohen_kappa"], 4) == 0.3626
    assert round(labels["cohen_kappa_linear"], 4) == 0.4865
    assert round(labels["cohen_kappa_quadratic"], 4) == 0.5951
    assert labels["confusion"]["labels"] == [0, 1, 2, 3]
    assert sum(map(sum, labels["confusion"]["matrix"])) == 9260
    assert "cohen_kappa_binary" not in labels  # only with --rel-level


def test_dl19_umbrela_system_ranking_tau_is_0_9159_over_37_runs(dl19_agree_json):
    ndcg = dl19_agree_json["systems"]["nDCG@10"]
    assert ndcg["runs"] == 37 and ndcg["queries"] == 43
    assert round(ndcg["kendall_tau"], 4) == 0.9159
    low, high = ndcg["kendall_tau_ci95"]
    assert low < ndcg["kendall_tau"] <= high <= 1.0
    assert set(dl19_agree_json["systems"]) == {"nDCG@10", "AP(rel=2)"}
    assert dl19_agree_json["bias"] == {}


def test_dl19_binarised_kappa_is_0_5244(dl19):
    result = runner.invoke(
        app,
        [
            *umbrela_vs_nist(dl19),
            "--json",
            "--resamples",
            "0",
            "--rel-level",
            "2",
            "--measure",
            "nDCG@10",
        ],
        catch_exceptions=False,
    )
    payload = json.loads(result.stdout)
    assert round(payload["labels"]["cohen_kappa_binary"], 4) == 0.5244
    assert payload["labels"]["rel_level"] == 2
    assert round(payload["labels"]["cohen_kappa"], 4) == 0.3626  # the four-grade κ is still reported
    assert payload["systems"]["nDCG@10"]["kendall_tau_ci95"] is None  # no resamples, no interval


def test_an_undefined_correlation_is_null_in_json_not_nan(tmp_path):
    """Model qrels that call everything non-relevant score every run 0: τ is undefined."""
    (tmp_path / "human.qrels").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\nq2 0 d 0\n")
    (tmp_path / "model.qrels").write_text("q1 0 a 0\nq1 0 b 0\nq2 0 c 0\nq2 0 d 0\n")
    (tmp_path / "runs").mkdir()
    for name, order in (("r1", "abcd"), ("r2", "badc"), ("r3", "acbd")):
        lines = [f"{'q1' if d in 'ab' else 'q2'} Q0 {d} {i} {10 - i} {name}" for i, d in enumerate(order, 1)]
        (tmp_path / "runs" / f"{name}.run").write_text("\n".join(lines) + "\n")
    result = runner.invoke(
        app,
        [
            "agree",
            "--model-qrels",
            str(tmp_path / "model.qrels"),
            "--reference-qrels",
            str(tmp_path / "human.qrels"),
            "--runs",
            str(tmp_path / "runs"),
            "--json",
            "--resamples",
            "20",
        ],
        catch_exceptions=False,
    )
    assert "NaN" not in result.stdout
    payload = json.loads(result.stdout)
    assert payload["systems"]["nDCG@10"]["kendall_tau"] is None
    assert payload["systems"]["nDCG@10"]["kendall_tau_ci95"] == [None, None]
    assert payload["labels"]["cohen_kappa"] == 0.0  # the model never varies: no agreement beyond chance
