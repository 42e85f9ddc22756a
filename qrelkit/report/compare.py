"""`qrelkit compare`'s output: one table with a row per judge, the paired differences, the κ between
judges, and what every number is (reference, queries, interval method, test); as a terminal table,
plain text (a pipe or a file: no cell cut to a width), Markdown or LaTeX (booktabs, ready for a
paper), JSON, or records for pandas. A column empty in every row (the cost of judges read from
files) is left out of the tables. Presentation only: the numbers come from `qrelkit.evaluate.compare`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from qrelkit.evaluate.audit import audit_to_dict
from qrelkit.report.tables import ci, fmt
from qrelkit.report.terminal_table import Table
from qrelkit.report.text import latex_comment, markdown_text, one_line, plain_table, printable
from qrelkit.report.verdict import caveats, verdict

if TYPE_CHECKING:
    from qrelkit.evaluate.compare import Comparison, PairedDifference

# The use cases' results (qrelkit.commands.compare.CompareResult and JudgeEntry,
# qrelkit.commands.sweep.SweepOutcome): report/ sits below commands/, so they are read by field.
CompareResult = Any
JudgeEntry = Any
SweepOutcome = Any


def _number(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _interval(found: Any) -> list[float | None] | None:
    return None if found is None else [_number(found.low), _number(found.high)]


def difference_to_dict(d: PairedDifference, comparison: Comparison) -> dict[str, Any]:
    return {
        "first": d.first,
        "second": d.second,
        "difference": f"{d.first} − {d.second}",
        "statistic": d.statistic,
        "measure": d.measure,
        "estimate": _number(d.estimate),
        "ci": _interval(d.interval),
        "level": comparison.level,
        "interval_method": d.interval.method if d.interval else None,
        "interval_note": d.interval.note if d.interval else None,
        "p_value": d.p_value,
        "test": comparison.test,
        "permutations": d.permutations,
        "queries": d.queries,
        "indistinguishable": d.indistinguishable(comparison.alpha),
    }


def comparison_to_dict(result: CompareResult) -> dict[str, Any]:
    """The JSON form (`qrelkit compare --json`): each judge's full audit as `agree --json` gives it."""
    comparison = result.comparison
    audits = comparison.audits if comparison else {}
    judges = [
        {
            "name": e.name,
            "status": e.status,
            "note": e.note,
            "source": e.source,
            "cost": e.cost.to_dict() if e.cost else None,
            "audit": audit_to_dict(audits[e.name]) if e.name in audits else None,
        }
        for e in result.entries
    ]
    out: dict[str, Any] = {"verdict": verdict(result), "verdict_notes": caveats(result)}
    out |= {"reference": result.reference, "judges": judges, "differences": [], "kappa_between_judges": {}, "notes": []}
    if comparison is not None:
        out["differences"] = [difference_to_dict(d, comparison) for d in comparison.differences]
        out["kappa_between_judges"] = comparison.kappa_matrix
        out["notes"] = list(comparison.notes)
        out["bootstrap"] = {
            "method": comparison.interval if comparison.resamples else None,
            "level": comparison.level,
            "resamples": comparison.resamples,
            "seed": comparison.seed,
            "over": "queries; the same resamples for every judge and every statistic (paired)",
        }
        out["test"] = {
            "name": comparison.test,
            "permutations": comparison.permutations,
            "p_value": "(1 + swaps with |Δ*| ≥ |Δ|) / (1 + swaps)",
            "why": "resampled τ is biased low, so a p-value read off the bootstrap would test a shifted distribution",
        }
        out["baseline"] = comparison.baseline
    return out


