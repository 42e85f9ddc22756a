"""`qrelkit probe`'s output: a row per probe (the mean shift, the share pushed to relevant, their
intervals and p-values) and what every number is (sample, relevance rule, interval method, test);
as JSON, records for pandas, a terminal table, Markdown or LaTeX (booktabs); and the judges side by
side on the same probes for the comparison page. Presentation only: the numbers come from
`qrelkit.evaluate.probes`."""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text

from qrelkit.evaluate.bootstrap import describe_intervals
from qrelkit.report.compare import Grid, grid_latex, grid_markdown
from qrelkit.report.html_table import html_table
from qrelkit.report.tables import fmt
from qrelkit.report.terminal_table import Table
from qrelkit.report.text import latex_comment, markdown_text, printable

# The use case's result types (qrelkit.commands.probe_result): report/ sits below commands/, so they are read by field.
ProbeResult = Any
ProbeEntry = Any


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)


def _interval(found: Any) -> list[float | None] | None:
    return None if found is None else [_number(found.low), _number(found.high)]


def entry_to_dict(entry: ProbeEntry, judge: str | None = None) -> dict[str, Any]:
    """One probe as `--json` gives it (the issue's field names: mean_shift_ci95, pushed_to_relevant_ci95, ...)."""
    out: dict[str, Any] = {**entry.probe, "judge": judge, "judge_run_id": entry.judge_run_id, "sampled": entry.pairs}
    out["not_ok"] = dict(entry.not_ok)
    shift = entry.shift
    if shift is not None:
        out |= {"pairs": shift.pairs, "queries": shift.queries}
        for name, value in shift.estimates.items():
            out[name] = _number(value)
            if name in ("mean_shift", "pushed_to_relevant", "share_change", "relevant_before"):
                out[f"{name}_ci95"] = _interval(shift.intervals.get(name))
        out |= {"p_value": shift.p_value, "share_p_value": shift.share_p_value}
        out |= {"raised": shift.raised, "lowered": shift.lowered, "unchanged": shift.unchanged}
        out["interval"] = {"method": shift.interval if shift.resamples else None, "level": shift.level, "resamples": shift.resamples}
        out["interval"] |= {"seed": shift.seed, "over": "queries (a pair's query goes with it)"}
        out["interval"]["described"] = describe_intervals(shift.interval, shift.level, shift.queries, shift.resamples, shift.seed)
        out["test"] = {"name": shift.test, "permutations": shift.permutations, "swaps": "each query's pairs, before and after"}
        notes = [f"{name}: {found.note}" for name, found in shift.intervals.items() if found is not None and found.note]
    else:
        out["pairs"] = 0
        notes = []
    if entry.report is not None:
        out["judged_now"] = entry.report.judged
    out["notes"] = [*entry.notes, *notes]
    return out


def result_to_dict(result: ProbeResult) -> dict[str, Any]:
    """`qrelkit probe --json`."""
    out: dict[str, Any] = {
        "job": result.job,
        "judge": result.judge,
        "model_id": result.model_id,
        "judge_run_id": result.judge_run_id,
        "control_run_id": result.control_run_id,
        "template_id": result.template_id,
        "score_from": result.score_from,
        "sample": result.sample.to_dict() if result.sample else None,
        "dry_run": result.dry_run,
    }
    if result.dry_run:
        out["runs"] = [vars(plan) for plan in result.plans]
        return out
    out["relevant_at"] = result.relevance.to_dict() if result.relevance else None
    out["unperturbed"] = result.control.to_dict() if result.control else None
    out["probes"] = [entry_to_dict(entry, result.judge) for entry in result.probes]
    out["interrupted"] = result.interrupted
    return out


def probe_records(result: ProbeResult) -> list[dict[str, Any]]:
    """One flat record per probe (pandas rows): intervals as low/high columns."""
    records = []
    for entry in result.probes:
        found = entry_to_dict(entry, result.judge)
        record = {key: value for key, value in found.items() if not isinstance(value, dict | list) or key.endswith("_ci95")}
        for key in [k for k in record if k.endswith("_ci95")]:
            low, high = record.pop(key) or [None, None]
            record[f"{key[:-5]}_low"], record[f"{key[:-5]}_high"] = low, high
        records.append(record)
    return records


# -- tables --------------------------------------------------------------------------------------------


