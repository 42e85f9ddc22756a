"""One call that audits model qrels against reference qrels: label agreement, system-ranking
correlations and group bias, with bootstrap intervals over queries. Plain data in, plain data
out: `qrelkit.commands.agree` resolves files, qrels sets and judge runs into it.

Every interval of an audit (κ, τ, ρ, r, τ_AP, Relative Δ) comes from the same query resamples,
by one method (the jackknife by default; BCa, percentile or subsampling on request;
`qrelkit.evaluate.bootstrap`), and an
interval that should not be read as it stands carries a note (`Audit.interval_notes`).

Systems are scored on the queries both qrels judge, each side with its own grades; a grade
map (`--map`) changes only the label agreement, never the measures. Each side may be scored by its
own measure (`judge_measures`: the reference's nDCG@10 against the judge's compatibility, as
judge-method studies do); the correlations then carry both names (`MeasurePair`).

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

import pyarrow.compute as pc

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import STATISTICS, SystemCorrelation, correlate_systems
from qrelkit.evaluate.bias import GroupBias, check_groups, group_bias
from qrelkit.evaluate.bootstrap import describe_intervals, draw_weights, paired_intervals
from qrelkit.evaluate.choices import (
    DEFAULT_MEASURES,
    DEFAULT_METHOD,
    DEFAULT_RESAMPLES,
    METHOD_NAMES,
    check_decimals,
    check_method,
    check_resamples,
)
from qrelkit.evaluate.coverage import ALL, JUDGED, Coverage, check_reference_pairs, cut_to_judged
from qrelkit.evaluate.joined import queries_of, restricted
from qrelkit.evaluate.labels import (
    KAPPA_NAMES,
    MAX_KAPPA_LEVELS,
    NO_MAPS,
    GradeMaps,
    LabelAgreement,
    agreement_of,
    finite_or_none,
    interval_or_none,
    kappa_statistic_of,
    map_grades,
    mapped_pairs,
)
from qrelkit.evaluate.metrics import Evaluation, evaluate_runs
from qrelkit.io import Qrels, Run
from qrelkit.io.results import Result


@dataclass(frozen=True)
class MeasurePair:
    """The measure that ranks the systems under the reference and the one under the judge."""

    reference: str
    judge: str

    @property
    def key(self) -> str:
        """How the audit names the pair: the measure alone when both sides share it."""
        return self.reference if self.reference == self.judge else f"{self.reference} vs {self.judge}"


def measure_pairs(measures: list[str] | tuple[str, ...], judge_measures: list[str] | tuple[str, ...] = ()) -> list[MeasurePair]:
    """Each reference measure with its judge measure: the same (none given), the one given for all,
    or one per reference measure in order."""
    measures, judge_measures = list(dict.fromkeys(measures)), list(judge_measures)
    if not judge_measures:
        return [MeasurePair(m, m) for m in measures]
    if len(judge_measures) == 1:
        return [MeasurePair(m, judge_measures[0]) for m in measures]
    if len(judge_measures) != len(measures):
        raise QrelkitError(
            f"--judge-measure: give one (for every --measure) or one per --measure ({len(measures)}: {', '.join(measures)}), "
            f"not {len(judge_measures)}"
        )
    return list(dict.fromkeys(MeasurePair(m, j) for m, j in zip(measures, judge_measures)))


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
    model_qrels: Qrels  # as given, before any map
    reference_qrels: Qrels
    maps: GradeMaps = NO_MAPS  # applied to the grades before κ and α
    groups: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # sentences for a reader: scale mismatch, too little data
    # What each side's qrels are ("model", "reference" -> name, origin, file, judge run, grading record,
    # sample), as plain data; filled by whoever resolved them (`qrelkit.commands.agree`).
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    interval: str = METHOD_NAMES[DEFAULT_METHOD]  # the interval method, as printed: "jackknife", "BCa", "percentile", "subsampling"
    level: float = 0.95
    # key of `systems` -> (reference measure, judge measure); the key is the measure where both share it
    measure_pairs: dict[str, tuple[str, str]] = field(default_factory=dict)
    reference_decimals: int | None = None  # systems ranked by the reference's means as printed to this many decimals
    coverage: Coverage = field(default_factory=Coverage)  # the pairs each side's rankings read (the reference maybe cut to the judged)

    def mapped_grades(self) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        """(model, reference) grades after the maps: what κ and α compared."""
        return map_grades(self.model_qrels, self.maps.model, "model"), map_grades(self.reference_qrels, self.maps.reference, "reference")

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
        keys = ("statistic", "name", "measure", "group", "note")
        records: list[tuple[str, str, str | None, str | None, str]] = [
            (name, KAPPA_NAMES[name], None, None, found.note) for name, found in self.labels.intervals.items() if found.note
        ]
        records += [
            (name, STATISTIC_NAMES[name], measure, None, note)
            for measure, corr in self.systems.items()
            for name, note in corr.notes.items()
        ]
        records += [
            (f"relative_delta_{side}", f"Relative Δ toward {group} ({side})", measure, group, note)
            for group, by_measure in self.bias.items()
            for measure, bias in by_measure.items()
            for side, note in bias.notes.items()
        ]
        return [dict(zip(keys, record)) for record in records]

    def interval_notes(self) -> list[str]:
        """One sentence per interval that should not be read as it stands, naming the statistic and measure."""
        return [f"{r['name']}{', ' + r['measure'] if r['measure'] else ''}: {r['note']}" for r in self.interval_note_records()]

    def interval_description(self) -> str:
        """What the intervals are, in words: "95% jackknife intervals over 43 queries (each left out once)"."""
        return describe_intervals(self.interval, self.level, len(self.queries), self.resamples, self.seed)

    def to_dict(self) -> dict[str, Any]:
        return audit_to_dict(self)

    def to_pandas(self):
        """One row per (run, measure): the run's mean under the model and the reference qrels."""
        from qrelkit.io.results import pandas

        model, reference = self.model_evaluation.means(), self.reference_evaluation.means()
        rows = [(run, m, model[run][m], reference[run][m]) for run in self.model_evaluation.runs for m in self.model_evaluation.measures]
        return pandas().DataFrame(rows, columns=["run", "measure", "model", "reference"])


