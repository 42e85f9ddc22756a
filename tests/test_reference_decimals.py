"""Systems ranked by the reference's means as trec_eval prints them (issue 34): a study that ranks by
trec_eval's output (4 decimals) counts systems equal to 4 decimals as tied, and Kendall τ-b counts
ties; `--reference-decimals 4` does the same, on the estimate and on every resample."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from qrelkit.evaluate.agreement import correlate_systems, printed
from qrelkit.evaluate.metrics import Evaluation


def test_printed_values_are_what_printf_prints_read_back():
    rng = np.random.default_rng(0)
    halves = (np.arange(0, 20000) + 0.5) / 1e4  # every value a hair from a rounding boundary
    values = np.concatenate([rng.random(20000), halves, np.nextafter(halves, 0), np.nextafter(halves, 1), [0.03125, 0.67455, -0.00005]])
    expected = np.array([float(f"{v:.4f}") for v in values.tolist()])
    assert np.array_equal(printed(values, 4), expected)
    assert printed(values, None) is values


def _evaluation(means: list[float]) -> Evaluation:
    runs = [f"r{i}" for i in range(len(means))]
    return Evaluation(["m"], ["q1"], runs, {run: {"m": np.array([mean])} for run, mean in zip(runs, means)})


def test_systems_equal_to_the_printed_decimals_tie_under_the_reference():
    """Reference means 0.50001, 0.50004, 0.6 (equal to 4 decimals: 0.5000, 0.5000), judge means 0.1,
    0.2, 0.3: at full precision every pair agrees (τ-b 1), at 4 decimals one pair ties on the
    reference's side: τ-b = 2/√(2·3), as scipy's τ-b of the printed values."""
    reference, judge = _evaluation([0.50001, 0.50004, 0.6]), _evaluation([0.1, 0.2, 0.3])
    full = correlate_systems(judge, reference, resamples=0)["m"]
    tied = correlate_systems(judge, reference, resamples=0, reference_decimals=4)["m"]
    assert full.kendall_tau == pytest.approx(1.0)
    assert tied.kendall_tau == pytest.approx(2 / np.sqrt(6)) == pytest.approx(kendalltau([0.5, 0.5, 0.6], [0.1, 0.2, 0.3])[0])
