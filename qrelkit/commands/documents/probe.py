"""Documents of `qrelkit probe`: the answer first (a sentence per probe that moved the judge, or that
none did), a row per probe, what every number is; the probes' section of the audit report and of the
comparison page (judges side by side), with a figure of each probe's shift and its interval."""

from __future__ import annotations

import math
from typing import Any

from qrelkit.commands.documents import ranged
from qrelkit.evaluate.bootstrap import describe_intervals
from qrelkit.report.document import Document, Estimate, Figure, Paragraph, Section, Table, notes

HEADER = ["mean before → after", "mean shift [CI]", "relevant before", "pushed to relevant [CI]", "p (shift)", "pairs (queries)"]
INTRO = (
    "Each probe judged a sample of pairs the reference calls non-relevant as they are and perturbed (docs/probes.md). "
    "A judge that cannot be fooled this way shows a shift near 0 and pushes no pair to relevant; intervals resample queries."
)


def _share(value: float | None, found: Any = None) -> Estimate:
    return ranged(None if value is None or (isinstance(value, float) and math.isnan(value)) else value, found, 1, 1, percent=True)


def cells(entry: Any) -> list[Any]:
    """mean before → after, shift [CI], relevant before, pushed to relevant [CI], p, pairs (queries)."""
    shift = entry.shift
    if shift is None:
        return [None] * 5 + [f"0 of {entry.pairs}"]
    estimates, intervals = shift.estimates, shift.intervals
    before, after = estimates["mean_before"], estimates["mean_after"]
    return [
        f"{before:.3f} → {after:.3f}",
        ranged(estimates["mean_shift"], intervals.get("mean_shift"), 3, signed=True),
        _share(estimates["relevant_before"]),
        _share(estimates["pushed_to_relevant"], intervals.get("pushed_to_relevant")),
        shift.p_value,
        f"{shift.pairs} ({shift.queries})",
    ]


def moved(entry: Any, alpha: float = 0.05) -> bool:
    """The probe moved the judge: the mean shift's interval excludes 0 and its test (where run) agrees."""
    shift = entry.shift
    if shift is None or not math.isfinite(shift.mean_shift):
        return False
    found = shift.intervals.get("mean_shift")
    excludes = found is not None and not (found.low <= 0.0 <= found.high)
    tested = shift.p_value is not None
    return (excludes or found is None) and (not tested or shift.p_value < alpha) and (found is not None or tested)


def sentence(entry: Any, judge: str) -> str:
    """'query-term-injection pushes 84.0% [78.1, 90.2] of non-relevant passages to relevant (mean shift +0.333 ...)'."""
    shift = entry.shift
    change = ranged(shift.mean_shift, shift.intervals.get("mean_shift"), 3, signed=True).text()
    p = "" if shift.p_value is None else f", p = {shift.p_value:.3f}"
    pushed = shift.estimates.get("pushed_to_relevant")
    if shift.mean_shift > 0 and pushed is not None and math.isfinite(pushed) and pushed > 0:
        share = _share(pushed, shift.intervals.get("pushed_to_relevant")).text()
        return f"{entry.name} pushes {share} of the non-relevant pairs to relevant for {judge} (mean shift {change}{p})."
    direction = "raises" if shift.mean_shift > 0 else "lowers"
    return f"{entry.name} {direction} the scores {judge} gives non-relevant pairs (mean shift {change}{p})."


def lead(entries: list[Any], judge: str) -> list[str]:
    found = [entry for entry in entries if moved(entry)]
    if not found:
        tried = ", ".join(entry.name for entry in entries)
        return [f"No probe moved {judge}: every shift's interval holds 0 ({tried})."]
    ordered = sorted(found, key=lambda e: -(abs(e.shift.mean_shift)))
    return [sentence(entry, judge) for entry in ordered]


def worst_probe(entries: list[Any]) -> str | None:
    """The report's summary line: the probe that moved the judge most, or that none did."""
    found = [entry for entry in entries if moved(entry)]
    if not found:
        return f"No gullibility probe moved the judge ({len(entries)} tried)." if entries else None
    worst = max(found, key=lambda e: abs(e.shift.mean_shift))
    return "Worst probe: " + sentence(worst, "the judge")


def figure(entries: list[Any], title: str) -> Figure:
    """Each probe's mean shift with its interval."""

    def draw() -> Any:
        from qrelkit.report.plots.probes import plot_shifts

        shown = [e for e in entries if e.shift is not None]
        if not shown:
            return None
        intervals = [e.shift.intervals.get("mean_shift") for e in shown]
        return plot_shifts(
            [e.name for e in shown], [e.shift.mean_shift for e in shown], [(i.low, i.high) if i else None for i in intervals]
        )

    return Figure(
        f"{title}: each probe's mean shift of the judge's scores, with its interval; dashed: no shift.", draw, "probe shifts", 560
    )


