"""The document of `qrelkit compare`: the answer first, then the judges sorted by how closely their
system rankings follow the reference's, the paired differences, the κ between judges, the probes.

The answer: for two or three judges, one sentence per two judges (whose labels are better, by how
much, and whose system ranking is closer to the reference's, or that they cannot be told apart);
for more, the best judge and its τ, then the judges that cannot be told apart one group a line, and
every pairwise sentence in a folded section (`--verbose`, or an expandable part of the page).

A difference counts as shown when the randomisation test's p is below α = 1 − level and its paired
interval excludes 0 (either alone when the other was not computed); as not shown when p ≥ α and the
interval holds 0; where the two disagree it is not shown, and a note under the answer says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from qrelkit.commands.documents import bracket, ranged
from qrelkit.report.document import Document, Estimate, Figure, Paragraph, Section, Table, notes, warnings
from qrelkit.report.phrases import describe_sample, fmt

DIGITS = {"cohen_kappa": 2, "kendall_tau": 3, "tau_ap": 3}
MANY = 3  # more judges than this: the answer is the ranking, the pairwise sentences fold away


def decide(d: Any, alpha: float) -> str:
    """'first' or 'second' (which judge is better), 'same' (not told apart), 'mixed' (the interval
    and the test disagree: not shown) or 'untested' (neither was computed)."""
    tested = d.p_value is not None
    bounded = d.interval is not None
    if not tested and not bounded:
        return "untested"
    significant = tested and d.p_value < alpha
    excludes_zero = bounded and not (d.interval.low <= 0.0 <= d.interval.high)
    if (significant or not tested) and (excludes_zero or not bounded):
        return "first" if d.estimate > 0 else "second"
    if (not significant or not tested) and (not excludes_zero or not bounded):
        return "same"
    return "mixed"


def _number(value: float, digits: int, sign: str = "") -> str:
    """``value`` with ``digits`` decimals and a true minus sign; ``sign`` "+": a plus sign too."""
    return f"{value:{sign}.{digits}f}".replace("-", "−")


def p_text(p: float | None) -> str:
    """p to two significant digits above 0.01 (p = 0.74), three decimals below (p = 0.001)."""
    if p is None:
        return "no test"
    return f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def _by(d: Any, flip: bool) -> str:
    """'Δκ +0.13 [0.06, 0.20], p = 0.001', as winner − loser when ``flip`` (the second judge won)."""
    digits = DIGITS[d.statistic]
    sign = -1.0 if flip else 1.0
    text = f"{d.name} {_number(sign * d.estimate, digits, '+')}"
    if d.interval is not None:
        low, high = sorted((sign * d.interval.low, sign * d.interval.high))
        text += f" [{_number(low, digits)}, {_number(high, digits)}]"
    return f"{text}, {p_text(d.p_value)}"


def _brief(d: Any, with_measure: bool) -> str:
    name = d.name if with_measure else d.name.split(" ")[0]
    return f"{name} {_number(d.estimate, DIGITS[d.statistic], '+')}, {p_text(d.p_value)}"


def _labels_clause(d: Any, alpha: float) -> str:
    verdict = decide(d, alpha)
    if verdict in ("first", "second"):
        winner = d.first if verdict == "first" else d.second
        return f"{winner}'s labels are better by {_by(d, verdict == 'second')}"
    if verdict == "untested":
        return f"their labels differ by {_brief(d, False)} (no interval, no test)"
    if verdict == "mixed":
        return f"their labels are not shown to differ, the test and the interval disagreeing ({_brief(d, False)}; see the notes)"
    return f"their labels cannot be told apart ({_brief(d, False)})"


def _rankings_clause(rankings: list[Any], alpha: float, reference: str) -> str:
    several = len({d.measure for d in rankings}) > 1
    decided = [(d, decide(d, alpha)) for d in rankings]
    parts = []
    for d, verdict in decided:
        if verdict in ("first", "second"):
            winner = d.first if verdict == "first" else d.second
            on = f" on {d.measure}" if several else ""
            by = _by(d, verdict == "second").replace(d.name, d.name.split(" ")[0], 1)
            parts.append(f"{winner}'s system ranking is closer to {reference}'s{on} by {by}")
    groups = (
        ("same", "cannot be told apart", ""),
        ("untested", "differ, untested", ""),
        ("mixed", "are not shown to differ, the test and the interval disagreeing", "; see the notes"),
    )
    for kind, words, after in groups:
        found = [d for d, verdict in decided if verdict == kind]
        if not found:
            continue
        briefs = "; ".join(_brief(d, several) for d in found) + after
        subject = (
            "the system rankings"
            if not parts and len(found) == len(decided)
            else "on " + ", ".join(str(d.measure) for d in found) + " they"
        )
        parts.append(f"{subject} {words} ({briefs})")
    return "; ".join(parts)


def pairwise(result: Any) -> list[str]:
    """One sentence per two judges compared: labels (Δκ), then system rankings (Δτ per measure)."""
    comparison = result.comparison
    if comparison is None:
        return ["No judge could be compared (see each judge's status)."]
    if not comparison.differences:
        return [_single(result, name) for name in comparison.judges]
    alpha = 1.0 - comparison.level
    pairs: dict[tuple[str, str], list[Any]] = {}
    for d in comparison.differences:
        pairs.setdefault((d.first, d.second), []).append(d)
    sentences = []
    for (first, second), found in pairs.items():
        kappa = next((d for d in found if d.statistic == "cohen_kappa"), None)
        rankings = [d for d in found if d.statistic == "kendall_tau"]
        clauses = ([_labels_clause(kappa, alpha)] if kappa is not None else []) + (
            [_rankings_clause(rankings, alpha, comparison.reference_name)] if rankings else []
        )
        sentences.append(f"{first} vs {second}: " + "; ".join(clauses) + ".")
    return sentences


def _single(result: Any, name: str) -> str:
    found = result.comparison.audits[name]
    kappa = bracket(found.labels.intervals.get("cohen_kappa"), 2)
    text = f"{name} against {result.comparison.reference_name}: κ {found.labels.cohen_kappa:.2f}{kappa}"
    for measure, corr in found.systems.items():
        text += f", τ {measure} {corr.kendall_tau:.3f}{bracket(corr.intervals.get('kendall_tau'))}"
    return text + " (one judge: no difference to test)."


# -- many judges: the ranking ---------------------------------------------------------------------------


def first_measure(comparison: Any) -> str:
    return next(iter(comparison.audits.values())).model_evaluation.measures[0]


def ranked(result: Any) -> list[str]:
    """The compared judges, best first by Kendall τ on the first measure (ties: κ, then name)."""
    comparison = result.comparison
    measure = first_measure(comparison)

    def key(name: str) -> tuple[float, float, str]:
        audit = comparison.audits[name]
        tau = audit.systems[measure].kendall_tau
        kappa = audit.labels.cohen_kappa
        return (-tau if math.isfinite(tau) else math.inf, -(kappa if kappa is not None and math.isfinite(kappa) else -math.inf), name)

    return sorted(comparison.audits, key=key)


def tie_groups(result: Any) -> list[list[str]]:
    """The ranking cut into groups: each group starts at the best judge not yet placed and holds the
    judges below it that cannot be told apart from it (Δτ on the first measure, paired)."""
    comparison = result.comparison
    measure = first_measure(comparison)
    told = {
        frozenset((d.first, d.second)): decide(d, 1.0 - comparison.level)
        for d in comparison.differences
        if d.statistic == "kendall_tau" and d.measure == measure
    }
    order = ranked(result)
    groups: list[list[str]] = []
    while order:
        leader, rest = order[0], order[1:]
        group = [leader] + [name for name in rest if told.get(frozenset((leader, name))) in ("same", "mixed", "untested", None)]
        groups.append(group)
        order = [name for name in order if name not in group]
    return groups


def _names(group: list[str]) -> str:
    if len(group) <= 3:
        return ", ".join(group[:-1]) + (" and " if len(group) > 1 else "") + group[-1]
    return f"{group[0]}, {group[1]} and {len(group) - 2} more"


def ranking_lead(result: Any) -> list[str]:
    """The best judge and its τ, then each group of judges that cannot be told apart, one line each."""
    comparison = result.comparison
    measure = first_measure(comparison)
    order = ranked(result)
    best = comparison.audits[order[0]].systems[measure]
    interval = bracket(best.intervals.get("kendall_tau"))
    tied = [name for name in order[1:] if comparison.audits[name].systems[measure].kendall_tau == best.kendall_tau]
    with_tied = f" (tied with {', '.join(tied)})" if tied else ""
    lines = [
        f"Best of {len(order)} judges against {comparison.reference_name}: {order[0]}{with_tied}, whose system ranking has "
        f"Kendall τ-b {best.kendall_tau:.3f}{interval} with the reference's on {measure}."
    ]
    for group in tie_groups(result):
        taus = [comparison.audits[name].systems[measure].kendall_tau for name in group]
        if len(group) == 1:
            lines.append(f"{group[0]}: τ {taus[0]:.3f}, told apart from every judge below it.")
        else:
            spread = f"τ {min(taus):.3f} to {max(taus):.3f}"
            lines.append(f"{_names(group)}: {spread}, none told apart from {group[0]} (Δτ paired over queries).")
    return lines


# -- tables ---------------------------------------------------------------------------------------------


def _cost_cells(entry: Any) -> list[Any]:
    """failed/judged, cost, tokens in/out (none where nothing was counted), time and rate."""
    cost = entry.cost
    if cost is None:
        return [None] * 5
    tokens = f"{cost.tokens_in:,}/{cost.tokens_out:,}" if cost.tokens_in or cost.tokens_out else None
    seconds = None if cost.seconds is None else f"{cost.seconds:.1f}"
    rate = None if cost.pairs_per_second is None else f"{cost.pairs_per_second:.1f}"
    return [f"{cost.failed}/{cost.judgments}", cost.cost_usd, tokens, seconds, rate]


def judges_table(result: Any) -> Table:
    """A row per judge, best first (judges not compared last): κ, τ and τ_AP per measure, Relative Δ, cost."""
    comparison = result.comparison
    measures = next(iter(comparison.audits.values())).model_evaluation.measures if comparison and comparison.audits else []
    groups = sorted({g for a in comparison.audits.values() for g in a.bias}) if comparison else []
    header = ["judge", "status", "pairs (shared)", "κ [CI]", "κ lin / quad"]
    for measure in measures:
        header += [f"τ {measure} [CI]", f"τ_AP {measure}"]
    header += [f"Rel. Δ {g} {m}, judge − ref %" for g in groups for m in measures]
    header += ["failed/judged", "cost USD", "tokens in/out", "time s", "pairs/s"]
    order = {name: i for i, name in enumerate(ranked(result))} if comparison and comparison.audits else {}
    entries = sorted(result.entries, key=lambda e: order.get(e.name, len(order)))
    rows, classes = [], []
    for entry in entries:
        found = comparison.audits.get(entry.name) if comparison else None
        classes.append(None if entry.status == "compared" else "failed")
        if found is None:
            rows.append([entry.name, entry.status, *[None] * (3 + 2 * len(measures) + len(groups) * len(measures)), *_cost_cells(entry)])
            continue
        labels = found.labels
        cells: list[Any] = [
            entry.name,
            entry.status,
            f"{labels.model_pairs:,} ({labels.shared_pairs:,})",
            ranged(labels.cohen_kappa, labels.intervals.get("cohen_kappa")),
            f"{fmt(labels.cohen_kappa_linear, 3)} / {fmt(labels.cohen_kappa_quadratic, 3)}",
        ]
        for measure in measures:
            corr = found.systems[measure]
            cells += [ranged(corr.kendall_tau, corr.intervals.get("kendall_tau")), corr.tau_ap]
        for group in groups:
            for measure in measures:
                bias = found.bias.get(group, {}).get(measure)
                low, high = bias.difference_ci95 if bias is not None and bias.difference_ci95 else (None, None)
                cells.append(None if bias is None else Estimate(bias.difference, low, high, 1, 1))
        rows.append(cells + _cost_cells(entry))
    text = frozenset({0, 1, 2, 4, len(header) - 3})
    title = f"Judges against {result.reference.get('name')}" + (f", best first by τ on {measures[0]}" if measures else "")
    return Table(title, header, rows, text_columns=text, name="judges", row_classes=classes, compact=True).without_empty_columns()


def differences_table(comparison: Any) -> Table:
    header = ["difference", "statistic", "estimate [CI]", "p", "queries"]
    rows = [
        [f"{d.first} − {d.second}", d.name, ranged(d.estimate, d.interval), None if d.p_value is None else round(d.p_value, 3), d.queries]
        for d in comparison.differences
    ]
    against = f" (each judge − {comparison.baseline})" if comparison.baseline else ""
    return Table(f"Paired differences{against}", header, rows, text_columns=2, digits=3, name="differences")


def kappa_table(comparison: Any) -> Table | None:
    """κ between every two judges whose grades κ can read (not scores, one scale's worth of grades)."""
    names = [a for a in comparison.judges if comparison.kappa_matrix[a].get(a) is not None]
    if len(names) < 2:
        return None
    rows = [[a, *(comparison.kappa_matrix[a].get(b) for b in names)] for a in names]
    left_out = len(comparison.judges) - len(names)
    more = f"; {left_out} judges without grades κ can read left out" if left_out else ""
    return Table(
        f"Cohen's κ between judges (on the pairs both judged, grades as given{more})", ["", *names], rows, digits=3, name="kappa-matrix"
    )


def describe(result: Any) -> list[str]:
    """What the numbers are, in sentences."""
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
    swaps = f"{comparison.test}, {comparison.permutations} random swaps of the two judges' judgments per query"
    lines.append(f"p: {swaps}" if comparison.permutations else "p: none (--permutations 0)")
    lines += [f"{entry.name}: {entry.status}: {entry.note}" for entry in result.entries if entry.note]
    return lines


def measures_line(found: Any) -> str:
    """Which measure ranks the systems on each side, and how the reference's means are compared."""
    pairs = found.measure_pairs or {m: (m, m) for m in found.model_evaluation.measures}
    shown = "; ".join(f"{ref} under the reference, {judge} under each judge" for ref, judge in pairs.values())
    decimals = found.reference_decimals
    tie = f"; the reference's means as printed to {decimals} decimals (equal ones tie)" if decimals is not None else ""
    return f"rankings: {shown}{tie}"


def caveats(result: Any) -> list[str]:
    """What the answer rests on: disagreeing interval and test, samples, the grades κ compares."""
    if result.comparison is None:
        return []
    return [*mixed_lines(result), *sample_lines(result), grades_line(result.comparison)]


def mixed_lines(result: Any) -> list[str]:
    """A line per difference whose interval and test disagree (counted as not shown)."""
    comparison = result.comparison
    if comparison is None:
        return []
    alpha = 1.0 - comparison.level
    lines = []
    for d in comparison.differences:
        if decide(d, alpha) != "mixed":
            continue
        interval = f"its {comparison.level:.0%} {d.interval.method} interval [{_number(d.interval.low, 3)}, {_number(d.interval.high, 3)}]"
        if d.p_value >= alpha:
            why = f"{interval} excludes 0 but {p_text(d.p_value)} ≥ {alpha:.2f}"
        else:
            why = f"{p_text(d.p_value)} < {alpha:.2f} but {interval} holds 0"
        note = " (the interval carries a note: see below)" if d.interval.note else ""
        lines.append(
            f"{d.first} − {d.second}, {d.name} = {_number(d.estimate, 4, '+')}: {why}{note}; counted as not shown to differ: read both"
        )
    return lines


def sample_lines(result: Any) -> list[str]:
    """A line for each judge whose qrels are a sample of its pool, or cover only part of the reference's pairs."""
    comparison = result.comparison
    lines = []
    for entry in result.entries:
        found = comparison.audits.get(entry.name) if comparison is not None else None
        if found is None:
            continue
        sample = ((entry.source or {}).get("grading") or {}).get("sample")
        labels = found.labels
        if sample:
            where = "its τ too, against the reference cut to them" if found.coverage.restricted else "its τ on runs scored by them alone"
            lines.append(f"{entry.name} judged a {describe_sample(sample)}: its κ is on those pairs and {where}")
        elif labels.reference_pairs and labels.shared_pairs < labels.reference_pairs:
            lines.append(
                f"{entry.name} shares {labels.shared_pairs:,} of the reference's {labels.reference_pairs:,} pairs: its κ is on those "
                "pairs and its τ on runs scored by its own judgments alone"
            )
    return lines


def grades_line(comparison: Any) -> str:
    """The grades κ compares: as given, or after `--map` / `--map-model` (τ always uses them as given)."""
    first = next(iter(comparison.audits.values()))

    def spec(mapping: Mapping[int, int] | None) -> str | None:
        return None if mapping is None else ",".join(f"{k}:{v}" for k, v in mapping.items())

    reference, model = spec(first.maps.reference), spec(first.maps.model)
    if reference is None and model is None:
        return "κ compares the grades as given on both sides (no --map)"
    parts = [f"the reference's through --map {reference}" if reference else "the reference's as given"]
    parts.append(f"each judge's through --map-model {model}" if model else "each judge's as given")
    return "κ compares " + " and ".join(parts) + "; the measures behind τ use the grades as given"


def warning_lines(comparison: Any) -> list[str]:
    """Each audit warning once, naming every judge it concerns."""
    judges_of: dict[str, list[str]] = {}
    for judge, found in comparison.audits.items():
        for warning in found.warnings:
            judges_of.setdefault(warning, []).append(judge)
    return [f"{', '.join(judges)}: {warning}" for warning, judges in judges_of.items()]


def lead(result: Any) -> list[str]:
    """The answer: the ranking for many judges, a sentence per two judges for a few."""
    comparison = result.comparison
    if comparison is None or len(comparison.audits) <= MANY or not comparison.differences:
        return pairwise(result)
    return ranking_lead(result)


def tau_figure(result: Any) -> Figure:
    """Kendall τ of each judge on each measure with its interval, best first."""

    def draw() -> Any:
        from qrelkit.report.plots.compare import plot_tau_per_judge

        comparison = result.comparison
        names = ranked(result)
        measures = next(iter(comparison.audits.values())).model_evaluation.measures
        taus = {m: [comparison.audits[n].systems[m].kendall_tau for n in names] for m in measures}
        found = {m: [comparison.audits[n].systems[m].intervals.get("kendall_tau") for n in names] for m in measures}
        intervals = {m: [None if i is None else (i.low, i.high) for i in found[m]] for m in measures}
        label = f"Kendall τ-b with {comparison.reference_name} [{comparison.level:.0%} {comparison.interval} interval]"
        return plot_tau_per_judge(names, taus, intervals, label)

    return Figure(
        "Kendall τ-b of each judge's system ranking with the reference's, best first.", draw, "Kendall τ per judge with intervals", 640
    )


def comparison(result: Any, request: Any) -> Document:
    """`qrelkit compare` (and its page)."""
    from qrelkit.commands.documents.probe import side_by_side

    comparison = result.comparison
    many = comparison is not None and len(comparison.audits) > MANY and bool(comparison.differences)
    blocks: list[Any] = [judges_table(result), Paragraph("\n".join(describe(result)))]
    if comparison is not None and comparison.audits:
        blocks.append(Section("System rankings per judge", [tau_figure(result)]))
    if comparison is not None and comparison.differences:
        sentences = [Paragraph("\n".join(pairwise(result) + mixed_lines(result) + list(comparison.notes)))] if many else []
        blocks.append(Section("Every two judges compared", [*sentences, differences_table(comparison)], folded=many))
        kappas = kappa_table(comparison)
        blocks += [kappas] if kappas is not None else []
    if result.probes:
        blocks.append(side_by_side(result.probes))
    # a few judges: the sentences rest on these, so each stands under them
    said = warnings(warning_lines(comparison), qualifies=not many) if comparison is not None else []
    said += notes(caveats(result) if not many else [*sample_lines(result), grades_line(comparison)], qualifies=not many)
    if comparison is not None:
        said += notes([f"* {judge}: {note}" for judge, found in comparison.audits.items() for note in found.interval_notes()])
        marks = [f"* {d.first} − {d.second}, {d.name}: {d.interval.note}" for d in comparison.differences if d.interval and d.interval.note]
        said += notes(marks + ([] if many else list(comparison.notes)))
    count = len(result.entries)
    title = f"Which judge? {count} judge{'s' if count != 1 else ''} against {result.reference.get('name')}"
    files = [request.html] if getattr(request, "html", None) is not None else []
    return Document(lead=lead(result), blocks=blocks, notes=said, data=result.to_dict(), title=title, files=files)