def judge_records(result: CompareResult) -> list[dict[str, Any]]:
    """One flat record per judge (pandas rows)."""
    comparison = result.comparison
    records = []
    for entry in result.entries:
        record: dict[str, Any] = {"judge": entry.name, "status": entry.status}
        found = comparison.audits.get(entry.name) if comparison else None
        if found is not None:
            labels = found.labels
            kappa = labels.intervals.get("cohen_kappa")
            record |= {"queries": len(found.queries), "pairs": labels.model_pairs, "shared_pairs": labels.shared_pairs}
            record |= {"kappa": labels.cohen_kappa, "kappa_low": kappa.low if kappa else None, "kappa_high": kappa.high if kappa else None}
            record |= {"kappa_linear": labels.cohen_kappa_linear, "kappa_quadratic": labels.cohen_kappa_quadratic}
            for measure, corr in found.systems.items():
                for statistic in ("kendall_tau", "tau_ap"):
                    interval = corr.intervals.get(statistic)
                    record[f"{statistic} {measure}"] = getattr(corr, statistic)
                    record[f"{statistic} {measure} low"] = interval.low if interval else None
                    record[f"{statistic} {measure} high"] = interval.high if interval else None
        if entry.cost is not None:
            cost = entry.cost
            record |= {"judgments": cost.judgments, "failed": cost.failed, "cost_usd": cost.cost_usd}
            record |= {
                "tokens_in": cost.tokens_in,
                "tokens_out": cost.tokens_out,
                "seconds": cost.seconds,
                "pairs_per_s": cost.pairs_per_second,
            }
        record["note"] = entry.note
        records.append(record)
    return records


def difference_records(result: CompareResult) -> list[dict[str, Any]]:
    comparison = result.comparison
    if comparison is None:
        return []
    rows = []
    for d in comparison.differences:
        found = difference_to_dict(d, comparison)
        low, high = found.pop("ci") or [None, None]
        rows.append({**found, "low": low, "high": high})
    return rows


# -- tables: one model, three renderings -----------------------------------------------------------


@dataclass
class Grid:
    """A table as plain strings, for the terminal, Markdown and LaTeX alike."""

    title: str
    header: list[str]
    rows: list[list[str]]
    text_columns: int = 1  # leading columns that are text (left-aligned); the rest are numbers

    def without_empty_columns(self) -> Grid:
        """The grid less its columns that are empty ("–") in every row (never the first)."""
        if not self.rows:
            return self
        keep = [i for i in range(len(self.header)) if i == 0 or any(row[i] not in ("–", "") for row in self.rows)]
        text_columns = sum(1 for i in keep if i < self.text_columns)
        return Grid(self.title, [self.header[i] for i in keep], [[row[i] for i in keep] for row in self.rows], text_columns)

    def plain(self) -> str:
        return plain_table(self.title, self.header, self.rows, self.text_columns)

    def rich(self) -> Table:
        """A terminal table whose cells fold onto more lines rather than being cut to `0.…`."""
        table = Table(title=self.title, title_justify="left")
        for i, column in enumerate(self.header):
            table.add_column(column, justify="left" if i < self.text_columns else "right", overflow="fold")
        for row in self.rows:
            table.add_row(*(printable(cell) for cell in row))
        return table


