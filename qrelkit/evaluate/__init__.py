"""Evaluation on plain data: metrics, agreement, bias, Fréchet distance, NRG, resampling."""

from qrelkit.evaluate.metrics import Evaluation, evaluate_runs, parse_measures

__all__ = ["Evaluation", "evaluate_runs", "parse_measures"]
