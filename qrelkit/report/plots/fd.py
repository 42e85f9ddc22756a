"""FD figures: bootstrap intervals per run (seed 000, Figure 1) and FD vs a metric (Figure 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from qrelkit.evaluate.fd.runs import FDReport
from qrelkit.io.files import write_atomically


def plot_fd_bootstrap(
    report: FDReport, label: str, path: str | Path, *, order: Mapping[str, float] | None = None, x_label: str | None = None
) -> Path:
    """Each run's 95% bootstrap interval (a bar), its point FD (a dot) and bootstrap mean (a dash),
    runs left to right by point FD (or by ``order``, e.g. a metric, descending). Drawn apart, since
    neither need lie inside a BCa interval (the bootstrap of FD is biased upward)."""
    from matplotlib.figure import Figure

    summaries = {run: by_label[label].bootstrap for run, by_label in report.runs.items()}
    boot = {run: s for run, s in summaries.items() if s is not None}
    point = {run: report.runs[run][label].value or 0.0 for run in boot}
    if not boot:
        raise ValueError(f"no bootstrap values for {label}: run with --resamples N")
    runs = sorted(boot, key=lambda r: -order[r]) if order else sorted(boot, key=point.__getitem__)
    x = range(len(runs))
    fig = Figure(figsize=(max(6.0, 0.28 * len(runs) + 2), 4.6), layout="constrained")
    ax = fig.subplots()
    ax.vlines(x, [boot[r].low for r in runs], [boot[r].high for r in runs], color="C0", lw=2, label=f"95% {report.interval} interval")
    ax.plot(x, [point[r] for r in runs], "o", ms=4, color="C1", label="point FD")
    ax.plot(x, [boot[r].mean for r in runs], "_", ms=8, color="0.3", label="bootstrap mean")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_xticks(x, runs, rotation=75, ha="right", fontsize=7)
    ax.set_ylabel(f"{label}")
    ax.set_xlabel(x_label or ("runs by the given order" if order else f"runs by {label}, best first"), fontsize=8)
    some = next(iter(boot.values()))
    ax.set_title(
        f"{label} over {some.resamples} query resamples of {len(report.qids)} queries; "
        f"{report.embedder}, d={report.d}, n_rel={report.n_rel} (lower is better)",
        fontsize=9,
    )
    ax.grid(axis="y", alpha=0.3)
    return write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=150))


def plot_fd_vs_metric(
    panels: Sequence[tuple[str, Mapping[str, float | None], float]],
    metric: Mapping[str, float],
    metric_name: str,
    path: str | Path,
    *,
    columns: int = 3,
    y_label: str = "FD",
) -> Path:
    """One scatter per panel (title, run -> FD, Kendall τ of FD with the metric:
    `qrelkit.evaluate.fd.runs.fd_metric_tau`) against the metric, its τ under it."""
    from matplotlib.figure import Figure

    columns = min(columns, len(panels))
    rows = -(-len(panels) // columns)
    fig = Figure(figsize=(3.6 * columns, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False)
    for ax, (title, fd, tau) in zip(axes.flat, panels):
        runs = [r for r in fd if fd[r] is not None and r in metric]
        ax.scatter([metric[r] for r in runs], [fd[r] for r in runs], s=14, color="C0")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"{metric_name}\nKendall τ = {tau:.3f}", fontsize=8)
        ax.set_ylabel(y_label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    return write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=150))