def _grade_scale(grades: Qrels | dict[str, dict[str, int]], mapping: Mapping[int, int] | None) -> tuple[int, int] | None:
    """(lowest, highest) grade after the map; None for no grades."""
    if isinstance(grades, Qrels):
        seen = set(pc.unique(grades.table.column("grade")).to_pylist())
    else:
        seen = {grade for docs in grades.values() for grade in docs.values()}
    if mapping is not None:
        seen = {mapping.get(grade, grade) for grade in seen}
    return (min(seen), max(seen)) if seen else None


def _onto(scale: tuple[int, int], target: tuple[int, int]) -> str | None:
    """A `--map` spec that clips the grades of ``scale`` into ``target`` (highest grades first); None
    when it would run past one scale's worth of grades (a hint is one line)."""
    low, high = target
    if scale[1] - scale[0] + 1 > MAX_KAPPA_LEVELS:
        return None
    return ",".join(f"{g}:{min(max(g, low), high)}" for g in range(scale[1], scale[0] - 1, -1))


def scale_warning(
    model_grades: Qrels | dict[str, dict[str, int]],
    reference_grades: Qrels | dict[str, dict[str, int]],
    maps: GradeMaps = NO_MAPS,
) -> str | None:
    """A sentence when the model's grades and the reference's span different ranges (after the maps)."""
    model, reference = _grade_scale(model_grades, maps.model), _grade_scale(reference_grades, maps.reference)
    if model is None or reference is None or model == reference:
        return None
    if reference[1] - reference[0] > model[1] - model[0]:
        spec, flag, what = _onto(reference, model), "--map", "reference grades onto the model's scale"
    else:
        spec, flag, what = _onto(model, reference), "--map-model", "model grades onto the reference's scale"
    hint = f"{flag} {spec} ({what})" if spec else f"{flag} ({what})"
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


def _as_qrels(qrels: Qrels | dict[str, dict[str, int]], name: str) -> Qrels:
    from qrelkit.io.frames import qrels_from_dict

    return qrels if isinstance(qrels, Qrels) else qrels_from_dict(qrels, name)


def side_evaluations(
    model: Qrels,
    reference: Qrels,
    runs: list[Run],
    queries: list[str],
    pairs: list[MeasurePair],
    reference_evaluation: Evaluation | None = None,
) -> tuple[Evaluation, Evaluation]:
    """(judge, reference) evaluations on ``queries``, each under the pairs' keys: the judge's by its
    measures, the reference's by its own (``reference_evaluation``, when given: scored once on
    every reference query with every reference measure, and cut to ``queries`` here)."""
    judge_measures = list(dict.fromkeys(p.judge for p in pairs))
    reference_measures = list(dict.fromkeys(p.reference for p in pairs))
    model_evaluation = evaluate_runs(restricted(model, queries), runs, judge_measures)
    if reference_evaluation is None:
        reference_evaluation = evaluate_runs(restricted(reference, queries), runs, reference_measures)
    else:
        reference_evaluation = reference_evaluation.select({m: m for m in reference_measures}, queries)
    if all(p.reference == p.judge for p in pairs):
        return model_evaluation, reference_evaluation
    return model_evaluation.select({p.key: p.judge for p in pairs}), reference_evaluation.select({p.key: p.reference for p in pairs})


def _labels_with_intervals(
    pairs: Any, queries: list[str], rel_level: int | None, weights: Any, method: str, level: float
) -> LabelAgreement:
    """κ, α and κ's intervals on the resamples every statistic shares (none where κ is not computed)."""
    labels = agreement_of(pairs, rel_level)
    if labels.not_computed is not None:
        return labels
    found = paired_intervals(kappa_statistic_of(pairs, queries, rel_level), weights, method=method, level=level, bounds=KAPPA_BOUNDS)
    return replace(labels, intervals={name: i for name, i in found.intervals.items() if i is not None})