def _value(value: float | None, found: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    text = fmt(value)
    if found is not None:
        text += f" {ci(found.interval, digits)}" + ("*" if found.note else "")
    return text


def _usd(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _entry_cost_cells(entry: JudgeEntry) -> list[str]:
    cost = entry.cost
    if cost is None:
        return ["–", "–", "–", "–", "–"]
    rate = cost.pairs_per_second
    return [
        f"{cost.failed}/{cost.judgments}",
        _usd(cost.cost_usd),
        f"{cost.tokens_in:,}/{cost.tokens_out:,}",
        "–" if cost.seconds is None else f"{cost.seconds:.1f}",
        "–" if rate is None else f"{rate:.1f}",
    ]


def judge_grid(result: CompareResult) -> Grid:
    comparison = result.comparison
    measures = next(iter(comparison.audits.values())).model_evaluation.measures if comparison and comparison.audits else []
    groups = sorted({g for a in comparison.audits.values() for g in a.bias}) if comparison else []
    header = ["judge", "status", "pairs (shared)", "κ [CI]", "κ lin / quad"]
    for measure in measures:
        header += [f"τ {measure} [CI]", f"τ_AP {measure}"]
    header += [f"Rel. Δ {g} {m}, judge − ref %" for g in groups for m in measures]
    header += ["failed/judged", "cost USD", "tokens in/out", "time s", "pairs/s"]
    rows = []
    for entry in result.entries:
        found = comparison.audits.get(entry.name) if comparison else None
        if found is None:
            cells = [entry.name, entry.status, "–", "–", "–"] + ["–"] * (2 * len(measures) + len(groups) * len(measures))
            rows.append(cells + _entry_cost_cells(entry))
            continue
        labels = found.labels
        cells = [
            entry.name,
            entry.status,
            f"{labels.model_pairs:,} ({labels.shared_pairs:,})",
            _value(labels.cohen_kappa, labels.intervals.get("cohen_kappa")),
            f"{fmt(labels.cohen_kappa_linear, 3)} / {fmt(labels.cohen_kappa_quadratic, 3)}",
        ]
        for measure in measures:
            corr = found.systems[measure]
            cells += [_value(corr.kendall_tau, corr.intervals.get("kendall_tau")), fmt(corr.tau_ap)]
        for group in groups:
            for measure in measures:
                bias = found.bias.get(group, {}).get(measure)
                cells.append("–" if bias is None else f"{fmt(bias.difference, 1)} {ci(bias.difference_ci95, 1)}")
        rows.append(cells + _entry_cost_cells(entry))
    return Grid(f"Judges against {result.reference.get('name')}", header, rows, text_columns=2)


def difference_grid(comparison: Comparison) -> Grid:
    header = ["difference", "statistic", "estimate [CI]", "p", "queries"]
    rows = [
        [
            f"{d.first} − {d.second}",
            d.name,
            _value(d.estimate, d.interval),
            "–" if d.p_value is None else f"{d.p_value:.3f}",
            str(d.queries),
        ]
        for d in comparison.differences
    ]
    against = f" (each judge − {comparison.baseline})" if comparison.baseline else ""
    return Grid(f"Paired differences{against}", header, rows, text_columns=2)


def kappa_grid(comparison: Comparison) -> Grid:
    """κ between every two judges whose grades κ can read (not scores, one scale's worth of grades)."""
    names = [a for a in comparison.judges if comparison.kappa_matrix[a].get(a) is not None]
    rows = [[a, *(fmt(comparison.kappa_matrix[a].get(b), 3) for b in names)] for a in names]
    left_out = len(comparison.judges) - len(names)
    more = f"; {left_out} judges without grades κ can read left out" if left_out else ""
    return Grid(f"Cohen's κ between judges (on the pairs both judged, grades as given{more})", ["", *names], rows)


def describe(result: CompareResult) -> list[str]:
    """What the numbers are, in sentences: printed above and below every form of the tables."""
    comparison = result.comparison
    reference = result.reference
    lines = [
        f"reference: {reference.get('name')} ({reference.get('origin')}{', ' + str(reference['path']) if reference.get('path') else ''})"
    ]
    if comparison is None:
        return lines + ["no judge could be compared (see each judge's status)"]
    first = next(iter(comparison.audits.values()))
    lines.append(f"systems: {len(first.model_evaluation.runs)} runs, scored on the queries each judge and the reference share")
    lines.append(measures_line(first))
    scored = [e.name for e in result.entries if e.source.get("values") == "scores"]
    if scored:
        lines.append(f"scores, not grades (fractional values; only measures that read their order, no κ): {', '.join(scored)}")
    if comparison.resamples and comparison.interval == "jackknife":
        lines.append(
            f"intervals: {comparison.level:.0%} jackknife over queries (each left out once); the same queries left out for every "
            "judge, so each row is what `qrelkit agree` prints and each difference is paired"
        )
    elif comparison.resamples:
        lines.append(
            f"intervals: {comparison.level:.0%} {comparison.interval} bootstrap over queries, {comparison.resamples} resamples, "
            f"seed {comparison.seed}; the same resamples for every judge, so each row is what `qrelkit agree` prints and each "
            "difference is paired"
        )
    else:
        lines.append("intervals: none (--resamples 0)")
    if comparison.permutations:
        lines.append(f"p: {comparison.test}, {comparison.permutations} random swaps of the two judges' judgments per query")
    else:
        lines.append("p: none (--permutations 0)")
    for entry in result.entries:
        if entry.note:
            lines.append(f"{entry.name}: {entry.status}: {entry.note}")
    return lines


def measures_line(found: Any) -> str:
    """Which measure ranks the systems on each side, and how the reference's means are compared."""
    pairs = found.measure_pairs or {m: (m, m) for m in found.model_evaluation.measures}
    shown = "; ".join(f"{ref} under the reference, {judge} under each judge" for ref, judge in pairs.values())
    decimals = found.reference_decimals
    tie = f"; the reference's means as printed to {decimals} decimals (equal ones tie)" if decimals is not None else ""
    return f"rankings: {shown}{tie}"


def notes(result: CompareResult) -> list[str]:
    comparison = result.comparison
    if comparison is None:
        return []
    marks = [f"* {judge}: {note}" for judge, found in comparison.audits.items() for note in found.interval_notes()]
    marks += [f"* {d.first} − {d.second}, {d.name}: {d.interval.note}" for d in comparison.differences if d.interval and d.interval.note]
    return marks + list(comparison.notes) + warning_lines(comparison)


def warning_lines(comparison: Comparison) -> list[str]:
    """Each warning once, in one line, naming every judge it concerns (twelve judges of scores need
    one sentence, not twelve)."""
    judges_of: dict[str, list[str]] = {}
    for judge, found in comparison.audits.items():
        for warning in found.warnings:
            judges_of.setdefault(warning, []).append(judge)
    return [f"{', '.join(judges)}: warning: {warning}" for warning, judges in judges_of.items()]


def grids(result: CompareResult) -> list[Grid]:
    out = [judge_grid(result)]
    if result.comparison is not None:
        if result.comparison.differences:
            out.append(difference_grid(result.comparison))
        if sum(row.get(a) is not None for a, row in result.comparison.kappa_matrix.items()) > 1:
            out.append(kappa_grid(result.comparison))
    return [grid.without_empty_columns() for grid in out]


def lead(result: CompareResult) -> list[str]:
    """The verdict, then what it rests on: the first lines of every form (`qrelkit.report.verdict`)."""
    return verdict(result) + [f"note: {line}" for line in caveats(result)]


def terminal(result: CompareResult) -> list[Table | Text]:
    out: list[Table | Text] = [Text(printable("\n".join(lead(result))), style="bold"), Text(printable("\n".join(describe(result))))]
    out += [grid.rich() for grid in grids(result)]
    lines = notes(result)
    return out + ([Text(printable("\n".join(lines)))] if lines else [])


def plain(result: CompareResult) -> str:
    """The terminal's tables as plain text, for a pipe or a file (`qrelkit compare > table.txt`)."""
    parts = ["\n".join(printable(line) for line in lead(result)), "\n".join(printable(line) for line in describe(result))]
    parts += [grid.plain() for grid in grids(result)]
    extra = notes(result)
    if extra:
        parts.append("\n".join(printable(line) for line in extra))
    return "\n\n".join(parts) + "\n"


def _markdown_cell(text: str) -> str:
    return markdown_text(text)


def grid_markdown(grid: Grid) -> str:
    """One grid as a Markdown table under its title in bold."""
    align = ["---" if i < grid.text_columns else "---:" for i in range(len(grid.header))]
    lines = [
        f"**{markdown_text(grid.title)}**",
        "",
        "| " + " | ".join(map(_markdown_cell, grid.header)) + " |",
        "|" + "|".join(align) + "|",
    ]
    lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in grid.rows]
    return "\n".join(lines)


def markdown(result: CompareResult) -> str:
    parts = [f"**{markdown_text(line)}**" for line in verdict(result)]
    parts.append("\n".join(f"- {markdown_text(line)}" for line in [f"note: {c}" for c in caveats(result)] + describe(result)))
    parts += [grid_markdown(grid) for grid in grids(result)]
    extra = notes(result)
    if extra:
        parts.append("\n".join(f"- {markdown_text(line)}" for line in extra))
    return "\n\n".join(parts) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}"}
