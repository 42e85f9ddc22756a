"""The audit's figures (seed 003, Figures 1–3, and Relative Δ per group) as matplotlib ``Figure``
objects; :func:`figure_svg` turns one into SVG text for the self-contained HTML report, and
:func:`save_figure` writes a file (PNG, SVG, PDF: by its extension).

Drawn on ``Figure`` objects with the Agg canvas, never through pyplot, so a notebook's
backend and global state are left alone. Colours are the Okabe–Ito palette (distinguishable with
the common colour-vision deficiencies), and every series also differs by marker or line style,
so the figures survive greyscale printing.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure

from qrelkit.evaluate.bias import GroupBias
from qrelkit.io.files import write_atomically

OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
OTHERS = "#8C8C8C"
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINE_STYLES = ["-", "--", "-.", ":"]
STYLE: Any = {"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "svg.hashsalt": "qrelkit", "svg.fonttype": "path"}


def figure_svg(figure: Figure) -> str:
    """The figure as SVG text, text drawn as paths (no font needed where it is shown), no date in it."""
    buffer = io.StringIO()
    with rc_context(STYLE):  # svg.* settings are read when saving, not when drawing
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def save_figure(figure: Figure, path: str | Path) -> Path:
    """Write the figure to ``path``; the format follows the extension."""

    def save(temporary: Path) -> None:
        with rc_context(STYLE):
            figure.savefig(temporary, dpi=150, bbox_inches="tight")

    return write_atomically(path, save)


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    return ordered, np.arange(1, len(ordered) + 1) / len(ordered)


def plot_score_cdf(
    scores_by_grade: Mapping[str, Sequence[float] | np.ndarray],
    overall: Sequence[float] | np.ndarray | None,
    *,
    title: str = "Judge scores by reference grade",
    xlabel: str = "judge score",
) -> Figure:
    """Figure 2: the empirical CDF of the judge's raw scores for each reference grade, and overall.

    Keys of ``scores_by_grade`` become legend labels (e.g. "grade 2"); their counts are added.
    """
    with rc_context(STYLE):
        figure = Figure(figsize=(6.4, 4.4))
        axes = figure.subplots()
        for i, (label, values) in enumerate(scores_by_grade.items()):
            values = np.asarray(values, dtype=np.float64)
            if values.size == 0:
                continue
            x, y = _ecdf(values)
            axes.step(
                x,
                y,
                where="post",
                color=OKABE_ITO[i % len(OKABE_ITO)],
                linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                linewidth=1.8,
                label=f"{label} (n={values.size})",
            )
        if overall is not None and len(overall):
            x, y = _ecdf(np.asarray(overall))
            axes.step(x, y, where="post", color="#000000", linewidth=2.6, alpha=0.55, label=f"all scores (n={len(x)})")
        axes.set(xlabel=xlabel, ylabel="fraction of judgments ≤ score", title=title, ylim=(0, 1.02))
        axes.grid(alpha=0.3)
        axes.legend(loc="lower right", fontsize=9, frameon=True)
        return figure


def plot_confusion(
    confusion: np.ndarray,
    labels: Sequence[int],
    *,
    reference_name: str = "reference",
    model_name: str = "model",
) -> Figure:
    """Figure 3: the confusion matrix as a heat map; colour is the share of each reference grade
    (row-normalised), the text gives that share and the count."""
    counts = np.asarray(confusion, dtype=np.float64)
    row_totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, row_totals, out=np.zeros_like(counts), where=row_totals > 0)
    with rc_context(STYLE):
        size = 1.1 * len(labels) + 2.6
        figure = Figure(figsize=(size + 1.0, size))
        axes = figure.subplots()
        image = axes.imshow(shares, cmap="cividis", vmin=0.0, vmax=1.0)
        for row in range(len(labels)):
            for col in range(len(labels)):
                light = shares[row, col] < 0.6  # cividis is dark at the low end: white text there
                axes.text(
                    col,
                    row,
                    f"{shares[row, col]:.0%}\n{int(counts[row, col])}",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if light else "black",
                )
        ticks = np.arange(len(labels))
        axes.set_xticks(ticks, [str(label) for label in labels])
        axes.set_yticks(ticks, [str(label) for label in labels])
        axes.set(xlabel=f"{model_name} grade", ylabel=f"{reference_name} grade", title="Grades on the shared pairs (row share, count)")
        figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="share of the reference grade's pairs")
        return figure


def plot_system_scatter(
    reference_means: Mapping[str, Mapping[str, float]],
    model_means: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
    *,
    groups: Mapping[str, Sequence[str]] | None = None,
    reference_name: str = "reference",
    model_name: str = "model",
) -> Figure:
    """Figure 1: each run's mean under the reference (x) and the model qrels (y), one panel per
    measure, the diagonal for equal scores, the runs of each group in their own colour and marker."""
    groups = dict(groups or {})
    runs = list(reference_means)
    membership = {run: name for name, members in groups.items() for run in members}
    with rc_context(STYLE):
        figure = Figure(figsize=(4.6 * len(measures), 4.6))
        panels = figure.subplots(1, len(measures), squeeze=False)[0]
        for axes, measure in zip(panels, measures):
            x = np.array([reference_means[run][measure] for run in runs])
            y = np.array([model_means[run][measure] for run in runs])
            series: list[tuple[str | None, str, str]] = [
                (name, OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)]) for i, name in enumerate(groups)
            ]
            ungrouped = [run for run in runs if run not in membership]
            if ungrouped or not groups:
                series.append((None, OTHERS if groups else OKABE_ITO[0], "o"))
            for name, colour, marker in series:
                chosen = np.array([membership.get(run) == name for run in runs])
                label = (name if name is not None else "other runs" if groups else "runs") + f" ({chosen.sum()})"
                axes.scatter(
                    x[chosen],
                    y[chosen],
                    color=colour,
                    marker=marker,
                    s=36,
                    alpha=0.9,
                    edgecolors="white",
                    linewidths=0.5,
                    label=label,
                    zorder=3,
                )
            low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
            pad = 0.05 * (high - low or 1.0)
            axes.plot([low - pad, high + pad], [low - pad, high + pad], color="#444444", linewidth=1, linestyle="--", zorder=1)
            axes.set(
                xlim=(low - pad, high + pad),
                ylim=(low - pad, high + pad),
                aspect="equal",
                xlabel=f"{measure} under {reference_name}",
                ylabel=f"{measure} under {model_name}",
                title=measure,
            )
            axes.grid(alpha=0.3)
            axes.legend(loc="upper left", fontsize=9)
        figure.tight_layout()
        return figure


def plot_relative_delta(
    bias: Mapping[str, Mapping[str, GroupBias]],
    *,
    reference_name: str = "reference",
    model_name: str = "model",
) -> Figure:
    """Relative Δ toward each group under the reference and the model qrels, with 95% intervals,
    one panel per measure: the bias the model qrels add is the gap between the two markers."""
    groups = list(bias)
    measures = list(next(iter(bias.values())))
    sides = [(reference_name, "reference", "reference_ci95", OKABE_ITO[0], "o"), (model_name, "model", "model_ci95", OKABE_ITO[1], "s")]
    with rc_context(STYLE):
        figure = Figure(figsize=(4.6 * len(measures), 1.6 + 0.55 * len(groups)), layout="constrained")
        panels = figure.subplots(1, len(measures), squeeze=False, sharey=True)[0]
        rows = np.arange(len(groups), dtype=np.float64)
        for axes, measure in zip(panels, measures):
            for offset, (name, value_field, interval_field, colour, marker) in zip((-0.12, 0.12), sides):
                values = np.array([getattr(bias[g][measure], value_field) for g in groups], dtype=np.float64)
                intervals = [getattr(bias[g][measure], interval_field) for g in groups]
                low = np.array([v - i[0] if i else 0.0 for v, i in zip(values, intervals)])
                high = np.array([i[1] - v if i else 0.0 for v, i in zip(values, intervals)])
                axes.errorbar(
                    values,
                    rows + offset,
                    xerr=[low, high],
                    fmt=marker,
                    color=colour,
                    capsize=3,
                    markersize=6,
                    label=f"{name} ({value_field})",
                )
            axes.axvline(0.0, color="#444444", linewidth=1, linestyle="--")
            axes.set(xlabel=f"Relative Δ, % ({measure})", title=measure)
            axes.grid(axis="x", alpha=0.3)
        panels[0].set_yticks(rows, groups)
        panels[0].set_ylim(len(groups) - 0.5, -0.5)
        figure.legend(*panels[0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=9, frameon=False)
        return figure
