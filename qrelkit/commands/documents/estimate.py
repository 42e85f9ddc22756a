"""`qrelkit estimate`'s result as a `Document`: the answer in one sentence, then per measure the runs
ranked with their intervals, the neighbouring runs' differences, every estimator and every pair of
runs (folded), then what the estimates rest on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qrelkit.commands.estimate_result import EstimateResult, MeasureEstimates
from qrelkit.report.document import Document, Estimate, Note, Section, Table

# each estimator: its name in the tables, and what it does (the notes)
ESTIMATORS = {
    "human": ("human only", "the human labels alone, expanded by their design weights"),
    "judge": ("judge only", "the judge's labels alone (no valid interval: their bias is unknown)"),
    "ppi": ("PPI (λ = 1)", "prediction-powered inference with λ = 1: the judge's labels as they are, corrected by the human sample"),
    "ppi++": (
        "PPI++ (tuned)",
        "PPI++: each label feature predicted as a_q + λ·(the judge's), λ and an intercept a_q for each query with two or more "
        "sampled pairs (one shared by the rest, and by every query of a stratified sample) fitted on the sample by design-weighted "
        "least squares (the power tuning of PPI++ as a regression estimator), then corrected by the human sample",
    ),
    "calibrated": (
        "calibrated",
        "the judge's grades calibrated on the sample (each judge grade's human grades, design-weighted), then corrected by it",
    ),
}
# whole queries: PPI over per-query values, where ppi++ is not the pair designs' regression
QUERY_ESTIMATOR_ABOUT = {
    "ppi++": "PPI++ over the sampled queries: the judge's per-query values weighted by λ, the one that minimises the estimate's "
    "variance (s(y, f) / s²(f), clipped to [0, 1]), corrected by the humans' values on the sampled queries",
}
DESIGN_ABOUT = {
    "queries": "whole queries (a simple random sample of queries; every pair of a sampled query labelled)",
    "stratified": "pairs stratified by query (a simple random sample in each query, shares by pool size)",
    "weighted": "pairs weighted by the measure and the judge's uncertainty (Poisson sampling, π ∝ how far a one-grade error moves the "
    "runs' values, with a 20% even floor)",
}


def _estimate(found: MeasureEstimates, estimator: str, run: int) -> Estimate:
    value, low, high = found.values[estimator][run], found.low[estimator][run], found.high[estimator][run]
    return Estimate(value) if low != low or high != high else Estimate(value, low, high)  # NaN: no interval (the judge's)


def lead(result: EstimateResult) -> str:
    found = result.primary
    order = found.order()
    judge = result.judge
    head = f"With {result.human_labels:,} human labels beside {judge['name']}'s {judge['labels']:,}"
    apart, total = found.pairs_told_apart()
    confident = found.confident_runs()
    tail = f"{confident} of {len(found.runs)} runs are ranked with confidence ({apart} of {total} pairs of runs told apart)"
    if len(order) < 2:
        value = found.values[found.estimator][order[0]]
        return f"{head}: {found.runs[order[0]]} scores {value:.3f} in {found.measure}."
    a, b = order[0], order[1]
    d, h = found.difference[a, b], found.half_width[a, b]
    return f"{head}: {found.runs[a]} leads {found.runs[b]} by {d:.3f} [{d - h:.3f}, {d + h:.3f}] in {found.measure}; {tail}."


def _runs_table(found: MeasureEstimates) -> Table:
    e = found.estimator
    rows = []
    for place, r in enumerate(found.order(), start=1):
        ranks = f"{found.best[r]}-{found.worst[r]}" if found.best[r] != found.worst[r] else str(found.best[r])
        effective = None if found.effective[r] != found.effective[r] else round(float(found.effective[r]))
        human, judge = _estimate(found, "human", r), Estimate(found.values["judge"][r])
        rows.append([place, found.runs[r], _estimate(found, e, r), ranks, human, judge, effective])
    header = ["rank", "run", f"{ESTIMATORS[e][0]} [95% CI]", "possible ranks", "human only [95% CI]", "judge only", "effective labels"]
    return Table(f"{found.measure}: the runs by {ESTIMATORS[e][0]}", header, rows, text_columns=2, name=f"runs {found.measure}")


def _differences(found: MeasureEstimates, pairs: Iterable[tuple[int, int]], what: str, other: str, name: str) -> Table:
    """Differences between runs ``pairs`` (a, b) with their 95% intervals: told apart where the interval excludes 0."""
    rows = []
    for a, b in pairs:
        d, h = found.difference[a, b], found.half_width[a, b]
        rows.append([found.runs[a], found.runs[b], Estimate(d, d - h, d + h, signed=True), "yes" if abs(d) > h else "no"])
    header = ["run", other, "difference [95% CI]", "told apart"]
    return Table(f"{found.measure}: {what}", header, rows, text_columns=2, name=f"{name} {found.measure}")


def _estimators_table(found: MeasureEstimates) -> Table:
    names = list(found.values)
    rows = [[found.runs[r]] + [_estimate(found, n, r) for n in names] for r in found.order()]
    return Table(f"{found.measure}: every estimator", ["run"] + [ESTIMATORS[n][0] for n in names], rows, name=f"estimators {found.measure}")


def _about(estimator: str, design: str) -> str:
    """What ``estimator`` does under ``design`` (PPI++ over whole queries is not the pairs' regression)."""
    return QUERY_ESTIMATOR_ABOUT.get(estimator, ESTIMATORS[estimator][1]) if design == "queries" else ESTIMATORS[estimator][1]


def _notes(result: EstimateResult) -> list[Note]:
    design = result.design
    found = result.primary
    phases = design["phases"]
    budgets = " + ".join(str(p["budget"]) for p in phases)
    interval = (
        "Student's t with n - 1 degrees of freedom over the sampled queries (finite-population variance)"
        if design["design"] == "queries"
        else "normal, from the design variance of the linearised estimate over the sampled pairs"
        + (
            " (nDCG: a level of the ideal DCG the labels prove past the cut-off is exact, and the ratio's second-order bias is subtracted)"
            if found.measure.startswith("nDCG")
            else ""
        )
    )
    notes = [
        Note(
            f"design {design['name']!r}: {DESIGN_ABOUT[design['design']]}, planned for {design['measure']} with seed {design['seed']}; "
            f"{found.labels:,} pairs labelled ({budgets} planned in {len(phases)} phase(s)) of a pool of {result.pool_pairs:,}"
        ),
        Note(f"estimator {ESTIMATORS[result.estimator][0]}: {_about(result.estimator, design['design'])}; 95% intervals: {interval}"),
        Note(
            f"judge side: {result.judge['name']} ({result.judge['origin']}, {result.judge['labels']:,} labels); human side: "
            f"{result.human['name']} ({result.human['origin']}, {result.human['labels']:,} grades on the scale "
            f"{design['scale'][0]}-{design['scale'][1]})"
        ),
        Note(
            "effective labels: how many human labels the human-only estimator of the same design would need for the same variance "
            "(what the judge's labels were worth); possible ranks: from the runs told apart above and below"
        ),
    ]
    notes += [Note(text) for text in result.notes]
    coverage = result.coverage_note()
    if coverage is not None:
        notes.append(Note(coverage[0], "warning", qualifies=True) if coverage[1] else Note(coverage[0]))
    return notes


def estimate_document(result: EstimateResult, request: Any = None) -> Document:
    blocks: list = []
    for found in result.measures.values():
        order = found.order()
        every = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
        neighbours = _differences(found, zip(order[:-1], order[1:]), "each run against the next in the ranking", "next run", "neighbours")
        estimators = Section(f"{found.measure}: every estimator", [_estimators_table(found)], folded=True)
        pairs = Section(
            f"{found.measure}: every pair of runs", [_differences(found, every, "every pair of runs", "other run", "pairs")], folded=True
        )
        blocks.append(Section(found.measure, [_runs_table(found), neighbours, estimators, pairs]))
    return Document(lead=[lead(result)], blocks=blocks, notes=_notes(result), data=result.to_dict(), title="Estimates from a human sample")
