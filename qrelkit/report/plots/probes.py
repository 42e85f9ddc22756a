"""The probes' figure: each probe's mean shift of a judge's scores with its interval (docs/probes.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure

from qrelkit.report.plots.audit import OKABE_ITO


def plot_shifts(names: Sequence[str], shifts: Sequence[float], intervals: Sequence[tuple[float, float] | None]) -> Figure:
    """A point per probe (top to bottom in the order given) at its mean shift, its interval as a bar."""
    figure = Figure(figsize=(6.4, 0.45 * len(names) + 1.2))
    axes = figure.add_subplot()
    ys = list(range(len(names)))
    low = [max(shift - i[0], 0.0) if i and math.isfinite(i[0]) else 0.0 for shift, i in zip(shifts, intervals)]
    high = [max(i[1] - shift, 0.0) if i and math.isfinite(i[1]) else 0.0 for shift, i in zip(shifts, intervals)]
    axes.errorbar(shifts, ys, xerr=[low, high], fmt="o", color=OKABE_ITO[0], capsize=3)
    axes.axvline(0.0, color="#555555", linestyle="--", linewidth=1)
    axes.set_yticks(ys, list(names))
    axes.invert_yaxis()
    axes.set_xlabel("mean shift of the judge's score (perturbed − as is)")
    axes.grid(axis="x", alpha=0.3)
    return figure
