"""Which judge agrees better with the reference? Several judges' qrels audited against one reference,
and the paired differences between them.

Each judge is audited exactly as `qrelkit agree` audits it (:func:`qrelkit.evaluate.audit.audit`,
the same seed, so the same query resamples and the same figures and intervals). The differences
are statistics of query weights like any other (`qrelkit.evaluate.bootstrap.paired_intervals`):

- Δτ = τ(reference, judge A) − τ(reference, judge B) on a measure, and the same for τ_AP;
- Δκ = κ(judge A, reference) − κ(judge B, reference) (Cohen's κ, after the maps).

Both judges are scored on every resample from the same drawn queries, so the interval of a
difference is paired: a topic draw that is hard for both moves both τ together and cancels in Δτ.
When both judges cover the same queries (the usual case) those are exactly the resamples behind
each judge's own interval; otherwise the difference runs over the queries both share, and says so.

The p-value of a difference comes from a paired randomisation test over queries (Fisher's
randomisation test, as Smucker, Allan and Carterette recommend for IR, CIKM 2007): under the null
hypothesis that the two judges are exchangeable, swapping judge A's and judge B's judgments of a
query leaves the distribution of the difference unchanged, so each of ``permutations`` random
swap patterns (each query swapped with probability ½) gives a difference under the null, and
p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + permutations) (two-sided; the +1 keeps it a valid p-value, Phipson
and Smyth 2010). Why not a p-value read off the bootstrap: resampled τ is strongly biased (resampling
queries adds noise that only lowers a correlation; MiniLM's τ on DL19 sits above 98% of its
resamples), so "how often does the resampled Δτ cross 0" tests a shifted distribution; the
randomisation test needs no such shape and holds the number of queries fixed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.agreement import kendall_tau_b_rows, tau_ap_rows
from qrelkit.evaluate.audit import DEFAULT_MEASURES, Audit, audit
from qrelkit.evaluate.bootstrap import (
    DEFAULT_METHOD,
    METHOD_NAMES,
    IntervalEstimate,
    check_method,
    check_resamples,
    draw_weights,
    paired_intervals,
    uniform_weights,
)
from qrelkit.evaluate.labels import (
    grade_range,
    kappa_rows,
    kappa_statistic,
    label_agreement,
    map_grades,
    per_query_confusions,
    shared_pairs,
)
from qrelkit.io import Qrels, Run

TEST_NAME = "paired randomisation test over queries (two-sided)"
DIFFERENCE_NAMES = {"kendall_tau": "Δτ", "tau_ap": "Δτ_AP", "cohen_kappa": "Δκ"}
ROWS_PER_CHUNK = 2000  # orderings at a time: τ-b and τ_AP hold rows × runs² values


@dataclass(frozen=True)
class PairedDifference:
    """first − second on one statistic, with its paired interval and randomisation p-value."""

    first: str
    second: str
    statistic: str  # kendall_tau, tau_ap or cohen_kappa
    measure: str | None  # the measure the systems are ranked by (None for κ)
    estimate: float
    interval: IntervalEstimate | None
    p_value: float | None
    queries: int  # the queries both judges cover: the ones resampled and swapped
    permutations: int

    @property
    def name(self) -> str:
        return DIFFERENCE_NAMES[self.statistic] + (f" {self.measure}" if self.measure else "")

    def indistinguishable(self, alpha: float) -> bool:
        """Neither the test nor the interval tells the two judges apart (False when neither was computed:
        nothing was tested)."""
        if self.interval is None and self.p_value is None:
            return False
        holds_zero = self.interval is None or self.interval.low <= 0.0 <= self.interval.high
        return (self.p_value is None or self.p_value >= alpha) and holds_zero


@dataclass(frozen=True)
class Comparison:
    """Several judges' qrels against one reference: each one's audit, the paired differences, the
    κ between every two judges, and notes in sentences."""

    judges: list[str]
    reference_name: str
    audits: dict[str, Audit]
    differences: list[PairedDifference]
    kappa_matrix: dict[str, dict[str, float | None]]  # Cohen's κ between two judges on the pairs both judged
    resamples: int
    permutations: int
    seed: int | None
    interval: str  # as printed: "jackknife", "BCa", "percentile" or "subsampling"
    level: float
    baseline: str | None = None
    notes: list[str] = field(default_factory=list)
    test: str = TEST_NAME

    @property
    def alpha(self) -> float:
        return 1.0 - self.level


def _chunked(function: Callable[[np.ndarray, np.ndarray], np.ndarray], truth: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    starts = range(0, max(len(truth), 1), ROWS_PER_CHUNK)
    return np.concatenate([function(truth[s : s + ROWS_PER_CHUNK], estimate[s : s + ROWS_PER_CHUNK]) for s in starts])


RANKING = {"kendall_tau": kendall_tau_b_rows, "tau_ap": tau_ap_rows}


def _on(evaluation: Any, measure: str, queries: list[str]) -> np.ndarray:
    """The runs × queries matrix of ``measure`` on ``queries``: the evaluation's own matrix when it has
    exactly those queries. Never a reordered copy then: τ-b sees systems whose means tie, and a copy
    laid out otherwise in memory sums in another order, which can split a tie by rounding and give
    another τ than the judge's own row."""
    matrix = evaluation.matrix(measure)
    if list(evaluation.queries) == list(queries):
        return matrix
    position = {q: i for i, q in enumerate(evaluation.queries)}
    return np.ascontiguousarray(matrix[:, [position[q] for q in queries]])


