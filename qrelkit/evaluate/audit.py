"""One call that audits model qrels against reference qrels: label agreement, system-ranking
correlations and group bias, with bootstrap intervals over queries. Plain data in, plain data
out: `qrelkit.commands.agree` resolves files, qrels sets and judge runs into it.

Every interval of an audit (κ, τ, ρ, r, τ_AP, Relative Δ) comes from the same query resamples,
by one method (the jackknife by default; BCa, percentile or subsampling on request;
`qrelkit.evaluate.bootstrap`), and an
interval that should not be read as it stands carries a note (`Audit.interval_notes`).

Systems are scored on the queries both qrels judge, each side with its own grades; a grade
map (`--map`) changes only the label agreement, never the measures.

The audit also says, in plain sentences (`Audit.warnings`), when its numbers should not be read as
they stand: grades on different scales (κ then counts every grade one side never uses as a
disagreement), or too little data for a statistic. The size thresholds, and why:

- κ on fewer than ``MIN_KAPPA_PAIRS`` = 50 shared pairs: κ's standard error is about
  √(p_o(1−p_o)/n)/(1−p_e) (Cohen, Educational and Psychological Measurement 1960); with typical
  p_o = 0.5–0.7 and p_e = 0.3–0.4 that is 0.1 at n = 50, a 95% interval of ±0.2, wider than one band
  of the usual reading of κ (Landis and Koch, Biometrics 1977). Below 50 the value says little.
- τ on fewer than ``MIN_RUNS`` = 5 runs: with 4 runs even a perfect Kendall τ = 1 has a two-sided
  exact p of 2/4! = 0.083, so no ranking agreement could be told from chance at the 5% level.
- System means on fewer than ``MIN_QUERIES`` = 10 queries: system orderings from small query sets
  swap often (Voorhees and Buckley, SIGIR 2002: swap rates rise steadily as topic sets shrink), and a
  percentile bootstrap over n queries draws from few distinct resamples; τ, ρ, τ_AP, Relative Δ
  and their intervals all rest on those means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from qrelkit.evaluate.agreement import STATISTICS, SystemCorrelation, correlate_systems
from qrelkit.evaluate.bias import GroupBias, check_groups, group_bias
from qrelkit.evaluate.bootstrap import (
    DEFAULT_METHOD,
    METHOD_NAMES,
    check_method,
    check_resamples,
    describe_intervals,
    draw_weights,
    paired_intervals,
)
from qrelkit.evaluate.labels import (
    KAPPA_NAMES,
    LabelAgreement,
    agreement_of,
    finite_or_none,
    interval_or_none,
    kappa_statistic_of,
    mapped_pairs,
)
from qrelkit.evaluate.metrics import Evaluation, evaluate_runs
from qrelkit.io import Qrels, Run
from qrelkit.io.results import Result

DEFAULT_MEASURES = ("nDCG@10", "AP(rel=2)")
MIN_KAPPA_PAIRS = 50
MIN_RUNS = 5
MIN_QUERIES = 10
KAPPA_BOUNDS = {name: (-math.inf, 1.0) for name in KAPPA_NAMES}  # κ ≤ 1; below, κ has no fixed floor
STATISTIC_NAMES = {"kendall_tau": "Kendall τ-b", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r", "tau_ap": "τ_AP"}


@dataclass(frozen=True, repr=False)
class Audit(Result):
    model_name: str
    reference_name: str
    queries: list[str]  # judged by both qrels: the queries systems are scored on
    labels: LabelAgreement
    systems: dict[str, SystemCorrelation]
    bias: dict[str, dict[str, GroupBias]]
    model_evaluation: Evaluation
    reference_evaluation: Evaluation
    resamples: int
    seed: int | None
    reference_map: dict[int, int] | None = None
    model_map: dict[int, int] | None = None
    groups: dict[str, list[str]] = field(default_factory=dict)
    model_grades: dict[str, dict[str, int]] = field(default_factory=dict)  # as given, before any map
    reference_grades: dict[str, dict[str, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # sentences for a reader: scale mismatch, too little data
    # What each side's qrels are ("model", "reference" -> name, origin, file, judge run, grading record,
    # sample), as plain data; filled by whoever resolved them (`qrelkit.commands.agree`).
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    interval: str = METHOD_NAMES[DEFAULT_METHOD]  # the interval method, as printed: "jackknife", "BCa", "percentile", "subsampling"
    level: float = 0.95

    def summary(self) -> str:
        first = next(iter(self.systems.values()), None)
        tau = f", kendall_tau[{next(iter(self.systems))}]={first.kendall_tau:.4f}" if first is not None else ""
        return (
            f"model={self.model_name!r}, reference={self.reference_name!r}, queries={len(self.queries)}, "
            f"shared_pairs={self.labels.shared_pairs}, cohen_kappa={self.labels.cohen_kappa:.4f}{tau}"
        )

    def interval_note_records(self) -> list[dict[str, Any]]:
        """Each interval that should not be read as it stands (its estimate outside it, an extreme
        bias correction, BCa not computable there) as {statistic, name, measure, group, note}."""
        records = [
            {"statistic": name, "name": KAPPA_NAMES[name], "measure": None, "group": None, "note": found.note}
            for name, found in self.labels.intervals.items()
            if found.note
        ]
        for measure, corr in self.systems.items():
            records += [
                {"statistic": name, "name": STATISTIC_NAMES[name], "measure": measure, "group": None, "note": note}
                for name, note in corr.notes.items()
            ]
        for group, by_measure in self.bias.items():
            for measure, bias in by_measure.items():
                records += [
                    {
                        "statistic": f"relative_delta_{side}",
                        "name": f"Relative Δ toward {group} ({side})",
                        "measure": measure,
                        "group": group,
                        "note": note,
                    }
                    for side, note in bias.notes.items()
                ]
        return records

    def interval_notes(self) -> list[str]:
        """One sentence per interval that should not be read as it stands, naming the statistic and measure."""
        return [f"{r['name']}{', ' + r['measure'] if r['measure'] else ''}: {r['note']}" for r in self.interval_note_records()]

    def interval_description(self) -> str:
        """What the intervals are, in words: "95% jackknife intervals over 43 queries (each left out once)"."""
        return describe_intervals(self.interval, self.level, len(self.queries), self.resamples, self.seed)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`qrelkit agree --json`)."""
        return audit_to_dict(self)

    def to_pandas(self):
        """One row per (run, measure): the run's mean under the model and the reference qrels."""
        from qrelkit.io.results import pandas

        pd = pandas()

        model, reference = self.model_evaluation.means(), self.reference_evaluation.means()
        rows = [(run, m, model[run][m], reference[run][m]) for run in self.model_evaluation.runs for m in self.model_evaluation.measures]
        return pd.DataFrame(rows, columns=["run", "measure", "model", "reference"])


