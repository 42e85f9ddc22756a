"""The answer first: `qrelkit compare`'s verdict in sentences, printed before any table in every
form (terminal, Markdown, LaTeX, the HTML page). For every two judges compared: whose labels are
better and by how much (Δκ with its interval and p), and whose system ranking is closer to the
reference's on each measure (Δτ), or that the two cannot be told apart. Then what a reader must
know to read it: a difference whose interval and test disagree, judges whose qrels are samples, and
the grades κ compared (any `--map`).

A difference counts as shown when the randomisation test's p is below α = 1 − level and its paired
interval excludes 0 (either alone when the other was not computed); as not shown when p ≥ α and the
interval holds 0; where the two disagree it is not shown, and a caveat says so. Presentation only:
the numbers are `qrelkit.evaluate.compare`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qrelkit.report.tables import describe_sample

CompareResult = Any  # qrelkit.commands.compare.CompareResult, read by field (report/ sits below commands/)
Difference = Any  # qrelkit.evaluate.compare.PairedDifference

DIGITS = {"cohen_kappa": 2, "kendall_tau": 3, "tau_ap": 3}


def decide(d: Difference, alpha: float) -> str:
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


def _signed(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


def _plain(value: float, digits: int) -> str:
    return f"{value:.{digits}f}".replace("-", "−")


def p_text(p: float | None) -> str:
    """p to two significant digits above 0.01 (p = 0.74), three decimals below (p = 0.001)."""
    if p is None:
        return "no test"
    return f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def _by(d: Difference, flip: bool) -> str:
    """'Δκ +0.13 [0.06, 0.20], p = 0.001', as winner − loser when ``flip`` (the second judge won)."""
    digits = DIGITS[d.statistic]
    sign = -1.0 if flip else 1.0
    text = f"{d.name} {_signed(sign * d.estimate, digits)}"
    if d.interval is not None:
        low, high = sorted((sign * d.interval.low, sign * d.interval.high))
        text += f" [{_plain(low, digits)}, {_plain(high, digits)}]"
    return f"{text}, {p_text(d.p_value)}"


def _brief(d: Difference, with_measure: bool) -> str:
    """'Δτ +0.010, p = 0.74' (the measure named when there are several)."""
    name = d.name if with_measure else d.name.split(" ")[0]
    return f"{name} {_signed(d.estimate, DIGITS[d.statistic])}, {p_text(d.p_value)}"


def _labels_clause(d: Difference, alpha: float) -> str:
    verdict = decide(d, alpha)
    if verdict in ("first", "second"):
        winner = d.first if verdict == "first" else d.second
        return f"{winner}'s labels are better by {_by(d, verdict == 'second')}"
    if verdict == "untested":
        return f"their labels differ by {_brief(d, False)} (no interval, no test)"
    if verdict == "mixed":
        return f"their labels are not shown to differ, the test and the interval disagreeing ({_brief(d, False)}; see the notes)"
    return f"their labels cannot be told apart ({_brief(d, False)})"


def _rankings_clause(rankings: list[Difference], alpha: float, reference: str) -> str:
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


def _pairs(comparison: Any) -> list[tuple[str, str, list[Difference]]]:
    """(first, second, their differences) in the order compared."""
    out: dict[tuple[str, str], list[Difference]] = {}
    for d in comparison.differences:
        out.setdefault((d.first, d.second), []).append(d)
    return [(a, b, found) for (a, b), found in out.items()]


def verdict(result: CompareResult) -> list[str]:
    """One sentence per two judges compared: labels (Δκ), then system rankings (Δτ per measure)."""
    comparison = result.comparison
    if comparison is None:
        return ["No judge could be compared (see each judge's status)."]
    reference = comparison.reference_name
    if not comparison.differences:
        return [_single(result, name) for name in comparison.judges]
    alpha = 1.0 - comparison.level
    sentences = []
    for first, second, found in _pairs(comparison):
        kappa = next((d for d in found if d.statistic == "cohen_kappa"), None)
        rankings = [d for d in found if d.statistic == "kendall_tau"]
        clauses = ([_labels_clause(kappa, alpha)] if kappa is not None else []) + (
            [_rankings_clause(rankings, alpha, reference)] if rankings else []
        )
        sentences.append(f"{first} vs {second}: " + "; ".join(clauses) + ".")
    return sentences


def _single(result: CompareResult, name: str) -> str:
    """One judge alone: its κ and τ against the reference (nothing to compare it with)."""
    found = result.comparison.audits[name]
    kappa = found.labels.intervals.get("cohen_kappa")
    text = f"{name} against {result.comparison.reference_name}: κ {found.labels.cohen_kappa:.2f}"
    text += f" [{kappa.low:.2f}, {kappa.high:.2f}]" if kappa is not None else ""
    for measure, corr in found.systems.items():
        tau = corr.intervals.get("kendall_tau")
        text += f", τ {measure} {corr.kendall_tau:.3f}" + (f" [{tau.low:.3f}, {tau.high:.3f}]" if tau is not None else "")
    return text + " (one judge: no difference to test)."


def caveats(result: CompareResult) -> list[str]:
    """What the verdict rests on, said beside it: disagreeing interval and test, samples, the grades κ compares."""
    comparison = result.comparison
    if comparison is None:
        return []
    alpha = 1.0 - comparison.level
    lines = []
    for d in comparison.differences:
        if decide(d, alpha) != "mixed":
            continue
        interval = f"its {comparison.level:.0%} {d.interval.method} interval [{_plain(d.interval.low, 3)}, {_plain(d.interval.high, 3)}]"
        if d.p_value >= alpha:
            why = f"{interval} excludes 0 but {p_text(d.p_value)} ≥ {alpha:.2f}"
        else:
            why = f"{p_text(d.p_value)} < {alpha:.2f} but {interval} holds 0"
        note = " (the interval carries a note: see below)" if d.interval.note else ""
        lines.append(f"{d.first} − {d.second}, {d.name} = {_signed(d.estimate, 4)}: {why}{note}; counted as not shown to differ: read both")
    lines += sample_lines(result)
    lines.append(grades_line(comparison))
    return lines


def sample_lines(result: CompareResult) -> list[str]:
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