def _restricted(grades: dict[str, dict[str, int]], queries: list[str]) -> dict[str, dict[str, int]]:
    return {q: grades[q] for q in queries if q in grades}


class _Pair:
    """Two judges' per-query material on the queries both cover: the runs × queries matrices of each
    measure and the per-query confusion matrices of κ."""

    def __init__(self, first: Audit, second: Audit, queries: list[str], measures: list[str], maps: dict[str, Any]):
        self.queries = queries
        self.matrices: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for measure in measures:
            a, b = _on(first.model_evaluation, measure, queries), _on(second.model_evaluation, measure, queries)
            self.matrices[measure] = (_on(first.reference_evaluation, measure, queries), a, b)
        reference_grades = _restricted(first.reference_grades, queries)
        self.kappa_a = kappa_statistic(_restricted(first.model_grades, queries), reference_grades, queries, **maps)
        self.kappa_b = kappa_statistic(_restricted(second.model_grades, queries), reference_grades, queries, **maps)
        self.confusion_a, self.confusion_b, self.labels = _confusions(first, second, queries, maps)

    def statistic(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Query weights (rows, Q) -> every difference first − second, per row."""
        out: dict[str, np.ndarray] = {}
        for measure, (reference, a, b) in self.matrices.items():
            truth = weights @ reference.T
            for name, function in RANKING.items():
                out[f"{name}|{measure}"] = _chunked(function, truth, weights @ a.T) - _chunked(function, truth, weights @ b.T)
        out["cohen_kappa|"] = self.kappa_a(weights)["cohen_kappa"] - self.kappa_b(weights)["cohen_kappa"]
        return out

    def swapped(self, masks: np.ndarray) -> dict[str, np.ndarray]:
        """Swap patterns (rows, Q), 1 where a query's judgments of the two judges trade places -> every
        difference per row (the randomisation test's null distribution)."""
        n = masks.shape[1]
        keep, swap = (1.0 - masks) / n, masks / n
        out: dict[str, np.ndarray] = {}
        for measure, (reference, a, b) in self.matrices.items():
            truth = np.repeat(uniform_weights(n) @ reference.T, len(masks), axis=0)
            first, second = keep @ a.T + swap @ b.T, swap @ a.T + keep @ b.T
            for name, function in RANKING.items():
                out[f"{name}|{measure}"] = _chunked(function, truth, first) - _chunked(function, truth, second)
        size = len(self.labels)
        first_confusion = (keep @ self.confusion_a + swap @ self.confusion_b).reshape(len(masks), size, size)
        second_confusion = (swap @ self.confusion_a + keep @ self.confusion_b).reshape(len(masks), size, size)
        out["cohen_kappa|"] = kappa_rows(first_confusion) - kappa_rows(second_confusion)
        return out


def _confusions(first: Audit, second: Audit, queries: list[str], maps: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per-query confusion matrices (Q, L·L) of both judges against the reference on one label set
    (the union of both: unweighted κ does not change with a label neither side uses)."""
    reference = map_grades(_restricted(first.reference_grades, queries), maps.get("reference_map"), "reference")
    pairs = [
        shared_pairs(map_grades(_restricted(audit_.model_grades, queries), maps.get("model_map"), "model"), reference)
        for audit_ in (first, second)
    ]
    labels = grade_range(*[p.reference for p in pairs], *[p.model for p in pairs])
    first_counts, second_counts = (per_query_confusions(found, queries, labels) for found in pairs)
    return first_counts, second_counts, labels


def randomisation_p_values(observed: dict[str, float], null: dict[str, np.ndarray]) -> dict[str, float | None]:
    """Two-sided p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + defined swaps); swaps where Δ* is undefined are left out."""
    out: dict[str, float | None] = {}
    for name, value in observed.items():
        values = np.asarray(null[name], np.float64)
        values = values[np.isfinite(values)]
        if not math.isfinite(value) or values.size == 0:
            out[name] = None
            continue
        # a tolerance for round-off: a swap that changes nothing must count as "as extreme"
        extreme = int(np.count_nonzero(np.abs(values) >= abs(value) - 1e-12))
        out[name] = (1 + extreme) / (1 + values.size)
    return out


def swap_masks(n_queries: int, permutations: int, seed: int | None) -> np.ndarray:
    """(permutations, n_queries) of 0/1: which queries' judgments trade places; a stream of its own
    (seed, 27), so adding the test leaves the bootstrap draws untouched."""
    rng = np.random.default_rng(None if seed is None else [seed, 27])
    return rng.integers(0, 2, size=(permutations, n_queries)).astype(np.float64)


def paired_differences(
    first: Audit,
    second: Audit,
    *,
    measures: list[str],
    maps: dict[str, Any],
    resamples: int,
    permutations: int,
    seed: int | None,
    method: str,
    level: float,
) -> tuple[list[PairedDifference], str | None]:
    """first − second on Δτ and Δτ_AP of each measure and on Δκ; a note when they run over fewer
    queries than either judge's own figures."""
    queries = sorted(set(first.queries) & set(second.queries))
    if len(queries) < 2:
        return [], f"{first.model_name} and {second.model_name} share {len(queries)} queries: no paired difference"
    note = None
    if queries != first.queries or queries != second.queries:
        note = (
            f"{first.model_name} − {second.model_name}: the differences run over the {len(queries)} queries both judges cover "
            f"({first.model_name} covers {len(first.queries)}, {second.model_name} {len(second.queries)}), so they are not "
            "the plain difference of the two rows above"
        )
    pair = _Pair(first, second, queries, measures, maps)
    draws = draw_weights(len(queries), resamples, seed, method)
    bounds = {f"{name}|{measure}": (-2.0, 2.0) for measure in pair.matrices for name in RANKING}  # Δ of two correlations
    found = paired_intervals(pair.statistic, draws, method=method, level=level, bounds=bounds)
    p_values: dict[str, float | None] = dict.fromkeys(found.estimates)
    if permutations:
        p_values = randomisation_p_values(found.estimates, pair.swapped(swap_masks(len(queries), permutations, seed)))
    out = []
    for key, estimate in found.estimates.items():
        statistic, measure = key.split("|")
        out.append(
            PairedDifference(
                first.model_name,
                second.model_name,
                statistic,
                measure or None,
                estimate,
                found.intervals.get(key),
                p_values[key],
                len(queries),
                permutations,
            )
        )
    return out, note


def kappa_between(judges: dict[str, Qrels]) -> dict[str, dict[str, float | None]]:
    """Cohen's κ between every two judges on the pairs both judged (grades as given; None: no shared pair)."""
    names = list(judges)
    matrix: dict[str, dict[str, float | None]] = {a: {} for a in names}
    for a in names:
        matrix[a][a] = 1.0
    for a, b in itertools.combinations(names, 2):
        try:
            value: float | None = label_agreement(judges[a].grades, judges[b].grades).cohen_kappa
        except QrelkitError:
            value = None
        matrix[a][b] = matrix[b][a] = value if value is None or math.isfinite(value) else None
    return matrix


def pairs_to_compare(names: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """Every two judges in the order given (first − second), or each judge against ``baseline``
    (judge − baseline)."""
    if baseline is None:
        return list(itertools.combinations(names, 2))
    if baseline not in names:
        raise QrelkitError(f"--baseline {baseline!r} is none of the judges compared: {', '.join(names)}")
    return [(name, baseline) for name in names if name != baseline]


def indistinguishable_notes(differences: list[PairedDifference], alpha: float, level: float) -> list[str]:
    notes = []
    for d in differences:
        if not d.indistinguishable(alpha):
            continue
        found = d.interval
        interval = f"{level:.0%} {found.method} interval [{found.low:.3f}, {found.high:.3f}] holds 0" if found else "no interval"
        p = f"p = {d.p_value:.3f} ≥ {alpha:.2f}" if d.p_value is not None else "no test"
        notes.append(f"{d.first} and {d.second} are indistinguishable on {d.name}: {d.name} = {d.estimate:+.4f}, {interval}, {p}")
    return notes


def compare_judges(
    judges: list[Qrels],
    reference: Qrels,
    runs: list[Run],
    *,
    measures: list[str] | tuple[str, ...] = DEFAULT_MEASURES,
    groups: dict[str, list[str]] | None = None,
    reference_map: Mapping[int, int] | None = None,
    model_map: Mapping[int, int] | None = None,
    rel_level: int | None = None,
    baseline: str | None = None,
    resamples: int = 1000,
    permutations: int = 1000,
    seed: int | None = 0,
    interval: str = DEFAULT_METHOD,
    level: float = 0.95,
) -> Comparison:
    """Audit each judge's qrels against ``reference`` (as `agree` does) and test the differences
    between them; judges are named by their qrels' names, which must differ."""
    method = check_method(interval)
    check_resamples(resamples)
    check_resamples(permutations)
    if not judges:
        raise QrelkitError("compare needs at least one judge")
    names = [q.name for q in judges]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise QrelkitError(f"two judges are both called {', '.join(map(repr, repeated))}: name each judge once")
    measures = list(dict.fromkeys(measures))
    maps = {"reference_map": reference_map, "model_map": model_map, "rel_level": rel_level}
    options = dict(measures=measures, groups=groups, resamples=resamples, seed=seed, interval=method, level=level, **maps)
    audits = {q.name: audit(q, reference, runs, **options) for q in judges}  # type: ignore[arg-type]
    differences: list[PairedDifference] = []
    notes: list[str] = []
    for a, b in pairs_to_compare(names, baseline):
        found, note = paired_differences(
            audits[a],
            audits[b],
            measures=measures,
            maps=maps,
            resamples=resamples,
            permutations=permutations,
            seed=seed,
            method=method,
            level=level,
        )
        differences += found
        notes += [note] if note else []
    notes += indistinguishable_notes(differences, 1.0 - level, level)
    return Comparison(
        judges=names,
        reference_name=reference.name,
        audits=audits,
        differences=differences,
        kappa_matrix=kappa_between({q.name: q for q in judges}),
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        interval=METHOD_NAMES[method],
        level=level,
        baseline=baseline,
        notes=notes,
    )