def _grade_scale(grades: dict[str, dict[str, int]], mapping: Mapping[int, int] | None) -> tuple[int, int] | None:
    """(lowest, highest) grade after the map; None for no grades."""
    seen = {grade for docs in grades.values() for grade in docs.values()}
    if mapping is not None:
        seen = {mapping.get(grade, grade) for grade in seen}
    return (min(seen), max(seen)) if seen else None


def _onto(scale: tuple[int, int], target: tuple[int, int]) -> str:
    """A `--map` spec that clips the grades of ``scale`` into ``target`` (highest grades first)."""
    low, high = target
    return ",".join(f"{g}:{min(max(g, low), high)}" for g in range(scale[1], scale[0] - 1, -1))


def scale_warning(
    model_grades: dict[str, dict[str, int]],
    reference_grades: dict[str, dict[str, int]],
    *,
    reference_map: Mapping[int, int] | None = None,
    model_map: Mapping[int, int] | None = None,
) -> str | None:
    """A sentence when the model's grades and the reference's span different ranges (after the maps)."""
    model, reference = _grade_scale(model_grades, model_map), _grade_scale(reference_grades, reference_map)
    if model is None or reference is None or model == reference:
        return None
    if reference[1] - reference[0] > model[1] - model[0]:
        hint = f"--map {_onto(reference, model)} (reference grades onto the model's scale)"
    else:
        hint = f"--map-model {_onto(model, reference)} (model grades onto the reference's scale)"
    return (
        f"the grades are on different scales: the model's span {model[0]}–{model[1]}, the reference's {reference[0]}–{reference[1]}; "
        f"Cohen's κ counts every grade one side never gives as a disagreement. Put both on one scale with {hint}."
    )


def size_warnings(shared_pairs: int, queries: int, runs: int) -> list[str]:
    """Sentences for each statistic the audit prints on too little data (thresholds: module docstring)."""
    warnings = []
    if shared_pairs < MIN_KAPPA_PAIRS:
        warnings.append(
            f"Cohen's κ and α rest on only {shared_pairs} shared pairs (fewer than {MIN_KAPPA_PAIRS}): "
            "at that size κ's 95% interval is about ±0.2 or wider."
        )
    if runs < MIN_RUNS:
        warnings.append(
            f"the system-ranking correlations compare only {runs} runs (fewer than {MIN_RUNS}): "
            "even a perfect Kendall τ cannot be told from chance at the 5% level."
        )
    if queries < MIN_QUERIES:
        warnings.append(
            f"systems are scored on only {queries} queries judged by both qrels (fewer than {MIN_QUERIES}): "
            "the rankings, τ, Relative Δ and their bootstrap intervals rest on too few queries."
        )
    return warnings


def _judged_on(qrels: Qrels, queries: list[str]) -> Qrels:
    """The qrels of ``queries`` alone, as columns (no detour through dicts)."""
    import pyarrow.compute as pc

    from qrelkit.io import arrays

    table = qrels.table
    return Qrels.from_table(qrels.name, table.filter(pc.is_in(table.column("qid"), value_set=arrays.strings(queries))))


def _as_qrels(qrels: Qrels | dict[str, dict[str, int]], name: str) -> Qrels:
    from qrelkit.io.frames import qrels_from_dict

    return qrels if isinstance(qrels, Qrels) else qrels_from_dict(qrels, name)