_LATEX_SPECIAL |= {"~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}
_LATEX_GREEK = {"κ": r"$\kappa$", "τ": r"$\tau$", "Δ": r"$\Delta$", "−": r"$-$", "–": "--", "≥": r"$\geq$", "≤": r"$\leq$"}
_LATEX_GREEK |= {"ρ": r"$\rho$", "α": r"$\alpha$", "±": r"$\pm$", "×": r"$\times$", "…": r"\ldots{}", "→": r"$\rightarrow$"}


def latex_text(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch) or _LATEX_GREEK.get(ch) or ch for ch in one_line(text))


def grid_latex(grid: Grid) -> list[str]:
    """One grid as a booktabs table (lines)."""
    spec = "l" * grid.text_columns + "r" * (len(grid.header) - grid.text_columns)
    return [
        r"\begin{table}[t]",
        r"\centering\small",
        rf"\caption{{{latex_text(grid.title)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_text(h) for h in grid.header) + r" \\",
        r"\midrule",
        *(" & ".join(latex_text(c) for c in row) + r" \\" for row in grid.rows),
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]


def latex(result: CompareResult) -> str:
    """Booktabs tables (\\usepackage{booktabs}), one per grid, the description as a comment and the
    notes in a caption-ready paragraph."""
    parts = [latex_comment(line) for line in lead(result) + describe(result)]
    for grid in grids(result):
        parts += grid_latex(grid)
    extra = notes(result)
    if extra:
        parts += ["% notes:"] + [latex_comment(line) for line in extra]
    return "\n".join(parts) + "\n"