def _with(value: float | None, found: Any, digits: int = 3, share: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    scale, suffix = (100.0, "%") if share else (1.0, "")
    text = f"{value * scale:+.{digits}f}{suffix}" if not share else f"{value * scale:.1f}{suffix}"
    if found is not None:
        text += f" [{found.low * scale:.{digits if not share else 1}f}, {found.high * scale:.{digits if not share else 1}f}]"
        text += "*" if found.note else ""
    return text


def entry_cells(entry: ProbeEntry) -> list[str]:
    """mean before → after, shift [CI], relevant before, pushed to relevant [CI], p, pairs (queries)."""
    shift = entry.shift
    if shift is None:
        return ["–"] * 5 + [f"0 of {entry.pairs}"]
    estimates, intervals = shift.estimates, shift.intervals
    return [
        f"{fmt(estimates['mean_before'], 3)} → {fmt(estimates['mean_after'], 3)}",
        _with(estimates["mean_shift"], intervals.get("mean_shift")),
        _with(estimates["relevant_before"], None, share=True),
        _with(estimates["pushed_to_relevant"], intervals.get("pushed_to_relevant"), share=True),
        fmt(shift.p_value, 3),
        f"{shift.pairs} ({shift.queries})",
    ]


ENTRY_HEADER = ["mean before → after", "mean shift [CI]", "relevant before", "pushed to relevant [CI]", "p (shift)", "pairs (queries)"]


def probe_grid(result: ProbeResult) -> Grid:
    rows = [[entry.name, *entry_cells(entry)] for entry in result.probes]
    return Grid(f"Probes of {result.judge} ({result.model_id})", ["probe", *ENTRY_HEADER], rows)


def plan_grid(result: ProbeResult) -> Grid:
    header = ["run", "judge run", "pairs", "done", "failed", "to judge", "est. requests", "est. cost USD (max)"]
    rows = []
    for plan in result.plans:
        estimate = plan.estimate or {}
        cost = estimate.get("cost_usd_max")
        counts = [f"{plan.pairs:,}", f"{plan.ok:,}", f"{plan.failed:,}", f"{plan.to_judge:,}"]
        rows.append([plan.name, plan.judge_run_id, *counts, str(estimate.get("requests", "–")), "–" if cost is None else f"{cost:.4f}"])
    return Grid(f"Probes of {result.judge} ({result.model_id}): what a run would judge (dry run)", header, rows, text_columns=2)


def describe(result: ProbeResult) -> list[str]:
    """What the numbers are, in sentences: printed with every form of the table."""
    lines = [
        f"job: {result.job}; judge {result.judge} ({result.model_id}), the job's judge run {result.judge_run_id}; "
        f"the sample as it is: control run {result.control_run_id}"
    ]
    sample = result.sample
    if sample is not None:
        grades = ", ".join(map(str, sample.grades))
        lines.append(
            f"sample: {len(sample.pairs)} pairs over {sample.topics} topics (seed {sample.seed}) of the {sample.candidates} pairs of the "
            f"job's pool graded {grades} in {sample.reference}"
        )
    if result.dry_run:
        return lines
    lines += [f"{entry.name}: {entry.probe.get('tests', '')}" for entry in result.probes]
    if result.relevance is not None:
        lines.append(f"relevant: {result.relevance.describe()} (column {result.score_from})")
        lines += [f"note: {result.relevance.note}"] if result.relevance.note else []
    shift = next((e.shift for e in result.probes if e.shift is not None), None)
    if shift is not None:
        lines.append("intervals: " + describe_intervals(shift.interval, shift.level, shift.queries, shift.resamples, shift.seed))
        lines.append(
            f"p: {shift.test}, {shift.permutations} random swaps of each query's pairs before and after"
            if shift.permutations
            else "p: none"
        )
    return lines


def notes(result: ProbeResult) -> list[str]:
    lines = []
    for entry in result.probes:
        lines += [f"{entry.name}: {note}" for note in entry.notes]
        if entry.shift is not None:
            lines += [f"* {entry.name}, {name}: {found.note}" for name, found in entry.shift.intervals.items() if found and found.note]
        left_out = {side: n for side, n in entry.not_ok.items() if n}
        if left_out:
            lines.append(f"{entry.name}: left out, not ok: " + ", ".join(f"{n} {side}" for side, n in left_out.items()))
    if result.interrupted:
        lines.append("interrupted: run the same command again to judge the rest (nothing judged is judged twice)")
    return lines


def grids(result: ProbeResult) -> list[Grid]:
    return [plan_grid(result)] if result.dry_run else [probe_grid(result)]


def terminal(result: ProbeResult) -> list[Table | Text]:
    out: list[Table | Text] = [Text(printable("\n".join(describe(result))))]
    out += [grid.rich() for grid in grids(result)]
    lines = notes(result)
    return out + ([Text(printable("\n".join(lines)))] if lines else [])


def plain(result: ProbeResult) -> str:
    """The terminal's table as plain text, for a pipe or a file."""
    parts = ["\n".join(printable(line) for line in describe(result)), *(grid.plain() for grid in grids(result))]
    extra = notes(result)
    if extra:
        parts.append("\n".join(printable(line) for line in extra))
    return "\n\n".join(parts) + "\n"


def markdown(result: ProbeResult) -> str:
    parts = ["\n".join(f"- {markdown_text(line)}" for line in describe(result)), *(grid_markdown(grid) for grid in grids(result))]
    extra = notes(result)
    if extra:
        parts.append("\n".join(f"- {markdown_text(line)}" for line in extra))
    return "\n\n".join(parts) + "\n"


def latex(result: ProbeResult) -> str:
    parts = [latex_comment(line) for line in describe(result)]
    for grid in grids(result):
        parts += grid_latex(grid)
    extra = notes(result)
    if extra:
        parts += ["% notes:"] + [latex_comment(line) for line in extra]
    return "\n".join(parts) + "\n"


# -- judges side by side (the comparison page) -----------------------------------------------------------


def side_by_side_grid(probes: dict[str, list[ProbeEntry]]) -> Grid:
    """A row per probe, for each judge its mean shift and share pushed to relevant (with intervals)."""
    judges = list(probes)
    names = list(dict.fromkeys(entry.name for entries in probes.values() for entry in entries))
    header = ["probe"] + [f"{judge}: {what}" for judge in judges for what in ("mean shift [CI]", "pushed to relevant [CI]")]
    rows = []
    for name in names:
        row = [name]
        for judge in judges:
            entry = next((e for e in probes[judge] if e.name == name), None)
            cells = entry_cells(entry) if entry is not None else ["–"] * 6
            row += [cells[1], cells[3]]
        rows.append(row)
    return Grid("Gullibility probes, judges side by side (each judge's own probe runs)", header, rows)


def probes_table(probes: list[Any]) -> Table:
    """`qrelkit probe --list`: each built-in probe, what it does and what it tests."""
    table = Table(title="Built-in probes (--probe ID; your own: --probe FILE.yaml)", title_justify="left")
    for column in ("id", "modality", "perturbation", "parameters", "tests"):
        table.add_column(column)
    for probe in probes:
        parameters = ", ".join(f"{k}={v}" for k, v in probe.settings().model_dump(mode="json").items())
        table.add_row(*(printable(str(v)) for v in (probe.id, probe.modality, probe.perturbation, parameters or "–", probe.tests)))
    return table


# -- HTML: a section of the audit report and of the comparison page ---------------------------------------


def _html_grid(grid: Grid) -> str:
    return html_table(list(grid.header), [list(row) for row in grid.rows], text_columns=grid.text_columns, css="compact")


PROBES_INTRO = (
    "Each probe judged a sample of pairs the reference calls non-relevant as they are and perturbed (docs/probes.md). "
    "A judge that cannot be fooled this way shows a shift near 0 and pushes no pair to relevant; intervals resample queries."
)


def probes_section_html(entries: list[ProbeEntry], judge: str) -> str:
    """The audit report's section: the probes the judge run was put to, a row each."""
    from html import escape

    rows = [[entry.name, *entry_cells(entry)] for entry in entries]
    grid = Grid("", ["probe", *ENTRY_HEADER], rows)
    tests = "".join(f"<li><b>{escape(entry.name)}</b>: {escape(str(entry.probe.get('tests', '')))}</li>" for entry in entries)
    notes = [f"{entry.name}: {note}" for entry in entries for note in entry.notes]
    extra = "<ul class=note>" + "".join(f"<li>{escape(line)}</li>" for line in notes) + "</ul>" if notes else ""
    return (
        f"<h2 id=probes>Gullibility probes of {escape(judge)}</h2><p class=note>{escape(PROBES_INTRO)}</p>"
        f"{_html_grid(grid)}<ul class=note>{tests}</ul>{extra}"
    )


def side_by_side_html(probes: dict[str, list[ProbeEntry]]) -> str:
    """The comparison page's section: the judges side by side on the probes each was put to."""
    from html import escape

    grid = side_by_side_grid(probes)
    return (
        f"<h2 id=probes>{escape(grid.title)}</h2><p class=note>{escape(PROBES_INTRO)} Each judge's probes ran on its own job's sample: "
        "read a row across judges only where their jobs sampled the same pairs.</p>" + _html_grid(grid)
    )


def side_by_side(probes: dict[str, list[ProbeEntry]], output_format: str) -> list[Table | Text] | str:
    """The judges side by side on their probes, for `qrelkit compare`'s table, Markdown or LaTeX."""
    grid = side_by_side_grid(probes)
    if output_format == "markdown":
        return "\n" + grid_markdown(grid) + "\n"
    if output_format == "latex":
        return "\n".join(grid_latex(grid)) + "\n"
    if output_format == "plain":
        return "\n" + grid.plain() + "\n"
    return [grid.rich()]