def audit(
    model: Qrels | dict[str, dict[str, int]],
    reference: Qrels | dict[str, dict[str, int]],
    runs: list[Run],
    *,
    measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
    groups: dict[str, list[str]] | None = None,
    reference_map: Mapping[int, int] | None = None,
    model_map: Mapping[int, int] | None = None,
    rel_level: int | None = None,
    resamples: int = 1000,
    seed: int | None = 0,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> Audit:
    """Audit ``model`` qrels against ``reference`` qrels over ``runs``; see the module docstring.
    ``interval``: 'bca' (default) or 'percentile', for every interval of the audit. The qrels may
    be `Qrels` or ``{qid: {docid: grade}}`` dicts (named "model" and "reference")."""
    model, reference = _as_qrels(model, "model"), _as_qrels(reference, "reference")
    method = check_method(interval)
    check_resamples(resamples)
    pairs = mapped_pairs(model, reference, reference_map=reference_map, model_map=model_map)  # once, for κ, α and their bootstrap
    labels = agreement_of(pairs, rel_level)
    queries = sorted(set(model.grades) & set(reference.grades))  # non-empty: label_agreement found shared pairs
    measures = list(dict.fromkeys(measures))
    model_evaluation = evaluate_runs(_judged_on(model, queries), runs, measures)
    reference_evaluation = evaluate_runs(_judged_on(reference, queries), runs, measures)
    # One set of resamples for every statistic, so intervals of κ, τ and Δ describe the same topic draws.
    weights = draw_weights(len(queries), resamples, seed, method)
    kappas = kappa_statistic_of(pairs, queries, rel_level)
    found = paired_intervals(kappas, weights, method=method, level=level, bounds=KAPPA_BOUNDS)
    labels = replace(labels, intervals={name: i for name, i in found.intervals.items() if i is not None})
    groups = check_groups(groups or {}, model_evaluation.runs)
    scale = scale_warning(model.grades, reference.grades, reference_map=reference_map, model_map=model_map)
    warnings = ([scale] if scale else []) + size_warnings(labels.shared_pairs, len(queries), len(model_evaluation.runs))
    return Audit(
        model_name=model.name,
        reference_name=reference.name,
        queries=queries,
        labels=labels,
        systems=correlate_systems(model_evaluation, reference_evaluation, weights=weights, interval=method, level=level),
        bias=group_bias(model_evaluation, reference_evaluation, groups, weights=weights, interval=method, level=level) if groups else {},
        model_evaluation=model_evaluation,
        reference_evaluation=reference_evaluation,
        resamples=resamples,
        seed=seed,
        reference_map=None if reference_map is None else dict(reference_map),
        model_map=None if model_map is None else dict(model_map),
        groups=groups,
        model_grades=model.grades,
        reference_grades=reference.grades,
        warnings=warnings,
        interval=METHOD_NAMES[method],
        level=level,
    )


def audit_to_dict(result: Audit) -> dict[str, Any]:
    """The JSON form (`qrelkit agree --json`); an undefined statistic is null, never NaN."""
    labels = result.labels
    label_part = labels.to_dict()
    systems = {}
    for measure, corr in result.systems.items():
        entry: dict[str, Any] = {"runs": corr.runs, "queries": corr.queries}
        for name in STATISTICS:
            entry[name] = finite_or_none(getattr(corr, name))
            entry[f"{name}_ci95"] = interval_or_none(corr.ci95.get(name))
        entry["notes"] = corr.notes
        systems[measure] = entry
    bias = {
        group: {
            measure: {
                "model": finite_or_none(b.model),
                "reference": finite_or_none(b.reference),
                "model_ci95": interval_or_none(b.model_ci95),
                "reference_ci95": interval_or_none(b.reference_ci95),
                "difference": finite_or_none(b.difference),
                "difference_ci95": interval_or_none(b.difference_ci95),
                "group_runs": len(b.group_runs),
                "other_runs": b.other_runs,
                "notes": b.notes,
            }
            for measure, b in by_measure.items()
        }
        for group, by_measure in result.bias.items()
    }
    return {
        "model": result.model_name,
        "reference": result.reference_name,
        "queries": len(result.queries),
        "pairs": {"model": labels.model_pairs, "reference": labels.reference_pairs, "shared": labels.shared_pairs},
        "labels": label_part,
        "systems": systems,
        "bias": bias,
        "bootstrap": {
            "method": result.interval if result.resamples else None,
            "level": result.level,
            "resamples": result.resamples,
            "seed": result.seed,
            "over": f"{len(result.queries)} queries, each left out once (paired: the same queries for every statistic)"
            if result.interval == "jackknife"
            else f"{len(result.queries)} queries (paired: the same resamples for every statistic)",
            "description": result.interval_description(),
        },
        "maps": {"reference": result.reference_map, "model": result.model_map},
        "warnings": list(result.warnings),
        # every interval note of the sections above in one list, each naming its statistic and measure
        "interval_notes": [
            {**record, "sentence": sentence} for record, sentence in zip(result.interval_note_records(), result.interval_notes())
        ],
        "sources": result.sources,
    }
