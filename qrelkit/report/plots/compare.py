"""The comparison's figure: Kendall τ of each judge's system ranking, with its interval."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from qrelkit.report.plots.audit import MARKERS, OKABE_ITO


def plot_tau_per_judge(
    names: Sequence[str],
    taus: Mapping[str, Sequence[float]],
    intervals: Mapping[str, Sequence[tuple[float, float] | None]],
    xlabel: str,
) -> Figure:
    """A point per judge and measure (judges top to bottom in the order given), its interval as a bar."""
    measures = list(taus)
    figure = Figure(figsize=(6.4, 0.55 * len(names) * len(measures) + 1.2))
    axes = figure.add_subplot()
    step = 0.8 / max(len(measures), 1)
    for m, measure in enumerate(measures):
        ys = [j + m * step for j in range(len(names))]
        values = list(taus[measure])
        low = [max(v - i[0], 0.0) if i and math.isfinite(i[0]) and math.isfinite(v) else 0.0 for v, i in zip(values, intervals[measure])]
        high = [max(i[1] - v, 0.0) if i and math.isfinite(i[1]) and math.isfinite(v) else 0.0 for v, i in zip(values, intervals[measure])]
        colour, marker = OKABE_ITO[m % len(OKABE_ITO)], MARKERS[m % len(MARKERS)]
        axes.errorbar(values, ys, xerr=[low, high], fmt=marker, color=colour, capsize=3, label=measure)
    axes.set_yticks([j + step * (len(measures) - 1) / 2 for j in range(len(names))], list(names))
    axes.invert_yaxis()
    axes.set_xlabel(xlabel)
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower left", fontsize=9)
    return figure
