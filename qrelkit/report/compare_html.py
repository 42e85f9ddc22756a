"""The comparison as one self-contained HTML page (`qrelkit compare --html FILE`): the verdict in
sentences and the table of judges first (in the first screen), then τ per judge with its interval as a figure, the paired differences,
the κ between judges and the notes. Styles and figure embedding are the audit report's
(`qrelkit.report.html`), so both pages read alike."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from qrelkit.report.compare import Grid, describe, grids, notes
from qrelkit.report.html import CSS, Figures
from qrelkit.report.html_table import _esc, html_table
from qrelkit.report.plots.audit import MARKERS, OKABE_ITO
from qrelkit.report.probes import side_by_side_html
from qrelkit.report.verdict import caveats, verdict
from qrelkit.version import __version__

CompareResult = Any  # qrelkit.commands.compare.CompareResult, read by field (report/ sits below commands/)

# A row per judge with every figure is wider than the audit page's text column: the page is wider,
# the table's type smaller, a judge's name never broken.
STATUS_CSS = (
    "body{max-width:1370px}#judges td,#judges th{font-size:.78rem;padding:.1rem .35rem}#judges td:first-child{white-space:nowrap}"
    "tr.failed td{background:#fff4e5}tr.failed td:nth-child(2){color:#D55E00;font-weight:600}"
    ".verdict{margin:.2rem 0 .8rem}.verdict p{font-size:1.05rem;font-weight:600;margin:.2rem 0}.verdict ul{margin:.2rem 0}"
)


def plot_tau_per_judge(result: CompareResult) -> Figure | None:
    """Kendall τ of each judge on each measure, a point with its interval as a bar (judges top to
    bottom in the order given)."""
    comparison = result.comparison
    if comparison is None:
        return None
    names = comparison.judges
    measures = next(iter(comparison.audits.values())).model_evaluation.measures
    figure = Figure(figsize=(6.4, 0.55 * len(names) * len(measures) + 1.2))
    axes = figure.add_subplot()
    step = 0.8 / max(len(measures), 1)
    for m, measure in enumerate(measures):
        ys, taus, lows, highs = [], [], [], []
        for j, name in enumerate(names):
            corr = comparison.audits[name].systems[measure]
            interval = corr.intervals.get("kendall_tau")
            ys.append(j + m * step)
            taus.append(corr.kendall_tau)
            lows.append(corr.kendall_tau - interval.low if interval else 0.0)
            highs.append(interval.high - corr.kendall_tau if interval else 0.0)
        errors = [[max(v, 0.0) if math.isfinite(v) else 0.0 for v in lows], [max(v, 0.0) if math.isfinite(v) else 0.0 for v in highs]]
        colour, marker = OKABE_ITO[m % len(OKABE_ITO)], MARKERS[m % len(MARKERS)]
        axes.errorbar(taus, ys, xerr=errors, fmt=marker, color=colour, capsize=3, label=measure)
    axes.set_yticks([j + step * (len(measures) - 1) / 2 for j in range(len(names))], names)
    axes.invert_yaxis()
    axes.set_xlabel(f"Kendall τ-b with {comparison.reference_name} [{comparison.level:.0%} {comparison.interval} interval]")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower left", fontsize=9)
    return figure


def _grid_html(grid: Grid, table_id: str, statuses: list[str] | None = None) -> str:
    failed = None if statuses is None else ["failed" if status != "compared" else None for status in statuses]
    rows = [list(row) for row in grid.rows]
    table = html_table(list(grid.header), rows, text_columns=grid.text_columns, css="compact", table_id=table_id, row_classes=failed)
    return f"<h2>{_esc(grid.title)}</h2>{table}"


def _verdict_html(result: CompareResult) -> str:
    """The answer first: a sentence per two judges, then what it rests on (`qrelkit.report.verdict`)."""
    sentences = "".join(f"<p>{_esc(line)}</p>" for line in verdict(result))
    notes = "".join(f"<li>{_esc(line)}</li>" for line in caveats(result))
    return f"<section id=verdict class=verdict>{sentences}" + (f"<ul class=note>{notes}</ul>" if notes else "") + "</section>"


def render_comparison(result: CompareResult, command: str | None = None) -> str:
    comparison = result.comparison
    count = len(result.entries)
    title = f"Which judge? {count} judge{'s' if count != 1 else ''} against {result.reference.get('name')}"
    figures = Figures()
    tables = grids(result)
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>"
        f"<title>{_esc(title)}</title><style>{CSS}{STATUS_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        _verdict_html(result),
        "<div class=summary>"
        + _grid_html(tables[0], "judges", [e.status for e in result.entries]).replace("<h2>", "<h3>").replace("</h2>", "</h3>")
        + "<ul class=note>"
        + "".join(f"<li>{_esc(line)}</li>" for line in describe(result))
        + "</ul></div>",
    ]
    figure = plot_tau_per_judge(result)
    if figure is not None and comparison is not None:
        parts.append(
            "<h2>System rankings per judge</h2>"
            + figures(figure, "Kendall τ per judge with intervals", "Kendall τ-b of each judge's system ranking with the reference's.", 640)
        )
    for grid, table_id in zip(tables[1:], ("differences", "kappa-matrix"), strict=False):
        parts.append(_grid_html(grid, table_id))
    if getattr(result, "probes", None):
        parts.append(side_by_side_html(result.probes))
    lines = notes(result)
    if lines:
        parts.append("<h2>Notes</h2><ul class=note>" + "".join(f"<li>{_esc(line)}</li>" for line in lines) + "</ul>")
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(
        f"<footer>qrelkit {_esc(__version__)} · {_esc(created)}" + (f" · <code>{_esc(command)}</code>" if command else "") + "</footer>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def write_comparison_page(result: CompareResult, path: str | Path, command: str | None = None) -> Path:
    from qrelkit.io.files import write_atomically

    page = render_comparison(result, command)
    return write_atomically(path, lambda temporary: temporary.write_text(page, encoding="utf-8"))
