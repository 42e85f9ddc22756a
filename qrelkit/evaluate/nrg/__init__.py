"""Normalized Residual Gain (seed 004): options, the run × relevant-item layout, scores,
prior sets, and the measures the paper compares NRG with."""

from qrelkit.evaluate.nrg.options import BrowsingModel, Gain, NRGConfig, NRGError, parse_depth
from qrelkit.evaluate.nrg.score import NRGResult, PerQuery, base_metric, nrg

__all__ = ["BrowsingModel", "Gain", "NRGConfig", "NRGError", "NRGResult", "PerQuery", "base_metric", "nrg", "parse_depth"]
