"""Prediction-powered inference for a mean, as qrelkit computes it, equals ppi_py's reference
implementation (Angelopoulos et al.; `pip install ppi-python`) on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from qrelkit.evaluate.estimate.inference import Z95
from qrelkit.evaluate.estimate.queries import ppi_mean, query_estimates

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is not installed (pip install ppi-python; the dev extra has it)")


def _inputs(seed: int, n: int = 40, big_n: int = 400):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.2, 0.9, big_n + n)
    prediction = np.clip(truth + rng.normal(0.08, 0.12, truth.shape), 0.0, 1.0)  # a judge biased upward
    return truth[:n], prediction[:n], prediction[n:]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.37])
def test_ppi_mean_and_interval_equal_ppi_py(seed, lam):
    y, yhat, unlabeled = _inputs(seed)
    estimate, se = ppi_mean(y, yhat, unlabeled, lam)
    reference = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabeled, alpha=0.05, lam=lam)
    assert float(estimate) == pytest.approx(float(np.squeeze(reference)), abs=1e-9)
    assert float(estimate - Z95 * se) == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert float(estimate + Z95 * se) == pytest.approx(float(np.squeeze(high)), abs=1e-9)


def test_power_tuning_lambda_is_ppi_pys():
    """With lam=None ppi_py tunes lambda; qrelkit's tuned estimate agrees, and differs from lambda = 1."""
    y, yhat, unlabeled = _inputs(5)
    tuned, _ = ppi_mean(y, yhat, unlabeled, None)
    plain, _ = ppi_mean(y, yhat, unlabeled, 1.0)
    assert float(tuned) == pytest.approx(float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled))), abs=1e-9)
    assert abs(float(tuned) - float(plain)) > 1e-6


@pytest.mark.parametrize("estimator, lam", [("ppi", 1.0), ("ppi++", None), ("human", 0.0)])
def test_whole_query_estimates_of_many_runs_equal_ppi_py_run_by_run(estimator, lam):
    """The vectorised estimator of a whole-query sample (its iid variance) is ppi_py's for each run:
    labelled = the sampled queries' human values, unlabelled = the judge's values on every query."""
    rng = np.random.default_rng(7)
    n_runs, n_queries = 5, 43
    human = rng.uniform(0.1, 0.9, (n_runs, n_queries))
    judge = np.clip(human + rng.normal(0.05, 0.1, human.shape), 0, 1)
    chosen = np.zeros((2, n_queries), bool)
    chosen[0, rng.choice(n_queries, 10, replace=False)] = True
    chosen[1, rng.choice(n_queries, 10, replace=False)] = True
    values, covariance, _ = query_estimates(human[None], judge, chosen, estimator, "iid")
    for d in range(2):
        sampled = np.flatnonzero(chosen[d])
        for r in range(n_runs):
            y, yhat = human[r, sampled], judge[r, sampled]
            reference = ppi_py.ppi_mean_pointestimate(y, yhat, judge[r], lam=lam)
            low, high = ppi_py.ppi_mean_ci(y, yhat, judge[r], alpha=0.05, lam=lam)
            assert values[d, r] == pytest.approx(float(np.squeeze(reference)), abs=1e-9)
            half = Z95 * np.sqrt(covariance[d, r, r])
            assert values[d, r] - half == pytest.approx(float(np.squeeze(low)), abs=1e-9)
            assert values[d, r] + half == pytest.approx(float(np.squeeze(high)), abs=1e-9)