def audit(
    model: Qrels | dict[str, dict[str, int]],
    reference: Qrels | dict[str, dict[str, int]],
    runs: list[Run],
    *,
    measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
    judge_measures: list[str] | tuple[str, ...] = (),
    groups: dict[str, list[str]] | None = None,
    maps: GradeMaps = NO_MAPS,
    rel_level: int | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
    reference_evaluation: Evaluation | None = None,
    reference_decimals: int | None = None,
    reference_pairs: str = ALL,
    model_covers: str | None = None,
    why: str | None = None,
) -> Audit:
    """Audit ``model`` qrels against ``reference`` qrels over ``runs``; see the module docstring.
    ``interval``: 'jackknife' (default), 'bca', 'percentile' or 'subsampling', for every interval of the audit. The qrels may
    be `Qrels` or ``{qid: {docid: grade}}`` dicts (named "model" and "reference"). ``judge_measures``:
    the model's own measures (`measure_pairs`); ``reference_evaluation``: the reference already
    scored over ``runs`` on all its queries with every reference measure (`compare` scores it once);
    ``reference_decimals``: systems ranked under the reference by their means as printed to that many
    decimals (a study ranking by trec_eval's output: 4), everywhere a ranking is compared.
    ``reference_pairs``: 'all' (the reference as given) or 'judged' (cut to the pairs the model judged,
    for systems ranked on a sample's pairs: `qrelkit.evaluate.coverage`); ``model_covers`` and ``why``:
    what the model's pairs are ("sample", "partial") and why, for the audit's `Coverage`."""
    check_decimals(reference_decimals)
    check_reference_pairs(reference_pairs)
    model, reference = _as_qrels(model, "model"), _as_qrels(reference, "reference")
    ranked_on = cut_to_judged(reference, model) if reference_pairs == JUDGED else reference
    if ranked_on is not reference:
        reference_evaluation = None  # scored on every reference pair: not what the rankings read now
    method = check_method(interval)
    check_resamples(resamples)
    pairs_of_measures = measure_pairs(measures, judge_measures)
    pairs = mapped_pairs(model, reference, maps)  # once, for κ, α and their bootstrap
    if not len(pairs.qids):
        agreement_of(pairs)  # raises: no shared pair
    queries = sorted(queries_of(model) & queries_of(ranked_on))  # non-empty: the qrels share pairs
    model_evaluation, reference_evaluation = side_evaluations(model, ranked_on, runs, queries, pairs_of_measures, reference_evaluation)
    # One set of resamples for every statistic, so intervals of κ, τ and Δ describe the same topic draws.
    weights = draw_weights(len(queries), resamples, seed, method)
    labels = _labels_with_intervals(pairs, queries, rel_level, weights, method, level)
    groups = check_groups(groups or {}, model_evaluation.runs)
    scale = None if labels.not_computed else scale_warning(model, reference, maps)
    warnings = [w for w in (scale, labels.not_computed) if w] + size_warnings(labels.shared_pairs, len(queries), len(model_evaluation.runs))
    return Audit(
        model_name=model.name,
        reference_name=reference.name,
        queries=queries,
        labels=labels,
        systems=correlate_systems(
            model_evaluation, reference_evaluation, weights=weights, interval=method, level=level, reference_decimals=reference_decimals
        ),
        bias=group_bias(model_evaluation, reference_evaluation, groups, weights=weights, interval=method, level=level) if groups else {},
        model_evaluation=model_evaluation,
        reference_evaluation=reference_evaluation,
        resamples=resamples,
        seed=seed,
        maps=maps,
        groups=groups,
        model_qrels=model,
        reference_qrels=reference,
        warnings=warnings,
        interval=METHOD_NAMES[method],
        level=level,
        measure_pairs={p.key: (p.reference, p.judge) for p in pairs_of_measures},
        reference_decimals=reference_decimals,
        coverage=Coverage(reference_pairs, len(model), len(ranked_on), len(reference), model_covers, why),
    )


def audit_to_dict(result: Audit) -> dict[str, Any]:
    """The JSON form (`qrelkit agree --json`); an undefined statistic is null, never NaN."""
    labels = result.labels
    label_part = labels.to_dict()
    systems = {}
    for measure, corr in result.systems.items():
        reference_measure, judge_measure = result.measure_pairs.get(measure, (measure, measure))
        entry: dict[str, Any] = {
            "reference_measure": reference_measure,
            "judge_measure": judge_measure,
            "runs": corr.runs,
            "queries": corr.queries,
        }
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
        "maps": result.maps.to_dict(),
        "reference_decimals": result.reference_decimals,
        "warnings": list(result.warnings),
        # every interval note of the sections above in one list, each naming its statistic and measure
        "interval_notes": [
            {**record, "sentence": sentence} for record, sentence in zip(result.interval_note_records(), result.interval_notes())
        ],
        "sources": result.sources,
        "coverage": result.coverage.to_dict(),
    }