def describe(result: Any) -> list[str]:
    """What the numbers are, in sentences."""
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
    shift = next((e.shift for e in result.probes if e.shift is not None), None)
    if shift is not None:
        lines.append("intervals: " + describe_intervals(shift.interval, shift.level, shift.queries, shift.resamples, shift.seed))
        lines.append(
            f"p: {shift.test}, {shift.permutations} random swaps of each query's pairs before and after"
            if shift.permutations
            else "p: none"
        )
    return lines


def entry_notes(entries: list[Any]) -> list[str]:
    lines = []
    for entry in entries:
        lines += [f"{entry.name}: {note}" for note in entry.notes]
        if entry.shift is not None:
            lines += [f"* {entry.name}, {name}: {found.note}" for name, found in entry.shift.intervals.items() if found and found.note]
        left_out = {side: n for side, n in entry.not_ok.items() if n}
        if left_out:
            lines.append(f"{entry.name}: left out, not ok: " + ", ".join(f"{n} {side}" for side, n in left_out.items()))
    return lines


def probe(result: Any, request: Any) -> Document:
    """`qrelkit probe`: the probes' list, a dry run's plan, or the probes' effects (exit 130 when interrupted)."""
    if request.list_probes:
        return listing(result)
    title = f"Probes of {result.judge} ({result.model_id})"
    if result.dry_run:
        header = ["run", "judge run", "pairs", "done", "failed", "to judge", "est. requests", "est. cost USD (max)"]
        rows = [
            [p.name, p.judge_run_id, p.pairs, p.ok, p.failed, p.to_judge, *map((p.estimate or {}).get, ("requests", "cost_usd_max"))]
            for p in result.plans
        ]
        plan = Table(f"{title}: what a run would judge (dry run)", header, rows, text_columns=2, name="plan")
        planned = [f"A dry run: {sum(p.to_judge for p in result.plans):,} pairs to judge over {len(result.plans)} runs."]
        return Document(lead=planned, blocks=[Paragraph("\n".join(describe(result))), plan], data=result.to_dict())
    table = Table(title, ["probe", *HEADER], [[entry.name, *cells(entry)] for entry in result.probes], digits=3, name="probes")
    found = entry_notes(result.probes)
    if result.relevance is not None and result.relevance.note:
        found.insert(0, result.relevance.note)
    if result.interrupted:
        found.append("interrupted: run the same command again to judge the rest (nothing judged is judged twice)")
    blocks: list[Any] = [table, Paragraph("\n".join(describe(result))), figure(result.probes, title)]
    judge = f"{result.judge} ({result.model_id})" if result.model_id else result.judge
    status = 130 if result.interrupted else 0
    return Document(lead=lead(result.probes, judge), blocks=blocks, notes=notes(found), data=result.to_dict(), status=status)


def listing(found: list[Any]) -> Document:
    """`qrelkit probe --list`: each built-in probe, what it does and what it tests."""
    rows = []
    for each in found:
        parameters = ", ".join(f"{k}={v}" for k, v in each.settings().model_dump(mode="json").items())
        rows.append([each.id, each.modality, each.perturbation, parameters or "–", each.tests])
    table = Table(
        "Built-in probes (--probe ID; your own: --probe FILE.yaml)",
        ["id", "modality", "perturbation", "parameters", "tests"],
        rows,
        text_columns=5,
        name="probes",
    )
    return Document(blocks=[table], data=[each.describe() for each in found])


def probes_section(entries: list[Any], judge: str) -> Section:
    """The audit report's section: the probes the judge run was put to, a row each, and their figure."""
    table = Table("", ["probe", *HEADER], [[entry.name, *cells(entry)] for entry in entries], digits=3, compact=True, name="probes")
    tests = Paragraph("\n".join(f"{entry.name}: {entry.probe.get('tests', '')}" for entry in entries))
    extra = [Paragraph("\n".join(entry_notes(entries)))] if entry_notes(entries) else []
    title = f"Gullibility probes of {judge}"
    return Section(title, [Paragraph(INTRO), table, figure(entries, title), tests, *extra], key="probes")


def side_by_side(probes: dict[str, list[Any]]) -> Section:
    """The comparison's section: the judges side by side on the probes each was put to."""
    judges = list(probes)
    names = list(dict.fromkeys(entry.name for entries in probes.values() for entry in entries))
    header = ["probe"] + [f"{judge}: {what}" for judge in judges for what in ("mean shift [CI]", "pushed to relevant [CI]")]
    rows = []
    for name in names:
        row: list[Any] = [name]
        for judge in judges:
            entry = next((e for e in probes[judge] if e.name == name), None)
            found = cells(entry) if entry is not None else [None] * 6
            row += [found[1], found[3]]
        rows.append(row)
    title = "Gullibility probes, judges side by side (each judge's own probe runs)"
    intro = Paragraph(
        INTRO + " Each judge's probes ran on its own job's sample: read a row across judges only where their jobs sampled the same pairs."
    )
    return Section(title, [intro, Table(title, header, rows, digits=3, compact=True, name="probes")], key="probes")
