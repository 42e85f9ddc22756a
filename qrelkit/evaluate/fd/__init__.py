"""Fréchet distance for IR (seeds 000/001): the distance, which items it compares, FD@k of
runs, and the bootstrap over queries."""

from qrelkit.evaluate.fd.distance import (
    CovarianceFactor,
    FrechetResult,
    factor_from_covariance,
    factor_from_samples,
    frechet_distance,
    frechet_distance_from_stats,
    frechet_from_factors,
    sum_sqrt_eigenvalues,
    trace_sqrt_product,
)
from qrelkit.evaluate.fd.items import ItemSample, fd_label, item_sample, judged_items, retrieved_items
from qrelkit.evaluate.fd.runs import FDReport, FDSettings, RunFD, check_vectors, fd_of_runs, selected_docids
from qrelkit.evaluate.sparsify import default_relevance_level, relevant_items

__all__ = [
    "CovarianceFactor",
    "FDReport",
    "FDSettings",
    "FrechetResult",
    "ItemSample",
    "RunFD",
    "check_vectors",
    "default_relevance_level",
    "factor_from_covariance",
    "factor_from_samples",
    "fd_label",
    "fd_of_runs",
    "frechet_distance",
    "frechet_distance_from_stats",
    "frechet_from_factors",
    "item_sample",
    "judged_items",
    "relevant_items",
    "retrieved_items",
    "selected_docids",
    "sum_sqrt_eigenvalues",
    "trace_sqrt_product",
]
