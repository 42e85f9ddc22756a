"""NRG against the absolute metric it extends, one marker per group (seed 004, Figure 2)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from itertools import cycle
from pathlib import Path

from qrelkit.evaluate.nrg import NRGResult
from qrelkit.io.files import write_atomically

MARKERS = "osD^vP*Xh<>p"


def plot_nrg(
    result: NRGResult,
    path: str | Path,
    groups: Mapping[str, str] | None = None,
    *,
    title: str | None = None,
    highlight: Collection[str] = (),
    highlight_label: str = "",
    label_runs: bool = False,
    x: Mapping[str, float] | None = None,
    x_label: str | None = None,
) -> Path:
    """Scatter of mean base metric (x) vs mean NRG (y) per run, coloured and shaped by group; writes ``path``.

    Runs in ``highlight`` (say, the traditional ones) get a black edge, explained by ``highlight_label``.
    ``x`` replaces the base metric on the x axis (say, nDCG@10 under a full-depth NRG), named by ``x_label``.
    """
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed

    means = result.means()
    if x is not None:
        means = {r: {"nrg": v["nrg"], "base": x[r]} for r, v in means.items()}
    groups = groups or {run: "runs" for run in result.runs}
    fig = Figure(figsize=(8, 5.2), layout="constrained")
    ax = fig.subplots()
    colours = cycle(f"C{i}" for i in range(10))
    markers = cycle(MARKERS)
    for group in sorted(set(groups[r] for r in result.runs), key=lambda g: (g != "BASELINE", g.lower())):
        members = [r for r in result.runs if groups[r] == group]
        ax.scatter(
            [means[r]["base"] for r in members],
            [means[r]["nrg"] for r in members],
            label=f"{group} ({len(members)})",
            marker=next(markers),
            color=next(colours),
            s=[70 if r in highlight else 40 for r in members],
            edgecolors=["black" if r in highlight else "none" for r in members],
            linewidths=1.0,
        )
        if label_runs:
            for r in members:
                ax.annotate(r, (means[r]["base"], means[r]["nrg"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
    if highlight and highlight_label:
        ax.scatter([], [], marker="o", color="white", edgecolors="black", label=f"black edge: {highlight_label}")
    n = len(result.queries)
    ax.set_xlabel(f"{x_label or result.config.base_label} (mean over {n} queries)")
    ax.set_ylabel(f"{result.config.label} (mean over {n} queries)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=150))