# -- a sweep run -----------------------------------------------------------------------------------


def sweep_grid(outcome: SweepOutcome) -> Grid:
    dry = outcome.dry_run
    title = f"Sweep {outcome.job.name} over {', '.join(outcome.keys)}: {len(outcome.cells)} cells" + (" (dry run)" if dry else "")
    header = ["cell", "judge run", "status", "pairs", "done", "to judge"]
    header += ["est. requests", "est. cost USD (max)"] if dry else ["judged", "failed", "graded set"]
    rows = []
    for cell in outcome.cells:
        report = cell.report
        base = [cell.cell.name, cell.judge_run_id, cell.status]
        if report is None:
            rows.append(base + ["–"] * (len(header) - 3))
            continue
        base += [f"{report.pairs:,}", f"{report.already_ok:,}", f"{report.to_judge:,}"]
        if dry:
            estimate = report.estimate or {}
            cost = estimate.get("cost_usd_max")
            base += [str(estimate.get("requests", "–")), "–" if cost is None else f"{cost:.4f}"]
        else:
            grading = cell.outcome.grading if cell.outcome is not None else None
            base += [f"{report.judged:,}", f"{report.failed:,}", grading.qrels.name if grading is not None else "–"]
        rows.append(base)
    return Grid(title, header, rows, text_columns=3)


def sweep_table(outcome: SweepOutcome) -> Table:
    """The sweep's cells for a terminal (`sweep_grid(outcome).plain()` for a pipe or a file)."""
    return sweep_grid(outcome).rich()


def sweep_failures(outcome: SweepOutcome) -> list[str]:
    return [f"cell {c.cell.name} failed: {c.error}" for c in outcome.cells if c.status == "failed"]
