"""Evaluation bias toward a group of runs (seed 003, Table 3), under model and reference qrels.

Relative Δ = 2·(M_g − M_o)/(M_g + M_o)·100, where M_g and M_o are the measure averaged over the
systems in the group and over the others (each system's value itself a mean over topics).
Positive Δ favours the group. A bias the model qrels introduce shows as a Δ under the model
qrels larger than under the reference qrels; bootstrap intervals over queries say whether the
gap is larger than topic sampling alone would produce.

Groups are named three ways: explicit lists (API), regular expressions searched in run names
(`--group NAME=REGEX`), or a groups file: a TSV with a `run` column and any number of grouping
columns, each distinct value of the chosen column being one group (`--groups FILE:COLUMN`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import check_aligned
from qrelkit.evaluate.bootstrap import Interval, IntervalEstimate, draw_weights, paired_intervals, uniform_weights
from qrelkit.evaluate.choices import DEFAULT_METHOD, DEFAULT_RESAMPLES, METHOD_NAMES, check_method
from qrelkit.evaluate.metrics import Evaluation
from qrelkit.io.groups import run_groups


def check_groups(groups: dict[str, list[str]], runs: list[str], how: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Keep each group's members among ``runs`` (in run order); a group must leave runs on both sides."""
    known = set(runs)
    out = {}
    for name, members in groups.items():
        source = f" ({how[name]})" if how and name in how else ""
        unknown = sorted(set(members) - known)
        if unknown and not how:
            raise QrelkitError(f"group {name!r} names runs that are not evaluated: {', '.join(unknown[:5])}")
        inside = [run for run in runs if run in set(members)]
        if not inside:
            raise QrelkitError(f"group {name!r}{source} matches none of the {len(runs)} runs")
        if len(inside) == len(runs):
            raise QrelkitError(f"group {name!r}{source} holds all {len(runs)} runs; Relative Δ needs runs outside it")
        out[name] = inside
    return out


def groups_matching(patterns: Sequence[tuple[str, re.Pattern[str]]], runs: list[str]) -> dict[str, list[str]]:
    """(name, regex) pairs: each group holds the runs whose name its regex matches anywhere (re.search)."""
    groups = {name: [run for run in runs if pattern.search(run)] for name, pattern in patterns}
    return check_groups(groups, runs, {name: f"regex {pattern.pattern!r}" for name, pattern in patterns})


def groups_from_file(path: str | Path, column: str | None, runs: list[str]) -> dict[str, list[str]]:
    """One group per distinct value of ``column`` (optional when the file has one grouping column, or a `group` column)."""
    assigned = run_groups(path, runs, column)
    column_name = column or "the grouping column"
    values = sorted(set(assigned.values()))
    groups = {value: [run for run in runs if assigned[run] == value] for value in values}
    return check_groups(groups, runs, {value: f"{column_name} = {value!r} in {path}" for value in values})


def relative_delta(group_mean, other_mean):
    """2·(M_g − M_o)/(M_g + M_o)·100, NaN when both means are 0."""
    group_mean, other_mean = np.asarray(group_mean, np.float64), np.asarray(other_mean, np.float64)
    total = group_mean + other_mean
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(total != 0, 200.0 * (group_mean - other_mean) / np.where(total != 0, total, 1.0), np.nan)
    return float(delta) if delta.ndim == 0 else delta


@dataclass(frozen=True)
class GroupBias:
    group: str
    measure: str
    group_runs: list[str]
    other_runs: int
    model: float  # Relative Δ under the model qrels
    reference: float  # Relative Δ under the reference qrels
    model_means: tuple[float, float]  # (M_g, M_o) under the model qrels
    reference_means: tuple[float, float]
    model_ci95: tuple[float, float] | None = None
    reference_ci95: tuple[float, float] | None = None
    # model − reference: the bias the model qrels add; its interval pairs both sides on each resample
    difference_ci95: tuple[float, float] | None = None
    intervals: dict[str, IntervalEstimate] = field(default_factory=dict)  # "model", "reference", "difference"
    method: str = METHOD_NAMES[DEFAULT_METHOD]

    @property
    def notes(self) -> dict[str, str]:
        """Side (model, reference, difference) -> why that interval should not be read as it stands."""
        return {side: found.note for side, found in self.intervals.items() if found.note}

    @property
    def difference(self) -> float:
        return self.model - self.reference


def _delta(system_means: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of system means -> (Δ, M_g, M_o) per row."""
    group_mean = system_means[:, inside].mean(axis=1)
    other_mean = system_means[:, ~inside].mean(axis=1)
    return relative_delta(group_mean, other_mean), group_mean, other_mean


def _bias_statistic(model: np.ndarray, reference: np.ndarray, inside: np.ndarray):
    """Query weights -> Relative Δ under each qrels and their difference, per weight row."""

    def statistic(weights: np.ndarray) -> dict[str, np.ndarray]:
        under_model, under_reference = _delta(weights @ model.T, inside)[0], _delta(weights @ reference.T, inside)[0]
        return {"model": under_model, "reference": under_reference, "difference": under_model - under_reference}

    return statistic


def group_bias(
    model: Evaluation,
    reference: Evaluation,
    groups: dict[str, list[str]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    weights: np.ndarray | None = None,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> dict[str, dict[str, GroupBias]]:
    """group -> measure -> Relative Δ under both qrels, with bootstrap intervals over queries
    (``interval`` 'bca' or 'percentile'); model and reference are paired on every resample."""
    check_aligned(model, reference)
    method = check_method(interval)
    groups = check_groups(groups, model.runs)
    if weights is None:
        weights = draw_weights(len(model.queries), resamples, seed, method)
    uniform = uniform_weights(len(model.queries))
    out: dict[str, dict[str, GroupBias]] = {}
    for name, members in groups.items():
        inside = np.isin(np.array(model.runs), members)
        out[name] = {}
        for measure in model.measures:
            model_matrix, reference_matrix = model.matrix(measure), reference.matrix(measure)
            model_means, reference_means = (_delta(uniform @ matrix.T, inside)[1:] for matrix in (model_matrix, reference_matrix))
            found = paired_intervals(_bias_statistic(model_matrix, reference_matrix, inside), weights, method=method, level=level)
            intervals = {side: interval for side, interval in found.intervals.items() if interval is not None}
            # with resamples but Δ undefined on all of them: an interval of NaN ends (null in JSON), not none at all
            ends = {side: intervals[side].interval if side in intervals else Interval(np.nan, np.nan) for side in found.intervals}
            out[name][measure] = GroupBias(
                group=name,
                measure=measure,
                group_runs=members,
                other_runs=int((~inside).sum()),
                model=found.estimates["model"],
                reference=found.estimates["reference"],
                model_means=(float(model_means[0][0]), float(model_means[1][0])),
                reference_means=(float(reference_means[0][0]), float(reference_means[1][0])),
                model_ci95=ends["model"] if len(weights) else None,
                reference_ci95=ends["reference"] if len(weights) else None,
                difference_ci95=ends["difference"] if len(weights) else None,
                intervals=intervals,
                method=METHOD_NAMES[method],
            )
    return out
